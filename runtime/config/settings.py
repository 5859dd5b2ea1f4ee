"""Runtime settings: one typed, validated model that is the only source of every setting's environment variable,
default, meaning and validation.

Each field of :class:`Settings` is declared with :func:`runtime.config.fields.setting`: the variable it is read from (a constant of
:mod:`runtime.env`, the names the CDK stack and the Dockerfile set), its default, what it means, and its
constraints. ``python -m runtime --help`` and the table in ``docs/configuration.md`` are generated from these
declarations (:mod:`runtime.config.reference`), and a test fails when the page and the model differ. The checks of
single fields follow the declarations, as the model's validators; the predicates they and the start-up use
(:func:`is_inference_profile`, :func:`is_loopback`, :func:`on_agentcore`) are this module's functions.

Precedence is explicit argument > environment variable > default (:meth:`Settings.from_env`); an empty variable
counts as unset. Raises :class:`runtime.errors.ConfigurationError` naming the variable, with a fix, on bad values.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from runtime.config.fields import SettingInfo, env_names, explain, reference_rows, setting
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
    ENV_AGENT_DIR,
    ENV_AGENT_FILE,
    ENV_AGENT_NAME,
    ENV_AGENT_PROFILE,
    ENV_APPROVALS,
    ENV_AWS_REGION,
    ENV_BEDROCK_ENDPOINT,
    ENV_BEDROCK_PROJECT,
    ENV_CLAUDE_CONFIG_DIR,
    ENV_CLI_PATH,
    ENV_EMF_FILE,
    ENV_FALLBACK_MODEL,
    ENV_GATEWAY_URL,
    ENV_HOST,
    ENV_IDLE_TIMEOUT,
    ENV_JOB_EVENTS_QUEUE_URL,
    ENV_JOB_PROGRESS_SECONDS,
    ENV_JOB_TIMEOUT,
    ENV_MAX_BUDGET_USD,
    ENV_MAX_PROMPT_CHARS,
    ENV_MAX_QUEUED,
    ENV_MAX_SESSIONS,
    ENV_MAX_TURNS,
    ENV_MEMORY_ID,
    ENV_METRICS,
    ENV_METRICS_NAMESPACE,
    ENV_MODEL,
    ENV_MODEL_SILENCE_WARN,
    ENV_NETWORK_ALLOWED_CIDRS,
    ENV_NETWORK_HOSTS,
    ENV_PLATFORM_VERSION,
    ENV_PORT,
    ENV_PRICES,
    ENV_RECALL_NAMESPACES,
    ENV_RECALL_TIMEOUT_MS,
    ENV_SANDBOX,
    ENV_SESSION_BUDGET_USD,
    ENV_SESSION_MEMORY_MB,
    ENV_SESSION_PROCESSES,
    ENV_SESSION_STORE,
    ENV_SMALL_MODEL,
    ENV_SPANS_FILE,
    ENV_STAGE,
    ENV_STATE_DIR,
    ENV_STORE_CALL_TIMEOUT,
    ENV_STORE_STRICT,
    ENV_STORE_WRITE_BEHIND,
    ENV_TOOL_DISK_MB,
    ENV_TURN_TIMEOUT,
    ENV_WORKSPACE,
    ENV_WORKSPACE_ALLOW_PROTECTED,
    ENV_WORKSPACE_BUCKET,
    ENV_WORKSPACE_MAX_BYTES,
    ENV_WORKSPACE_MAX_FILE_BYTES,
    ENV_WORKSPACE_MAX_FILES,
    ENV_WORKSPACE_MAX_PATCH_BYTES,
    ENV_WORKSPACE_MAX_S3_BYTES,
    ENV_WORKSPACE_MAX_UNPACKED_BYTES,
    ENV_WORKSPACE_RETENTION_HOURS,
    ENV_WORKSPACE_S3_URI,
    SANDBOX_UNSAFE,
)
from runtime.errors import ConfigurationError
from runtime.models import DEFAULT_FALLBACK_MODEL, DEFAULT_MODEL, DEFAULT_SMALL_MODEL

# Inference profile ids: a geography / global prefix, then the model id. ARNs are accepted as they are.
_PROFILE_RE = re.compile(r"^(us|eu|apac|au|jp|ca|us-gov|global)\.[a-z0-9-]+\.[A-Za-z0-9.:_-]+$")
_ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:bedrock:[a-z0-9-]+:\d{12}:(inference-profile|application-inference-profile)/.+$"
)
#: What every header a caller may name as its actor starts with (AgentCore forwards no other custom headers).
_ACTOR_HEADER_PREFIX = "x-amzn-bedrock-agentcore-runtime-custom-"
#: The smallest per-session memory limit: the CLI has ~250 MiB resident, and as `RLIMIT_DATA` (which also counts
#: what the CLI reserves) 512 MiB made the bundled CLI abort at start while 640 MiB worked (measured with
#: tests/e2e/test_session_limits.py).
MIN_SESSION_MEMORY_MB = 768


def on_agentcore(env: Mapping[str, str]) -> bool:
    """Whether the runtime was deployed by the stack to AgentCore: the stack always sets ``AGENTKIT_PLATFORM_VERSION``
    (``infra/stack.py``), a local run need not."""
    return ENV_PLATFORM_VERSION in env


def is_inference_profile(model: str) -> bool:
    """True for an inference profile id (``us.``/``eu.``/``apac.``/``global.`` …) or a Bedrock profile ARN."""
    return bool(_PROFILE_RE.match(model) or _ARN_RE.match(model))


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (``127.0.0.0/8``, ``::1``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # another host name: it may resolve to anything


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


class Settings(BaseModel):
    """Validated runtime settings. Build with :meth:`from_env`; instances are immutable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = setting(
        ENV_HOST,
        "127.0.0.1",
        "bind address; anything but loopback exposes an unauthenticated, Bedrock-spending endpoint "
        "(the image sets `0.0.0.0`: AgentCore authenticates callers in front of it)",
    )
    port: int = setting(ENV_PORT, 8080, "port", ge=0, le=65535)
    cli_path: str | None = setting(
        ENV_CLI_PATH, None, "Claude Code CLI to spawn", shown="the SDK's bundled CLI"
    )
    session_store: str | None = setting(
        ENV_SESSION_STORE,
        None,
        "where transcripts are kept: `sqlite:///abs/path.db`, `agentcore://<memory-id>` or `off`",
        shown="`sqlite:///<state dir>/sessions.db`",
    )
    state_dir: Path = setting(
        ENV_STATE_DIR, Path(".agentkit"), "local state: SQLite store, spool, CLI config/cache/tmp, workspace"
    )
    store_write_behind: bool = setting(
        ENV_STORE_WRITE_BEHIND,
        False,
        "`1`: journal session-store writes on local disk and deliver them in the background (the turn does not "
        "wait for the store); `0`: write through",
    )
    store_strict: bool = setting(
        ENV_STORE_STRICT,
        False,
        "`1`: acknowledge a turn only once its transcript is in the session store (retried first; else the "
        "invocation fails with `503 session_store_unavailable`); excludes write-behind. See docs/reliability.md",
    )
    store_call_timeout_s: float = setting(
        ENV_STORE_CALL_TIMEOUT,
        20.0,
        "seconds one session-store write may take before it is left to the background retry (inside the SDK's "
        "60 s per transcript batch)",
        gt=0,
        le=50,
    )
    workspace: Path | None = setting(
        ENV_WORKSPACE,
        None,
        "the agent's working directory (file tools are confined to it)",
        shown="`<state dir>/workspace`",
    )
    workspace_max_bytes: int = setting(
        ENV_WORKSPACE_MAX_BYTES,
        DEFAULT_WORKSPACE_MAX_BYTES,
        "largest workspace snapshot sent inline, compressed (`0`: no snapshots); raises the body limit by its base64 "
        "size (docs/repository-work.md)",
        ge=0,
        shown="20 MiB",
    )
    workspace_max_unpacked_bytes: int = setting(
        ENV_WORKSPACE_MAX_UNPACKED_BYTES,
        DEFAULT_WORKSPACE_MAX_UNPACKED_BYTES,
        "what one snapshot may unpack to (checked on the decompressed stream: archive bombs stop here)",
        gt=0,
        shown="200 MiB",
    )
    workspace_max_files: int = setting(
        ENV_WORKSPACE_MAX_FILES, DEFAULT_WORKSPACE_MAX_FILES, "entries one snapshot may hold", gt=0
    )
    workspace_max_file_bytes: int = setting(
        ENV_WORKSPACE_MAX_FILE_BYTES,
        DEFAULT_WORKSPACE_MAX_FILE_BYTES,
        "largest single file in a snapshot",
        gt=0,
        shown="25 MiB",
    )
    workspace_max_patch_bytes: int = setting(
        ENV_WORKSPACE_MAX_PATCH_BYTES,
        DEFAULT_WORKSPACE_MAX_PATCH_BYTES,
        "largest patch a result carries (`422 patch_too_large` above; the workspace is kept)",
        gt=0,
        shown="20 MiB",
    )
    workspace_allow_protected: tuple[str, ...] = setting(
        ENV_WORKSPACE_ALLOW_PROTECTED,
        (),
        "comma-separated protected-path classes a patch may carry (`ci_config`, `ci_action`, `code_owners`, "
        "`submodules`, `agent_config`, `executable`, or `all`); others are withheld (docs/security.md)",
        shown="none",
    )
    workspace_s3_uri: str | None = setting(
        ENV_WORKSPACE_S3_URI,
        None,
        "`s3://<bucket>/<prefix>`: the only place snapshots may be read from (`s3:GetObject` there)",
        shown="unset: inline snapshots only",
    )
    workspace_max_s3_bytes: int = setting(
        ENV_WORKSPACE_MAX_S3_BYTES,
        DEFAULT_WORKSPACE_MAX_S3_BYTES,
        "largest snapshot archive read from S3",
        gt=0,
        shown="100 MiB",
    )
    workspace_retention_hours: float = setting(
        ENV_WORKSPACE_RETENTION_HOURS,
        24.0,
        "hours a session's own workspace and snapshot are kept after its last turn, then removed (`0`: kept "
        "forever); a turn without a snapshot then gets `410 workspace_expired` (docs/repository-work.md)",
        ge=0,
    )
    job_events_queue_url: str | None = setting(
        ENV_JOB_EVENTS_QUEUE_URL,
        None,
        'SQS queue URL for asynchronous jobs\' progress and result events (`sqs:SendMessage`); unset: `"async": '
        "true` is refused with `400 jobs_not_configured` (docs/http-api.md#asynchronous-jobs)",
        shown="unset: jobs off",
    )
    job_timeout_s: float = setting(
        ENV_JOB_TIMEOUT,
        7200.0,
        "seconds a job's turn may take (not `AGENTKIT_TURN_TIMEOUT`); at most 8 h",
        gt=0,
        le=28_800,
    )
    job_progress_s: float = setting(
        ENV_JOB_PROGRESS_SECONDS, 10.0, "least seconds between two progress events of one job", gt=0
    )
    workspace_bucket: str | None = setting(
        ENV_WORKSPACE_BUCKET,
        None,
        "bucket a job's patch goes to when its result would not fit one SQS message (key `jobs/<session id>/<job id>/patch.diff`; "
        "`s3:PutObject` there)",
        shown="unset: such a result is `result_too_large`",
    )
    metrics: Literal["emf", "cloudwatch", "off"] = setting(
        ENV_METRICS,
        "emf",
        "`emf` (Powertools EMF on stdout), `cloudwatch` (batched `PutMetricData`) or `off`",
    )
    metrics_namespace: str = setting(
        ENV_METRICS_NAMESPACE, DEFAULT_METRICS_NAMESPACE, "CloudWatch namespace", min_length=1, max_length=255
    )
    emf_file: Path | None = setting(
        ENV_EMF_FILE,
        None,
        "write EMF lines to this file instead of stdout (the demo uses it)",
        shown="stdout",
    )
    spans_file: Path | None = setting(
        ENV_SPANS_FILE,
        None,
        "also write finished spans as JSON lines to this file (local runs; `agentkit report` reads it)",
    )
    agent_name: str = setting(
        ENV_AGENT_NAME, "agentkit", "the `Agent` metric dimension", min_length=1, max_length=64
    )
    stage: str | None = setting(
        ENV_STAGE,
        None,
        "the deployment stage (`dev`, `prod`; the stack sets it), sent as `agentkit.stage` in each Bedrock "
        "call's request metadata so invocation logs can be told apart per stage",
        max_length=64,
    )
    model: str = setting(
        ENV_MODEL,
        DEFAULT_MODEL,
        "Bedrock **inference profile** id or ARN of the main model (a bare model id is refused)",
    )
    small_model: str = setting(
        ENV_SMALL_MODEL, DEFAULT_SMALL_MODEL, "inference profile for the CLI's small/fast model slot (haiku)"
    )
    bedrock_project: str | None = setting(
        ENV_BEDROCK_PROJECT,
        None,
        "Bedrock project id or ARN sent with every model call (`X-Amzn-Bedrock-ProjectIdentifier`): Bedrock "
        "attributes the calls' cost and data retention to that project",
        pattern=r"^([a-zA-Z0-9_-]+|arn:aws(|-us-gov|-cn|-iso|-iso-b|-iso-f|-eusc):bedrock:[0-9a-z-]{1,20}:[0-9]{12}:project/[a-zA-Z0-9_-]+)$",
        max_length=2048,
    )
    fallback_model: str = setting(
        ENV_FALLBACK_MODEL,
        DEFAULT_FALLBACK_MODEL,
        "inference profile the CLI switches to when the main model is overloaded (the SDK's `fallback_model`); "
        "`off` for none",
    )
    prices: str | None = setting(
        ENV_PRICES,
        None,
        'JSON overrides of the price table, e.g. `{"claude-sonnet-4-5": {"input": 3, "output": 15}}`',
        shown="the built-in table (`runtime/observe/prices.py`)",
    )
    bedrock_endpoint: str | None = setting(
        ENV_BEDROCK_ENDPOINT,
        None,
        "local Bedrock Runtime stand-in URL (sets `ANTHROPIC_BEDROCK_BASE_URL` and skips auth); never set in a "
        "deployed stack",
    )
    max_prompt_chars: int = setting(
        ENV_MAX_PROMPT_CHARS,
        DEFAULT_MAX_PROMPT_CHARS,
        "largest prompt accepted (HTTP 413 above); the default fits a pull-request review of a 190 kB diff",
        gt=0,
    )
    turn_timeout_s: float = setting(
        ENV_TURN_TIMEOUT,
        600.0,
        "seconds one turn may take; then `turn_timeout` and the CLI is restarted",
        gt=0,
    )
    model_silence_warn_s: float = setting(
        ENV_MODEL_SILENCE_WARN,
        60.0,
        "seconds without a byte from the model (while a turn waits on it, not on a tool) before a warning is logged, "
        "then again every as many seconds (a hung Bedrock otherwise shows nothing until the CLI's own timeout, "
        "minutes later); 0: off",
        ge=0,
    )
    idle_timeout_s: float = setting(
        ENV_IDLE_TIMEOUT, 900.0, "seconds before an idle warm session closes its CLI process", gt=0
    )
    max_queued: int = setting(
        ENV_MAX_QUEUED, 8, "invocations that may wait on one session (HTTP 429 above)", gt=0
    )
    max_sessions: int | None = setting(
        ENV_MAX_SESSIONS,
        None,
        "warm sessions (CLI processes) kept at once; the least recently used idle one is closed first",
        shown="what the container's cgroup memory limit fits, at most `32` (`runtime/process/limits.py`)",
        gt=0,
    )
    max_turns: int = setting(
        ENV_MAX_TURNS, 25, "ceiling for `max_turns` (model round-trips) per invocation", gt=0
    )
    max_budget_usd: float = setting(
        ENV_MAX_BUDGET_USD, 1.0, "ceiling for `max_budget_usd` per invocation", gt=0
    )
    session_budget_usd: float = setting(
        ENV_SESSION_BUDGET_USD,
        10.0,
        "cumulative spend per session, persisted with the session (`0`: no limit)",
        ge=0,
    )
    memory_id: str | None = setting(ENV_MEMORY_ID, None, "AgentCore Memory id for long-term recall")
    recall_namespaces: tuple[str, ...] = setting(
        ENV_RECALL_NAMESPACES, (), "comma-separated recall namespaces; may use `{actorId}` / `{sessionId}`"
    )
    recall_timeout_ms: int = setting(
        ENV_RECALL_TIMEOUT_MS,
        300,
        "time budget of recall before a turn; the turn goes on without recall when it runs out",
        gt=0,
    )
    gateway_url: str | None = setting(
        ENV_GATEWAY_URL, None, "AgentCore Gateway MCP endpoint; its tools appear as `mcp__gateway__*`"
    )
    actor_header: str | None = setting(
        ENV_ACTOR_HEADER,
        None,
        "`X-Amzn-Bedrock-AgentCore-Runtime-Custom-*` header naming the caller, trusted only with AgentCore's "
        "workload access token, i.e. when the caller named a runtime user id (`runtime/identity.py`)",
    )
    aws_region: str = setting(ENV_AWS_REGION, "us-east-1", "region for Bedrock and AgentCore")
    claude_config_dir: Path | None = setting(
        ENV_CLAUDE_CONFIG_DIR, None, "the CLI's local transcript dir", shown="`<state dir>/claude`"
    )
    agent_file: Path | None = setting(
        ENV_AGENT_FILE,
        None,
        "JSON agent definition replacing the built-in one",
        shown="the built-in definition",
    )
    agent_dir: Path | None = setting(
        ENV_AGENT_DIR,
        None,
        "agent directory (`agent.json`, `tools/`, `gateway/`; docs/customize.md): the team's own agent, loaded and "
        "checked at start; the image sets it to where it copied `agent_dir` from `cdk.json`",
        shown="none",
    )
    sandbox: Literal["required", "off", "unsafe-no-isolation"] = setting(
        ENV_SANDBOX,
        "required",
        "`required`: the agent's commands run in the OS sandbox or not at all; `off`: without it (logged as a "
        "warning; refused on AgentCore, i.e. when `AGENTKIT_PLATFORM_VERSION` is set); `unsafe-no-isolation`: "
        "without it on purpose (an error log line and the `SandboxUnsafe` metric at every start; "
        "`docs/platform-security.md`)",
    )
    tool_disk_mb: int = setting(
        ENV_TOOL_DISK_MB,
        0,
        "MiB of one size-limited filesystem (tmpfs: memory) per CLI process for the session's workspace, temp root "
        "and tool `HOME`, so commands cannot fill the volume the transcripts and `sessions.db` are on; `0`: off. "
        "Workspace snapshots are unpacked into it and their patch read from it (`docs/security.md`)",
        ge=0,
    )
    session_memory_mb: int = setting(
        ENV_SESSION_MEMORY_MB,
        2048,
        "MiB of memory one session's CLI process tree (the CLI ~250 MiB, its sandboxes, every command; with a tool "
        "disk its files too) may use: a cgroup limit where the runtime can create cgroups, else `RLIMIT_DATA` per "
        "process; `0`: no memory limit. `/ping` shows which (`docs/security.md`)",
        ge=0,
    )
    session_processes: int = setting(
        ENV_SESSION_PROCESSES,
        512,
        "processes and threads one session's CLI process tree may have at once (the CLI itself uses a few dozen)",
        ge=64,
    )
    network_hosts: str | None = setting(
        ENV_NETWORK_HOSTS,
        None,
        "`name=ip,…`: fixed addresses for names on the agent's `network_allowed_domains` (used instead of DNS by "
        "the sandbox's egress proxy; `docs/security.md`)",
    )
    network_allowed_cidrs: str | None = setting(
        ENV_NETWORK_ALLOWED_CIDRS,
        None,
        "`cidr,…`: internal addresses (loopback, private, link-local, …) an allowlisted name may resolve to; "
        "none by default",
    )
    agent_profile: Literal["readonly", "developer"] | None = setting(
        ENV_AGENT_PROFILE,
        None,
        "`readonly` or `developer`: overrides the agent definition's `profile`",
        shown="the definition's `profile`",
    )
    approvals: str | None = setting(
        ENV_APPROVALS,
        None,
        'JSON approval rules (`{"paths": [".github/**"], "expiry_hours": 24}`): tool calls that wait for a '
        "person's approval; replaces the agent definition's `approvals` (`docs/approvals.md`)",
        shown="the definition's `approvals` (none)",
    )
    # Nothing snapshots a local process, so V1's early /ping is the default; the stack always sets it.
    platform_version: Literal["v1", "v2"] = setting(
        ENV_PLATFORM_VERSION,
        "v1",
        "`v1`: answer `/ping` at once and warm up in the background; `v2`: warm up fully before listening "
        "(AgentCore V2 snapshots the process; `docs/platform.md`)",
    )

    # -- checks of single fields (each raises ValueError with what is wrong; from_env names the variable) -----

    @field_validator("prices")
    @classmethod
    def _price_overrides(cls, value: str | None) -> str | None:
        if value:
            from runtime.observe.costs import load_price_table

            load_price_table(overrides=value)  # raises ValueError with what is wrong
        return value

    @field_validator("workspace_allow_protected", mode="before")
    @classmethod
    def _protected_classes(cls, value: Any) -> tuple[str, ...]:
        from runtime.workspace.protected_paths import parse_allowed

        return tuple(sorted(parse_allowed(value)))  # raises ValueError naming the unknown class

    @field_validator("network_hosts", "network_allowed_cidrs")
    @classmethod
    def _network_lists(cls, value: str | None, info: Any) -> str | None:
        from runtime.guard.egress import parse_networks, parse_pins

        try:
            (parse_pins if info.field_name == "network_hosts" else parse_networks)(value)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from exc
        return value

    @field_validator("workspace_s3_uri")
    @classmethod
    def _s3_location(cls, value: str | None) -> str | None:
        if value:
            from runtime.workspace.s3 import S3Location

            S3Location.parse(value)  # raises ValueError with what is wrong
        return value

    @field_validator("model", "small_model", "fallback_model")
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

    @field_validator("bedrock_endpoint", "gateway_url", "job_events_queue_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value and not re.match(r"^https?://", value):
            raise ValueError(f"{value!r} must be an http(s) URL")
        return value.rstrip("/") if value else value

    @field_validator("workspace_bucket")
    @classmethod
    def _bucket_name(cls, value: str | None) -> str | None:
        # S3's bucket naming rules, in short (General purpose bucket naming rules, Amazon S3 user guide).
        if value and not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", value):
            raise ValueError(f"{value!r} is not an S3 bucket name (a name, not an s3:// URI)")
        return value

    @field_validator("session_memory_mb")
    @classmethod
    def _memory_holds_the_cli(cls, value: int) -> int:
        # The CLI alone has 210-245 MB resident (measured; runtime/process/limits.py): a smaller limit kills it, not a command.
        if 0 < value < MIN_SESSION_MEMORY_MB:
            raise ValueError(
                f"{ENV_SESSION_MEMORY_MB}={value} is below {MIN_SESSION_MEMORY_MB}: the CLI alone "
                "needs about 250 MiB; use at least that, or 0 for no memory limit"
            )
        return value

    # -- the declarations, as the reference states them ----------------------------------------------------

    @classmethod
    def env_names(cls) -> dict[str, str]:
        """Field name → the environment variable it is read from, in declaration order."""
        return env_names(cls)

    @classmethod
    def reference(cls) -> list[SettingInfo]:
        """Every setting as the docs state it (``--help`` and ``docs/configuration.md`` are rendered from this)."""
        return reference_rows(cls)

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
        for field_name, var in cls.env_names().items():
            raw = env.get(var)
            if raw not in (None, ""):
                values[field_name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            settings = cls(**values)
        except ValidationError as exc:
            raise ConfigurationError(explain(exc, cls.env_names())) from None
        unpriced = settings.unpriced_models()
        if unpriced:
            raise ConfigurationError(
                "no price for "
                + ", ".join(f"{var}={model!r}" for var, model in unpriced)
                + ": budgets, cost metrics and reports would read $0 for it. Use a model of the kit's table "
                "(docs/configuration.md, 'Models') or give its price in "
                f'{ENV_PRICES}, e.g. {{"<model id or canonical name>": {{"input": 3, "output": 15}}}} (USD per '
                "million tokens, from https://aws.amazon.com/bedrock/pricing/)"
            )
        if settings.sandbox == "off" and on_agentcore(env):
            raise ConfigurationError(
                f"{ENV_SANDBOX}=off is refused on AgentCore: an unsandboxed command can read the execution role's "
                "credentials from the microVM's metadata service and reach its platform server. Keep 'required' "
                f"(the default), or set {SANDBOX_UNSAFE!r} to accept that (docs/platform-security.md)"
            )
        return settings

    @property
    def resolved_fallback_model(self) -> str | None:
        """The fallback model to pass to the SDK: None when ``off`` or the same as the main model (the CLI refuses
        a fallback equal to the main model)."""
        fallback = self.fallback_model.strip()
        return None if fallback.lower() == "off" or fallback == self.model else fallback

    def unpriced_models(self) -> list[tuple[str, str]]:
        """``(variable, model)`` for each configured model the price table (with ``AGENTKIT_PRICES``) cannot price.

        Raises:
            ConfigurationError: ``AGENTKIT_PRICES`` is malformed.
        """
        from runtime.observe.costs import load_price_table, resolve_price

        try:
            table = load_price_table(overrides=self.prices)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        configured = [(ENV_MODEL, self.model), (ENV_SMALL_MODEL, self.small_model)]
        if self.resolved_fallback_model:
            configured.append((ENV_FALLBACK_MODEL, self.resolved_fallback_model))
        return [(var, model) for var, model in configured if resolve_price(model, table) is None]

    def exposure_warning(self) -> str | None:
        """The warning to log at start when :attr:`host` is not a loopback address (None when it is; why:
        :func:`exposure_warning`)."""
        return exposure_warning(self.host, self.port)

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
