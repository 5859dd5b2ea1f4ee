"""Session stores: where the Claude Agent SDK mirrors transcripts, and per-session state.

:mod:`runtime.session_store.sqlite` (embedded default), :mod:`runtime.session_store.agentcore` (AgentCore
Memory), :mod:`runtime.session_store.factory` (``AGENTKIT_SESSION_STORE``); :mod:`~runtime.session_store.spool`
journals writes the store refused, :mod:`~runtime.session_store.recall` reads long-term memory. The names below
are the package's public face (``from runtime.session_store import AgentCoreMemorySessionStore``).
"""

from runtime.errors import SessionStoreError
from runtime.session_store.agentcore.ids import actor_id_for, escape_id, session_id_for
from runtime.session_store.agentcore.store import AgentCoreMemorySessionStore
from runtime.session_store.factory import store_from_url
from runtime.session_store.sqlite import SqliteSessionStore

__all__ = [
    "AgentCoreMemorySessionStore",
    "SessionStoreError",
    "SqliteSessionStore",
    "actor_id_for",
    "escape_id",
    "session_id_for",
    "store_from_url",
]
