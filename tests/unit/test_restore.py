"""What a snapshot restore renews (runtime.process.restore), piece by piece; the whole is shown by
tests/functional/test_snapshot_restore.py."""

from __future__ import annotations

import asyncio
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.container_credentials import ContainerCredentials
from runtime import aws
from runtime.process import restore


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    restore._reset_for_tests()
    yield
    restore._reset_for_tests()


def _state_image() -> tuple[object, object]:
    """What a snapshot holds of the two in-memory generators: random's state and tempfile's name sequence."""
    names = tempfile._get_candidate_names()  # type: ignore[attr-defined]
    return random.getstate(), names.rng.getstate()


def _restore_image(image: tuple[object, object]) -> None:
    random.setstate(image[0])  # type: ignore[arg-type]
    tempfile._get_candidate_names().rng.setstate(image[1])  # type: ignore[attr-defined]


def test_random_draws_and_trace_ids_differ_after_a_refresh() -> None:
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    ids = RandomIdGenerator()
    image = _state_image()
    first = (ids.generate_trace_id(), ids.generate_span_id(), next(tempfile._get_candidate_names()))  # type: ignore[attr-defined]
    _restore_image(image)
    again = (ids.generate_trace_id(), ids.generate_span_id(), next(tempfile._get_candidate_names()))  # type: ignore[attr-defined]
    assert again == first  # the same image draws the same ids: what every restored session would share
    _restore_image(image)
    restore.refresh()
    renewed = (ids.generate_trace_id(), ids.generate_span_id(), next(tempfile._get_candidate_names()))  # type: ignore[attr-defined]
    assert renewed[0] != first[0] and renewed[1] != first[1] and renewed[2] != first[2]


def test_check_refreshes_once_and_runs_hooks_in_order_past_a_failing_one() -> None:
    calls: list[str] = []

    def broken() -> None:
        calls.append("broken")
        raise OSError("disk gone")

    restore.on_restore("a", lambda: calls.append("a"))
    restore.on_restore("broken", broken)
    remove = restore.on_restore("removed", lambda: calls.append("removed"))
    restore.on_restore("c", lambda: calls.append("c"))
    remove()
    before = restore.instance_id()
    assert restore.check() is True
    assert restore.check() is False  # once per process
    assert calls == ["a", "broken", "c"]
    assert restore.instance_id() != before


@pytest.fixture
def container_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ContainerCredentials]:
    with ContainerCredentials() as endpoint:
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", endpoint.full_uri)
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        yield endpoint


def test_aws_clients_resolve_credentials_on_first_use_and_again_after_a_refresh(
    container_credentials: ContainerCredentials,
) -> None:
    aws.warm()  # start-up work: service models only
    client = aws.agentcore_client("us-east-1")
    session = aws.session("us-east-1")
    assert len(container_credentials.calls) == 0  # nothing resolved before the snapshot
    first = client._request_signer._credentials.access_key
    signing = session.get_credentials().access_key
    assert len(container_credentials.calls) == 2
    restore.refresh()
    assert client._request_signer._credentials.access_key not in (first, signing)
    assert session.get_credentials().access_key != signing
    assert len(container_credentials.calls) == 4
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": aws.MAX_ATTEMPTS}


def test_telemetry_instance_id_is_renewed_on_existing_tracers() -> None:
    from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from runtime.observe.otel_setup import refresh_instance_resource

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")  # made before the snapshot
    image_id = provider.resource.attributes[SERVICE_INSTANCE_ID]
    assert refresh_instance_resource("restored-1", [provider]) == 1
    with tracer.start_as_current_span("after restore"):
        pass
    (span,) = exporter.get_finished_spans()
    assert span.resource.attributes[SERVICE_INSTANCE_ID] == "restored-1" != image_id


def test_spool_journal_gets_its_own_name_and_sqlite_its_own_connection(tmp_path: Path) -> None:
    from runtime.session_store.spool import SpoolingSessionStore
    from runtime.session_store.sqlite import SqliteSessionStore

    inner = SqliteSessionStore(tmp_path / "s.db")
    spool = SpoolingSessionStore(inner, spool_dir=tmp_path / "spool")
    key = {"project_key": "p", "session_id": "00000000-0000-4000-8000-000000000000"}
    asyncio.run(inner.load(key))  # type: ignore[arg-type]
    connection = inner._db
    image_name = spool._path
    spool.after_restore()
    assert spool._path != image_name and spool._path.parent == image_name.parent
    assert inner._db is None
    asyncio.run(inner.load(key))  # type: ignore[arg-type]
    assert inner._db is not None and inner._db is not connection


def test_ping_reports_the_time_of_the_restore(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from runtime.config.settings import Settings
    from runtime.http.server import build_app

    app = build_app(Settings.from_env({"AGENTKIT_STATE_DIR": str(tmp_path)}))
    with TestClient(app) as client:
        client.get("/ping")  # the first healthy /ping: V2 takes the snapshot here, with this timestamp
        app._last_status_update_time = 1_000_000.0  # (an image taken long ago)
        assert (
            client.get("/ping").json()["time_of_last_update"] == 1_000_000
        )  # unchanged status, image's time
        app.reset_ping_clock()
        assert client.get("/ping").json()["time_of_last_update"] > 1_700_000_000
