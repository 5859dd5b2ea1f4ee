"""CDK-style ``-c key=value`` overrides of the ``agentkit`` config, applied over the selected stage's values.

Keys (see :func:`known_keys`):
  * a top-level setting: ``-c image_build=codebuild``, ``-c model=eu.anthropic.claude-...``;
  * a nested one, dotted: ``-c gateway.enabled=false``, ``-c observability.alarm_email=ops@example.com``;
  * a whole nested object as JSON, merged key by key: ``-c 'gateway={"enabled": false}'``;
  * a stage setting, flat: ``-c daily_budget_usd=25`` (applies to the stage being synthesized).

The CLI hands every value over as a string. What only the command line needs is parsed here, by the type of
the setting it targets: lists (a JSON array, or comma-separated), ``null`` for optional settings, JSON objects
for nested settings. Booleans (``true``/``false``, ``yes``/``no``, ``on``/``off``, ``1``/``0``; pydantic also
takes ``t``/``f``/``y``/``n``) and numbers are left to pydantic's lax mode, which converts such strings while it
validates the result like any value from ``cdk.json``; only an integer choice (``log_retention_days``), which
pydantic compares without converting, is read as an integer first. Other strings stay as given. An unknown key
is refused with the list of known ones.

The models are parameters (``config_model``, the whole config, and ``stage_model``, one stage's settings), so
this module does not import :mod:`infra.config`, which calls it.

Raises (all :class:`infra.errors.ConfigError`): unknown key, a JSON object that does not parse.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError

from infra.errors import ConfigError

#: Fields of the config model that are not user settings (the stage's name and its settings object).
_INTERNAL = frozenset({"stage", "settings"})
_NUMBER: TypeAdapter[int | float] = TypeAdapter(int | float)  # an int when the text is one, else a float


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """``(inner type, optional)`` for ``X | None``; other annotations unchanged."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(args) < len(get_args(annotation))
        if len(args) == 1:
            return args[0], optional
    return annotation, False


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def known_keys(config_model: type[BaseModel], stage_model: type[BaseModel]) -> dict[str, Any]:
    """Every key ``-c`` accepts, mapped to the annotation of the setting it sets."""
    keys: dict[str, Any] = {}

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            if not prefix and name in _INTERNAL:
                continue
            key = f"{prefix}{name}"
            keys[key] = field.annotation
            inner, _ = _unwrap(field.annotation)
            if _is_model(inner):
                walk(inner, f"{key}.")

    walk(config_model, "")
    for name, field in stage_model.model_fields.items():
        keys[name] = field.annotation
    return keys


def coerce(key: str, value: Any, annotation: Any) -> Any:
    """Parse the CLI's string ``value`` for a setting typed ``annotation``; non-strings pass through."""
    if not isinstance(value, str):
        return value
    inner, optional = _unwrap(annotation)
    text = value.strip()
    if optional and text.lower() in ("null", "none", ""):
        return None
    if _is_model(inner) or get_origin(inner) is dict:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"-c {key}", f"{value!r} is not JSON ({exc.msg})", allowed="a JSON object"
            ) from exc
        if not isinstance(parsed, dict):
            raise ConfigError(f"-c {key}", f"{value!r} is not a JSON object", allowed="a JSON object")
        return parsed
    if inner is bool:
        return text  # pydantic's lax mode reads true/false, yes/no, on/off, 1/0 while it validates
    if inner in (int, float) or (
        get_origin(inner) is Literal and all(type(a) is int for a in get_args(inner))
    ):
        # pydantic's lax mode reads the number; read here (not while validating the model) because it does not
        # convert a string for an integer choice (log_retention_days) and would refuse "3e1" for an int.
        try:
            return _NUMBER.validate_python(text)
        except ValidationError:
            return value  # the model's validation names the key and the expected type
    if get_origin(inner) in (tuple, list):
        if text.startswith("["):
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"-c {key}", f"{value!r} is not a JSON array ({exc.msg})", allowed="a list"
                ) from exc
        return [item.strip() for item in text.split(",") if item.strip()]
    return value


def _deep_merge(base: Any, update: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base) if isinstance(base, Mapping) else {}
    for key, value in update.items():
        merged[key] = _deep_merge(merged.get(key), value) if isinstance(value, Mapping) else value
    return merged


def apply_overrides(
    shared: Mapping[str, Any],
    stage: Mapping[str, Any],
    overrides: Mapping[str, Any],
    *,
    config_model: type[BaseModel],
    stage_model: type[BaseModel],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return ``(shared, stage)`` with ``overrides`` applied (they win over both, stage ``overrides`` included).

    ``shared`` holds ``config_model``'s settings, ``stage`` those of ``stage_model`` (keys set flat, ``-c
    daily_budget_usd=25``).

    Raises:
        ConfigError: an unknown key (the message lists the known ones) or an unparseable JSON object.
    """
    known = known_keys(config_model, stage_model)
    unknown = sorted(key for key in overrides if key not in known)
    if unknown:
        raise ConfigError(
            f"-c {unknown[0]}",
            f"{', '.join(unknown)} {'is not an agentkit setting' if len(unknown) == 1 else 'are not agentkit settings'}"
            " (CDK's own context keys start with '@' or contain ':')",
            allowed=", ".join(sorted(known)),
        )
    shared_out, stage_out = dict(shared), dict(stage)
    for key in sorted(overrides, key=lambda k: k.count(".")):  # objects first, then their dotted keys
        value = coerce(key, overrides[key], known[key])
        if key in stage_model.model_fields:
            stage_out[key] = value
            continue
        *parents, leaf = key.split(".")
        node = shared_out
        for parent in parents:
            child = node.get(parent)
            node[parent] = dict(child) if isinstance(child, Mapping) else {}
            node = node[parent]
        node[leaf] = _deep_merge(node.get(leaf), value) if isinstance(value, Mapping) else value
    return shared_out, stage_out


__all__ = ["apply_overrides", "coerce", "known_keys"]
