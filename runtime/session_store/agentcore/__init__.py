"""The session store on AgentCore Memory: :mod:`~runtime.session_store.agentcore.store` (the store, with its
per-session state), :mod:`~runtime.session_store.agentcore.ids` (ids, limits, errors),
:mod:`~runtime.session_store.agentcore.groups` (reassembling a load), :mod:`~runtime.session_store.agentcore.plan`
(what a process knows of a key, a planned batch).
"""

from runtime.session_store.agentcore.ids import (
    MEMORY_ID_RE,
    actor_id_for,
    escape_id,
    session_id_for,
    wrap_client_error,
)
from runtime.session_store.agentcore.store import AgentCoreMemorySessionStore

__all__ = [
    "MEMORY_ID_RE",
    "AgentCoreMemorySessionStore",
    "actor_id_for",
    "escape_id",
    "session_id_for",
    "wrap_client_error",
]
