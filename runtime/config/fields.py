"""The pieces :class:`runtime.config.settings.Settings` is declared with: :func:`setting` (a field with its variable,
default and meaning), the reference row :class:`SettingInfo`, and the small predicates its validators and the
start-up use. No state; imports nothing of the runtime but the variable names.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from runtime.env import ENV_HOST, ENV_PLATFORM_VERSION

# Inference profile ids: a geography / global prefix, then the model id. ARNs are accepted as they are.
_PROFILE_RE = re.compile(r"^(us|eu|apac|au|jp|ca|us-gov|global)\.[a-z0-9-]+\.[A-Za-z0-9.:_-]+$")
_ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:bedrock:[a-z0-9-]+:\d{12}:(inference-profile|application-inference-profile)/.+$"
)


def on_agentcore(env: Mapping[str, str]) -> bool:
    """Whether the runtime was deployed by the stack to AgentCore: the stack always sets ``AGENTKIT_PLATFORM_VERSION``
    (``infra/stack.py``), a local run need not."""
    return ENV_PLATFORM_VERSION in env


def is_inference_profile(model: str) -> bool:
    """True for an inference profile id (``us.``/``eu.``/``apac.``/``global.`` …) or a Bedrock profile ARN."""
    return bool(_PROFILE_RE.match(model) or _ARN_RE.match(model))


def setting(env: str, default: Any, meaning: str, *, shown: str | None = None, **constraints: Any) -> Any:
    """Declare a field of :class:`Settings`: read from the variable ``env``, ``default`` when unset.

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


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (``127.0.0.0/8``, ``::1``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # another host name: it may resolve to anything


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


def exposure_warning(host: str, port: int) -> str | None:
    """The warning to log at start when ``host`` is not a loopback address (None when it is).

    The runtime has no authentication of its own: on a non-loopback address anyone who can reach the port can run
    turns on the process's AWS credentials. Deployed, AgentCore authenticates callers in front of it (the image sets
    ``AGENTKIT_HOST=0.0.0.0``); a devcontainer or Codespace is not such a front.
    """
    if is_loopback(host):
        return None
    return (
        f"listening on {host}, not on loopback: anyone who can reach port {port} can run turns "
        "on this process's AWS credentials (the runtime has no authentication of its own). Fine behind "
        f"AgentCore; elsewhere unset {ENV_HOST} (default 127.0.0.1)."
    )


class DeclaredSettings(BaseModel):
    """What a model declared with :func:`setting` answers about its own declarations."""

    @classmethod
    def env_names(cls) -> dict[str, str]:
        """Field name → the environment variable it is read from, in declaration order."""
        return {name: field_extra(info)["env"] for name, info in cls.model_fields.items()}

    @classmethod
    def reference(cls) -> list[SettingInfo]:
        """Every setting as the docs state it (``--help`` and ``docs/configuration.md`` are rendered from this)."""
        rows = []
        for name, info in cls.model_fields.items():
            extra = field_extra(info)
            shown = extra.get("shown") or shown_default(info.default)
            rows.append(
                SettingInfo(field=name, env=extra["env"], default=shown, meaning=info.description or "")
            )
        return rows
