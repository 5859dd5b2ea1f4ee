"""Typed, validated configuration for the CDK app.

Only ``app.py`` reads CDK context; it hands the raw ``agentkit`` context object and the selected stage name to
:func:`load_config`, which returns a frozen :class:`AppConfig`. Constructs receive typed values from it and
never touch context themselves.

Raises:
    ConfigError: any invalid value. The message names the offending key (dotted path under ``agentkit``) and
        the allowed values, e.g. ``agentkit.model: 'anthropic.claude-x' is not an inference profile id;
        allowed: ids starting with one of us., eu., apac., global., ...``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from infra.config_base import ConfigModel as _Model

# ConfigError lives below this module and infra.overrides (which both raise it); importable from here too.
from infra.errors import ConfigError as ConfigError
from infra.names import MAX_GENERATION, StageNames
from infra.overrides import apply_overrides
from infra.webhook.config import WebhookConfig
from runtime.approvals.rules import ApprovalRules
from runtime.env import DEFAULT_METRICS_NAMESPACE
from runtime.models import DEFAULT_FALLBACK_MODEL, DEFAULT_MODEL, DEFAULT_SMALL_MODEL
from runtime.observe.costs import load_price_table, resolve_price
from runtime.workspace.protected_paths import parse_allowed

if TYPE_CHECKING:
    from runtime.agent.agent_dir import AgentDirectory

RUNTIME_NAME_PATTERN = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]{0,47}$")
"""AgentCore runtime names: a letter, then letters, digits or underscores, 48 characters at most."""

# System-defined inference profile ids start with a geography prefix (``us.``, ``eu.``, ``global.``, ...). Which
# source Regions may call a profile, and which Regions it routes to, are AWS's to say and change: the stack does
# not copy them (the runtime role allows the model in every Region, but only through the configured profiles:
# ``infra.runtime.model_invoke_statements``), and ``agentkit doctor`` asks Bedrock (GetInferenceProfile).
PROFILE_GEOGRAPHIES = ("us", "us-gov", "eu", "apac", "jp", "au", "global")
PROFILE_ID_PATTERN = re.compile(
    r"^(?P<geo>"
    + "|".join(sorted(PROFILE_GEOGRAPHIES, key=len, reverse=True))
    + r")\.(?P<model>anthropic\.claude-[a-z0-9.-]+(?::\d+)?)$"
)
STAGES = ("dev", "prod")
METRICS_NAMESPACE_PATTERN = re.compile(r"^[A-Za-z0-9_./#:-]{1,255}$")


def inference_profile_parts(profile_id: str) -> tuple[str, str]:
    """Split ``us.anthropic.claude-...`` into ``("us", "anthropic.claude-...")``.

    Raises:
        ValueError: when ``profile_id`` is not a system-defined Claude inference profile id.
    """
    match = PROFILE_ID_PATTERN.match(profile_id)
    if not match:
        raise ValueError(
            f"{profile_id!r} is not an inference profile id (a bare foundation-model id fails on demand)"
        )
    return match["geo"], match["model"]


class StageConfig(_Model):
    """Per-stage settings: budgets, retention, removal policy, alarm thresholds, runtime lifecycle."""

    daily_budget_usd: float = Field(gt=0)
    log_retention_days: Literal[1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1827, 3653]
    removal_policy: Literal["destroy", "retain"]
    error_rate_alarm_percent: float = Field(gt=0, le=100)
    p99_latency_alarm_ms: int = Field(gt=0)
    idle_timeout_minutes: int = Field(ge=1, le=480)
    max_lifetime_hours: int = Field(ge=1, le=8)
    memory_event_expiry_days: int = Field(ge=7, le=365)
    # Part of the retained resources' names (infra.names): bump it to redeploy after a destroy of a retain stage.
    generation: int = Field(default=1, ge=1, le=MAX_GENERATION)
    # Tool calls that wait for a person's approval in this stage (runtime.approvals.rules, docs/approvals.md); passed
    # to the container as AGENTKIT_APPROVALS, replacing the agent definition's. None: the definition's (none).
    approvals: ApprovalRules | None = None
    # A Bedrock project (id or ARN) every model call of this stage is attributed to (AGENTKIT_BEDROCK_PROJECT, sent as
    # X-Amzn-Bedrock-ProjectIdentifier); pattern from botocore 1.44.18 bedrock-runtime projectIdentifier. Null: none.
    bedrock_project: str | None = Field(
        default=None,
        max_length=2048,
        pattern=r"^([a-zA-Z0-9_-]+|arn:aws(|-us-gov|-cn|-iso|-iso-b|-iso-f|-eusc):bedrock:[0-9a-z-]{1,20}:[0-9]{12}:project/[a-zA-Z0-9_-]+)$",
    )


class JwtAuthConfig(_Model):
    discovery_url: str = Field(pattern=r"^https://.+/\.well-known/openid-configuration$")
    allowed_clients: tuple[str, ...] = ()
    allowed_audience: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _needs_clients_or_audience(self) -> JwtAuthConfig:
        if not self.allowed_clients and not self.allowed_audience:
            raise ValueError("set allowed_clients or allowed_audience (non-empty list)")
        return self


class AuthConfig(_Model):
    mode: Literal["iam", "jwt"] = "iam"
    jwt: JwtAuthConfig | None = None

    @model_validator(mode="after")
    def _jwt_needs_settings(self) -> AuthConfig:
        if self.mode == "jwt" and self.jwt is None:
            raise ValueError(
                "mode 'jwt' needs a 'jwt' object with discovery_url and allowed_clients/audience"
            )
        return self


class NetworkConfig(_Model):
    """``public`` (default) or ``vpc``; VPC ids are given explicitly so synth needs no AWS lookup."""

    mode: Literal["public", "vpc"] = "public"
    vpc_id: str | None = Field(default=None, pattern=r"^vpc-[0-9a-f]{8,17}$")
    subnet_ids: tuple[str, ...] = ()
    availability_zones: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _vpc_needs_ids(self) -> NetworkConfig:
        if self.mode == "vpc" and (not self.vpc_id or not self.subnet_ids):
            raise ValueError("mode 'vpc' needs vpc_id and a non-empty subnet_ids list")
        if self.mode == "vpc" and len(self.availability_zones) != len(self.subnet_ids):
            raise ValueError("availability_zones must list one zone per subnet id")
        for subnet in self.subnet_ids:
            if not re.match(r"^subnet-[0-9a-f]{8,17}$", subnet):
                raise ValueError(f"subnet id {subnet!r} is not of the form subnet-<hex>")
        return self


class MemoryConfig(_Model):
    customer_managed_key: bool = False


class GatewayConfig(_Model):
    enabled: bool = True
    authorizer: Literal["iam", "jwt"] = "iam"
    jwt: JwtAuthConfig | None = None
    invoices_tool: bool = True

    @model_validator(mode="after")
    def _jwt_needs_settings(self) -> GatewayConfig:
        if self.authorizer == "jwt" and self.jwt is None:
            raise ValueError("authorizer 'jwt' needs a 'jwt' object with discovery_url and clients/audience")
        return self


class ObservabilityConfig(_Model):
    alarm_email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
    transaction_search: bool = False
    """Account-level: enables CloudWatch Transaction Search (X-Ray spans to CloudWatch Logs). Opt in once."""


class CommandAccessConfig(_Model):
    """Who may still use the runtime's command APIs (``infra.command_access``): nobody by default.

    ``break_glass_principal``: one IAM role ARN (operator-only: ``agentkit doctor --probe-sandbox`` and incident
    response). Those APIs run commands as root in a live session, past the agent's guard and sandbox.
    """

    break_glass_principal: str | None = Field(
        default=None, pattern=r"^arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$"
    )


GITHUB_REPOSITORY_PATTERN = (
    r"^(?:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+|[A-Za-z0-9_.-]+@[0-9]+/[A-Za-z0-9_.-]+@[0-9]+)$"
)
"""``owner/name``, or GitHub's immutable form ``owner@<owner id>/name@<repository id>`` (both ids pinned), which
repositories created, renamed or transferred since 2026-07-15 send in their OIDC ``sub`` (GitHub docs, "OpenID
Connect", immutable subject claims; docs/deploy.md says how to read the ids)."""


class GithubOidcConfig(_Model):
    """Hook for ``infra.ci_access.GitHubOidcInvoker`` (built when ``enabled``).

    ``invoke_for_user``: the role may also name a runtime user id (``InvokeAgentRuntimeForUser``), i.e. choose
    the actor whose sessions and memory a run uses. Off by default: CI runs stay anonymous.
    """

    enabled: bool = False
    repository: str | None = Field(default=None, pattern=GITHUB_REPOSITORY_PATTERN)
    create_provider: bool = False
    """An account holds one GitHub OIDC provider per URL and most already have it: the stack uses the existing
    one unless this is true (``agentkit doctor`` says which setting the account needs)."""
    branches: tuple[str, ...] = ()
    environments: tuple[str, ...] = ()
    allow_pull_requests: bool = False
    invoke_for_user: bool = False

    @model_validator(mode="after")
    def _needs_repository(self) -> GithubOidcConfig:
        if self.enabled and not self.repository:
            raise ValueError("enabled github_oidc needs repository 'owner/name'")
        return self


class AppConfig(_Model):
    """The whole validated configuration, resolved for one stage."""

    stage: Literal["dev", "prod"]
    project_name: str = Field(default="agentkit", pattern=r"^[a-z][a-z0-9]{1,20}$")
    account: str | None = Field(default=None, pattern=r"^\d{12}$")
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-gov)?-[a-z]+-\d$")
    # Defaults and prices come from the kit's model table (runtime/models/catalog.py). extra_models: the CLI's
    # small/fast slot first. fallback_model: what the CLI switches to when the main model is overloaded (null: none).
    model: str = DEFAULT_MODEL
    extra_models: tuple[str, ...] = (DEFAULT_SMALL_MODEL,)
    fallback_model: str | None = DEFAULT_FALLBACK_MODEL
    # Prices of models the kit's table lacks (USD per million tokens; the runtime's AGENTKIT_PRICES): keyed by the
    # canonical name (claude-sonnet-5-5) or the exact profile id, e.g. {"claude-x-1": {"input": 3, "output": 15}}.
    prices: dict[str, dict[str, float]] = {}
    metrics_namespace: str = DEFAULT_METRICS_NAMESPACE
    # Foundation model id -> AWS Marketplace product id, for models newer than infra.model_access's table.
    marketplace_product_ids: dict[str, str] = {}
    # PutMetricData from a background task is the default: it needs no log-side EMF extraction, which
    # AgentCore's stdout log capture does not document. "emf" writes Powertools EMF lines to stdout instead.
    metrics_sink: Literal["cloudwatch", "emf"] = "cloudwatch"
    agent_name: str = Field(default="agentkit", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    # readonly: the reviewer toolset. developer: may also run the repository's tests/builds inside the OS sandbox
    # (network off). Reaches the runtime as AGENTKIT_AGENT_PROFILE (runtime/guard/profiles.py).
    agent_profile: Literal["readonly", "developer"] = "readonly"
    # required: the agent's commands run in the OS sandbox or not at all. The stack deploys to AgentCore, where an
    # unsandboxed command can read the role's credentials from the metadata service: "off" is refused there, and
    # only the loudly named value disables isolation (docs/platform-security.md).
    sandbox: Literal["required", "off", "unsafe-no-isolation"] = "required"
    image_build: Literal["local", "codebuild"] = "local"
    # AgentCore Runtime platform: always rendered into the Runtime's PlatformVersion and passed to the container as
    # AGENTKIT_PLATFORM_VERSION (the start-up order follows it). v2 restores each session from a snapshot of the
    # initialised process; v1 starts every microVM from the image. See docs/platform.md.
    platform_version: Literal["v1", "v2"] = "v2"
    # AgentCore session storage (Preview), off when null: a per-session filesystem mounted here, holding the CLI's
    # config dir and the workspace as a warm cache across a stop/resume of one session (the transcript stays in
    # Memory). Pattern and length from the CFN schema of AWS::BedrockAgentCore::Runtime (MountPath).
    session_storage_mount: str | None = Field(
        default=None, min_length=6, max_length=200, pattern=r"^/mnt/[a-zA-Z0-9._-]+/?$"
    )
    actor_header: str = Field(
        default="X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor",
        pattern=r"^X-Amzn-Bedrock-AgentCore-Runtime-Custom-[A-Za-z0-9-]+$",
    )
    auth: AuthConfig = AuthConfig()
    network: NetworkConfig = NetworkConfig()
    memory: MemoryConfig = MemoryConfig()
    gateway: GatewayConfig = GatewayConfig()
    observability: ObservabilityConfig = ObservabilityConfig()
    webhook: WebhookConfig = WebhookConfig()
    github_oidc: GithubOidcConfig = GithubOidcConfig()
    command_access: CommandAccessConfig = CommandAccessConfig()
    # A bucket for workspace snapshots too large to send inline (infra.workspaces.WorkspaceBucket; the runtime gets
    # AGENTKIT_WORKSPACE_S3_URI, the GitHub OIDC role may upload). Off: inline snapshots only.
    workspace_bucket: bool = False
    # Protected-path classes (runtime/workspace/protected_paths.py) an agent's patch may change: the runtime keeps
    # them in the patch (AGENTKIT_WORKSPACE_ALLOW_PROTECTED) and the webhook reporter commits them
    # (PATCH_ALLOW_PROTECTED). Empty: CI configuration, CODEOWNERS, new executable bits, … are refused. Per stage
    # through stages.<stage>.overrides.
    allow_protected_paths: tuple[str, ...] = ()
    # The agent the image carries (infra.agent_config, docs/customize.md): a directory with agent.json and optionally
    # a tools/ package and gateway/<target>/ Lambdas. Relative paths are read from the directory of cdk.json.
    agent_dir: str = Field(default="agents/sample", min_length=1)
    settings: StageConfig
    _deploy_region: tuple[str, str] | None = PrivateAttr(default=None)
    _agent: Any = PrivateAttr(default=None)

    @field_validator("model")
    @classmethod
    def _model_is_profile(cls, value: str) -> str:
        inference_profile_parts(value)
        return value

    @field_validator("allow_protected_paths")
    @classmethod
    def _protected_classes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(parse_allowed(value)))  # raises ValueError naming an unknown class

    @field_validator("fallback_model")
    @classmethod
    def _fallback_is_profile(cls, value: str | None) -> str | None:
        if value is not None:
            inference_profile_parts(value)
        return value

    @field_validator("prices")
    @classmethod
    def _prices_ok(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        load_price_table(overrides=value)  # raises ValueError naming the bad entry
        return value

    @field_validator("extra_models")
    @classmethod
    def _extra_are_profiles(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            inference_profile_parts(item)
        return value

    @field_validator("marketplace_product_ids")
    @classmethod
    def _product_ids_ok(cls, value: dict[str, str]) -> dict[str, str]:
        for model_id, product_id in value.items():
            if not re.match(r"^anthropic\.claude-[a-z0-9.-]+(?::\d+)?$", model_id):
                raise ValueError(f"{model_id!r} is not a Claude foundation model id (anthropic.claude-...)")
            if not re.match(r"^(prod-[a-z0-9]+|prodview-[a-z0-9]+|[0-9a-f-]{36})$", product_id):
                raise ValueError(f"{product_id!r} is not an AWS Marketplace product id (prod-...)")
        return value

    @field_validator("metrics_namespace")
    @classmethod
    def _namespace_ok(cls, value: str) -> str:
        if not METRICS_NAMESPACE_PATTERN.match(value) or value.startswith("AWS/"):
            raise ValueError(f"{value!r} is not a custom CloudWatch namespace (1-255 chars, not 'AWS/...')")
        return value

    @field_validator("sandbox")
    @classmethod
    def _no_silent_sandbox_off(cls, value: str) -> str:
        if value == "off":
            raise ValueError(
                "'off' would run the agent's commands unsandboxed on AgentCore, where any command can read the "
                "execution role's credentials from the metadata service; keep 'required', or write "
                "'unsafe-no-isolation' to accept that (docs/platform-security.md)"
            )
        return value

    @model_validator(mode="after")
    def _every_model_priced(self) -> AppConfig:
        # A model without a price would read $0 in every budget, metric and report: refuse it here rather than
        # deploy a stack whose cost guards cannot see its spend.
        table = load_price_table(overrides=self.prices)
        unpriced = [m for m in self.models if resolve_price(m, table) is None]
        if unpriced:
            raise ValueError(
                f"no price for {', '.join(unpriced)}: budgets, cost metrics and reports would read $0 for it. "
                "Use a model of the kit's table (docs/configuration.md, 'Models'), or add its price to "
                'agentkit.prices, e.g. {"<canonical name or profile id>": {"input": 3, "output": 15}} (USD per '
                "million tokens, from https://aws.amazon.com/bedrock/pricing/)"
            )
        return self

    @model_validator(mode="after")
    def _consistent(self) -> AppConfig:
        if self.auth.mode == "jwt" and (self.webhook.enabled or self.github_oidc.enabled):
            raise ValueError(
                "auth.mode 'jwt' refuses SigV4 callers, so webhook.enabled and github_oidc.enabled need "
                "auth.mode 'iam' (or a second runtime)"
            )
        idle, lifetime = self.settings.idle_timeout_minutes, self.settings.max_lifetime_hours * 60
        if idle > lifetime:
            raise ValueError(
                f"stages.{self.stage}.idle_timeout_minutes ({idle}) exceeds max_lifetime_hours ({lifetime} min)"
            )
        return self

    @property
    def deploy_region(self) -> str:
        """The Region the stack deploys to: ``region``, else the environment's (see :func:`resolve_region`)."""
        return (self._deploy_region or resolve_region(self.region, {}))[0]

    @property
    def deploy_region_source(self) -> str:
        """Where :attr:`deploy_region` came from (``agentkit.region``, ``CDK_DEFAULT_REGION``, ...)."""
        return (self._deploy_region or resolve_region(self.region, {}))[1]

    @property
    def runtime_name(self) -> str:
        """``<project>_<stage>``: valid under :data:`RUNTIME_NAME_PATTERN` by construction of both parts."""
        return f"{self.project_name}_{self.stage}"

    @property
    def resource_prefix(self) -> str:
        return f"{self.project_name}-{self.stage}"

    @property
    def names(self) -> StageNames:
        """The names of what the stage retains (memory, gateway, secrets), with its ``generation``."""
        return StageNames(self.project_name, self.stage, self.settings.generation)

    @property
    def agent(self) -> AgentDirectory:
        """The checked agent directory (read by :func:`load_config`)."""
        if self._agent is None:
            from infra.agent_config import read_agent_config

            self._agent = read_agent_config(self.agent_dir, base_dir=None)
        return cast("AgentDirectory", self._agent)

    @property
    def models(self) -> tuple[str, ...]:
        """Every profile the runtime may call: the main model, the extra models and the fallback."""
        rest = [*self.extra_models, *([self.fallback_model] if self.fallback_model else [])]
        return tuple(dict.fromkeys([self.model, *rest]))


_ALLOWED_HINTS = {
    "literal_error": None,  # pydantic lists the literal choices itself
    "greater_than": "a number greater than {gt}",
    "greater_than_equal": "a number >= {ge}",
    "less_than_equal": "a number <= {le}",
    "string_pattern_mismatch": "strings matching {pattern}",
    "extra_forbidden": "the keys documented in infra/config.py (webhook.*: infra/webhook/config.py)",
    "missing": "a value must be given",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "int_parsing": "a whole number",
    "float_parsing": "a number",
}


def _allowed_for(error: Mapping[str, Any]) -> str:
    ctx = error.get("ctx") or {}
    kind = error["type"]
    if kind == "literal_error":
        return str(ctx.get("expected", "see infra/config.py"))
    hint = _ALLOWED_HINTS.get(kind)
    if hint:
        try:
            return hint.format(**ctx)
        except (KeyError, IndexError):
            return hint
    if "inference profile" in str(error.get("msg", "")):
        return "inference profile ids starting with " + ", ".join(f"{p}." for p in PROFILE_GEOGRAPHIES)
    return "see infra/config.py"


DEFAULT_REGION = "us-east-1"
REGION_VARIABLES = ("CDK_DEFAULT_REGION", "AWS_REGION", "AWS_DEFAULT_REGION")
"""Where the deploy Region comes from when ``agentkit.region`` is unset, in this order (the CDK CLI sets
``CDK_DEFAULT_REGION`` from the profile it deploys with)."""


def resolve_region(region: str | None, environ: Mapping[str, str]) -> tuple[str, str]:
    """``(region, source)``: ``agentkit.region``, else the first of :data:`REGION_VARIABLES` that is set, else
    :data:`DEFAULT_REGION`."""
    if region:
        return region, "agentkit.region"
    for variable in REGION_VARIABLES:
        if environ.get(variable):
            return environ[variable], variable
    return DEFAULT_REGION, "the default"


def load_config(
    raw: Mapping[str, Any] | None,
    *,
    stage: str,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> AppConfig:
    """Validate the ``agentkit`` context object for ``stage`` and return the typed config.

    ``raw`` holds shared keys plus ``stages: {dev: {...}, prod: {...}}``; the chosen stage's object becomes
    ``AppConfig.settings`` and may override shared keys under ``overrides``. ``overrides`` (``-c key=value``
    from the CDK CLI, see :mod:`infra.overrides`) apply last, over the stage's values. The deploy Region is
    resolved from ``agentkit.region`` or ``environ`` (:func:`resolve_region`); ``agent_dir`` from ``base_dir`` (default: the
    working directory, where ``cdk.json`` is) and checked (:mod:`infra.agent_config`). Whether a profile can be called
    from that Region is Bedrock's answer, not a table here: ``agentkit doctor`` asks it (GetInferenceProfile).

    Raises:
        ConfigError: unknown stage, missing stage settings, an unknown override key, or any invalid key (named
            with its dotted path).
    """
    if stage not in STAGES:
        raise ConfigError("stage", f"{stage!r} is not a stage", allowed=", ".join(STAGES))
    data = dict(raw or {})
    stages = data.pop("stages", None)
    if not isinstance(stages, Mapping) or not isinstance(stages.get(stage), Mapping):
        raise ConfigError(f"agentkit.stages.{stage}", "stage settings are missing", allowed="an object")
    stage_data = dict(stages[stage])
    stage_overrides = stage_data.pop("overrides", {}) or {}
    merged = {**data, **stage_overrides}
    merged, stage_data = apply_overrides(
        merged, stage_data, overrides or {}, config_model=AppConfig, stage_model=StageConfig
    )
    try:
        config = AppConfig.model_validate({**merged, "stage": stage, "settings": stage_data})
    except ValidationError as exc:
        # A misspelt key is two errors (the unknown key, the real one "missing"): lead with the unknown key, say
        # which known key it is probably meant to be, and name every other problem too, not only the first.
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        described = [_describe_error(e, stage, overrides or {}, errors) for e in errors]
        first = errors[0]
        key, message = described[0]
        if len(described) > 1:
            message += "; also " + "; ".join(f"{k}: {m}" for k, m in described[1:])
        raise ConfigError(key, message, allowed=_allowed_for(first)) from exc
    config._deploy_region = resolve_region(config.region, environ or {})
    from infra.agent_config import read_agent_config

    config._agent = read_agent_config(
        config.agent_dir, base_dir=base_dir
    )  # checked at synth, before any construct
    if config._agent.gateway_targets and not config.gateway.enabled:
        raise ConfigError(
            "agentkit.gateway.enabled",
            f"false, but the agent directory {config._agent.path} has Gateway tools "
            f"({', '.join(t.name for t in config._agent.gateway_targets)}): they would not be deployed",
            allowed="true, or remove the agent directory's gateway/ targets",
        )
    return config


def _describe_error(
    error: Mapping[str, Any], stage: str, overrides: Mapping[str, Any], errors: list[Any]
) -> tuple[str, str]:
    """``(dotted key, message)`` for one pydantic error of :func:`load_config`."""
    loc = [str(part) for part in error["loc"]]
    if loc and loc[0] == "settings":
        loc = ["stages", stage, *loc[1:]]
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        missing = [
            str(e["loc"][-1])
            for e in errors
            if e["type"] == "missing" and list(e["loc"][:-1]) == list(error["loc"][:-1])
        ]
        close = difflib.get_close_matches(loc[-1], missing, n=1)
        if close:
            message = f"unknown key; did you mean {close[0]!r}?"
    origin = _override_origin(loc, stage, overrides)
    if origin:
        message += f" (set by -c {origin})"
    return ".".join(["agentkit", *loc]), message


def _override_origin(loc: list[str], stage: str, overrides: Mapping[str, Any]) -> str | None:
    """The ``-c`` key that set the value at ``loc``, if one did."""
    dotted = ".".join(loc[2:] if loc[:2] == ["stages", stage] else loc)
    for key in overrides:
        if dotted == key or dotted.startswith(key + "."):
            return key
    return None
