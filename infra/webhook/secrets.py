"""The issue webhook's Secrets Manager secrets: a webhook secret and an API token per enabled tracker, and with
``WebhookProps.read_tokens`` a read token per tracker that pushes code (GitHub, GitLab) and GitLab's members token.

Names: ``<name_prefix>/<tracker>-webhook-secret``, ``<name_prefix>/<tracker>-token`` and
``<name_prefix>/<tracker>-read-token``, ``<name_prefix>/gitlab-members-token`` (GitHub's first two may be set
explicitly: ``WebhookProps.webhook_secret_name`` / ``github_token_secret_name``). With ``create_secrets`` the secrets are created (a generated value, to be replaced
by the tracker's); otherwise existing ones are referenced by name. Construct ids come from
:data:`infra.webhook.trackers.TRACKER_SECRETS` and are created under the webhook construct itself, so the secrets'
logical ids stay as first deployed (a new id replaces a secret and loses its value).

Which function reads which secret (:func:`reads`, the one place that says it; :func:`secret_env` names them to the
function, :func:`grant_secrets` grants ``secretsmanager:GetSecretValue`` on exactly them):

* receiver (public Function URL) — the webhook secrets; GitLab also its members token (a webhook carries no role:
  the members API decides who may trigger; a ``read_api`` token that can change nothing), or its token when read
  tokens are off;
* worker — the read tokens (replies, snapshot downloads; ``/agent stop`` edits a comment), else the tokens; the
  Jira token; the sweeper likewise (it edits a timed-out job's comment);
* reporter — the tokens (the push and the pull/merge request) and the read tokens (the bot's comments are edited
  by the identity that posted them: GitLab lets only a note's author, or a Maintainer, edit it).

Without ``read_tokens`` each tracker has one token and every function that reads a token reads that one, as
before read tokens existed: turning them on is a migration (``docs/webhook/setup.md``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Literal

from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra import nag
from infra.webhook.trackers import TRACKER_SECRETS
from webhook.trackers.registry import REGISTRY

if TYPE_CHECKING:
    from aws_cdk import aws_iam as iam

    from infra.webhook.props import WebhookProps
    from webhook.settings import Lambda

WEBHOOK_SECRET_SUFFIX = "github-webhook-secret"
TOKEN_SECRET_SUFFIX = "github-token"
#: name → (webhook secret, API token secret)
Secrets = dict[str, tuple[secretsmanager.ISecret, secretsmanager.ISecret]]
#: name → (webhook secret reference, token reference): the ARN of a created secret or the name of an existing one
SecretRefs = dict[str, tuple[str, str]]
#: name → {kind: (secret, reference)}: the read token and the members token, for the trackers that have them
ReadTokens = dict[str, dict["Kind", tuple[secretsmanager.ISecret, str]]]
#: A tracker's secrets: its webhook secret, its token (pushes code), its read token, its members token (the
#: receiver's read-only look-up of who may trigger: GitLab).
Kind = Literal["webhook", "token", "read", "members"]


def add_tracker_secrets(
    scope: Construct, props: WebhookProps, trackers: Sequence[str]
) -> tuple[Secrets, SecretRefs, ReadTokens]:
    """A webhook secret and an API token per tracker in ``trackers``, created (or referenced) under ``scope``, and
    with ``props.read_tokens`` a read token (and GitLab's members token) per tracker that has one."""
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
    extra: ReadTokens = {}
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
        if not props.read_tokens:
            continue
        if spec.read_id:
            extra.setdefault(name, {})["read"] = _secret(
                scope,
                props,
                spec.read_id,
                f"{prefix}/{name}-read-token",
                f"{spec.title} read token: reads code, posts the bot's comments, pushes nothing (placeholder;"
                " replace with put-secret-value).",
            )
        if spec.members_id:
            extra.setdefault(name, {})["members"] = _secret(
                scope,
                props,
                spec.members_id,
                f"{prefix}/{name}-members-token",
                f"{spec.title} members token: the receiver's read-only look-up of who may trigger (placeholder;"
                " replace with put-secret-value).",
            )
    return secrets, refs, extra


def reads(name: str, function: Lambda, *, extra: Collection[Kind] = ()) -> tuple[Kind, ...]:
    """Which of tracker ``name``'s secrets ``function`` reads; ``extra``: the kinds of lesser tokens it has
    (``read``, ``members``)."""
    everyday: Kind = "read" if "read" in extra else "token"
    if function == "receiver":
        if not REGISTRY[name].receiver_reads_token:
            return ("webhook",)
        return ("webhook", "members" if "members" in extra else everyday)
    if function in ("worker", "sweeper"):  # the sweeper edits the progress comment the worker posted
        return (everyday,)
    return ("token", "read") if "read" in extra else ("token",)


def secret_env(refs: SecretRefs, extra: ReadTokens, function: Lambda) -> dict[str, str]:
    """The variables naming the secrets ``function`` reads (:func:`reads`)."""
    env: dict[str, str] = {}
    for name, (hook_ref, token_ref) in refs.items():
        spec = TRACKER_SECRETS[name]
        values = {"webhook": (spec.webhook_var, hook_ref), "token": (spec.token_var, token_ref)}
        lesser = extra.get(name, {})
        if "read" in lesser:
            values["read"] = (spec.read_var, lesser["read"][1])
        if "members" in lesser:
            values["members"] = (spec.members_var, lesser["members"][1])
        for kind in reads(name, function, extra=lesser.keys()):
            var, value = values[kind]
            env[var] = value
    return env


def grant_secrets(secrets: Secrets, extra: ReadTokens, function: Lambda, grantee: iam.IGrantable) -> None:
    """``secretsmanager:GetSecretValue`` for ``grantee`` on the secrets ``function`` reads (:func:`reads`)."""
    for name, (hook, token) in secrets.items():
        lesser = extra.get(name, {})
        by_kind: dict[str, secretsmanager.ISecret] = {"webhook": hook, "token": token}
        by_kind |= {kind: secret for kind, (secret, _) in lesser.items()}
        for kind in reads(name, function, extra=lesser.keys()):
            by_kind[kind].grant_read(grantee)


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
