"""Long-term recall: Stubber checks every request against the real service model (moto lacks retrieval)."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from runtime.session_store.recall import (
    HEADER,
    MemoryRecall,
    make_recall_hook,
    memory_actor_id,
    memory_session_id,
)

MEMORY = "agentkit_mem-AbCdEf1234"


def record(text: str, score: float, rid: str) -> dict[str, Any]:
    return {
        "memoryRecordId": f"mem-{rid:0>36}",  # the service model requires ≥ 40 chars
        "content": {"text": text},
        "memoryStrategyId": "semantic-1234567890",
        "namespaces": ["/x"],
        "createdAt": datetime(2026, 1, 1, tzinfo=UTC),
        "score": score,
    }


def expect(stub: Stubber, namespace: str, records: list[dict[str, Any]], query: Any = ANY) -> None:
    stub.add_response(
        "retrieve_memory_records",
        {"memoryRecordSummaries": records},
        {
            "memoryId": MEMORY,
            "namespace": namespace,
            "searchCriteria": {"searchQuery": query, "topK": 5},
            "maxResults": 5,
        },
    )


@pytest.fixture
def client() -> Any:
    return boto3.client(
        "bedrock-agentcore", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def test_recall_merges_namespaces_by_score_and_substitutes_ids(client: Any) -> None:
    recall = MemoryRecall(
        client=client,
        memory_id=MEMORY,
        namespaces=["/users/{actorId}/facts", "/summaries/{actorId}/{sessionId}"],
    )
    with Stubber(client) as stub:
        expect(
            stub,
            "/users/alice/facts",
            [record("Prefers metric units", 0.4, "r1"), record("Works on the billing team", 0.9, "r2")],
            query="units?",
        )
        expect(
            stub,
            "/summaries/alice/sess-1",
            [record("Asked about invoices", 0.6, "r3"), record("Works on the billing team", 0.9, "r2")],
            query="units?",
        )
        text = asyncio.run(recall.recall(actor_id="alice", session_id="sess-1", query="units?"))
        stub.assert_no_pending_responses()
    assert text == "\n".join(
        [HEADER, "- Works on the billing team", "- Asked about invoices", "- Prefers metric units"]
    )


def test_actor_b_only_queries_actor_b_namespace(client: Any) -> None:
    recall = MemoryRecall(client=client, memory_id=MEMORY, namespaces=["/users/{actorId}/facts"])
    with Stubber(client) as stub:
        expect(stub, "/users/bob/facts", [])  # any other namespace fails the Stubber's param check
        assert (
            asyncio.run(recall.recall(actor_id="bob", session_id="s", query="what does alice like?")) is None
        )
        stub.assert_no_pending_responses()
    # An actor id carrying namespace syntax cannot widen the search: it is hashed into a plain id.
    sneaky = "*"
    mapped = memory_actor_id(sneaky)
    assert mapped.startswith("a-") and "*" not in mapped and mapped != memory_actor_id("**")
    assert recall.namespaces_for(actor_id="alice/../bob", session_id="s") == [
        f"/users/{memory_actor_id('alice/../bob')}/facts"
    ]
    assert memory_actor_id("auth0|42") != memory_actor_id("auth0|43")
    assert memory_session_id("x" * 101).startswith("s-") and len(memory_session_id("x" * 101)) <= 100


def test_context_is_bounded(client: Any) -> None:
    recall = MemoryRecall(client=client, memory_id=MEMORY, namespaces=["/n"], max_chars=300)
    with Stubber(client) as stub:
        expect(stub, "/n", [record(f"fact {i} " + "z" * 80, 1.0 - i / 10, f"r{i}") for i in range(5)])
        text = asyncio.run(recall.recall(actor_id="a", session_id="s", query="q"))
    assert text is not None and len(text) <= 300 and "fact 0" in text


def test_slow_retrieval_gives_up_within_budget(client: Any) -> None:
    release = threading.Event()

    class Slow:
        def retrieve_memory_records(self, **kw: Any) -> dict[str, Any]:
            release.wait(5)
            return {"memoryRecordSummaries": [record("late", 1.0, "r")]}

    errors: list[BaseException] = []
    recall = MemoryRecall(
        client=Slow(), memory_id=MEMORY, namespaces=["/n"], timeout_s=0.2, on_error=errors.append
    )

    async def timed() -> tuple[str | None, float]:
        start = time.perf_counter()
        result = await recall.recall(actor_id="a", session_id="s", query="q")
        return result, time.perf_counter() - start

    result, elapsed = asyncio.run(timed())
    release.set()
    recall.close()
    assert result is None and elapsed < 2.0  # gave up long before the 5 s call returned
    assert len(errors) == 1 and isinstance(errors[0], TimeoutError)


def test_service_error_means_no_recall(client: Any) -> None:
    errors: list[BaseException] = []
    recall = MemoryRecall(client=client, memory_id=MEMORY, namespaces=["/n"], on_error=errors.append)
    with Stubber(client) as stub:
        stub.add_client_error(
            "retrieve_memory_records", service_error_code="ThrottledException", http_status_code=429
        )
        assert asyncio.run(recall.recall(actor_id="a", session_id="s", query="q")) is None
    assert len(errors) == 1


def test_hook_returns_additional_context_only_when_found(client: Any) -> None:
    recall = MemoryRecall(client=client, memory_id=MEMORY, namespaces=["/users/{actorId}"])
    hook = make_recall_hook(recall, actor_id="alice", session_id="s1")
    prompt = {
        "hook_event_name": "UserPromptSubmit",
        "prompt": "hello",
        "session_id": "c",
        "transcript_path": "",
        "cwd": "/",
    }
    with Stubber(client) as stub:
        expect(stub, "/users/alice", [record("Likes tea", 0.5, "r1")], query="hello")
        expect(stub, "/users/alice", [], query="hello")
        found = asyncio.run(hook(prompt, None, {"signal": None}))
        empty = asyncio.run(hook(prompt, None, {"signal": None}))
    assert found == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": f"{HEADER}\n- Likes tea",
        }
    }
    assert empty == {}
    assert asyncio.run(hook({"hook_event_name": "Stop"}, None, {"signal": None})) == {}


def test_record_turn_writes_conversational_user_and_assistant() -> None:
    with mock_aws():
        client = boto3.client("bedrock-agentcore", region_name="us-east-1")
        recall = MemoryRecall(client=client, memory_id=MEMORY, namespaces=["/n"])
        long_answer = "a" * 150_000
        assert asyncio.run(
            recall.record_turn(
                actor_id="auth0|42", session_id="sess-1", user_text="hi", assistant_text=long_answer
            )
        )
        events = client.list_events(
            memoryId=MEMORY, actorId=memory_actor_id("auth0|42"), sessionId="sess-1", includePayloads=True
        )["events"]
    payload = events[0]["payload"]
    assert [p["conversational"]["role"] for p in payload] == ["USER", "ASSISTANT", "ASSISTANT"]
    assert "".join(p["conversational"]["content"]["text"] for p in payload[1:]) == long_answer
    assert all(len(p["conversational"]["content"]["text"]) <= 100_000 for p in payload)


def test_bad_configuration_is_rejected(client: Any) -> None:
    with pytest.raises(ValueError, match="placeholders"):
        MemoryRecall(client=client, memory_id=MEMORY, namespaces=["/x/{memoryStrategyId}"])
    with pytest.raises(ValueError, match="top_k"):
        MemoryRecall(client=client, memory_id=MEMORY, namespaces=["/x"], top_k=0)
    with pytest.raises(ValueError, match="memory_id"):
        MemoryRecall(client=client, memory_id="", namespaces=["/x"])
