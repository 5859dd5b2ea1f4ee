"""Asynchronous jobs, part by part: the progress throttle, fitting a result into one SQS message, the outbox on
disk, the SQS sender's parameters (botocore's Stubber checks them against the SQS model) and the result event of
each way a turn can end. The whole flow over real HTTP is tests/functional/test_jobs.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from pydantic import ValidationError

from runtime.config.settings import Settings
from runtime.errors import ConfigurationError, SessionBusy, ShuttingDown
from runtime.jobs.fit import fit_message
from runtime.jobs.outbox import Outbox
from runtime.jobs.progress import Progress
from runtime.jobs.protocol import ResultMessage, encode_message
from runtime.jobs.service import _result_of
from runtime.jobs.sink import EventsUnavailable, SqsEvents
from runtime.protocol import MAX_CONTEXT_BYTES, Failure, JobSpec

# -- the progress throttle ----------------------------------------------------------------------------------------


def test_the_first_tool_call_is_reported_at_once_then_at_most_one_event_per_interval() -> None:
    progress = Progress(interval_s=10, started=100.0)
    assert progress.due_in(100.0) is None  # nothing happened yet
    progress.tool_call("Read")
    assert progress.due_in(100.5) == 0.0  # the first tool call: now, not after the interval
    first = progress.take(100.5)
    assert (first.tool_calls, first.last_tool, first.elapsed_s) == (1, "Read", 0.5)
    progress.tool_call("Bash")
    progress.cost(0.02)
    assert progress.due_in(101.0) == pytest.approx(9.5)  # the second one waits for the interval
    assert progress.due_in(110.5) == 0.0
    second = progress.take(110.5)
    assert (second.tool_calls, second.last_tool, second.cost_usd) == (2, "Bash", 0.02)
    assert progress.due_in(130.0) is None  # nothing changed since: no event however long it is


def test_cost_only_changes_are_throttled_and_a_lower_cost_is_no_change() -> None:
    progress = Progress(interval_s=5, started=0.0)
    progress.cost(0.01)
    assert progress.due_in(1.0) == pytest.approx(4.0)  # no tool call yet: the interval counts from the start
    progress.take(5.0)
    progress.cost(0.005)
    assert progress.due_in(100.0) is None
    assert progress.take(100.0).cost_usd == 0.01


def test_a_non_positive_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        Progress(interval_s=0, started=0.0)
    with pytest.raises(ConfigurationError, match="AGENTKIT_JOB_PROGRESS_SECONDS"):
        Settings.from_env({"AGENTKIT_JOB_PROGRESS_SECONDS": "0"})


# -- fitting a result into one message ----------------------------------------------------------------------------


def _message(result: dict[str, Any]) -> ResultMessage:
    return {
        "v": 1,
        "job_id": "gh-1",
        "session_id": "s" * 40,
        "seq": 3,
        "kind": "result",
        "at": 1.0,
        "context": {"issue": 1},
        "result": result,
    }


def _result(patch: str, text: str = "done") -> dict[str, Any]:
    return {
        "type": "result",
        "text": text,
        "cost_usd": 0.5,
        "subtype": "success",
        "patch": patch,
        "changed_files": ["a.py"],
    }


class Puts:
    def __init__(self) -> None:
        self.calls: list[tuple[str, bytes]] = []

    def __call__(self, key: str, data: bytes) -> str:
        self.calls.append((key, data))
        return f"s3://bucket/{key}"


def test_a_message_within_the_limit_is_sent_unchanged_up_to_the_last_byte() -> None:
    message = _message(_result("+" + "x" * 200))
    size = len(encode_message(message))
    puts = Puts()
    assert fit_message(message, limit=size, put_patch=puts) is message
    assert puts.calls == []
    assert fit_message(message, limit=size - 1, put_patch=puts)["result"]["patch_s3_uri"]


def test_a_patch_over_the_limit_goes_to_s3_under_the_jobs_prefix() -> None:
    patch = "+" + "é" * 3000 + "\n"
    message = _message(_result(patch))
    puts = Puts()
    fitted = fit_message(message, limit=2000, put_patch=puts)
    # keyed by session and job: another session's job of the same id never overwrites it
    assert puts.calls == [(f"jobs/{'s' * 40}/gh-1/patch.diff", patch.encode())]
    assert "patch" not in fitted["result"]
    assert fitted["result"]["patch_s3_uri"] == f"s3://bucket/jobs/{'s' * 40}/gh-1/patch.diff"
    other = fit_message({**message, "session_id": "t" * 40}, limit=2000, put_patch=puts)
    assert other["result"]["patch_s3_uri"] != fitted["result"]["patch_s3_uri"]
    assert fitted["result"]["changed_files"] == ["a.py"] and fitted["result"]["text"] == "done"
    assert len(encode_message(fitted)) <= 2000
    assert message["result"]["patch"] == patch  # the kept (outbox) copy is not changed


def test_without_a_bucket_a_large_patch_becomes_a_clear_error_that_keeps_the_cost() -> None:
    fitted = fit_message(_message(_result("+" + "x" * 5000)), limit=2000, put_patch=None)
    result = fitted["result"]
    assert result["type"] == "error" and result["code"] == "result_too_large"
    assert "AGENTKIT_WORKSPACE_BUCKET" in result["message"]
    assert result["cost_usd"] == 0.5 and result["partial"]["subtype"] == "success"
    assert result["changed_files"] == ["a.py"]
    assert len(encode_message(fitted)) <= 2000


def test_an_answer_too_long_even_without_its_patch_becomes_an_error() -> None:
    puts = Puts()
    fitted = fit_message(_message(_result("+x\n" * 400, text="y" * 5000)), limit=2000, put_patch=puts)
    assert len(puts.calls) == 1
    assert fitted["result"]["code"] == "result_too_large" and "answer itself" in fitted["result"]["message"]


def test_message_bodies_are_ascii_whatever_the_patch_holds() -> None:
    body = encode_message(_message(_result("+\x00\x1f\ud83d\ude00 \U0001f600 \ufffe\n")))
    assert body.isascii() and json.loads(body)["result"]["patch"].startswith("+\x00")


# -- the request's job --------------------------------------------------------------------------------------------


def test_job_context_up_to_the_limit_is_accepted() -> None:
    fits = {"k": "x" * (MAX_CONTEXT_BYTES - 8)}  # {"k":"…"} is 8 bytes around the value
    assert JobSpec(id="a", context=fits).context == fits
    with pytest.raises(ValidationError, match="4097 bytes"):
        JobSpec(id="a", context={"k": "x" * (MAX_CONTEXT_BYTES - 7)})
    for bad in ("", "a/b", "x" * 129, "..", "é"):
        with pytest.raises(ValidationError):
            JobSpec(id=bad)
    assert JobSpec(id="gitlab:group.project-12_3").id == "gitlab:group.project-12_3"


# -- the outbox ---------------------------------------------------------------------------------------------------


def test_the_outbox_keeps_results_across_instances_and_names_files_without_the_job_id(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox")
    message = _message(_result("p"))
    message["job_id"] = "../../etc:passwd"
    path = outbox.put(message)
    assert path.parent == tmp_path / "outbox" and "passwd" not in path.name
    outbox.put(message)  # the same message again (a retry): still one
    assert outbox.count == 1
    (tmp_path / "outbox" / "half-written.tmp").write_text("{")
    again = Outbox(tmp_path / "outbox")  # the next process
    assert again.count == 1 and not list((tmp_path / "outbox").glob("*.tmp"))
    assert again.read(again.paths()[0]) == message
    again.remove(path)
    again.remove(path)
    assert again.count == 0 and again.paths() == []


def test_an_unreadable_outbox_file_is_set_aside_not_sent(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path)
    bad = tmp_path / "0123-1.json"
    bad.write_text("{not json")
    outbox = Outbox(tmp_path)
    assert outbox.count == 1
    assert outbox.read(bad) is None
    assert outbox.count == 0 and (tmp_path / "0123-1.json.bad").exists()


# -- the SQS sender -----------------------------------------------------------------------------------------------


def _sqs() -> Any:
    return boto3.client(
        "sqs", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def test_a_standard_queue_gets_the_body_only_and_a_fifo_queue_keeps_a_job_in_order() -> None:
    message = _message(_result("p"))
    client = _sqs()
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/events"
    with Stubber(client) as stub:
        stub.add_response(
            "send_message", {"MessageId": "1"}, {"QueueUrl": url, "MessageBody": encode_message(message)}
        )
        SqsEvents(client=client, queue_url=url).send(message)
        stub.add_response(
            "send_message",
            {"MessageId": "2"},
            {
                "QueueUrl": url + ".fifo",
                "MessageBody": encode_message(message),
                "MessageGroupId": "gh-1",
                "MessageDeduplicationId": "gh-1:3",
            },
        )
        SqsEvents(client=client, queue_url=url + ".fifo").send(message)
        stub.add_client_error("send_message", "AccessDenied", http_status_code=403)
        with pytest.raises(EventsUnavailable, match="AccessDenied"):
            SqsEvents(client=client, queue_url=url).send(message)
        stub.assert_no_pending_responses()


# -- the result event of each ending ------------------------------------------------------------------------------


def test_a_closed_session_reports_stopped_with_the_cost_so_far() -> None:
    result = _result_of(Failure.of(ShuttingDown("the runtime is shutting down")), 0.0123456789)
    assert result["code"] == "stopped" and result["type"] == "error" and result["cost_usd"] == 0.012346
    assert "stopped" in result["message"]


def test_other_errors_keep_their_code_and_carry_cost_usd() -> None:
    failure = Failure(
        {
            "type": "error",
            "code": "budget_exceeded",
            "message": "m",
            "partial": {
                "cost_usd": 0.7,
                "sdk_cost_usd": None,
                "cost_complete": True,
                "session_cost_usd": None,
                "usage": {
                    "input_tokens": 1,
                    "output_tokens": 1,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                },
                "subtype": "success",
            },
        },
        402,
    )
    assert _result_of(failure, 0.1)["cost_usd"] == 0.7  # the CLI's figure when the turn got that far
    refused = _result_of(Failure.of(SessionBusy("busy")), 0.0)
    assert refused["code"] == "session_busy" and refused["cost_usd"] == 0.0
    assert _result_of(None, 0.2)["code"] == "internal_error"


def test_the_outbox_recounts_what_its_directory_holds(tmp_path: Path) -> None:
    """After a snapshot restore the disk need not be the one the count was taken on."""
    outbox = Outbox(tmp_path)
    assert outbox.count == 0
    (tmp_path / "abc-1.json").write_text(json.dumps(_message(_result("p"))))
    (tmp_path / "abc-2.tmp").write_text("{")
    outbox.recount()
    assert outbox.count == 1 and not list(tmp_path.glob("*.tmp"))
