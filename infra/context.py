"""Turn the CDK context (``cdk.json`` + ``-c`` from the CLI) into the typed :class:`AppConfig`.

Context keys read:
  * ``stage`` — ``dev`` (default) or ``prod``;
  * ``agentkit`` — the config object (``cdk.json``). Given on the command line (``-c 'agentkit={...}'``) it is
    a JSON string and **replaces** the whole object, as ``-c`` does for any CDK context key;
  * every other key that is not CDK's own (CDK's start with ``@`` or contain ``:``) is an override of one
    setting, ``-c image_build=codebuild`` or ``-c gateway.enabled=false`` (:mod:`infra.overrides`).

Environment: ``CDK_DEFAULT_REGION`` / ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` when ``agentkit.region`` is
unset (:func:`infra.config.resolve_region`).

Raises:
    ConfigError: anything invalid, with the key and the allowed values (``app.py`` prints it and exits 1).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from infra.config import AppConfig, ConfigError, load_config

RESERVED_KEYS = frozenset({"stage", "agentkit"})
#: CDK's own context keys without ``@`` or ``:`` (written to cdk.context.json by ``cdk acknowledge``).
CDK_PLAIN_KEYS = frozenset({"acknowledged-issue-numbers"})
REPLACE_HINT = (
    " (-c agentkit=... replaces the whole agentkit object of cdk.json; to change single settings use "
    "-c image_build=codebuild or -c gateway.enabled=false)"
)


def is_cdk_key(key: str) -> bool:
    """Feature flags (``@aws-cdk/...``), CLI settings (``aws:cdk:...``), lookups (``ssm:account=...``)."""
    return key.startswith("@") or ":" in key or key in CDK_PLAIN_KEYS


def overrides_from(context: Mapping[str, Any]) -> dict[str, Any]:
    """The ``-c key=value`` settings in ``context``: every key that is neither reserved nor CDK's own."""
    return {k: v for k, v in context.items() if k not in RESERVED_KEYS and not is_cdk_key(k)}


def agentkit_object(value: Any) -> tuple[Mapping[str, Any] | None, bool]:
    """``(object, from_command_line)``: cdk.json gives a mapping, ``-c agentkit=...`` a JSON string."""
    if value is None or isinstance(value, Mapping):
        return value, False
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                "agentkit",
                f"-c agentkit=... is not JSON ({exc.msg} at char {exc.pos})",
                allowed="a JSON object",
            ) from exc
        if isinstance(parsed, Mapping):
            return parsed, True
    raise ConfigError("agentkit", f"{type(value).__name__} is not an object", allowed="a JSON object")


def config_from_context(context: Mapping[str, Any], *, environ: Mapping[str, str]) -> AppConfig:
    """Validate the whole context for the selected stage (see module docstring)."""
    stage = str(context.get("stage") or "dev")
    raw, from_cli = agentkit_object(context.get("agentkit"))
    try:
        return load_config(raw, stage=stage, overrides=overrides_from(context), environ=environ)
    except ConfigError as exc:
        if from_cli and not exc.key.startswith("-c"):
            raise ConfigError(exc.key, exc.detail + REPLACE_HINT, allowed=exc.allowed) from exc
        raise
