"""Synthesize each stack variant ONCE per test session (CDK synth costs seconds)."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


def base_context() -> dict[str, Any]:
    return copy.deepcopy(json.loads((ROOT / "cdk.json").read_text())["context"])


@dataclass
class Synth:
    template: Any  # aws_cdk.assertions.Template
    raw: dict[str, Any]
    template_path: Path
    stack: Any
    config: Any


def synth(tmp: Path, *, stage: str, overrides: dict[str, Any], account: str | None) -> Synth:
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from infra import nag
    from infra.config import load_config
    from infra.stack import AgentKitStack

    context = base_context()
    context["agentkit"].update(overrides)
    app = cdk.App(outdir=str(tmp), context=context, builtin_cloud_formation_validation=False)  # as app.py
    config = load_config(app.node.try_get_context("agentkit"), stage=stage)
    env = cdk.Environment(account=account, region="us-east-1") if account else None
    stack = AgentKitStack(app, f"AgentKit-{stage}", config=config, env=env)
    nag.add_checks(app)
    assembly = app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag finding
    artifact = assembly.get_stack_by_name(stack.stack_name)
    path = Path(assembly.directory) / artifact.template_file
    return Synth(Template.from_json(artifact.template), artifact.template, path, stack, config)


BREAK_GLASS_ROLE = "arn:aws:iam::123456789012:role/agentkit-break-glass"
PROD_OVERRIDES = {
    "image_build": "codebuild",
    "auth": {
        "mode": "jwt",
        "jwt": {
            "discovery_url": "https://issuer.example.com/.well-known/openid-configuration",
            "allowed_clients": ["client-1"],
        },
    },
    "network": {
        "mode": "vpc",
        "vpc_id": "vpc-0123456789abcdef0",
        "subnet_ids": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
        "availability_zones": ["us-east-1a", "us-east-1b"],
    },
    "observability": {"alarm_email": "ops@example.com", "transaction_search": True},
}


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """Defaults as `make synth` runs them: dev stage, local image, env-agnostic (no account)."""
    return synth(tmp_path_factory.mktemp("dev"), stage="dev", overrides={}, account=None)


@pytest.fixture(scope="session")
def prod(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """prod stage with every option on: CodeBuild image, JWT auth, VPC, CMK, email, Transaction Search."""
    return synth(
        tmp_path_factory.mktemp("prod"), stage="prod", overrides=PROD_OVERRIDES, account="123456789012"
    )


@pytest.fixture(scope="session")
def optional(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """dev with the optional front doors on: GitHub issue webhook, GitHub OIDC invoker role, a break-glass role,
    workspace bucket. Fix-job settings away from their defaults, so the synthesized environments show they are
    passed through."""
    overrides = {
        "webhook": {
            "enabled": True,
            "allowed_author_associations": ["OWNER", "MEMBER"],
            "trackers": ["github", "gitlab", "jira"],
            "gitlab": {"fix_min_access_level": 40},
            "jira": {
                "site_url": "https://acme.atlassian.net",
                "repositories": {
                    "PROJ": {
                        "tracker": "github",
                        "repository": "acme/agent",
                        "fix_account_ids": ["5b10ac8d82e05b22cc7d4ef5"],
                        "fix_group": "fixers",
                    }
                },
            },
            "fix_branches": "same_repository",
            "fix_max_per_actor_per_hour": 3,
            "fix_max_per_repository_per_hour": 0,
        },
        "github_oidc": {"enabled": True, "repository": "acme/agent", "branches": ["main"]},
        "command_access": {"break_glass_principal": BREAK_GLASS_ROLE},
        "workspace_bucket": True,
    }
    return synth(
        tmp_path_factory.mktemp("optional"), stage="dev", overrides=overrides, account="123456789012"
    )


@pytest.fixture(scope="session")
def global_oidc(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """dev with a ``global.`` profile and the GitHub OIDC invoker for a repository that sends GitHub's immutable
    subjects (``owner@<id>/name@<id>``), on the account's existing OIDC provider (the default)."""
    overrides = {
        "model": "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "extra_models": [],
        "github_oidc": {"enabled": True, "repository": "acme@1234567/agent@89012345", "branches": ["main"]},
    }
    return synth(
        tmp_path_factory.mktemp("global_oidc"), stage="dev", overrides=overrides, account="123456789012"
    )
