"""The one error hierarchy: every code the runtime sends maps to exactly one class with its HTTP status."""

from __future__ import annotations

import pytest

from runtime import errors
from runtime.errors import ERRORS_BY_CODE, AgentKitError, status_for_code


def _all_classes(base: type[AgentKitError]) -> list[type[AgentKitError]]:
    out = [base]
    for sub in base.__subclasses__():
        out += _all_classes(sub)
    return out


def test_every_error_class_has_its_own_code_and_is_in_the_map() -> None:
    classes = _all_classes(AgentKitError)
    codes = [cls.code for cls in classes]
    assert len(codes) == len(set(codes)), f"two classes share a code: {sorted(codes)}"
    assert {cls.code: cls for cls in classes} == ERRORS_BY_CODE
    assert all(cls.__module__ == "runtime.errors" for cls in classes), "error classes live in runtime.errors"


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("invalid_request", 400),
        ("prompt_too_large", 413),
        ("budget_exceeded", 402),
        ("max_turns_exceeded", 422),
        ("session_busy", 429),
        ("model_error", 502),
        ("agent_process_error", 502),
        ("shutting_down", 503),
        ("session_store_unavailable", 503),
        ("turn_timeout", 504),
        ("configuration_error", 500),
        ("no_such_code", 500),
    ],
)
def test_status_for_code(code: str, status: int) -> None:
    assert status_for_code(code) == status


def test_an_instance_may_override_its_status_but_not_the_class() -> None:
    throttled = errors.ModelApiError("slow down", http_status=429)
    assert throttled.http_status == 429 and errors.ModelApiError.http_status == 502
    assert throttled.message == "slow down" and throttled.code == "model_error"
