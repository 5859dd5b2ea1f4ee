"""``invoker``: the runtime's reply parsed, and AgentCore's error message read for the container's status.

AgentCore does not relay the container's error body: boto3 raises ``RuntimeClientError`` with
``Received error (<status>) from runtime. Please check your CloudWatch logs for more information``
(AgentCore's documented error for a container error status). The status alone must name the error and decide retry vs. final.
"""

from __future__ import annotations

import json

import pytest

from tests.unit.webhook.support import RESULT
from webhook import invoker

DOCUMENTED = "Received error ({status}) from runtime. Please check your CloudWatch logs for more information"

LEAKY = (
    'Received error (402) from runtime. {"type": "error", "code": "budget_exceeded", "message":'
    ' "session spent $1.02 of $1.00 on arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/x"}'
)


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (
            json.dumps(RESULT),
            "application/json",
            invoker.RuntimeReply(text=str(RESULT["text"]), cost_usd=0.0123, num_turns=2, session_id="x"),
        ),
        (
            'data: {"type": "text", "text": "hi"}\n\ndata: '
            + json.dumps({"type": "result", **RESULT})
            + "\n\n",
            "text/event-stream",
            invoker.RuntimeReply(text=str(RESULT["text"]), cost_usd=0.0123, num_turns=2, session_id="x"),
        ),
        (
            '{"error": {"code": "validation_error", "message": "bad"}}',
            "application/json",
            invoker.RuntimeReply(error_code="validation_error", error_message="bad"),
        ),
    ],
    ids=["json", "sse", "error-object"],
)
def test_parse_reply(body: str, content_type: str, expected: invoker.RuntimeReply) -> None:
    assert invoker.parse_reply(body.encode(), content_type) == expected


@pytest.mark.parametrize("body", [b"<html>", b"[1, 2]", b'{"foo": 1}'])
def test_parse_reply_rejects_unknown_shapes(body: bytes) -> None:
    with pytest.raises(invoker.RuntimeReplyError):
        invoker.parse_reply(body)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (LEAKY, "budget_exceeded"),
        ("Received error (504) from runtime: turn_timeout after 600s", "turn_timeout"),
        ('{"error": {"code": "Prompt_Too_Large", "message": "x"}}', "prompt_too_large"),
        ('{"code": "<script>alert(1)</script>"}', "runtime_error"),
        ("Received error (500) from runtime. Check the logs.", "agent_error"),
        ("Something failed", "runtime_error"),
        ("", "runtime_error"),
    ],
    ids=["json", "known-word", "nested-upper", "hostile", "status-only", "no-status", "empty"],
)
def test_runtime_client_error_code_extraction(message: str, code: str) -> None:
    assert invoker.runtime_client_error_code(message) == code


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "invalid_request"),
        (402, "budget_exceeded"),
        (413, "prompt_too_large"),
        (429, "session_busy"),
        (500, "agent_error"),
        (502, "agent_process_error"),
        (503, "runtime_unavailable"),
        (504, "turn_timeout"),
        (418, "http_418"),
    ],
)
def test_documented_message_names_the_error_by_status(status: int, code: str) -> None:
    message = DOCUMENTED.format(status=status)
    assert invoker.runtime_status(message) == status
    assert invoker.runtime_client_error_code(message) == code


def test_every_status_code_is_a_runtime_code_the_runtime_sends() -> None:
    """The status table only names codes of runtime/errors.py (503 stands for its two 503 codes)."""
    from runtime import errors

    sent = {
        cls.code: cls.http_status
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.AgentKitError) and cls is not errors.AgentKitError
    }
    for status, code in invoker.RUNTIME_STATUS_CODES.items():
        if code != "runtime_unavailable":
            assert sent.get(code) == status, (status, code)
    assert {code for code, status in sent.items() if status == 429} <= {"session_busy"}
