"""The checks of single :class:`runtime.settings.Settings` fields, each raising ``ValueError`` with what is wrong
(``Settings.from_env`` names the variable). A base class of the model, so the model reads as its declarations.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationInfo, field_validator

from runtime.env import ENV_SESSION_MEMORY_MB
from runtime.errors import ConfigurationError
from runtime.setting_fields import DeclaredSettings, is_inference_profile

_ACTOR_HEADER_PREFIX = "x-amzn-bedrock-agentcore-runtime-custom-"
#: The smallest per-session memory limit: the CLI has ~250 MiB resident, and as `RLIMIT_DATA` (which also counts
#: what the CLI reserves) 512 MiB made the bundled CLI abort at start while 640 MiB worked (measured with
#: tests/e2e/test_session_limits.py).
MIN_SESSION_MEMORY_MB = 768


class SettingsChecks(DeclaredSettings):
    """Field validators of :class:`runtime.settings.Settings` (the fields are declared there)."""

    @field_validator("prices", check_fields=False)
    @classmethod
    def _price_overrides(cls, value: str | None) -> str | None:
        if value:
            from runtime.observe.costs import load_price_table

            load_price_table(overrides=value)  # raises ValueError with what is wrong
        return value

    @field_validator("network_hosts", "network_allowed_cidrs", check_fields=False)
    @classmethod
    def _network_lists(cls, value: str | None, info: Any) -> str | None:
        from runtime.guard.egress import parse_networks, parse_pins

        try:
            (parse_pins if info.field_name == "network_hosts" else parse_networks)(value)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from exc
        return value

    @field_validator("workspace_s3_uri", check_fields=False)
    @classmethod
    def _s3_location(cls, value: str | None) -> str | None:
        if value:
            from runtime.workspace.s3 import S3Location

            S3Location.parse(value)  # raises ValueError with what is wrong
        return value

    @field_validator("model", "small_model", "fallback_model", check_fields=False)
    @classmethod
    def _inference_profile(cls, value: str, info: ValidationInfo) -> str:
        if info.field_name == "fallback_model" and value.strip().lower() == "off":
            return value
        if not is_inference_profile(value):
            raise ValueError(
                f"{value!r} is not a Bedrock inference profile id or ARN. Claude models on Bedrock are invoked "
                "on-demand through inference profiles: use e.g. 'us.anthropic.claude-sonnet-5-5' "
                "or 'global.anthropic.claude-haiku-4-5-20251001-v1:0' (see the Bedrock console, Cross-region "
                "inference), or an inference-profile ARN"
            )
        return value

    @field_validator("actor_header", check_fields=False)
    @classmethod
    def _actor_header(cls, value: str | None) -> str | None:
        if value and not value.lower().startswith(_ACTOR_HEADER_PREFIX):
            raise ValueError(
                f"{value!r} does not reach the runtime: AgentCore forwards only 'Authorization' and "
                "'X-Amzn-Bedrock-AgentCore-Runtime-Custom-*' headers; name one of the latter"
            )
        return value

    @field_validator("recall_namespaces", mode="before", check_fields=False)
    @classmethod
    def _split_namespaces(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("bedrock_endpoint", "gateway_url", "job_events_queue_url", check_fields=False)
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value and not re.match(r"^https?://", value):
            raise ValueError(f"{value!r} must be an http(s) URL")
        return value.rstrip("/") if value else value

    @field_validator("workspace_bucket", check_fields=False)
    @classmethod
    def _bucket_name(cls, value: str | None) -> str | None:
        # S3's bucket naming rules, in short (General purpose bucket naming rules, Amazon S3 user guide).
        if value and not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", value):
            raise ValueError(f"{value!r} is not an S3 bucket name (a name, not an s3:// URI)")
        return value

    @field_validator("session_memory_mb", check_fields=False)
    @classmethod
    def _memory_holds_the_cli(cls, value: int) -> int:
        # The CLI alone has 210-245 MB resident (measured; runtime/limits.py): a smaller limit kills it, not a command.
        if 0 < value < MIN_SESSION_MEMORY_MB:
            raise ValueError(
                f"{ENV_SESSION_MEMORY_MB}={value} is below {MIN_SESSION_MEMORY_MB}: the CLI alone "
                "needs about 250 MiB; use at least that, or 0 for no memory limit"
            )
        return value
