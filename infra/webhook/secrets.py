"""The issue webhook's Secrets Manager secrets: a webhook secret and an API token per enabled tracker.

Names: ``<name_prefix>/<tracker>-webhook-secret`` and ``<name_prefix>/<tracker>-token`` (GitHub's may be set
explicitly: ``WebhookProps.webhook_secret_name`` / ``github_token_secret_name``). With ``create_secrets`` the
secrets are created (a generated value, to be replaced by the tracker's); otherwise existing ones are referenced
by name. Construct ids come from :data:`infra.webhook.trackers.TRACKER_SECRETS` and are created under the
webhook construct itself, so the secrets' logical ids stay as first deployed (a new id replaces a secret and
loses its value).

Which function reads which secret (:func:`secret_env`): the receiver the webhook secrets (and the GitLab token:
GitLab's members API decides who may trigger), the worker the tokens. The grants themselves
(``secretsmanager:GetSecretValue``) are added where the functions are built (``infra/webhook/construct.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra import nag
from infra.webhook.trackers import TRACKER_SECRETS

if TYPE_CHECKING:
    from infra.webhook.props import WebhookProps

WEBHOOK_SECRET_SUFFIX = "github-webhook-secret"
TOKEN_SECRET_SUFFIX = "github-token"
#: name → (webhook secret, API token secret)
Secrets = dict[str, tuple[secretsmanager.ISecret, secretsmanager.ISecret]]
#: name → (webhook secret reference, token reference): the ARN of a created secret or the name of an existing one
SecretRefs = dict[str, tuple[str, str]]


def add_tracker_secrets(
    scope: Construct, props: WebhookProps, trackers: Sequence[str]
) -> tuple[Secrets, SecretRefs]:
    """A webhook secret and an API token per tracker in ``trackers``, created (or referenced) under ``scope``."""
    prefix = props.name_prefix
    names = {
        "github": (
            props.webhook_secret_name or f"{prefix}/{WEBHOOK_SECRET_SUFFIX}",
            props.github_token_secret_name or f"{prefix}/{TOKEN_SECRET_SUFFIX}",
        ),
        "gitlab": (f"{prefix}/gitlab-webhook-secret", f"{prefix}/gitlab-token"),
        "jira": (f"{prefix}/jira-webhook-secret", f"{prefix}/jira-token"),
    }
    secrets: Secrets = {}
    refs: SecretRefs = {}
    for name in trackers:
        spec = TRACKER_SECRETS[name]
        hook, hook_ref = _secret(
            scope,
            props,
            spec.webhook_id,
            names[name][0],
            f"{spec.title} webhook secret (generated; paste it into the {spec.title} webhook settings).",
        )
        token, token_ref = _secret(
            scope,
            props,
            spec.token_id,
            names[name][1],
            f"{spec.title} API token used to post replies (placeholder; replace with put-secret-value).",
        )
        secrets[name] = (hook, token)
        refs[name] = (hook_ref, token_ref)
    return secrets, refs


def secret_env(refs: SecretRefs, *, receiver: bool) -> dict[str, str]:
    """The variables naming the secrets a function reads: the receiver the webhook secrets (and the GitLab
    token: GitLab's members API decides who may trigger), the worker the tokens."""
    if not receiver:
        return {TRACKER_SECRETS[name].token_var: token for name, (_, token) in refs.items()}
    env = {TRACKER_SECRETS[name].webhook_var: hook for name, (hook, _) in refs.items()}
    if "gitlab" in refs:
        env[TRACKER_SECRETS["gitlab"].token_var] = refs["gitlab"][1]
    return env


def _secret(
    scope: Construct, props: WebhookProps, construct_id: str, name: str, description: str
) -> tuple[secretsmanager.ISecret, str]:
    if not props.create_secrets:
        secret = secretsmanager.Secret.from_secret_name_v2(scope, construct_id, name)
        return secret, name
    created = secretsmanager.Secret(
        scope,
        construct_id,
        secret_name=name,
        description=description,
        generate_secret_string=secretsmanager.SecretStringGenerator(
            exclude_punctuation=True, password_length=40
        ),
        removal_policy=props.removal_policy,
    )
    nag.acknowledge(
        created,
        [
            (
                "AwsSolutions::AwsSolutions-SMG4",
                "A tracker's webhook secret or API token cannot be rotated by a rotation Lambda; rotate it in the"
                " tracker and put the new value into this secret (docs/webhook/setup.md).",
            )
        ],
    )
    return created, created.secret_arn
