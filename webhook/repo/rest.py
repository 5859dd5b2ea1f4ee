"""JSON and archive calls to a tracker's REST API over ``urllib`` (the Lambda ships no HTTP library).

Retries (up to ``attempts``, backing off): a 429/5xx answer, or a failure to connect or send; a rate-limited
answer (:func:`rate_limit_wait`) waits as long as the API asks, up to :data:`MAX_RATE_LIMIT_WAIT_SECONDS`. A call that
is not ``idempotent`` (it may have created something: a pull request, a ref) is not retried once the
request was sent and no answer came; the caller's own look-up (an existing branch or pull request) makes
the next run safe. Every failure raises :class:`webhook.errors.TrackerApiError` (``status``, ``retryable``).

Downloads follow redirects themselves (GitHub answers an archive request with a 302 to
``codeload.github.com``): at most :data:`MAX_REDIRECTS`, never from ``https`` to ``http``, and the token
headers are sent only to the API's own origin, never to the host a redirect names.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import IO, Any

from webhook.errors import TrackerApiError
from webhook.trackers.http import USER_AGENT, answer_error, backoff

MAX_REDIRECTS = 3
#: The longest a call waits for a rate limit to pass before it gives the work back to its queue.
MAX_RATE_LIMIT_WAIT_SECONDS = 30.0


def rate_limit_wait(status: int, headers: Mapping[str, str] | None, *, now: float) -> float | None:
    """Seconds a rate-limited answer asks to wait, or ``None`` when it is not one.

    GitHub answers a primary or secondary rate limit with 403 or 429 and either ``retry-after`` (seconds) or
    ``x-ratelimit-remaining: 0`` with ``x-ratelimit-reset`` (epoch seconds) ("Rate limits for the REST
    API"); GitLab answers 429 with ``Retry-After`` (and ``RateLimit-Reset``).
    """
    if status not in (403, 429) or headers is None:
        return None
    after = str(headers.get("retry-after") or "").strip()
    if after.isdigit():
        return float(after)
    if str(headers.get("x-ratelimit-remaining") or "").strip() == "0":
        reset = str(headers.get("x-ratelimit-reset") or headers.get("ratelimit-reset") or "").strip()
        if reset.isdigit():
            return max(0.0, float(reset) - now)
    return 60.0 if status == 429 else None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx reaches the caller as an HTTPError; :meth:`Rest.download` follows it


_OPENER = urllib.request.build_opener(_NoRedirect)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


class Rest:
    """One tracker API: ``base_url`` (``https://api.github.com``, ``https://gitlab.com/api/v4``), the
    headers carrying the token (read on every call, so a rotated secret is picked up), the service's name
    for messages, timeout, attempts and sleep (injected in tests)."""

    def __init__(
        self,
        *,
        base_url: str,
        auth_headers: Callable[[], Mapping[str, str]],
        service: str,
        extra_headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._clock = clock
        self._auth = auth_headers
        self.service = service
        self._extra = dict(extra_headers or {})
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self._sleep = sleep

    def url(self, path: str, query: Mapping[str, str] | None = None) -> str:
        url = path if path.startswith(("https://", "http://")) else f"{self.base_url}{path}"
        return f"{url}?{urllib.parse.urlencode(query)}" if query else url

    def call(
        self,
        method: str,
        path: str,
        payload: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        allow_404: bool = False,
    ) -> Any:
        """``method`` ``path`` with a JSON ``payload``; the JSON answer (``None`` for a 404 when
        ``allow_404``). ``idempotent`` defaults to true for every method but POST."""
        url = self.url(path, query)
        data = None if payload is None else json.dumps(payload).encode()
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json", **self._extra, **self._auth()}
        if data is not None:
            headers["Content-Type"] = "application/json"
        repeatable = method != "POST" if idempotent is None else idempotent
        last: TrackerApiError | None = None
        wait: float | None = None
        for attempt in range(self.attempts):
            if attempt:
                self._sleep(backoff(attempt) if wait is None else wait)
            wait = None
            request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310
            try:
                with _OPENER.open(request, timeout=self.timeout) as resp:
                    body = resp.read()
                return json.loads(body) if body.strip() else {}
            except urllib.error.HTTPError as exc:
                if exc.code == 404 and allow_404:
                    return None
                last = answer_error(exc, service=self.service, target=f"{method} {url}")
                answered = {k.lower(): v for k, v in (exc.headers or {}).items()}
                wait = rate_limit_wait(exc.code, answered, now=self._clock())
                if wait is not None:
                    # Rate limited: nothing was created. Wait as long as the API says, or give the work back
                    # to its queue (retryable) when that is longer than this call may wait.
                    last = TrackerApiError(
                        f"{self.service} rate-limited {method} {url} for {wait:.0f}s",
                        status=exc.code,
                        retryable=True,
                    )
                    if wait > MAX_RATE_LIMIT_WAIT_SECONDS:
                        raise last from None
                    continue
                if not last.retryable:
                    raise last from None
            except urllib.error.URLError as exc:  # connect / send failed: nothing reached the API
                last = TrackerApiError(f"{self.service} API unreachable at {url}: {exc.reason}")
            except (TimeoutError, OSError, http.client.HTTPException, ValueError) as exc:
                last = TrackerApiError(
                    f"no usable answer from {self.service} on {method} {url} ({type(exc).__name__}: {exc})",
                    retryable=repeatable,
                )
                if not repeatable:
                    raise last from None
        assert last is not None
        raise last

    def download(
        self,
        path: str,
        *,
        max_bytes: int,
        query: Mapping[str, str] | None = None,
        sink: IO[bytes] | None = None,
    ) -> bytes:
        """GET ``path`` as bytes (at most ``max_bytes``), following redirects as the module docstring says.
        With ``sink`` the body is written there in chunks of :data:`CHUNK_BYTES` instead (a spool file: the
        body is never held whole) and ``b""`` is returned.

        Raises :class:`TrackerApiError` (status 413 when over ``max_bytes``).
        """
        url = self.url(path, query)
        home = _origin(url)
        for _ in range(MAX_REDIRECTS + 1):
            same_origin = _origin(url) == home
            headers = {"User-Agent": USER_AGENT, **self._extra, **(self._auth() if same_origin else {})}
            request = urllib.request.Request(url, headers=headers)  # noqa: S310
            try:
                with _OPENER.open(request, timeout=self.timeout) as resp:
                    if sink is None:
                        body = resp.read(max_bytes + 1)
                    else:
                        body, size = b"", _copy(resp, sink, max_bytes + 1)
            except urllib.error.HTTPError as exc:
                location = exc.headers.get("Location") if exc.code in (301, 302, 303, 307, 308) else None
                if not location:
                    raise answer_error(exc, service=self.service, target=f"GET {url}") from None
                target = urllib.parse.urljoin(url, location)
                if _origin(target)[0] not in ("https", _origin(url)[0]):
                    raise TrackerApiError(
                        f"{self.service} redirected {url} to {target}, which is not https", retryable=False
                    ) from None
                url = target
                continue
            except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as exc:
                raise TrackerApiError(f"{self.service} download of {url} failed: {exc}") from None
            if (len(body) if sink is None else size) > max_bytes:
                raise TrackerApiError(
                    f"{self.service} archive at {url} is over {max_bytes} bytes", status=413, retryable=False
                )
            return body
        raise TrackerApiError(f"{self.service} redirected more than {MAX_REDIRECTS} times from {path}")


#: What a streamed download reads at a time.
CHUNK_BYTES = 1024 * 1024


def _copy(source: Any, sink: IO[bytes], limit: int) -> int:
    """Copy at most ``limit`` bytes of ``source`` to ``sink``; the number copied."""
    copied = 0
    while copied < limit:
        chunk = source.read(min(CHUNK_BYTES, limit - copied))
        if not chunk:
            break
        sink.write(chunk)
        copied += len(chunk)
    return copied


def quote(value: str, *, keep_slashes: bool = False) -> str:
    """A path segment with special characters escaped; ``/`` too unless ``keep_slashes`` (GitLab wants a
    branch name's slashes escaped in one segment, GitHub's ref paths take them as they are)."""
    return urllib.parse.quote(value, safe="/" if keep_slashes else "")
