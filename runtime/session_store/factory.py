"""Build the session store named by ``AGENTKIT_SESSION_STORE`` (the settings read the variable).

``sqlite:///abs/path.db`` | ``agentcore://<memory-id>`` | empty (SQLite at ``<state_dir>/sessions.db``).
Wrap the result in :class:`runtime.session_store.spool.SpoolingSessionStore` so a failing store never fails a turn.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.session_store.agentcore.ids import MAX_PAGE_SIZE, MEMORY_ID_RE, UsageMeter
from runtime.session_store.agentcore.store import AgentCoreMemorySessionStore
from runtime.session_store.sqlite import SqliteSessionStore

__all__ = ["store_from_url"]


def store_from_url(
    url: str,
    *,
    state_dir: Path,
    client: Any = None,
    on_event: Callable[[str], None] | None = None,
    on_usage: UsageMeter | None = None,
) -> SqliteSessionStore | AgentCoreMemorySessionStore:
    """Build the store named by ``AGENTKIT_SESSION_STORE``.

    Accepted: ``sqlite:///abs/path.db`` (absolute path), ``agentcore://<memory-id or memory ARN>``, or an
    empty string for the default SQLite file ``<state_dir>/sessions.db``. ``client`` (a boto3
    ``bedrock-agentcore`` client), ``on_event`` (metric names such as ``SessionStoreLateWrites``) and ``on_usage``
    (each billed ``CreateEvent``) are only used by the AgentCore store, which reads 100 events per ``ListEvents`` call (the service's maximum; its
    default of 20 made a 20,000-entry session take 169 calls before its first turn).

    Raises:
        ValueError: unknown scheme, relative SQLite path, or malformed memory id.
    """
    url = url.strip()
    if not url:
        return SqliteSessionStore(Path(state_dir) / "sessions.db")
    if url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
        if not path.startswith("/") or path == "/":
            raise ValueError(
                f"AGENTKIT_SESSION_STORE={url!r}: SQLite URLs need an absolute path, e.g. sqlite:///var/agent/sessions.db"
            )
        return SqliteSessionStore(Path(path))
    if url.startswith("agentcore://"):
        memory_id = url[len("agentcore://") :].rstrip("/")
        if not MEMORY_ID_RE.match(memory_id):
            raise ValueError(
                f"AGENTKIT_SESSION_STORE={url!r}: expected agentcore://<memory-id> where the id looks like "
                "'<name>-<10 alphanumerics>' (or a memory ARN)"
            )
        return AgentCoreMemorySessionStore(
            memory_id, client=client, page_size=MAX_PAGE_SIZE, on_event=on_event, on_usage=on_usage
        )
    raise ValueError(
        f"AGENTKIT_SESSION_STORE={url!r}: unsupported store URL; use sqlite:///abs/path.db or agentcore://<memory-id>"
    )
