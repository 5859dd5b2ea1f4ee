"""What AgentCore Memory bills is counted where the calls are made: every ``CreateEvent`` that succeeded (the
session store's transcript, index, epoch and state events, long-term memory's conversational events) and every
``RetrieveMemoryRecords``, each for the Claude session it served. ``agentkit cost`` prices these counts.

The counts are checked against the calls botocore really completed (its ``after-call`` event), on moto for
writes and through ``Stubber`` (the real service model) for retrievals, which moto lacks.
"""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from runtime.errors import SessionStoreError
from runtime.session_store.agentcore.ids import (
    INDEX_SESSION_ID,
    MEMORY_EVENTS_WRITTEN,
    MEMORY_RETRIEVALS,
    session_id_for,
)
from runtime.session_store.agentcore.store import AgentCoreMemorySessionStore
from runtime.session_store.recall import MemoryRecall

MEMORY = "agentkit_mem-AbCdEf1234"


class Meter:
    """The ``on_usage`` sink: counts per (metric, session)."""

    def __init__(self) -> None:
        self.counts: collections.Counter[tuple[str, str | None]] = collections.Counter()

    def __call__(self, metric: str, session: str | None) -> None:
        self.counts[(metric, session)] += 1

    def total(self, metric: str) -> int:
        return sum(n for (m, _), n in self.counts.items() if m == metric)


def completed_calls(client: Any, operation: str) -> list[dict[str, Any]]:
    """The parameters of every ``operation`` call that got an HTTP 2xx answer."""
    done: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []

    def before(params: dict[str, Any], **_: Any) -> None:
        pending.append(params)

    def after(http_response: Any, **_: Any) -> None:
        params = pending.pop(0)
        if 200 <= http_response.status_code < 300:
            done.append(params)

    client.meta.events.register(f"provide-client-params.bedrock-agentcore.{operation}", before)
    client.meta.events.register(f"after-call.bedrock-agentcore.{operation}", after)
    return done


@pytest.fixture
def moto_client() -> Any:
    with mock_aws():
        yield boto3.client("bedrock-agentcore", region_name="us-east-1")


def calls_for(calls: list[dict[str, Any]], session: str) -> list[dict[str, Any]]:
    """The calls that wrote for ``session``: its transcript and state events, and the project index's entries
    naming it."""
    own = session_id_for(session)
    return [
        c
        for c in calls
        if c["sessionId"] == own
        or (c["sessionId"] == INDEX_SESSION_ID and any(p["blob"].get("sid") == session for p in c["payload"]))
    ]


def entries(n: int, session: str) -> list[Any]:
    return [{"type": "user", "uuid": f"{session}-u{i}", "n": i} for i in range(n)]


def test_every_create_event_of_the_session_store_is_counted_for_its_session(moto_client: Any) -> None:
    meter = Meter()
    calls = completed_calls(moto_client, "CreateEvent")
    store = AgentCoreMemorySessionStore(MEMORY, client=moto_client, on_usage=meter)
    key_a = {"project_key": "proj", "session_id": "a"}
    key_b = {"project_key": "proj", "session_id": "b"}
    asyncio.run(store.append(key_a, entries(3, "a")))  # type: ignore[arg-type]
    asyncio.run(store.append(key_a, entries(250, "a2")))  # type: ignore[arg-type]  # > 100 items: several events
    asyncio.run(store.append(key_b, entries(1, "b")))  # type: ignore[arg-type]
    asyncio.run(store.put_state("a", {"spent_usd": 0.5}))
    asyncio.run(store.put_state("a", {"spent_usd": 0.7}))  # the older state event is deleted: still billed

    assert len(calls) >= 7
    assert meter.total(MEMORY_EVENTS_WRITTEN) == len(calls)
    state_calls = [c for c in calls if c["actorId"] == "agentkit-state"]
    assert len(state_calls) == 2
    # Each write is attributed to the Claude session it was made for.
    by_session = {s: n for (m, s), n in meter.counts.items() if m == MEMORY_EVENTS_WRITTEN}
    assert by_session == {"a": len(calls_for(calls, "a")), "b": len(calls_for(calls, "b"))}
    assert meter.total(MEMORY_RETRIEVALS) == 0


def test_a_failed_create_event_is_not_counted(moto_client: Any) -> None:
    meter = Meter()
    store = AgentCoreMemorySessionStore(MEMORY, client=moto_client, on_usage=meter)
    with Stubber(moto_client) as stub:
        stub.add_client_error("create_event", "ServiceException", http_status_code=500)
        with pytest.raises(SessionStoreError):
            asyncio.run(store.put_state("a", {"spent_usd": 1.0}))
    assert meter.total(MEMORY_EVENTS_WRITTEN) == 0


def test_a_failing_meter_never_fails_the_write(moto_client: Any) -> None:
    def broken(metric: str, session: str | None) -> None:
        raise RuntimeError("metrics are down")

    store = AgentCoreMemorySessionStore(MEMORY, client=moto_client, on_usage=broken)
    asyncio.run(store.put_state("a", {"spent_usd": 1.0}))
    assert asyncio.run(store.get_state("a")) == {"spent_usd": 1.0}


def test_long_term_memory_counts_its_events_and_each_retrieval(tmp_path: Path) -> None:
    meter = Meter()
    with mock_aws():
        client = boto3.client("bedrock-agentcore", region_name="us-east-1")
        calls = completed_calls(client, "CreateEvent")
        recall = MemoryRecall(client=client, memory_id=MEMORY, namespaces=["/n"], on_usage=meter)
        assert asyncio.run(
            recall.record_turn(
                actor_id="alice", session_id="c1", user_text="hi", assistant_text="x" * 250_000
            )
        )
    assert meter.counts[(MEMORY_EVENTS_WRITTEN, "c1")] == len(calls) == 1

    client = boto3.client(
        "bedrock-agentcore", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    recall = MemoryRecall(client=client, memory_id=MEMORY, namespaces=["/a/{actorId}", "/b"], on_usage=meter)
    with Stubber(client) as stub:
        for namespace in ("/a/alice", "/b"):
            stub.add_response(
                "retrieve_memory_records",
                {"memoryRecordSummaries": []},
                {"memoryId": MEMORY, "namespace": namespace, "searchCriteria": ANY, "maxResults": 5},
            )
        asyncio.run(recall.recall(actor_id="alice", session_id="c1", query="what do I like?"))
        stub.assert_no_pending_responses()
    assert meter.counts[(MEMORY_RETRIEVALS, "c1")] == 2  # one per namespace searched
