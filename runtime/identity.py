"""Who is calling, and which Claude session a runtime session maps to.

The Claude session id is ``uuid5(NAMESPACE, runtime_session_id)`` for anonymous callers and
``uuid5(NAMESPACE, actor + "\\n" + runtime_session_id)`` when the caller's actor is known, so

- any process can resume any session from the store without an index, and
- an actor presenting another actor's runtime session id lands in a different, empty conversation.

The actor comes only from what AgentCore vouches for, never from the body:

1. the JWT ``sub`` of the ``Authorization: Bearer`` header (JWT inbound auth). AgentCore validates the token
   before the request reaches the runtime, so the runtime only decodes it. When a bearer token is present it
   is the only source: a token without ``sub`` is refused (``invalid_request``), never replaced by a header.
2. else (IAM inbound auth) the runtime user id of ``InvokeAgentRuntime`` (``runtimeUserId``, sent as
   ``X-Amzn-Bedrock-AgentCore-Runtime-User-Id``), which needs the separate IAM action
   ``bedrock-agentcore:InvokeAgentRuntimeForUser``. AgentCore does not forward that id to the container: it
   exchanges it for a workload access token (``GetWorkloadAccessTokenForUserId``, done by the service) and sends
   the container that opaque token in the ``WorkloadAccessToken`` header (bedrock-agentcore's
   ``runtime/models.py``: ``ACCESS_TOKEN_HEADER``; AgentCore developer guide, "Get workload access token"). A
   SigV4 caller that names no user id gets no such token. So our own callers (the webhook worker) send the same
   id in the trusted ``AGENTKIT_ACTOR_HEADER`` header too, and the runtime accepts that header **only alongside a
   workload access token**: a caller allowed ``InvokeAgentRuntime`` but not ``...ForUser`` can set the custom
   header, yet cannot choose an actor (refused with ``invalid_request``). Header names outside the runtime's
   allowlist never reach the container, so a caller cannot forge the token header either.

The token is opaque, so the runtime cannot check that it was minted for the same id as the header says: whoever
holds ``InvokeAgentRuntimeForUser`` may act as any user, which is what that permission means. Outside AgentCore
nothing is verified: do not expose the runtime port directly.
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from collections.abc import Mapping

from runtime import json_guard
from runtime.errors import InvalidRequest

#: Headers in which AgentCore hands the container the workload access token of an identified caller (bedrock-agentcore
#: 1.25 ``runtime/models.py``: ``ACCESS_TOKEN_HEADER`` and ``IDENTITY_WAT_HEADER``), lower case.
WORKLOAD_TOKEN_HEADERS = ("workloadaccesstoken", "x-amz-bedrock-agentcore-identity-wat")
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
    """The caller's actor id from the forwarded headers, or ``None`` when anonymous (see the module docstring).

    Raises:
        InvalidRequest: the bearer token is not a JWT, its payload is unreadable, or it has no ``sub``; or the
            actor header is set without a workload access token (the caller named no runtime user id).
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
            if not any(lowered.get(name) for name in WORKLOAD_TOKEN_HEADERS):
                raise InvalidRequest(
                    f"the {actor_header} header names an actor, but the call carries no runtime user id: send "
                    "the same id as InvokeAgentRuntime's runtimeUserId (needs bedrock-agentcore:"
                    "InvokeAgentRuntimeForUser), or leave the header out to invoke anonymously"
                )
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
