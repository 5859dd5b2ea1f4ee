"""Hostile input, property-based (hypothesis): the invocation body parser, the JWT path and the webhook's
signature and payload parsing. Every input gets a contract error (or a valid reply), never a 500 or a crash.

The runtime side goes through the real app (``build_app`` + the HTTP guard, Starlette test client) with a
scripted registry; the webhook side through ``GitHubTracker.parse_request``, whose ``WebhookError`` the
receiver turns into ``{"error", "message"}``. The suite prints how many distinct bad inputs it tried.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from harness.runtime_server import SESSION_HEADER, session_id
from runtime.config.settings import Settings
from runtime.http.server import build_app
from runtime.wiring import Services
from webhook import trackers

FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
SECRET = "fuzz-webhook-secret"

#: Distinct bad inputs tried, per surface (printed at the end of the module).
BAD: dict[str, set[bytes]] = {"body": set(), "jwt": set(), "webhook": set()}


class ScriptedRegistry:
    runner = object()
    active_turns = 0

    async def invoke(self, **_: Any) -> AsyncIterator[dict[str, Any]]:
        async def replay() -> AsyncIterator[dict[str, Any]]:
            yield {"type": "result", "text": "ok"}

        return replay()

    async def close_all(self) -> None:
        return None


class ScriptedRunner:
    """Accepts every request (the registry above answers it)."""

    def check_request(self, request: Any) -> None:
        return None


async def _no_dependencies() -> None:
    return None


def scripted_services(registry: ScriptedRegistry) -> Services:
    return Services(registry=cast(Any, registry), runner=cast(Any, ScriptedRunner()), aclose=_no_dependencies)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    registry = ScriptedRegistry()
    settings_ = Settings(state_dir=tmp_path_factory.mktemp("fuzz"), max_prompt_chars=2000)
    with TestClient(build_app(settings_, services_factory=lambda _s: scripted_services(registry))) as tc:
        yield tc


@pytest.fixture(scope="module", autouse=True)
def report(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    counts = {k: len(v) for k, v in BAD.items()}
    line = f"hostile input: {sum(counts.values())} distinct bad inputs tried {counts}, every one a contract error"
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        print(f"\n{line}")


def assert_contract(response: Any) -> dict[str, Any]:
    """The reply's JSON body, or the last event of an accepted streaming invocation; errors are contract JSON."""
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.status_code < 400 and response.headers["content-type"].startswith("text/event-stream"):
        events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
        assert events, response.text[:300]  # a valid body without "stream": false is answered as SSE
        return events[-1]  # type: ignore[no-any-return]
    assert response.headers["content-type"].startswith("application/json"), response.text[:300]
    body = response.json()
    if response.status_code >= 400:
        assert set(body) == {"type", "code", "message"}, body
        assert body["type"] == "error" and isinstance(body["code"], str) and body["message"]
    return body


# -- strategies ------------------------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
)
field_values = st.sampled_from(
    ["prompt", "stream", "max_turns", "max_budget_usd", "metadata", "workspace", "extra", ""]
)


@st.composite
def deep(draw: st.DrawFn) -> bytes:
    depth = draw(st.integers(min_value=65, max_value=200_000))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    inner = b'"x"' if opener == b"[" else b"1"
    doc = opener * depth + inner + closer * depth
    if draw(st.booleans()):
        doc = b'{"prompt": "hi", "metadata": ' + doc + b"}"
    return doc


workspaces = st.one_of(
    st.dictionaries(st.sampled_from(["tar_gz_b64", "s3_uri", "x"]), json_values, max_size=3),
    st.binary(max_size=200).map(lambda b: {"tar_gz_b64": base64.b64encode(b).decode()}),  # base64, not tar.gz
    st.text(max_size=60).map(lambda t: {"tar_gz_b64": t}),
    st.text(max_size=60).map(lambda t: {"s3_uri": "s3://" + t}),
)
bodies = st.one_of(
    workspaces.map(lambda w: json.dumps({"prompt": "hi", "workspace": w}).encode()),
    st.binary(max_size=300),  # arbitrary bytes: mostly not UTF-8 JSON
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    json_values.map(lambda v: json.dumps(v).encode()),  # JSON that is not an invocation
    st.dictionaries(field_values, json_values, max_size=5).map(lambda d: json.dumps(d).encode()),
    deep(),
    st.integers(min_value=2001, max_value=20_000).map(lambda n: json.dumps({"prompt": "é" * n}).encode()),
    json_values.map(lambda v: json.dumps(v).encode()[:-1]),  # truncated
)


# -- the invocation body ---------------------------------------------------------------------------------


@FUZZ
@given(body=bodies)
def test_any_body_gets_a_contract_reply(client: TestClient, body: bytes) -> None:
    response = client.post(
        "/invocations",
        content=body,
        headers={SESSION_HEADER: session_id("fuzz"), "content-type": "application/json"},
    )
    reply = assert_contract(response)
    if response.status_code >= 400:
        BAD["body"].add(body)
    else:  # accepted: it really was a valid invocation
        doc = json.loads(body)
        assert isinstance(doc, dict) and isinstance(doc.get("prompt"), str) and doc["prompt"].strip()
        assert reply["type"] == "result"


# -- the JWT path ----------------------------------------------------------------------------------------


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


header_text = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=80)
payloads = st.one_of(
    st.binary(max_size=120),
    json_values.map(lambda v: json.dumps(v).encode()),
    deep(),
    st.dictionaries(st.sampled_from(["sub", "iss", "aud"]), json_values, max_size=3).map(
        lambda d: json.dumps(d).encode()
    ),
)
tokens = st.one_of(
    header_text,
    st.tuples(header_text, payloads, header_text).map(lambda t: f"{b64(t[0].encode())}.{b64(t[1])}.{t[2]}"),
    st.tuples(payloads, st.integers(0, 3)).map(lambda t: b64(t[0]) + "=" * t[1]).map(lambda p: f"h.{p}.s"),
)


@FUZZ
@given(token=tokens)
def test_any_bearer_token_gets_a_contract_reply(client: TestClient, token: str) -> None:
    response = client.post(
        "/invocations",
        json={"prompt": "hi", "stream": False},
        headers={SESSION_HEADER: session_id("jwt"), "authorization": f"Bearer {token}"},
    )
    assert_contract(response)
    if response.status_code >= 400:
        BAD["jwt"].add(token.encode())


# -- the webhook signature and payload -------------------------------------------------------------------


def sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


TRACKER = trackers.GitHubTracker(trackers.TrackerOptions(webhook_secret=lambda: SECRET, token=lambda: "t"))
webhook_bodies = st.one_of(
    bodies,
    st.fixed_dictionaries(
        {"action": st.sampled_from(["created", "labeled", "opened", "x"])},
        optional={
            "issue": json_values,
            "comment": json_values,
            "repository": json_values,
            "sender": json_values,
        },
    ).map(lambda d: json.dumps(d).encode()),
)


@FUZZ
@given(
    body=webhook_bodies,
    event=st.sampled_from(["issues", "issue_comment", "ping", "push", ""]),
    signature=st.sampled_from(["good", "none", "bad", "garbage"]),
)
def test_any_webhook_delivery_is_a_webhook_error_or_a_decision(
    body: bytes, event: str, signature: str
) -> None:
    headers = {"content-type": "application/json", "x-github-event": event, "x-github-delivery": "d-1"}
    headers["x-hub-signature-256"] = {
        "good": sign(body),
        "none": "",
        "bad": sign(body + b"x"),
        "garbage": "sha256=\u00e9\u00e9",
    }[signature]
    try:
        decision = TRACKER.parse_request(trackers.InboundRequest.create(headers, body))
    except trackers.WebhookError as exc:
        assert 400 <= exc.http_status < 500 and exc.code and exc.message
        BAD["webhook"].add(signature.encode() + b"|" + event.encode() + b"|" + body)
        return
    assert signature == "good"
    assert decision.kind in ("accepted", "ignored", "ping")


def test_a_deeply_nested_signed_webhook_body_is_a_400() -> None:
    body = b'{"action": "created", "issue": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    headers = {
        "x-github-event": "issue_comment",
        "x-github-delivery": "d-2",
        "x-hub-signature-256": sign(body),
    }
    with pytest.raises(trackers.BadRequestError, match="nested"):
        TRACKER.parse_request(trackers.InboundRequest.create(headers, body))


def test_an_unexpected_error_in_the_handler_is_a_contract_500_without_its_text(tmp_path: Path) -> None:
    class Broken(ScriptedRegistry):
        async def invoke(self, **_: Any) -> AsyncIterator[dict[str, Any]]:
            raise RuntimeError("db password=hunter2 leaked in an exception")

    app = build_app(Settings(state_dir=tmp_path), services_factory=lambda _s: scripted_services(Broken()))
    with TestClient(app, raise_server_exceptions=False) as tc:
        response = tc.post(
            "/invocations", json={"prompt": "hi"}, headers={SESSION_HEADER: session_id("boom")}
        )
    assert response.status_code == 500
    assert response.json()["type"] == "error" and response.json()["code"] == "internal_error"
    assert "hunter2" not in response.text
