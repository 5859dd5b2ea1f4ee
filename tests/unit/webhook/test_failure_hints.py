"""A failed fix job's comment: the code, the code's fixed hint, the log reference; every webhook code accounted for."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from harness.adf_check import adf_errors
from webhook import trackers
from webhook.errors import WebhookError
from webhook.fix.failure_hints import HINTS, PROTECTED, WITHOUT_HINT, hint
from webhook.fix.worker import error_text
from webhook.repo.protected_paths import refusal_code
from webhook.trackers.adf import markdown_to_adf

WEBHOOK = Path(__file__).resolve().parents[3] / "webhook"
#: The modules that define the webhook's error classes (imported so every subclass is known).
ERROR_MODULES = ("webhook.errors", "webhook.repo.errors", "webhook.reporter", "webhook.fix.worker")


def test_a_known_code_gets_its_hint_between_the_code_and_the_log_reference() -> None:
    text = error_text("fork_out_of_sync", "abc123")
    assert text.startswith("The agent could not work on this (`fork_out_of_sync`). The bot's fork lacks")
    assert "whoever owns the fork syncs it or deletes it" in text
    assert text.endswith(" An admin can check the logs (request id `abc123`).")


def test_a_protected_path_refusal_gets_the_protected_hint_whatever_its_classes() -> None:
    code = refusal_code({"executable", "ci_config"})
    text = error_text(code, "r")
    assert f"(`{code}`). {HINTS[PROTECTED]} An admin" in text and "`allow_protected_paths`" in text
    assert hint("patch_refused") == HINTS["patch_refused"] != HINTS[PROTECTED]


def test_an_unknown_code_reads_as_before() -> None:
    assert error_text("execution_error", "r") == (
        "The agent could not work on this (`execution_error`). An admin can check the logs (request id `r`)."
    )


def test_a_code_that_is_not_a_code_gets_no_hint_and_none_of_its_text() -> None:
    """Only :func:`safe_error_code`'s value is looked up: a crafted code is ``agent_error`` and nothing else."""
    text = error_text("fork_out_of_sync. Click [here](https://evil.example)", "r")
    assert (
        text
        == "The agent could not work on this (`agent_error`). An admin can check the logs (request id `r`)."
    )
    assert hint("fork_out_of_sync: <class>") is None and hint("nope: x") is None


def _raised_codes() -> set[str]:
    """Codes written as literals where a failure is raised or returned in webhook/: ``FixRefused("<code>", …)``
    and ``RuntimeReply(error_code="<code>", …)``."""
    codes: set[str] = set()
    for path in WEBHOOK.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name == "FixRefused" and node.args and isinstance(node.args[0], ast.Constant):
                codes.add(str(node.args[0].value))
            for kw in node.keywords:
                if kw.arg == "error_code" and isinstance(kw.value, ast.Constant) and kw.value.value:
                    codes.add(str(kw.value.value))
    return codes


def _class_codes() -> set[str]:
    for module in ERROR_MODULES:
        importlib.import_module(module)
    codes, todo = set(), [WebhookError]
    while todo:
        cls = todo.pop()
        codes.add(cls.code)
        todo += cls.__subclasses__()
    return codes


def test_the_scans_find_the_codes_they_look_for() -> None:
    """The completeness check below can fail: its scans see codes of each kind."""
    assert {"fork_out_of_sync", "patch_location_refused", "misconfigured", "webhook_error"} <= _class_codes()
    assert {
        "no_repository_mapped",
        "fork_pull_request",
        "job_context_too_large",
        "timeout",
    } <= _raised_codes()


def test_every_webhook_code_has_a_hint_or_a_reason_for_none() -> None:
    codes = _class_codes() | _raised_codes()
    missing = sorted(c for c in codes if c not in HINTS and c not in WITHOUT_HINT)
    assert not missing, f"give these codes a hint in HINTS or a reason in WITHOUT_HINT: {missing}"
    assert not set(HINTS) & set(WITHOUT_HINT)
    assert all(reason.strip() for reason in WITHOUT_HINT.values())


@pytest.mark.parametrize("code", sorted(HINTS))
def test_each_hint_is_one_plain_sentence(code: str) -> None:
    text = HINTS[code]
    assert text.endswith(".") and text.count(". ") == 0 and "\n" not in text and len(text) <= 220, text
    assert "|" not in text  # a docs table cell


def _adapters() -> dict[str, trackers.IssueTracker]:
    options = trackers.TrackerOptions()
    return {
        "github": trackers.GitHubTracker(options),
        "gitlab": trackers.GitLabTracker(options),
        "jira": trackers.JiraTracker(options, site_url="https://acme.atlassian.net/"),
    }


@pytest.mark.parametrize("code", sorted(HINTS))
def test_each_trackers_formatter_keeps_the_hint_and_jira_gets_valid_adf(code: str) -> None:
    shown = "patch_refused: ci_config" if code == PROTECTED else code
    text = error_text(shown, "0123456789abcdef")
    for name, adapter in _adapters().items():
        formatted = adapter.format_reply(text, footer="agentkit · fix job")
        assert HINTS[code] in formatted, (name, formatted)
        if name == "jira":
            assert adf_errors(markdown_to_adf(formatted)) == []
