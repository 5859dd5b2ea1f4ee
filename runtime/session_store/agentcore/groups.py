"""Reassemble a transcript from the blob items of its Memory events, whoever wrote them and however often.

An entry item is ``{"k": "e", "s": seq, "w": writer, "ep": epoch, "b": batch, "x": index, "u": uuid,
"i": part, "n": parts, "d": chunk}`` (items written before writers and batches existed lack ``w``, ``ep``,
``b`` and ``x``). The rules, each a fix for a way several writers or retries could break a load:

- **Groups never merge across writers.** The chunks of one entry are the items with the same
  ``(s, w, b, x)``: two microVMs that pick the same ``seq`` (clocks differ between microVMs) keep separate
  groups.
- **Epoch claims**: a writer that resumes a transcript stores ``{"k": "ep", "s", "ep", "w"}`` before it
  appends anything, so a writer resuming after it takes a higher epoch even if the first has not written yet.
- **Order** is by batch, then by index in the batch; a batch sorts at ``(epoch, first seq)`` (ties: by
  writer id), so one turn's entries stay together. A writer's epoch is one more than the highest it read when
  it read the key (a resume), so every batch of an older writer, even one delivered late from its spool,
  comes before everything a writer that resumed after it appended: the order in which turns were answered
  when a client sends one turn after the other, whatever the microVMs' clocks say. ``seq`` (the writer's clock
  when the batch was first tried, kept across retries, never below the highest ``seq`` it had read) orders
  within an epoch. Two writers live on one session at once (not a state AgentCore's session affinity leads
  to) keep every turn, each whole, ordered by epoch and clock rather than by when they were answered.
- **Duplicates are dropped**, the first copy kept: an entry ``uuid`` seen before, or a ``(batch, index)``
  seen before (a batch retried after a write that landed but was not acknowledged).
- **One bad group never fails a load**: a group with a missing part, a part that is not JSON, or an item
  with malformed fields is skipped with a warning.
- **One conversation chain.** Claude Code resumes the chain of ``parentUuid`` links that ends at the last
  entry. When a writer continued from an entry that is no longer the end of the chain (another writer's late
  batch sorted in between), or from an entry that is absent (a dead-lettered batch), the first entry of its
  run is re-linked to the end of the chain, so every stored turn stays in the resumed conversation.

Environment: none.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["Assembled", "assemble"]


@dataclass
class Assembled:
    """What a read of one transcript yields."""

    entries: list[Any] = field(default_factory=list)
    uuids: set[str] = field(default_factory=set)
    last_seq: int = 0
    max_epoch: int = 0
    summary: dict[str, Any] | None = None  # the newest summary item
    skipped: int = 0  # groups left out (incomplete or unreadable)


def _group_key(item: dict[str, Any]) -> tuple[int, str, str, int]:
    return (
        int(item["s"]),
        str(item.get("w", "")),
        str(item.get("b", "")),
        int(item.get("x", 0)),
    )


def assemble(items: list[dict[str, Any]], *, where: str = "") -> Assembled:
    """Entries in order, deduplicated and chained (see the module docstring); never raises on bad items."""
    out = Assembled()
    groups: dict[tuple[int, str, str, int], dict[str, Any]] = {}
    best_summary: tuple[tuple[int, int], dict[str, Any]] | None = None
    for item in items:
        try:
            seq, epoch = int(item["s"]), int(item.get("ep", 0))
            out.last_seq = max(out.last_seq, seq)
            out.max_epoch = max(out.max_epoch, epoch)
            if item["k"] == "ep":  # a resume's epoch claim: it only raises max_epoch
                continue
            if item["k"] == "sum":
                rank = (epoch, seq)
                if best_summary is None or rank >= best_summary[0]:
                    best_summary = (rank, item)
                continue
            key = _group_key(item)
            group = groups.setdefault(
                key, {"u": item.get("u"), "n": int(item["n"]), "ep": epoch, "parts": {}}
            )
            group["parts"][int(item["i"])] = str(item["d"])
        except (KeyError, TypeError, ValueError) as exc:
            out.skipped += 1
            log.warning("skipping a malformed transcript item in %s: %r", where, exc)
    seen_batches: set[tuple[str, int]] = set()
    tagged: list[tuple[Any, str]] = []
    # A batch sorts as one piece, at (its writer's epoch, its first seq).
    starts: dict[tuple[str, str], tuple[int, int]] = {}
    for key, group in groups.items():
        seq, writer, batch_id, _ = key
        if batch_id:
            rank = (group["ep"], seq)
            starts[(writer, batch_id)] = min(rank, starts.get((writer, batch_id), rank))

    def order(key: tuple[int, str, str, int]) -> tuple[tuple[int, int], str, str, int, int]:
        seq, writer, batch_id, index = key
        return (starts.get((writer, batch_id), (groups[key]["ep"], seq)), writer, batch_id, index, seq)

    for key in sorted(groups, key=order):
        group = groups[key]
        if len(group["parts"]) != group["n"] or any(i not in group["parts"] for i in range(group["n"])):
            out.skipped += 1
            log.warning(
                "skipping incomplete entry %s in %s (%d/%d parts)",
                key,
                where,
                len(group["parts"]),
                group["n"],
            )
            continue
        uuid, batch = group["u"], (key[2], key[3])
        if (uuid is not None and uuid in out.uuids) or (key[2] and batch in seen_batches):
            continue
        try:
            entry = json.loads("".join(group["parts"][i] for i in range(group["n"])))
        except ValueError as exc:
            out.skipped += 1
            log.warning("skipping unreadable entry %s in %s: %s", key, where, exc)
            continue
        if key[2]:
            seen_batches.add(batch)
        if uuid is not None:
            out.uuids.add(uuid)
        tagged.append((entry, key[1]))
    out.entries = _chain(tagged, where)
    if best_summary is not None:
        out.summary = best_summary[1]
    return out


def _chain(tagged: list[tuple[Any, str]], where: str) -> list[Any]:
    """Plain entries; the first chain entry of each writer's run re-linked when it would fork the chain."""
    out: list[dict[str, Any]] = []
    known: set[str] = set()
    tail: str | None = None  # uuid of the last entry on the main chain
    tail_writer: str | None = None
    for entry, writer in tagged:
        on_chain = (
            isinstance(entry, dict)
            and isinstance(entry.get("uuid"), str)
            and "parentUuid" in entry
            and not entry.get("isSidechain")
        )
        if on_chain:
            parent = entry["parentUuid"]
            new_run = tail_writer is not None and writer != tail_writer
            dangling = parent is not None and parent not in known
            # A root in another writer's run: that writer started before it could read this chain (a compact
            # boundary is a root on purpose and stays one).
            fresh_root = parent is None and new_run and entry.get("subtype") != "compact_boundary"
            if (
                tail is not None
                and parent != tail
                and (fresh_root or (parent is not None and (new_run or dangling)))
            ):
                log.info("re-linking entry %s in %s after %s (was %s)", entry["uuid"], where, tail, parent)
                entry = {**entry, "parentUuid": tail}
            tail, tail_writer = entry["uuid"], writer
            known.add(entry["uuid"])
        elif isinstance(entry, dict) and isinstance(entry.get("uuid"), str):
            known.add(entry["uuid"])
        out.append(entry)
    return out
