"""Snapshots read from S3, over real HTTP: the real runtime reads the archive from a moto server on loopback
(``AWS_ENDPOINT_URL_S3``), only under its configured location and only up to its limit, then works as with an
inline snapshot."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from harness.archives import tar_gz
from harness.runtime_server import EDITING_AGENT, RuntimeServer, fake_cli_server, session_id

pytestmark = pytest.mark.timeout(120)

BUCKET = "kit-workspaces"
FILES = {"src/calc.py": b"def add(a, b):\n    return a - b\n"}
FIX = '[tool:Edit {"file_path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}]'


@pytest.fixture(scope="module")
def s3(moto_server: str) -> Any:
    client = boto3.client(
        "s3",
        region_name="us-east-1",
        endpoint_url=moto_server,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=BUCKET)
    return client


@pytest.fixture(scope="module")
def server(moto_server: str, s3: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeServer]:
    tmp = tmp_path_factory.mktemp("workspace-s3")
    (tmp / "agent.json").write_text(json.dumps(EDITING_AGENT))
    srv = fake_cli_server(
        tmp,
        AGENTKIT_AGENT_FILE=str(tmp / "agent.json"),
        AGENTKIT_SANDBOX="off",
        AWS_ENDPOINT_URL_S3=moto_server,
        AGENTKIT_WORKSPACE_S3_URI=f"s3://{BUCKET}/dev/",
        AGENTKIT_WORKSPACE_MAX_S3_BYTES="50000",
    ).start()
    yield srv
    srv.stop()


def invoke(server: RuntimeServer, name: str, uri: str, prompt: str = FIX) -> Any:
    return server.invoke(prompt, session=session_id(name), stream=False, extra={"workspace": {"s3_uri": uri}})


def test_a_snapshot_uploaded_under_the_location_is_read_and_patched(server: RuntimeServer, s3: Any) -> None:
    s3.put_object(Bucket=BUCKET, Key="dev/run-1/ws.tar.gz", Body=tar_gz(list(FILES.items())))
    reply = invoke(server, "s3-ok", f"s3://{BUCKET}/dev/run-1/ws.tar.gz")
    assert reply.status == 200, reply.body
    assert reply.body["changed_files"] == ["src/calc.py"]
    assert "+    return a + b" in reply.body["patch"]


@pytest.mark.parametrize(
    ("uri", "status", "code", "needle"),
    [
        (
            f"s3://{BUCKET}/prod/run-1/ws.tar.gz",
            400,
            "invalid_workspace",
            "outside the runtime's snapshot location",
        ),
        (
            "s3://other-bucket/dev/ws.tar.gz",
            400,
            "invalid_workspace",
            "outside the runtime's snapshot location",
        ),
        (f"s3://{BUCKET}/dev/../prod/ws.tar.gz", 400, "invalid_workspace", "'..' are not allowed"),
        (f"s3://{BUCKET}/dev/", 400, "invalid_workspace", "outside"),
        ("https://example.com/ws.tar.gz", 400, "invalid_workspace", "not an s3://"),
        (f"s3://{BUCKET}/dev/missing.tar.gz", 400, "invalid_workspace", "no workspace archive"),
        (f"s3://{BUCKET}/dev/big.tar.gz", 413, "workspace_too_large", "AGENTKIT_WORKSPACE_MAX_S3_BYTES"),
    ],
)
def test_uris_outside_the_location_missing_or_too_large_are_refused(
    server: RuntimeServer, s3: Any, uri: str, status: int, code: str, needle: str
) -> None:
    s3.put_object(Bucket=BUCKET, Key="prod/run-1/ws.tar.gz", Body=tar_gz(list(FILES.items())))
    s3.put_object(Bucket=BUCKET, Key="dev/big.tar.gz", Body=tar_gz([("big.bin", os.urandom(60_000))]))
    reply = invoke(server, f"s3-bad-{code}", uri)
    assert reply.status == status, reply.body
    assert reply.body["code"] == code and needle in reply.body["message"], reply.body


def test_both_or_neither_source_is_an_invalid_request(server: RuntimeServer) -> None:
    for workspace in ({"s3_uri": f"s3://{BUCKET}/dev/x", "tar_gz_b64": "QUFB"}, {}):
        reply = server.invoke(
            "x", session=session_id("s3-both"), stream=False, extra={"workspace": workspace}
        )
        assert reply.status == 400 and reply.body["code"] == "invalid_request", reply.body
        assert "exactly one of tar_gz_b64 and s3_uri" in reply.body["message"]


def test_without_a_configured_location_s3_snapshots_are_refused(tmp_path: Any) -> None:
    with fake_cli_server(tmp_path) as srv:
        reply = srv.invoke(
            "x",
            session=session_id("s3-off"),
            stream=False,
            extra={"workspace": {"s3_uri": f"s3://{BUCKET}/dev/x"}},
        )
    assert reply.status == 400 and reply.body["code"] == "invalid_workspace"
    assert "AGENTKIT_WORKSPACE_S3_URI is not set" in reply.body["message"]


def test_agentkit_uploads_a_snapshot_and_applies_the_patch(
    server: RuntimeServer, s3: Any, moto_server: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from agentkit.cli import main

    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "calc.py").write_bytes(FILES["src/calc.py"])
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for name, value in {
        "AWS_ENDPOINT_URL_S3": moto_server,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    code = main(
        [
            "invoke",
            "--local",
            f"http://127.0.0.1:{server.port}",
            "--workspace",
            str(repo),
            "--workspace-s3",
            f"s3://{BUCKET}/dev",
            "--apply",
            FIX,
        ]
    )
    assert code == 0
    assert (repo / "src" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="dev/")["Contents"]]
    assert any(k.startswith("dev/agentkit-") and k.endswith(".tar.gz") for k in keys), keys
