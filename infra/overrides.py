"""CDK-style ``-c key=value`` overrides of the ``agentkit`` config, applied over the selected stage's values.

Keys (see :func:`known_keys`):
  * a top-level setting: ``-c image_build=codebuild``, ``-c model=eu.anthropic.claude-...``;
  * a nested one, dotted: ``-c gateway.enabled=false``, ``-c observability.alarm_email=ops@example.com``;
  * a whole nested object as JSON, merged key by key: ``-c 'gateway={"enabled": false}'``;
  * a stage setting, flat: ``-c daily_budget_usd=25`` (applies to the stage being synthesized).

The CLI hands every value over as a string; it is parsed by the type of the setting it targets: booleans
(``true``/``false``/``yes``/``no``/``1``/``0``), numbers, lists (a JSON array, or comma-separated), ``null`` for
optional settings, JSON objects for nested settings; strings stay as given. Pydantic then validates the result
like any value from ``cdk.json``. An unknown key is refused with the list of known ones.

Raises (all :class:`infra.config.ConfigError`): unknown key, a JSON object that does not parse.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from infra.config import AppConfig, ConfigError, StageConfig

#: AppConfig fields that are not user settings.
_INTERNAL = frozenset({"stage", "settings"})
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


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


def known_keys() -> dict[str, Any]:
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

    walk(AppConfig, "")
    for name, field in StageConfig.model_fields.items():
        keys[name] = field.annotation
    return keys


def stage_keys() -> frozenset[str]:
    return frozenset(StageConfig.model_fields)


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
        lowered = text.lower()
        return True if lowered in _TRUE else False if lowered in _FALSE else value
    if inner in (int, float) or (
        get_origin(inner) is Literal and all(isinstance(a, int) for a in get_args(inner))
    ):
        try:
            number = json.loads(text)
        except json.JSONDecodeError:
            return value  # pydantic names the key and the expected type
        return number if isinstance(number, int | float) and not isinstance(number, bool) else value
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
    shared: Mapping[str, Any], stage: Mapping[str, Any], overrides: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return ``(shared, stage)`` with ``overrides`` applied (they win over both, stage ``overrides`` included).

    Raises:
        ConfigError: an unknown key (the message lists the known ones) or an unparseable JSON object.
    """
    known = known_keys()
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
        if key in stage_keys():
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


__all__ = ["apply_overrides", "coerce", "known_keys", "stage_keys"]
