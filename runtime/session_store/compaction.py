"""What a resume hands the CLI after a compaction: the last compact boundary on, with no pointer to a lost file.

When Claude Code compacts a conversation (``/compact``, or automatically near the context limit) it appends to
the transcript (seen with the bundled CLI, ``tests/e2e/test_compaction_real_cli.py``):

- a ``{"type": "system", "subtype": "compact_boundary", "parentUuid": null, "logicalParentUuid": <last entry>,
  "compactMetadata": {..., "preservedMessages": {"allUuids": [...]}}}`` entry that starts a new chain;
- a user entry with ``"isCompactSummary": true`` whose text is the summary and ends with "If you need specific
  details from before compaction (...), read the full transcript at: <path of the CLI's local transcript>";
- the entries after it, chained from the summary. A few of the most recent pre-compaction messages are kept
  verbatim: their uuids are listed in ``preservedMessages`` and they stay where they were in the file.

On resume the CLI builds the model's context from the last boundary on (plus the preserved messages): the
entries before it are read and parsed but never sent to the model. And the path in the summary is a file of
the process that compacted — a ``CLAUDE_CONFIG_DIR`` on another microVM, or the SDK's temporary resume
directory of an earlier process, deleted when that process ended — which no later microVM has.

:func:`resume_view` therefore gives the CLI, for a main transcript holding a compact boundary: every entry from
the last boundary on, the preserved messages, and the pre-boundary entries that are session metadata (no
``uuid``: titles, tags, modes, …), except the input-queue records and "last prompt" pointers into the dropped
part; and it removes the "read the full transcript at: <path>" sentence from summaries. The store itself keeps
everything: the full history stays readable there (:meth:`~runtime.session_store.spool.SpoolingSessionStore.load_all`).

Environment: none.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["last_boundary", "resume_view", "strip_transcript_pointer"]

#: The sentence Claude Code ends a compact summary with, naming its local transcript file. Matched loosely (any
#: lead-in ending in "read the full transcript at:" and the path up to the end of the line) so a reworded
#: lead-in is still removed; the path itself is never useful to a later process.
_POINTER = re.compile(
    r"(?:^|(?<=\n))[^\n]*read the full transcript at:[ \t]*\S+[ \t]*(?:\n|$)",
    re.IGNORECASE,
)


def _is_boundary(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("type") == "system"
        and entry.get("subtype") == "compact_boundary"
    )


def last_boundary(entries: list[Any]) -> int | None:
    """Index of the last compact boundary in ``entries`` (store order), or ``None``."""
    for i in range(len(entries) - 1, -1, -1):
        if _is_boundary(entries[i]):
            return i
    return None


def strip_transcript_pointer(entry: Any) -> Any:
    """``entry`` without the "read the full transcript at: <path>" sentence of a compact summary (a copy when it
    changes; any other entry is returned as is)."""
    if not isinstance(entry, dict) or not entry.get("isCompactSummary"):
        return entry
    message = entry.get("message")
    if not isinstance(message, dict):
        return entry
    content = message.get("content")
    if isinstance(content, str):
        new_content: Any = _POINTER.sub("", content)
        if new_content == content:
            return entry
    elif isinstance(content, list):
        new_content, changed = [], False
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                text = _POINTER.sub("", block["text"])
                if text != block["text"]:
                    block, changed = {**block, "text": text}, True
            new_content.append(block)
        if not changed:
            return entry
    else:
        return entry
    return {**entry, "message": {**message, "content": new_content}}


def _preserved(boundary: dict[str, Any]) -> set[str]:
    meta = boundary.get("compactMetadata")
    if not isinstance(meta, dict):
        return set()
    keep: set[str] = set()
    for field in ("preservedMessages", "preservedSegment"):
        part = meta.get(field)
        if not isinstance(part, dict):
            continue
        for name in ("allUuids", "uuids"):
            if isinstance(part.get(name), list):
                keep.update(u for u in part[name] if isinstance(u, str))
        for name in ("headUuid", "tailUuid"):
            if isinstance(part.get(name), str):
                keep.add(part[name])
    return keep


def resume_view(entries: list[Any] | None) -> list[Any] | None:
    """The entries a resuming CLI needs from a main transcript (see the module docstring); ``entries``
    unchanged when it holds no compact boundary."""
    if not entries:
        return entries
    cut = last_boundary(entries)
    if cut is None:
        return entries
    boundary = entries[cut]
    keep = _preserved(boundary)
    dropped: set[str] = set()
    head: list[Any] = []
    for entry in entries[:cut]:
        if not isinstance(entry, dict):
            continue
        uid = entry.get("uuid")
        if isinstance(uid, str):
            if uid in keep:
                head.append(entry)
            else:
                dropped.add(uid)
            continue
        if entry.get("type") == "queue-operation":  # the input queue of a turn long answered
            continue
        if entry.get("leafUuid") in dropped:  # a "last prompt" pointer into the dropped part
            continue
        head.append(entry)
    return head + [strip_transcript_pointer(e) for e in entries[cut:]]
