"""The HTTP edge over real sockets: nesting, size, methods, chunking — every error follows
the contract ``{"type": "error", "code", "message"}``, and a huge body is refused without being buffered.

One real ``python -m runtime`` with the default prompt limit (runtime.env.DEFAULT_MAX_PROMPT_CHARS) and the fake CLI.
"""

from __future__ import annotations

import base64
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from harness.cli import write_fake_cli
from harness.runtime_server import RuntimeServer, session_id
from runtime.env import DEFAULT_MAX_PROMPT_CHARS

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("edge")
    srv = RuntimeServer(
        env={
            "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp)),
            "AGENTKIT_STATE_DIR": str(tmp / "state"),
        },
        log_path=tmp / "server.log",
    ).start()
    yield srv
    srv.stop()


def raw_request(port: int, head: bytes, body_chunks: Any = (), *, timeout: float = 30.0) -> tuple[int, dict]:
    """Send ``head`` then each chunk (stopping quietly if the server closes), and parse the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        try:
            for chunk in body_chunks:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the whole body was sent
        data = b""
        try:
            while not _complete(data):
                part = sock.recv(65536)
                if not part:
                    break
                data += part
        except ConnectionResetError:
            pass
    head_raw, _, body = data.partition(b"\r\n\r\n")
    status = int(head_raw.split(b" ", 2)[1])
    headers = dict(line.decode().split(": ", 1) for line in head_raw.split(b"\r\n")[1:] if b": " in line)
    assert headers.get("content-type", "").startswith("application/json"), (status, headers, body[:200])
    if headers.get("transfer-encoding") == "chunked":
        body = _unchunk(body)
    return status, json.loads(body)


def _complete(data: bytes) -> bool:
    """A whole reply has arrived (Content-Length, or the last chunk)."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return body.endswith(b"0\r\n\r\n")


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_raw, _, rest = data.partition(b"\r\n")
        size = int(size_raw, 16)
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2 :]
    return out


def assert_contract(body: dict, code: str) -> None:
    assert set(body) == {"type", "code", "message"}, body
    assert body["type"] == "error" and body["code"] == code and body["message"], body


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_deeply_nested_body_is_a_contract_error_not_a_500(server: RuntimeServer) -> None:
    for body in (
        b"[" * 100_000 + b"]" * 100_000,
        b'{"prompt": "hi", "metadata": ' + b'{"a":' * 5000 + b"1" + b"}" * 5001,
    ):
        reply = server.invoke(body=body, session=session_id("deep"))
        assert reply.status == 400, reply.body
        assert_contract(reply.body, "invalid_request")
        assert "nested" in reply.body["message"]


def test_deeply_nested_jwt_payload_is_a_contract_error(server: RuntimeServer) -> None:
    # 3,000 levels: past Python's recursion limit, and small enough (8 KB) for the HTTP layer's header limit.
    payload = base64.urlsafe_b64encode(b'{"sub":' + b"[" * 3000 + b"]" * 3000 + b"}").rstrip(b"=")
    token = "eyJhbGciOiJub25lIn0." + payload.decode() + ".sig"
    reply = server.invoke("hi", session=session_id("jwt"), headers={"Authorization": f"Bearer {token}"})
    assert reply.status == 400, reply.body
    assert_contract(reply.body, "invalid_request")
    assert "bearer token" in reply.body["message"]  # refused by the JWT check, not by the HTTP layer


@pytest.mark.parametrize("char", ["é", "日", "😀"])
def test_an_80000_character_non_ascii_prompt_sent_with_u_escapes_is_accepted(
    server: RuntimeServer, char: str
) -> None:
    body = json.dumps({"prompt": char * 80_000 + " [big:20]", "stream": False}).encode()  # ensure_ascii
    assert b"\\u" in body and len(body) > 4 * 100_000 + 64 * 1024  # the old pre-check refused these
    reply = server.invoke(body=body, session=session_id(f"wide-{ord(char)}"))
    assert reply.status == 200, reply.body
    assert reply.body["type"] == "result"


def test_a_prompt_over_the_limit_is_still_refused(server: RuntimeServer) -> None:
    body = json.dumps({"prompt": "😀" * (DEFAULT_MAX_PROMPT_CHARS + 1)}).encode()
    reply = server.invoke(body=body, session=session_id("over"))
    assert reply.status == 413
    assert_contract(reply.body, "prompt_too_large")


def _post_head(length: int | None) -> bytes:
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (
        f"POST /invocations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
    ).encode()


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_50_mb_body_is_refused_without_being_buffered(server: RuntimeServer, framing: str) -> None:
    assert server.proc is not None
    mib = 1024 * 1024
    piece = b'{"prompt": "' + b"x" * (mib - 12)
    before = rss_kib(server.proc.pid)
    if framing == "content-length":
        chunks: Any = (piece for _ in range(50))
        head = _post_head(50 * mib)
    else:
        chunks = (b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(50))
        head = _post_head(None)
    status, body = raw_request(server.port, head, chunks)
    after = rss_kib(server.proc.pid)
    assert status == 413
    assert_contract(body, "prompt_too_large")
    # The old server read all 50 MiB first (+114 MiB measured); the limit is ~1.2 MB.
    assert after - before < 16 * 1024, f"RSS grew by {(after - before) / 1024:.1f} MiB"
    assert server.ping()["status"] == "Healthy"


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/invocations", 405, "method_not_allowed"),
        ("PUT", "/invocations", 405, "method_not_allowed"),
        ("DELETE", "/ping", 405, "method_not_allowed"),
        ("POST", "/ping", 405, "method_not_allowed"),
        ("GET", "/nowhere", 404, "not_found"),
    ],
)
def test_wrong_methods_and_paths_get_contract_errors(
    server: RuntimeServer, method: str, path: str, status: int, code: str
) -> None:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()
    got, body = raw_request(server.port, head)
    assert got == status
    assert_contract(body, code)


@pytest.mark.parametrize(
    "chunks",
    [
        [b"zz\r\n{}\r\n0\r\n\r\n"],  # chunk size is not hex
        [b"5\r\n{}\r\n0\r\n\r\n"],  # chunk shorter than its size, then garbage
        [b"2\r\n{}XX0\r\n\r\n"],  # no CRLF after the chunk data
    ],
)
def test_bad_chunking_gets_a_contract_error(server: RuntimeServer, chunks: list[bytes]) -> None:
    status, body = raw_request(server.port, _post_head(None), chunks)
    assert status == 400
    assert_contract(body, "invalid_request")
    assert server.ping()["status"] == "Healthy"


def test_malformed_request_line_gets_a_contract_error(server: RuntimeServer) -> None:
    status, body = raw_request(server.port, b"POST /invocations HTTP/1.1\r\nBad Header Line\r\n\r\n")
    assert status == 400
    assert_contract(body, "invalid_request")
