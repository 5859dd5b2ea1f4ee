"""How a setting is declared and stated: :func:`setting` (a pydantic field with its variable, default and meaning),
what a model declared with it answers about itself (:func:`env_names`, :func:`reference_rows`, one
:class:`SettingInfo` per field), and a validation error as a sentence naming the variables (:func:`explain`).
Generic over the model; :class:`runtime.config.settings.Settings` is the one declared with it. No state; imports
nothing of the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError


def setting(env: str, default: Any, meaning: str, *, shown: str | None = None, **constraints: Any) -> Any:
    """Declare a field of a settings model (:class:`runtime.config.settings.Settings`): read from the variable
    ``env``, ``default`` when unset.

    ``meaning`` (Markdown) says what it does; ``shown`` is how the reference states the default when the value
    alone does not say it (a default computed at run time). ``constraints`` are pydantic's (``gt``, ``le``, …).
    """
    return Field(default, description=meaning, json_schema_extra={"env": env, "shown": shown}, **constraints)


@dataclass(frozen=True)
class SettingInfo:
    """One row of the settings reference: field, variable, the default as the docs state it, meaning."""

    field: str
    env: str
    default: str
    meaning: str


def field_extra(info: Any) -> dict[str, Any]:
    """The declaration :func:`setting` attached to a field (its variable and how its default is shown)."""
    extra = info.json_schema_extra
    if not isinstance(extra, dict) or "env" not in extra:
        raise TypeError("every Settings field is declared with setting(env, default, meaning)")
    return extra


def shown_default(default: Any) -> str:
    """A default value as the reference shows it ("none" when there is none)."""
    if default is None or default == ():
        return "none"
    if isinstance(default, bool):
        return f"`{int(default)}`"
    if isinstance(default, float):
        return f"`{default:g}`"
    if isinstance(default, Path):
        return f"`./{default}`" if not default.is_absolute() else f"`{default}`"
    return f"`{default}`"


def explain(exc: ValidationError, env_names: Mapping[str, str]) -> str:
    """A settings validation error as one sentence naming each variable (``env_names``: field → variable)."""
    parts = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "?"
        var = env_names.get(field, field)
        message = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"{var}: {message}")
    return "invalid runtime settings: " + "; ".join(parts)


def env_names(model: type[BaseModel]) -> dict[str, str]:
    """Field name → the environment variable it is read from, in declaration order."""
    return {name: field_extra(info)["env"] for name, info in model.model_fields.items()}


def reference_rows(model: type[BaseModel]) -> list[SettingInfo]:
    """Every field of ``model`` as the docs state it (``--help`` and ``docs/configuration.md`` are rendered from
    this)."""
    rows = []
    for name, info in model.model_fields.items():
        extra = field_extra(info)
        shown = extra.get("shown") or shown_default(info.default)
        rows.append(SettingInfo(field=name, env=extra["env"], default=shown, meaning=info.description or ""))
    return rows
