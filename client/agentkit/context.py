"""What every command receives: its streams, AWS access, clock, sleep and the chosen output format.

Commands never read ``sys.stdout`` or build boto3 clients themselves, so tests drive them with in-memory
streams, stubbed clients and a fixed clock.

Env vars: none read here (see :mod:`agentkit.aws`). IAM actions: none.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from agentkit.aws import Aws

OutputFormat = Literal["text", "json"]
OUTPUT_FORMATS: tuple[str, ...] = ("text", "json")


@dataclass
class Context:
    """Streams and services of one ``agentkit`` run."""

    stdout: TextIO
    stderr: TextIO
    stdin: TextIO
    aws: Aws
    output: OutputFormat
    env: Mapping[str, str]
    sleep: Callable[[float], None]
    now: Callable[[], dt.datetime]

    @property
    def json(self) -> bool:
        return self.output == "json"

    def emit(self, data: Any, text: str | Callable[[], str]) -> None:
        """Print the command's answer: ``data`` as JSON with ``--output json``, else ``text``."""
        if self.json:
            self.stdout.write(json.dumps(data, indent=2, default=_jsonable, ensure_ascii=False) + "\n")
        else:
            body = text() if callable(text) else text
            self.stdout.write(body if body.endswith("\n") else body + "\n")
        self.stdout.flush()

    def progress(self, line: str) -> None:
        """A line for the human watching (stderr), never part of the answer."""
        self.stderr.write(line + "\n")
        self.stderr.flush()


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def table(headers: list[str], rows: list[list[Any]], *, align: str | None = None) -> str:
    """A plain-text table; ``align`` is one character per column (``l`` or ``r``, default left)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "l" * len(headers)

    def line(row: list[str]) -> str:
        return "  ".join(
            (c.rjust(w) if a == "r" else c.ljust(w)) for c, w, a in zip(row, widths, align, strict=True)
        ).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)
