"""Tracker REST calls over ``urllib`` (the Lambda ships no HTTP library), with one retry policy.

:func:`post_json` retries (up to ``attempts``) only when the tracker cannot have created the comment: a
429/5xx answer (after a 5xx, where a proxy may have lost the tracker's 201, it first looks for the comment), or a failure while connecting/sending (``URLError``). A failure *after* the request was
sent — read timeout, reset, no status line — is not retried, since the comment may exist already; it
raises a non-retryable :class:`TrackerApiError` with ``status=None``. :func:`get_json` is one attempt.
:func:`send_json` (PATCH/PUT: editing a comment) retries every failure but a 4xx: sending the same edit
twice leaves the same comment.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from webhook.errors import TrackerApiError

USER_AGENT = "agentcore-claude-kit-webhook"


def backoff(attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (1, 2, ...): 1 s, 2 s, 4 s, at most 8 s."""
    return min(8.0, 0.5 * 2**attempt)


def answer_error(exc: urllib.error.HTTPError, *, service: str, target: str) -> TrackerApiError:
    """A tracker's error answer as :class:`TrackerApiError`: its status, the first 300 bytes of its body, and
    retryable for a 429 or a 5xx (the request may succeed later; any other 4xx will not). ``target`` names the
    call (``"POST <url>"``, or the URL)."""
    detail = exc.read()[:300].decode(errors="replace")
    retryable = exc.code == 429 or exc.code >= 500
    return TrackerApiError(
        f"{service} answered {exc.code} on {target}: {detail}", status=exc.code, retryable=retryable
    )


def post_json(
    url: str,
    payload: Any,
    *,
    headers: Mapping[str, str],
    service: str,
    attempts: int = 3,
    timeout: float = 15.0,
    sleep: Callable[[float], None] = time.sleep,
    find_posted: Callable[[], dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """POST ``payload`` as JSON; returns the JSON answer (``{}`` when empty). Raises :class:`TrackerApiError`.

    ``find_posted``: asked before each retry after a 5xx answer (a proxy in front of the tracker can answer
    502 although the tracker created the comment); what it finds is returned instead of posting again."""
    data = json.dumps(payload).encode()
    all_headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers}
    last: TrackerApiError | None = None
    for attempt in range(max(1, attempts)):
        if attempt:
            sleep(backoff(attempt))
            if (
                find_posted is not None
                and last is not None
                and last.status is not None
                and last.status >= 500
            ):
                found = find_posted()
                if found is not None:
                    return found
        req = urllib.request.Request(url, data=data, headers=all_headers, method="POST")  # noqa: S310
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
                doc = json.loads(resp.read() or b"{}")
                return doc if isinstance(doc, dict) else {}
        except urllib.error.HTTPError as exc:
            last = answer_error(exc, service=service, target=url)
            if not last.retryable:
                raise last from None
        except urllib.error.URLError as exc:  # connect / send failed: nothing was posted
            last = TrackerApiError(f"{service} API unreachable at {url}: {exc.reason}")
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            raise TrackerApiError(
                f"no answer from {service} after sending the comment to {url} ({type(exc).__name__}: {exc});"
                " not retried because the comment may have been posted",
                retryable=False,
            ) from None
    assert last is not None
    raise last


def get_json(
    url: str, *, headers: Mapping[str, str], service: str, timeout: float = 5.0
) -> tuple[int, dict[str, Any]]:
    """GET ``url``: ``(status, json)``; a 404 is returned, not raised. Raises :class:`TrackerApiError`."""
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **headers})  # noqa: S310
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
            doc = json.loads(resp.read() or b"{}")
            return resp.status, doc if isinstance(doc, dict) else {}
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return 404, {}
        detail = exc.read()[:300].decode(errors="replace")
        raise TrackerApiError(f"{service} answered {exc.code} on {url}: {detail}", status=exc.code) from None
    except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException, ValueError) as exc:
        raise TrackerApiError(f"{service} API call to {url} failed: {exc}") from None


def get_json_list(url: str, *, headers: Mapping[str, str], service: str, timeout: float = 5.0) -> list[Any]:
    """GET ``url`` answering a JSON array (a listing). Raises :class:`TrackerApiError` on any failure."""
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **headers})  # noqa: S310
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
            doc = json.loads(resp.read() or b"[]")
    except urllib.error.HTTPError as exc:
        raise answer_error(exc, service=service, target=url) from None
    except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException, ValueError) as exc:
        raise TrackerApiError(f"{service} API call to {url} failed: {exc}") from None
    return doc if isinstance(doc, list) else []


def send_json(
    method: str,
    url: str,
    payload: Any,
    *,
    headers: Mapping[str, str],
    service: str,
    attempts: int = 3,
    timeout: float = 15.0,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """An idempotent ``method`` (``PATCH``, ``PUT``) with a JSON ``payload``; the JSON answer (``{}`` when
    empty). Retries 429/5xx and transport failures. Raises :class:`TrackerApiError`."""
    data = json.dumps(payload).encode()
    all_headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers}
    last: TrackerApiError | None = None
    for attempt in range(max(1, attempts)):
        if attempt:
            sleep(backoff(attempt))
        req = urllib.request.Request(url, data=data, headers=all_headers, method=method)  # noqa: S310
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
                doc = json.loads(resp.read() or b"{}")
                return doc if isinstance(doc, dict) else {}
        except urllib.error.HTTPError as exc:
            last = answer_error(exc, service=service, target=f"{method} {url}")
            if not last.retryable:
                raise last from None
        except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException, ValueError) as exc:
            last = TrackerApiError(f"{service} API call {method} {url} failed: {exc}")
    assert last is not None
    raise last
