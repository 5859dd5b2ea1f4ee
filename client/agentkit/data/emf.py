"""Read the CloudWatch Embedded Metric Format (EMF) lines a runtime writes (``AGENTKIT_EMF_FILE``).

One JSON object per line: ``_aws.Timestamp`` (epoch ms), ``_aws.CloudWatchMetrics[].{Namespace,
Dimensions, Metrics}``, then the dimension values, the metric values (a number or a list of numbers) and
free-form properties at the top level (AWS "Embedded metric format specification"). Lines that are not EMF
(log lines in a captured stdout) are skipped and counted; a line that is JSON EMF but malformed is an error.

IAM actions: none (a local file).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit.data.local_files import read_local_file
from agentkit.errors import AgentkitError, ExitCode


@dataclass(frozen=True)
class Sample:
    """One EMF document: its time, namespace, dimension values, metric values and properties."""

    timestamp: dt.datetime
    namespace: str
    dimensions: dict[str, str]
    metrics: dict[str, list[float]]
    properties: dict[str, Any] = field(default_factory=dict)

    def total(self, name: str) -> float:
        """Sum of the values of metric ``name`` in this document (0 when absent)."""
        return float(sum(self.metrics.get(name, ())))


@dataclass
class EmfFile:
    """The documents of one EMF file and the number of non-EMF lines skipped."""

    samples: list[Sample]
    skipped_lines: int = 0


def read_emf_file(path: str | Path) -> EmfFile:
    """Parse an EMF file.

    Raises:
        AgentkitError: the file is missing or unreadable (2), or holds a malformed EMF document (1).
    """
    return read_local_file(
        path,
        lambda handle: parse_emf_lines(handle, source=str(path)),
        kind="EMF",
        env_var="AGENTKIT_EMF_FILE",
    )


def parse_emf_lines(lines: Iterable[str], *, source: str = "<lines>") -> EmfFile:
    """Parse EMF lines (see the module docstring)."""
    samples: list[Sample] = []
    skipped = 0
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text.startswith("{"):
            skipped += 1 if text else 0
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            skipped += 1
            continue
        if not isinstance(obj, dict) or "_aws" not in obj:
            skipped += 1
            continue
        samples.extend(_documents(obj, where=f"{source}:{number}"))
    return EmfFile(samples=samples, skipped_lines=skipped)


def _documents(obj: dict[str, Any], *, where: str) -> Iterator[Sample]:
    try:
        meta = obj["_aws"]
        timestamp = dt.datetime.fromtimestamp(float(meta["Timestamp"]) / 1000, tz=dt.UTC)
        directives = meta["CloudWatchMetrics"]
        for directive in directives:
            names = [m["Name"] for m in directive["Metrics"]]
            dim_sets = directive.get("Dimensions") or [[]]
            primary = max(dim_sets, key=len)
            metric_keys = set(names)
            dims = {d: str(obj[d]) for d in primary}
            metrics = {n: _values(obj[n]) for n in names if n in obj}
            props = {k: v for k, v in obj.items() if k != "_aws" and k not in metric_keys and k not in dims}
            yield Sample(timestamp, str(directive["Namespace"]), dims, metrics, props)
    except (KeyError, TypeError, ValueError) as exc:
        raise AgentkitError(
            f"{where}: not a valid EMF document ({type(exc).__name__}: {exc})", exit_code=ExitCode.AGENT_ERROR
        ) from exc


def _values(value: Any) -> list[float]:
    if isinstance(value, list):
        return [float(v) for v in value]
    return [float(value)]
