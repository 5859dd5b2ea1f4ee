"""Runtime settings: every knob in one typed, validated object.

Precedence is explicit argument > environment variable > default (:meth:`Settings.from_env`).
The environment variable names below are the contract with the CDK stack, the Dockerfile and the README; the
constants live in :mod:`runtime.env`.

Environment variables (all optional):

==============================  ==========================================================================
``AGENTKIT_HOST``               bind address (default ``127.0.0.1``; ``0.0.0.0`` inside a container)
``AGENTKIT_PORT``               port (default ``8080``)
``AGENTKIT_CLI_PATH``           Claude Code CLI to spawn (default: the SDK's bundled CLI)
``AGENTKIT_SESSION_STORE``      ``sqlite:///abs/path.db`` | ``agentcore://<memory-id>`` | ``off``
``AGENTKIT_STATE_DIR``          local state (SQLite store, spool, CLI config) (default ``./.agentkit``)
``AGENTKIT_STORE_WRITE_BEHIND`` ``1``: journal store writes locally, deliver in the background (default ``0``)
``AGENTKIT_METRICS``            ``emf`` | ``cloudwatch`` | ``off`` (default ``emf``)
``AGENTKIT_METRICS_NAMESPACE``  CloudWatch namespace (default ``AgentCoreClaudeKit``)
``AGENTKIT_EMF_FILE``           write EMF lines to this file instead of stdout (the demo uses it)
``AGENTKIT_AGENT_NAME``         the ``Agent`` metric dimension (default ``agentkit``)
``AGENTKIT_MODEL``              Bedrock inference profile id or ARN (main model)
``AGENTKIT_SMALL_MODEL``        inference profile for the CLI's fast/small slot (haiku)
``AGENTKIT_BEDROCK_ENDPOINT``   local Bedrock Runtime stand-in URL; never set in deployed stacks
``AGENTKIT_MAX_PROMPT_CHARS``   largest accepted prompt (default ``200000``: a 190 kB review diff fits)
``AGENTKIT_TURN_TIMEOUT``       seconds one turn may take (default ``600``)
``AGENTKIT_IDLE_TIMEOUT``       seconds before an idle warm session is closed (default ``900``)
``AGENTKIT_MAX_QUEUED``         invocations that may wait on one session (default ``8``)
``AGENTKIT_MAX_SESSIONS``       warm sessions (CLI processes) kept at once; idle ones are evicted first (default:
                                what the container's cgroup memory limit fits, at most 32; see runtime.limits)
``AGENTKIT_MAX_TURNS``          model round-trips per invocation, upper bound (default ``25``)
``AGENTKIT_MAX_BUDGET_USD``     spend per invocation, upper bound (default ``1.0``)
``AGENTKIT_SESSION_BUDGET_USD`` cumulative spend per session (default ``10.0``; ``0`` disables)
``AGENTKIT_MEMORY_ID``          AgentCore Memory id for long-term recall (optional)
``AGENTKIT_RECALL_NAMESPACES``  comma-separated namespaces, may use ``{actorId}`` / ``{sessionId}``
``AGENTKIT_RECALL_TIMEOUT_MS``  time budget of recall before a turn (default ``300``)
``AGENTKIT_GATEWAY_URL``        AgentCore Gateway MCP endpoint whose tools the agent gets (optional)
``AGENTKIT_ACTOR_HEADER``       trusted ``X-Amzn-Bedrock-AgentCore-Runtime-Custom-*`` header naming the actor
``AGENTKIT_WORKSPACE``          the agent's working directory (default ``<state dir>/workspace``)
``AGENTKIT_WORKSPACE_MAX_BYTES``  largest inline workspace snapshot, compressed (default 20 MiB; docs/repository-work.md)
``AGENTKIT_WORKSPACE_MAX_UNPACKED_BYTES``  what a snapshot may unpack to (default 200 MiB)
``AGENTKIT_WORKSPACE_MAX_FILES``  entries a snapshot may hold (default ``50000``)
``AGENTKIT_WORKSPACE_MAX_FILE_BYTES``  largest single file in a snapshot (default 25 MiB)
``AGENTKIT_WORKSPACE_MAX_PATCH_BYTES``  largest patch returned (default 20 MiB)
``AGENTKIT_WORKSPACE_S3_URI``   ``s3://bucket/prefix``: where snapshots may be read from (unset: inline only)
``AGENTKIT_WORKSPACE_MAX_S3_BYTES``  largest snapshot read from S3 (default 100 MiB)
``AWS_REGION``                  region for Bedrock and AgentCore (default ``us-east-1``)
``AGENTKIT_AGENT_FILE``         JSON agent definition replacing the built-in one (optional)
``AGENTKIT_PRICES``             JSON object of price-table overrides (see :func:`runtime.observe.costs.load_price_table`)
``CLAUDE_CONFIG_DIR``           the CLI's local transcript dir (default ``<state dir>/claude``)
``AGENTKIT_SANDBOX``            ``required`` (default): tools run in the OS sandbox or not at all; ``off``
``AGENTKIT_AGENT_PROFILE``      ``readonly`` | ``developer``: overrides the agent definition's ``profile``
``AGENTKIT_PLATFORM_VERSION``   ``v1`` (default): ``/ping`` at once, warm-up in the background; ``v2``: warm up
                                fully before listening (AgentCore V2 snapshots the process; docs/platform.md)
==============================  ==========================================================================

Raises :class:`runtime.errors.ConfigurationError` with the variable name and a fix on bad values.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runtime.env import (
    DEFAULT_MAX_PROMPT_CHARS,
    DEFAULT_METRICS_NAMESPACE,
    DEFAULT_WORKSPACE_MAX_BYTES,
    DEFAULT_WORKSPACE_MAX_FILE_BYTES,
    DEFAULT_WORKSPACE_MAX_FILES,
    DEFAULT_WORKSPACE_MAX_PATCH_BYTES,
    DEFAULT_WORKSPACE_MAX_S3_BYTES,
    DEFAULT_WORKSPACE_MAX_UNPACKED_BYTES,
    ENV_ACTOR_HEADER,
    ENV_AGENT_FILE,
    ENV_AGENT_NAME,
    ENV_AGENT_PROFILE,
    ENV_AWS_REGION,
    ENV_BEDROCK_ENDPOINT,
    ENV_CLAUDE_CONFIG_DIR,
    ENV_CLI_PATH,
    ENV_EMF_FILE,
    ENV_GATEWAY_URL,
    ENV_HOST,
    ENV_IDLE_TIMEOUT,
    ENV_MAX_BUDGET_USD,
    ENV_MAX_PROMPT_CHARS,
    ENV_MAX_QUEUED,
    ENV_MAX_SESSIONS,
    ENV_MAX_TURNS,
    ENV_MEMORY_ID,
    ENV_METRICS,
    ENV_METRICS_NAMESPACE,
    ENV_MODEL,
    ENV_PLATFORM_VERSION,
    ENV_PORT,
    ENV_PRICES,
    ENV_RECALL_NAMESPACES,
    ENV_RECALL_TIMEOUT_MS,
    ENV_SANDBOX,
    ENV_SESSION_BUDGET_USD,
    ENV_SESSION_STORE,
    ENV_SMALL_MODEL,
    ENV_STATE_DIR,
    ENV_STORE_WRITE_BEHIND,
    ENV_TURN_TIMEOUT,
    ENV_WORKSPACE,
    ENV_WORKSPACE_MAX_BYTES,
    ENV_WORKSPACE_MAX_FILE_BYTES,
    ENV_WORKSPACE_MAX_FILES,
    ENV_WORKSPACE_MAX_PATCH_BYTES,
    ENV_WORKSPACE_MAX_S3_BYTES,
    ENV_WORKSPACE_MAX_UNPACKED_BYTES,
    ENV_WORKSPACE_S3_URI,
)
from runtime.errors import ConfigurationError

DEFAULT_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
DEFAULT_SMALL_MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"

# Inference profile ids: a geography / global prefix, then the model id. ARNs are accepted as they are.
_PROFILE_RE = re.compile(r"^(us|eu|apac|au|jp|ca|us-gov|global)\.[a-z0-9-]+\.[A-Za-z0-9.:_-]+$")
_ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:bedrock:[a-z0-9-]+:\d{12}:(inference-profile|application-inference-profile)/.+$"
)
_ACTOR_HEADER_PREFIX = "x-amzn-bedrock-agentcore-runtime-custom-"

_ENV_FIELDS: dict[str, str] = {
    "host": ENV_HOST,
    "port": ENV_PORT,
    "cli_path": ENV_CLI_PATH,
    "session_store": ENV_SESSION_STORE,
    "state_dir": ENV_STATE_DIR,
    "store_write_behind": ENV_STORE_WRITE_BEHIND,
    "metrics": ENV_METRICS,
    "metrics_namespace": ENV_METRICS_NAMESPACE,
    "emf_file": ENV_EMF_FILE,
    "agent_name": ENV_AGENT_NAME,
    "model": ENV_MODEL,
    "small_model": ENV_SMALL_MODEL,
    "bedrock_endpoint": ENV_BEDROCK_ENDPOINT,
    "max_prompt_chars": ENV_MAX_PROMPT_CHARS,
    "turn_timeout_s": ENV_TURN_TIMEOUT,
    "idle_timeout_s": ENV_IDLE_TIMEOUT,
    "max_queued": ENV_MAX_QUEUED,
    "max_sessions": ENV_MAX_SESSIONS,
    "max_turns": ENV_MAX_TURNS,
    "max_budget_usd": ENV_MAX_BUDGET_USD,
    "session_budget_usd": ENV_SESSION_BUDGET_USD,
    "memory_id": ENV_MEMORY_ID,
    "recall_namespaces": ENV_RECALL_NAMESPACES,
    "recall_timeout_ms": ENV_RECALL_TIMEOUT_MS,
    "gateway_url": ENV_GATEWAY_URL,
    "actor_header": ENV_ACTOR_HEADER,
    "workspace": ENV_WORKSPACE,
    "workspace_max_bytes": ENV_WORKSPACE_MAX_BYTES,
    "workspace_max_unpacked_bytes": ENV_WORKSPACE_MAX_UNPACKED_BYTES,
    "workspace_max_files": ENV_WORKSPACE_MAX_FILES,
    "workspace_max_file_bytes": ENV_WORKSPACE_MAX_FILE_BYTES,
    "workspace_max_patch_bytes": ENV_WORKSPACE_MAX_PATCH_BYTES,
    "workspace_s3_uri": ENV_WORKSPACE_S3_URI,
    "workspace_max_s3_bytes": ENV_WORKSPACE_MAX_S3_BYTES,
    "aws_region": ENV_AWS_REGION,
    "claude_config_dir": ENV_CLAUDE_CONFIG_DIR,
    "agent_file": ENV_AGENT_FILE,
    "prices": ENV_PRICES,
    "sandbox": ENV_SANDBOX,
    "agent_profile": ENV_AGENT_PROFILE,
    "platform_version": ENV_PLATFORM_VERSION,
}


def is_inference_profile(model: str) -> bool:
    """True for an inference profile id (``us.``/``eu.``/``apac.``/``global.`` …) or a Bedrock profile ARN."""
    return bool(_PROFILE_RE.match(model) or _ARN_RE.match(model))


class Settings(BaseModel):
    """Validated runtime settings. Build with :meth:`from_env`; instances are immutable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    cli_path: str | None = None
    session_store: str | None = None
    state_dir: Path = Path(".agentkit")
    store_write_behind: bool = False
    metrics: Literal["emf", "cloudwatch", "off"] = "emf"
    metrics_namespace: str = Field(default=DEFAULT_METRICS_NAMESPACE, min_length=1, max_length=255)
    emf_file: Path | None = None
    agent_name: str = Field(default="agentkit", min_length=1, max_length=64)
    model: str = DEFAULT_MODEL
    small_model: str = DEFAULT_SMALL_MODEL
    bedrock_endpoint: str | None = None
    max_prompt_chars: int = Field(default=DEFAULT_MAX_PROMPT_CHARS, gt=0)
    turn_timeout_s: float = Field(default=600.0, gt=0)
    idle_timeout_s: float = Field(default=900.0, gt=0)
    max_queued: int = Field(default=8, gt=0)
    max_sessions: int | None = Field(
        default=None, gt=0
    )  # None: from the cgroup memory limit (runtime.limits)
    max_turns: int = Field(default=25, gt=0)
    max_budget_usd: float = Field(default=1.0, gt=0)
    session_budget_usd: float = Field(default=10.0, ge=0)
    memory_id: str | None = None
    recall_namespaces: tuple[str, ...] = ()
    recall_timeout_ms: int = Field(default=300, gt=0)
    gateway_url: str | None = None
    actor_header: str | None = None
    workspace: Path | None = None
    workspace_max_bytes: int = Field(default=DEFAULT_WORKSPACE_MAX_BYTES, ge=0)  # 0: no snapshots accepted
    workspace_max_unpacked_bytes: int = Field(default=DEFAULT_WORKSPACE_MAX_UNPACKED_BYTES, gt=0)
    workspace_max_files: int = Field(default=DEFAULT_WORKSPACE_MAX_FILES, gt=0)
    workspace_max_file_bytes: int = Field(default=DEFAULT_WORKSPACE_MAX_FILE_BYTES, gt=0)
    workspace_max_patch_bytes: int = Field(default=DEFAULT_WORKSPACE_MAX_PATCH_BYTES, gt=0)
    workspace_s3_uri: str | None = None
    workspace_max_s3_bytes: int = Field(default=DEFAULT_WORKSPACE_MAX_S3_BYTES, gt=0)

    @field_validator("workspace_s3_uri")
    @classmethod
    def _s3_location(cls, value: str | None) -> str | None:
        if value:
            from runtime.workspace.s3 import S3Location

            S3Location.parse(value)  # raises ValueError with what is wrong
        return value

    aws_region: str = "us-east-1"
    claude_config_dir: Path | None = None
    agent_file: Path | None = None
    prices: str | None = None  # JSON price-table overrides, checked here and applied by the wiring

    @field_validator("prices")
    @classmethod
    def _price_overrides(cls, value: str | None) -> str | None:
        if value:
            from runtime.observe.costs import load_price_table

            load_price_table(overrides=value)  # raises ValueError with what is wrong
        return value

    sandbox: Literal["required", "off"] = "required"
    agent_profile: Literal["readonly", "developer"] | None = None
    # Nothing snapshots a local process, so V1's early /ping is the default; the stack always sets it.
    platform_version: Literal["v1", "v2"] = "v1"

    @field_validator("model", "small_model")
    @classmethod
    def _inference_profile(cls, value: str) -> str:
        if not is_inference_profile(value):
            raise ValueError(
                f"{value!r} is not a Bedrock inference profile id or ARN. Claude models on Bedrock are invoked "
                "on-demand through inference profiles: use e.g. 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' "
                "or 'global.anthropic.claude-sonnet-4-5-20250929-v1:0' (see the Bedrock console, Cross-region "
                "inference), or an inference-profile ARN"
            )
        return value

    @field_validator("actor_header")
    @classmethod
    def _actor_header(cls, value: str | None) -> str | None:
        if value and not value.lower().startswith(_ACTOR_HEADER_PREFIX):
            raise ValueError(
                f"{value!r} does not reach the runtime: AgentCore forwards only 'Authorization' and "
                "'X-Amzn-Bedrock-AgentCore-Runtime-Custom-*' headers; name one of the latter"
            )
        return value

    @field_validator("recall_namespaces", mode="before")
    @classmethod
    def _split_namespaces(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("bedrock_endpoint", "gateway_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value and not re.match(r"^https?://", value):
            raise ValueError(f"{value!r} must be an http(s) URL")
        return value.rstrip("/") if value else value

    # -- derived paths -------------------------------------------------------------------------------------

    @property
    def resolved_state_dir(self) -> Path:
        return self.state_dir.expanduser().resolve()

    @property
    def resolved_workspace(self) -> Path:
        return (self.workspace or self.resolved_state_dir / "workspace").expanduser().resolve()

    @property
    def resolved_claude_config_dir(self) -> Path:
        return (self.claude_config_dir or self.resolved_state_dir / "claude").expanduser().resolve()

    @property
    def resolved_session_store(self) -> str | None:
        """The store URL in force: explicit value, ``None`` for ``off``, else SQLite under the state dir."""
        if self.session_store == "off":
            return None
        if self.session_store:
            return self.session_store
        return f"sqlite:///{self.resolved_state_dir / 'sessions.db'}"

    # -- construction --------------------------------------------------------------------------------------

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Build settings from ``overrides`` > ``env`` (default ``os.environ``) > defaults."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for field_name, var in _ENV_FIELDS.items():
            raw = env.get(var)
            if raw not in (None, ""):
                values[field_name] = raw
        if ENV_HOST not in env and (Path("/.dockerenv").exists() or env.get("DOCKER_CONTAINER")):
            values["host"] = "0.0.0.0"  # noqa: S104 - inside a container the runtime must listen on all interfaces
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigurationError(_explain(exc)) from None

    # -- the CLI's environment -----------------------------------------------------------------------------

    def cli_env(self) -> dict[str, str]:
        """Environment for the Claude Code CLI: Bedrock routing, quiet start-up, writable dirs."""
        state = self.resolved_state_dir
        env = {
            "CLAUDE_CODE_USE_BEDROCK": "1",
            "AWS_REGION": self.aws_region,
            "ANTHROPIC_MODEL": self.model,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": self.model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": self.model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": self.small_model,
            "ANTHROPIC_SMALL_FAST_MODEL": self.small_model,
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CONFIG_DIR": str(self.resolved_claude_config_dir),
            "CLAUDE_CODE_TMPDIR": str(state / "tmp"),
            "XDG_CACHE_HOME": str(state / "cache"),
            "ENABLE_TOOL_SEARCH": "false",
            # git run by the agent reads no user or system config, so it cannot be given aliases or hooks.
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        if self.bedrock_endpoint:
            env["ANTHROPIC_BEDROCK_BASE_URL"] = self.bedrock_endpoint
            env["CLAUDE_CODE_SKIP_BEDROCK_AUTH"] = "1"
        return env

    def ensure_dirs(self) -> None:
        """Create the writable directories the CLI and the stores need."""
        for path in (
            self.resolved_state_dir,
            self.resolved_workspace,
            self.resolved_claude_config_dir,
            self.resolved_state_dir / "tmp",
            self.resolved_state_dir / "cache",
        ):
            path.mkdir(parents=True, exist_ok=True)


def _explain(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "?"
        var = _ENV_FIELDS.get(field, field)
        message = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"{var}: {message}")
    return "invalid runtime settings: " + "; ".join(parts)
