"""Session stores, by their historical import path (kept: ``from runtime.session_store import ...``).

The implementations live in :mod:`runtime.store`: :mod:`runtime.store.sqlite` (embedded default),
:mod:`runtime.store.agentcore` (AgentCore Memory), :mod:`runtime.store.factory` (``AGENTKIT_SESSION_STORE``).
"""

from runtime.errors import SessionStoreError
from runtime.store.agentcore import (
    AgentCoreMemorySessionStore,
    actor_id_for,
    escape_id,
    session_id_for,
)
from runtime.store.factory import store_from_url
from runtime.store.sqlite import SqliteSessionStore

__all__ = [
    "AgentCoreMemorySessionStore",
    "SessionStoreError",
    "SqliteSessionStore",
    "actor_id_for",
    "escape_id",
    "session_id_for",
    "store_from_url",
]
