"""What every doctor check shares: the result type, the stage's settings read from ``cdk.json``, the Region
resolution and the reading of botocore errors.

Env vars: ``AWS_REGION``, ``AWS_DEFAULT_REGION`` (:func:`resolve_region`). IAM actions: none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Literal

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    NoRegionError,
    ProfileNotFound,
    ReadTimeoutError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from agentkit.env import ENV_DEFAULT_REGION, ENV_REGION

Status = Literal["ok", "warn", "fail", "skip"]
BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
MIN_BOOTSTRAP_VERSION = 6  # the templates' requiresBootstrapStackVersion (cdk.out/manifest.json)
POWERTOOLS_VERSION = "3.37.0"  # infra/functions/__init__.py
LAMBDA_RUNTIME = "python3.14"  # infra/functions/__init__.py PYTHON_RUNTIME: every Lambda of the stack
LAYER_ARCHITECTURE = "arm64"
GEO_PREFIXES = ("us-gov.", "us.", "eu.", "apac.", "jp.", "au.", "global.")
DEFAULT_MODEL = "us.anthropic.claude-sonnet-5-5"  # infra/config.py AppConfig.model
DEFAULT_EXTRA_MODELS = (
    "us.anthropic.claude-haiku-4-5-20251001-v1:0",
)  # infra/config.py AppConfig.extra_models
DEFAULT_FALLBACK_MODEL = "us.anthropic.claude-sonnet-5"  # infra/config.py AppConfig.fallback_model


class DoctorConfigError(ValueError):
    """``cdk.json`` is missing, not JSON, or has no such stage."""


#: The lesser token secrets the webhook creates with ``webhook.read_tokens``, per tracker (the tracker registry,
#: ``webhook/trackers/registry.py``, which this boto3-only client cannot import; a test keeps them equal).
READ_TOKEN_KINDS: dict[str, tuple[str, ...]] = {
    "github": ("read-token",),
    "gitlab": ("read-token", "members-token"),
}


@dataclass(frozen=True)
class CheckResult:
    """One line of the report. ``fix`` says what to do when ``status`` is not ok; ``skip`` means not run."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        label = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "skip": "skip"}[self.status]
        return f"{label} {self.name}: {self.detail}" + (f" -> {self.fix}" if self.fix else "")

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class DoctorConfig:
    """What the checks need from ``cdk.json`` for one stage (names as ``infra/config.py`` builds them)."""

    stage: str
    profiles: tuple[str, ...]
    region: str | None = None
    account: str | None = None
    layer_parameters: tuple[str, ...] = ()
    transaction_search_in_stack: bool = False
    image_build: str = "local"
    ignore: frozenset[str] = field(default_factory=frozenset)
    project_name: str = "agentkit"
    github_oidc: bool = False
    create_oidc_provider: bool = False
    gateway: bool = True
    webhook_trackers: tuple[str, ...] = ()
    webhook_creates_secrets: bool = True
    #: ``webhook.read_tokens``: the stack also creates the read tokens (and GitLab's members token).
    webhook_read_tokens: bool = False
    generation: int = 1

    def at(self, generation: int) -> DoctorConfig:
        """The same settings with another ``stages.<stage>.generation``."""
        return replace(self, generation=generation)

    @property
    def _suffix(self) -> str:
        """``""`` for generation 1, else ``g<n>`` (infra/names.py ``generation_suffix``)."""
        return "" if self.generation == 1 else f"g{self.generation}"

    @property
    def stack_name(self) -> str:
        """``AgentKit-<stage>`` (app.py)."""
        return f"AgentKit-{self.stage}"

    @property
    def runtime_name(self) -> str:
        """``<project>_<stage>`` (infra/config.py ``AppConfig.runtime_name``)."""
        return f"{self.project_name}_{self.stage}"

    @property
    def memory_name(self) -> str:
        """``<project>_<stage>_memory[_g<n>]`` (infra/names.py)."""
        base = f"{self.project_name}_{self.stage}_memory"
        return f"{base}_{self._suffix}" if self._suffix else base

    @property
    def gateway_name(self) -> str:
        """``<project>-<stage>-tools[-g<n>]`` (infra/names.py)."""
        base = f"{self.project_name}-{self.stage}-tools"
        return f"{base}-{self._suffix}" if self._suffix else base

    @property
    def secret_prefix(self) -> str:
        """``<project>-<stage>[-g<n>]`` (infra/names.py)."""
        base = f"{self.project_name}-{self.stage}"
        return f"{base}-{self._suffix}" if self._suffix else base

    @property
    def secret_names(self) -> tuple[str, ...]:
        """The secrets the webhook creates: ``<secret prefix>/<tracker>-webhook-secret`` and ``-token``, with read
        tokens also ``-read-token`` (GitHub, GitLab) and ``gitlab-members-token`` (infra/webhook/secrets.py), none
        when it references existing ones."""
        if not self.webhook_creates_secrets:
            return ()
        lesser = READ_TOKEN_KINDS if self.webhook_read_tokens else {}
        return tuple(
            f"{self.secret_prefix}/{tracker}-{kind}"
            for tracker in self.webhook_trackers
            for kind in ("webhook-secret", "token", *lesser.get(tracker, ()))
        )


def foundation_model(profile_id: str) -> str:
    """``us.anthropic.claude-...`` → ``anthropic.claude-...``."""
    for prefix in GEO_PREFIXES:
        if profile_id.startswith(prefix):
            return profile_id[len(prefix) :]
    return profile_id


def layer_parameter(runtime: str) -> str:
    return f"/aws/service/powertools/python/{LAYER_ARCHITECTURE}/{runtime}/{POWERTOOLS_VERSION}"


def load_doctor_config(cdk_json: Path, stage: str, *, ignore: Sequence[str] = ()) -> DoctorConfig:
    """Read the stage's settings from ``cdk.json`` (shared keys, then the stage's ``overrides``).

    Raises:
        DoctorConfigError: unreadable file, not JSON, no ``agentkit`` object or no such stage.
    """
    try:
        context = json.loads(cdk_json.read_text())["context"]
        raw = dict(context["agentkit"])
    except FileNotFoundError:
        raise DoctorConfigError(
            f"no {cdk_json} here: run `agentkit doctor` from the kit's checkout, or name the file with "
            "--cdk-json PATH/TO/cdk.json"
        ) from None
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DoctorConfigError(f"cannot read context.agentkit from {cdk_json}: {exc}") from exc
    stages = raw.pop("stages", {}) or {}
    if stage not in stages:
        raise DoctorConfigError(f"{cdk_json}: no stage {stage!r} (stages: {', '.join(sorted(stages))})")
    generation = stages[stage].get("generation", 1)
    if isinstance(generation, bool) or not isinstance(generation, int) or not 1 <= generation <= 999:
        raise DoctorConfigError(
            f"{cdk_json}: stages.{stage}.generation is {generation!r}; allowed: a whole number from 1 to 999"
        )
    merged = {**raw, **(stages[stage].get("overrides") or {})}
    model = merged.get("model", DEFAULT_MODEL)
    extra = merged.get("extra_models", list(DEFAULT_EXTRA_MODELS))
    fallback = merged.get("fallback_model", DEFAULT_FALLBACK_MODEL)
    gateway, webhook = merged.get("gateway") or {}, merged.get("webhook") or {}
    oidc = merged.get("github_oidc") or {}
    layers = []
    if gateway.get("enabled", True) and gateway.get("invoices_tool", True):
        layers.append(layer_parameter(LAMBDA_RUNTIME))
    if webhook.get("enabled", False):
        layers.append(layer_parameter(LAMBDA_RUNTIME))
    return DoctorConfig(
        stage=stage,
        profiles=tuple(dict.fromkeys([model, *extra, *([fallback] if fallback else [])])),
        region=merged.get("region"),
        account=merged.get("account"),
        layer_parameters=tuple(dict.fromkeys(layers)),
        transaction_search_in_stack=bool(
            (merged.get("observability") or {}).get("transaction_search", False)
        ),
        image_build=str(merged.get("image_build", "local")),
        ignore=frozenset(ignore),
        project_name=str(merged.get("project_name", "agentkit")),
        github_oidc=bool(oidc.get("enabled", False)),
        create_oidc_provider=bool(oidc.get("create_provider", False)),
        gateway=bool(gateway.get("enabled", True)),
        webhook_trackers=tuple(webhook.get("trackers", ["github"])) if webhook.get("enabled", False) else (),
        webhook_creates_secrets=bool(webhook.get("create_secrets", True)),
        webhook_read_tokens=bool(webhook.get("read_tokens", False)),
        generation=generation,
    )


def resolve_region(
    explicit: str | None, config_region: str | None, env: Mapping[str, str], profile_region: str | None
) -> tuple[str | None, str]:
    """``(region, where it came from)``: ``--region`` > cdk.json's ``agentkit.region`` (the Region the stack
    deploys to) > ``AWS_REGION`` > ``AWS_DEFAULT_REGION`` > the profile's ``region``; ``(None, "nowhere")``."""
    for value, source in (
        (explicit, "--region"),
        (config_region, "cdk.json agentkit.region"),
        (env.get(ENV_REGION), ENV_REGION),
        (env.get(ENV_DEFAULT_REGION), ENV_DEFAULT_REGION),
        (profile_region, "the AWS profile"),
    ):
        if value:
            return value, source
    return None, "nowhere"


def error_of(exc: Exception) -> tuple[str, str]:
    """``(code, message)`` of a botocore error."""
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return str(err.get("Code", "")), str(err.get("Message", exc))
    return type(exc).__name__, str(exc)


def denied(code: str) -> bool:
    return code in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedException")


EXPIRED_CODES = ("ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired")
INVALID_CODES = ("InvalidClientTokenId", "SignatureDoesNotMatch", "UnrecognizedClientException")
EXPIRED_ERRORS = (
    "TokenRetrievalError",
    "SSOTokenLoadError",
    "UnauthorizedSSOTokenError",
    "RefreshWithMFAUnsupportedError",
)


def failure_kind(exc: Exception) -> str:
    """What went wrong calling AWS, for the fix text: ``network``, ``no-region``, ``no-credentials``,
    ``expired``, ``invalid-credentials``, ``profile`` or ``other``."""
    code, _ = error_of(exc)
    if isinstance(exc, BotoConnectionError | ReadTimeoutError):
        return "network"
    if isinstance(exc, NoRegionError):
        return "no-region"
    if isinstance(exc, NoCredentialsError):
        return "no-credentials"
    if isinstance(exc, ProfileNotFound):
        return "profile"
    if code in EXPIRED_CODES or type(exc).__name__ in EXPIRED_ERRORS:
        return "expired"
    if code in INVALID_CODES:
        return "invalid-credentials"
    return "other"


FIXES = {
    "network": "check the network: a proxy (HTTPS_PROXY), a firewall, or an AWS_ENDPOINT_URL* variable pointing "
    "somewhere unreachable",
    "no-region": "pass --region, set agentkit.region in cdk.json, or export AWS_REGION",
    "no-credentials": "aws configure / aws sso login, or set AWS_PROFILE",
    "profile": "check --profile / AWS_PROFILE against ~/.aws/config (aws configure list-profiles)",
    "expired": "the session expired: aws sso login (or refresh the temporary credentials), then rerun",
    "invalid-credentials": "the access key is wrong or deleted: check AWS_ACCESS_KEY_ID / the profile's keys",
    "other": "",
}


def is_aws_error(exc: BaseException) -> bool:
    return isinstance(exc, ClientError | BotoCoreError)
