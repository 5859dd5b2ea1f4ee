"""The bundled Claude Code CLI's own model catalog, read out of the binary the SDK ships.

The CLI (``claude_agent_sdk/_bundled/claude``, a Bun executable) embeds a JavaScript object literal that starts
with ``{"//":"Hand-maintained baked-in model catalog`` and lists, per model, its ids on each provider
(``provider_ids.bedrock`` is the inference profile the CLI calls through InvokeModel), its pricing tier, the model
it falls back to on third-party platforms (``fallback_3p``) and the aliases (``sonnet``, ``opus``, ...). A second
literal, keyed by model name with ``retirementDates`` per platform, holds the retirements the CLI warns about.

:func:`read_catalog` parses both with a small JavaScript-literal reader (the literals use unquoted keys, ``!0`` /
``!1`` for booleans and ``1e6`` numbers; no code). ``tests/unit/test_model_catalog.py`` compares it with the kit's
table (``runtime/models/catalog.py``) so an SDK bump that brings a model the kit cannot price fails a test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CATALOG_MARKER = b'{"//":"Hand-maintained baked-in model catalog'
RETIREMENTS_MARKER = re.compile(rb'\{"claude-[a-z0-9-]+":\{modelName:"[^"]*",retirementDates:')


def bundled_cli() -> Path:
    """The CLI binary the installed claude-agent-sdk ships."""
    import claude_agent_sdk

    return Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"


class _Reader:
    """A reader for the JavaScript object literals the CLI embeds (objects, arrays, strings, numbers, !0/!1,
    null, unquoted identifier keys)."""

    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0

    def _ws(self) -> None:
        while self.i < len(self.text) and self.text[self.i] in " \t\r\n":
            self.i += 1

    def value(self) -> Any:
        self._ws()
        c = self.text[self.i]
        if c == "{":
            return self._object()
        if c == "[":
            return self._array()
        if c in "\"'":
            return self._string()
        for word, result in (("!0", True), ("!1", False), ("null", None), ("true", True), ("false", False)):
            if self.text.startswith(word, self.i):
                self.i += len(word)
                return result
        match = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?").match(self.text, self.i)
        if not match:
            raise ValueError(f"unexpected {self.text[self.i : self.i + 30]!r} at {self.i}")
        self.i = match.end()
        number = float(match.group())
        return int(number) if number.is_integer() and "." not in match.group() else number

    def _string(self) -> str:
        quote, self.i = self.text[self.i], self.i + 1
        out = []
        while self.text[self.i] != quote:
            if self.text[self.i] == "\\":
                nxt = self.text[self.i + 1]
                if nxt == "u":
                    out.append(chr(int(self.text[self.i + 2 : self.i + 6], 16)))
                    self.i += 6
                    continue
                out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
                self.i += 2
                continue
            out.append(self.text[self.i])
            self.i += 1
        self.i += 1
        return "".join(out)

    def _object(self) -> dict[str, Any]:
        self.i += 1
        out: dict[str, Any] = {}
        while True:
            self._ws()
            if self.text[self.i] == "}":
                self.i += 1
                return out
            if self.text[self.i] in "\"'":
                key = self._string()
            else:
                match = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*").match(self.text, self.i)
                if not match:
                    raise ValueError(f"bad key at {self.i}: {self.text[self.i : self.i + 30]!r}")
                key, self.i = match.group(), match.end()
            self._ws()
            if self.text[self.i] != ":":
                raise ValueError(f"expected ':' at {self.i}")
            self.i += 1
            out[key] = self.value()
            self._ws()
            if self.text[self.i] == ",":
                self.i += 1

    def _array(self) -> list[Any]:
        self.i += 1
        out: list[Any] = []
        while True:
            self._ws()
            if self.text[self.i] == "]":
                self.i += 1
                return out
            out.append(self.value())
            self._ws()
            if self.text[self.i] == ",":
                self.i += 1


def _literal_at(data: bytes, start: int) -> Any:
    # The literals are ASCII with \u escapes; decode a generous window and let the reader stop at the end.
    return _Reader(data[start : start + 400_000].decode("utf-8", "replace")).value()


@dataclass(frozen=True)
class CliModel:
    """One model of the CLI's catalog, as far as the kit uses it."""

    name: str  # "claude-sonnet-5-5"
    display_name: str
    bedrock: str | None  # the inference profile id the CLI calls on Bedrock, None when not offered there
    pricing: dict[
        str, Any
    ]  # USD per million tokens: input, output, cache_write_5m, cache_write_1h, cache_read
    fallback: str | None  # fallback_3p: the model the CLI falls back to on third-party platforms


@dataclass(frozen=True)
class CliCatalog:
    version: str
    models: dict[str, CliModel]
    aliases: dict[str, Any]
    retirements: dict[str, dict[str, str | None]] = field(default_factory=dict)  # model -> platform -> date

    latest_per_family: dict[str, str] = field(default_factory=dict)

    def aliases_latest(self, family: str) -> str:
        """The CLI's newest model of ``family`` (``latest_per_family``)."""
        return self.latest_per_family[family]

    def on_bedrock(self) -> dict[str, CliModel]:
        """The models the CLI can call on Bedrock (a ``provider_ids.bedrock`` id)."""
        return {name: m for name, m in self.models.items() if m.bedrock}


def read_catalog(binary: Path | None = None) -> CliCatalog:
    """Parse the catalog and the retirement table out of the CLI binary.

    Raises:
        ValueError: the binary holds no catalog (a CLI build that moved it: update this reader).
    """
    path = binary or bundled_cli()
    data = path.read_bytes()
    start = data.find(CATALOG_MARKER)
    if start < 0:
        raise ValueError(f"{path}: no baked-in model catalog found (marker {CATALOG_MARKER!r})")
    raw = _literal_at(data, start)
    tiers = raw["pricing_tiers"]
    models = {
        m["id"]: CliModel(
            name=m["id"],
            display_name=m.get("display_name", m["id"]),
            bedrock=(m.get("provider_ids") or {}).get("bedrock"),
            pricing=dict(tiers.get(m.get("pricing"), {})),
            fallback=m.get("fallback_3p"),
        )
        for m in raw["models"]
    }
    retirements: dict[str, dict[str, str | None]] = {}
    found = RETIREMENTS_MARKER.search(data)
    if found:
        table = _literal_at(data, found.start())
        retirements = {k: dict(v.get("retirementDates") or {}) for k, v in table.items()}
    version_file = path.parent / "claude.version"
    version = version_file.read_text().strip() if version_file.exists() else "?"
    return CliCatalog(
        version=version,
        models=models,
        aliases=raw.get("aliases", {}),
        retirements=retirements,
        latest_per_family=dict(
            (raw.get("aliases") or {}).get("latest_per_family") or raw.get("latest_per_family") or {}
        ),
    )
