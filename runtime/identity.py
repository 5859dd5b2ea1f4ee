"""Who is calling, and which Claude session a runtime session maps to.

The Claude session id is ``uuid5(NAMESPACE, runtime_session_id)`` for anonymous callers and
``uuid5(NAMESPACE, actor + "\\n" + runtime_session_id)`` when the caller's actor is known, so

- any process can resume any session from the store without an index, and
- an actor presenting another actor's runtime session id lands in a different, empty conversation.

The actor comes only from the authenticated request, never from the body:

1. the JWT ``sub`` of the ``Authorization: Bearer`` header. AgentCore validates the token (JWT inbound
   auth) before the request reaches the runtime, so the runtime only decodes it. Outside AgentCore the
   header is not verified: do not expose the runtime port directly. When a bearer token is present it is
   the only source: a token without ``sub`` is refused (``invalid_request``), never replaced by a header.
2. else (no bearer token) the trusted header named by ``AGENTKIT_ACTOR_HEADER`` (an
   ``X-Amzn-Bedrock-AgentCore-Runtime-Custom-*`` header that only our own callers — e.g. the webhook
   worker — set; with IAM inbound auth only principals allowed to invoke the runtime can send it).
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from collections.abc import Mapping

from runtime import json_guard
from runtime.errors import InvalidRequest

SESSION_NAMESPACE = uuid.UUID("6f1f8a3e-7c43-5b8e-9a51-0c2d4e6b7a90")
ACTOR_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,99}$")


def claude_session_id(runtime_session_id: str, actor_id: str | None = None) -> str:
    """The deterministic Claude session id of a runtime session (contract)."""
    name = f"{actor_id}\n{runtime_session_id}" if actor_id else runtime_session_id
    return str(uuid.uuid5(SESSION_NAMESPACE, name))


def normalise_actor(raw: str) -> str:
    """An actor id safe for AgentCore Memory (``[A-Za-z0-9][A-Za-z0-9._@:-]{0,99}``); long or odd ids are hashed."""
    raw = raw.strip()
    if ACTOR_RE.match(raw):
        return raw
    return "actor-" + hashlib.sha256(raw.encode()).hexdigest()[:40]


def resolve_actor(headers: Mapping[str, str] | None, *, actor_header: str | None) -> str | None:
    """The caller's actor id from the forwarded headers, or ``None`` when anonymous.

    Raises:
        InvalidRequest: the bearer token is not a JWT, its payload is unreadable, or it has no ``sub``.
    """
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered.get("authorization", "")
    if auth.lower().startswith("bearer "):
        sub = _jwt_subject(auth[7:].strip())
        if not sub:
            raise InvalidRequest(
                "the Authorization bearer token has no 'sub' claim, so the caller cannot be identified; "
                "use a token that names its subject (e.g. a user or client id)"
            )
        return normalise_actor(sub)
    if actor_header:
        value = lowered.get(actor_header.lower())
        if value:
            return normalise_actor(value)
    return None


def _jwt_subject(token: str) -> str | None:
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidRequest(
            "the Authorization bearer token is not a JWT; send the token your identity provider issued"
        )
    try:
        padded = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json_guard.loads(base64.urlsafe_b64decode(padded))
    except ValueError:  # bad base64, not UTF-8, not JSON (JSONDecodeError) or nested too deep (JsonTooDeep)
        raise InvalidRequest("the Authorization bearer token has an unreadable payload") from None
    sub = claims.get("sub") if isinstance(claims, dict) else None
    return sub if isinstance(sub, str) and sub.strip() else None
