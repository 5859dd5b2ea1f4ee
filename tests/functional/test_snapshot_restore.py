"""AgentCore Runtime V2: two restores of one initialised runtime make their own ids, names and credentials.

One ``python -m runtime`` start-up in ``v2`` mode, copied twice as a memory-image restore would copy it
(:mod:`harness.snapshot_restore` explains how the copy stays faithful). Each copy serves real HTTP with the
fake Claude CLI driving the real SDK; its session lives in AgentCore Memory (moto server), so its first turn
resumes the stored transcript through the SDK (a temporary directory) and its writes are journaled by the
spool; AWS credentials come from a container-credentials endpoint on loopback that counts its callers.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from harness.cli import write_fake_cli
from harness.container_credentials import ContainerCredentials
from harness.runtime_server import ROOT, RuntimeServer, free_port, session_id
from tests.functional.conftest import create_memory

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def credentials() -> Iterator[ContainerCredentials]:
    with ContainerCredentials() as endpoint:
        yield endpoint


def _seed_transcript(moto_server: str, memory_id: str, workspace: Path, claude_session: str) -> None:
    """A transcript in the store, so a restored copy's first turn resumes it (the SDK materialises it)."""
    from claude_agent_sdk import project_key_for_directory

    from runtime.session_store.agentcore.store import AgentCoreMemorySessionStore

    client = boto3.client(
        "bedrock-agentcore",
        region_name="us-east-1",
        endpoint_url=moto_server,
        aws_access_key_id="seed",
        aws_secret_access_key="seed",
    )
    store = AgentCoreMemorySessionStore(memory_id, client=client)
    key = {"project_key": project_key_for_directory(str(workspace.resolve())), "session_id": claude_session}
    entry = {
        "type": "user",
        "uuid": "00000000-0000-4000-8000-000000000001",
        "sessionId": claude_session,
        "cwd": str(workspace.resolve()),
        "message": {"role": "user", "content": "remember the word heron"},
        "timestamp": "2026-11-25T00:00:00.000Z",
    }
    asyncio.run(store.append(key, [entry]))  # type: ignore[arg-type,list-item]


def _fake_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_two_restores_of_one_initialised_runtime_share_no_per_session_value(
    tmp_path: Path, moto_server: str, credentials: ContainerCredentials
) -> None:
    from runtime.identity import claude_session_id

    memory_id = create_memory(moto_server, name="agentkit_restore")
    workspace = tmp_path / "state" / "workspace"
    workspace.mkdir(parents=True)
    resumed = session_id("restored")
    _seed_transcript(moto_server, memory_id, workspace, claude_session_id(resumed, None))

    ports = [free_port(), free_port()]
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "AGENTKIT_PLATFORM_VERSION": "v2",
            "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp_path)),
            "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
            "AGENTKIT_SPANS_FILE": str(tmp_path / "spans.jsonl"),
            "AGENTKIT_METRICS": "off",
            "AGENTKIT_SESSION_STORE": f"agentcore://{memory_id}",
            "AGENTKIT_STORE_WRITE_BEHIND": "1",  # every write journaled: the journal's name is observable
            "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": moto_server,
            "AWS_REGION": "us-east-1",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI": credentials.full_uri,
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
            "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "FAKE_CLAUDE_LOG": str(tmp_path / "fake.log"),
        }
    )
    out = tmp_path / "snapshot.json"
    log = open(tmp_path / "runtime.log", "wb")  # noqa: SIM115 - closed below
    image = subprocess.Popen(
        [sys.executable, "-m", "harness.snapshot_restore", str(out), *map(str, ports)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    children: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not out.exists() and image.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert out.exists(), (tmp_path / "runtime.log").read_text()[-3000:]
        snapshot = json.loads(out.read_text())
        assert "error" not in snapshot, snapshot
        children = snapshot["children"]
        # The image was fully initialised before it could listen (what V2 snapshots): SDK and services ready.
        assert snapshot["initialised"]["sdk_imported"] and snapshot["initialised"]["services_built"]
        fetched_before_restore = len(credentials.calls)

        replies, fresh = [], []
        for port in ports:
            server = RuntimeServer(env={}, log_path=tmp_path / "unused.log", port=port)
            deadline = time.monotonic() + 30
            while True:
                try:
                    server.ping()
                    break
                except OSError:
                    assert time.monotonic() < deadline, (tmp_path / "runtime.log").read_text()[-3000:]
                    time.sleep(0.05)
            replies.append(server.invoke("what was the word?", session=resumed, stream=False))
            fresh.append(server.invoke("hello", stream=False))  # no session header: the runtime mints an id
        # While the copies live: a clean shutdown removes a journal whose batches were all delivered.
        journals = sorted(p.name for p in (tmp_path / "state" / "spool").glob("spool-*.jsonl"))
    finally:
        for pid in children:
            os.kill(pid, signal.SIGTERM)
        image.wait(timeout=30)
        log.close()

    runtime_log = (tmp_path / "runtime.log").read_text()
    assert all(r.status == 200 for r in replies + fresh), runtime_log[-3000:]

    # Every property is checked, and all that fail are reported together.
    shared: list[str] = []

    # Trace and span ids: drawn from Python's random, whose state is part of the image.
    spans = [json.loads(line) for line in (tmp_path / "spans.jsonl").read_text().splitlines()]
    invocations = [s for s in spans if s["name"].startswith("invoke_agent")]
    assert len(invocations) == 4
    if len({s["traceId"] for s in invocations}) != 4:
        shared.append(f"trace ids: {sorted(s['traceId'] for s in invocations)}")
    span_ids = [s["spanId"] for s in spans]
    if len(span_ids) != len(set(span_ids)):
        shared.append(f"span ids: {len(span_ids) - len(set(span_ids))} repeated")

    # Request ids the runtime makes (a new session's id): different per restored copy.
    if fresh[0].body["session_id"] == fresh[1].body["session_id"]:
        shared.append(f"minted session id {fresh[0].body['session_id']}")

    # Temporary names: each copy resumed the stored transcript in a directory named by tempfile.
    resume_dirs = [
        Path(e["env"]["CLAUDE_CONFIG_DIR"]).name
        for e in _fake_log(tmp_path / "fake.log")
        if e["event"] == "start" and "claude-resume-" in e["env"].get("CLAUDE_CONFIG_DIR", "")
    ]
    assert len(resume_dirs) == 2, resume_dirs
    if resume_dirs[0] == resume_dirs[1]:
        shared.append(f"temporary directory {resume_dirs[0]}")

    # Spool journals: one per copy, not one name shared by both.
    if len(journals) != 2:
        shared.append(f"spool journals {journals}")

    # Credentials: fetched by each restored copy, after the restore (none carried over from start-up).
    if fetched_before_restore != 0 or len(credentials.calls) < 2:
        shared.append(
            f"credentials fetched {fetched_before_restore} time(s) before the restore, "
            f"{len(credentials.calls) - fetched_before_restore} after"
        )
    assert shared == [], "\n".join(shared) + "\n" + runtime_log[-2000:]
