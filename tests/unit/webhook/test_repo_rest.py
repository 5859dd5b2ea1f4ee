"""The repository library's REST client: redirects (count, token only to the API's origin), size caps,
which failures are retried."""

from __future__ import annotations

import io
import random
import re
from collections.abc import Iterator
from typing import Any

import pytest

from harness.github_repo_api import GitHubRepoApi
from harness.repo_standin import JsonStandIn
from webhook.errors import TrackerApiError
from webhook.repo import GitHubRepo, SnapshotLimits, SnapshotTooLarge
from webhook.repo.rest import MAX_REDIRECTS, Rest


class Redirecting(JsonStandIn):
    """``/loop`` redirects to itself; ``/hop/<n>`` to ``/hop/<n-1>`` until ``/hop/0`` answers bytes."""

    def authorized(self, request: dict[str, Any]) -> bool:
        return True

    def routes(self) -> list[tuple[str, str, Any]]:
        return [
            ("GET", r"/loop", self._loop),
            ("GET", r"/hop/(\d+)", self._hop),
            ("POST", r"/slow", self._slow),
        ]

    def _loop(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        request["reply_headers"] = {"Location": "/loop"}
        return 302, b""

    def _hop(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        n = int(m[1])
        if n == 0:
            return 200, b"x" * 100
        request["reply_headers"] = {"Location": f"/hop/{n - 1}"}
        return 302, b""

    def _slow(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        return 502, {"message": "bad gateway"}


@pytest.fixture
def server() -> Iterator[Redirecting]:
    with Redirecting() as srv:
        yield srv


def _rest(url: str, sleeps: list[float] | None = None) -> Rest:
    return Rest(
        base_url=url,
        auth_headers=lambda: {"Authorization": "Bearer t"},
        service="Test",
        sleep=(sleeps if sleeps is not None else []).append,
    )


def test_redirects_are_followed_up_to_the_limit_and_the_same_origin_keeps_the_token(
    server: Redirecting,
) -> None:
    assert _rest(server.url).download(f"/hop/{MAX_REDIRECTS}", max_bytes=1000) == b"x" * 100
    assert all(r["headers"].get("authorization") == "Bearer t" for r in server.requests)
    with pytest.raises(TrackerApiError, match="redirected more than"):
        _rest(server.url).download("/loop", max_bytes=1000)


def test_a_download_over_its_cap_is_refused(server: Redirecting) -> None:
    with pytest.raises(TrackerApiError) as caught:
        _rest(server.url).download("/hop/0", max_bytes=99)
    assert caught.value.status == 413 and not caught.value.retryable


def test_server_errors_are_retried_with_backoff_then_raised_retryable(server: Redirecting) -> None:
    sleeps: list[float] = []
    with pytest.raises(TrackerApiError) as caught:
        _rest(server.url, sleeps).call("POST", "/slow", {"a": 1})
    assert caught.value.status == 502 and caught.value.retryable
    assert len(server.calls("POST", "/slow")) == 3 and sleeps == [1.0, 2.0]


def test_an_oversized_repository_archive_is_a_snapshot_error() -> None:
    files = {f"f{i}": ("100644", random.Random(i).randbytes(5000)) for i in range(4)}  # incompressible
    with GitHubRepoApi(token="t", files=files) as api:
        repo = GitHubRepo("octo/app", token=lambda: "t", api_url=api.url, sleep=lambda _s: None)
        with pytest.raises(SnapshotTooLarge, match="over 1000 bytes"):
            repo.fetch_snapshot(limits=SnapshotLimits(max_download_bytes=1000))


def test_a_streamed_download_goes_to_its_sink_after_redirects_and_keeps_the_cap(server: Redirecting) -> None:
    sink = io.BytesIO()
    assert _rest(server.url).download("/hop/2", max_bytes=1000, sink=sink) == b""
    assert sink.getvalue() == b"x" * 100
    with pytest.raises(TrackerApiError) as caught:
        _rest(server.url).download("/hop/0", max_bytes=99, sink=io.BytesIO())
    assert caught.value.status == 413 and not caught.value.retryable
