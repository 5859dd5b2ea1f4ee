"""The webhook secrets the stage's stack owns hold values the receiver can use.

A secret stored with a trailing newline (``echo`` without ``-n`` into ``aws secretsmanager put-secret-value``)
makes every delivery's signature mismatch, silently; a GitLab signing token ``whsec_`` with no key after it
would switch signature checking off. The receiver refuses both at start-up (its log says so); this check says
so before the first delivery, naming the secret but never printing a value.

IAM actions: ``secretsmanager:GetSecretValue`` on the stack's ``*-webhook-secret`` secrets (an operator check;
without it the check warns and names the action).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agentkit.doctor.core import CheckResult, error_of
from agentkit.doctor.deployed import StackView

SECRET_TYPE = "AWS::SecretsManager::Secret"
#: The webhook's trackers (the slim client cannot import ``webhook/trackers/registry.py``;
#: ``tests/unit/webhook/test_tracker_conformance.py`` holds the two equal).
TRACKERS = ("github", "gitlab", "jira")
WEBHOOK_SECRET_SUFFIX = "-webhook-secret"  # <name prefix>/<tracker>-webhook-secret (infra/webhook/secrets.py)
SIGNING_PREFIX = "whsec_"


def webhook_secret_problem(tracker: str, value: str) -> str | None:
    """Why the receiver would refuse (or be fooled by) ``value`` as ``tracker``'s webhook secret, or None.

    The same rules as the receiver's ``check_secret_text`` and ``GitLabWebhookSecret.parse``
    (webhook/trackers/); ``tests/unit/webhook/test_doctor_secrets.py`` holds the two equal.
    """
    if not value.strip():
        return "is blank"
    if value != value.strip():
        return "has leading or trailing whitespace (a newline stored with it?)"
    if tracker != "gitlab" or not value.startswith("{"):
        return None
    try:
        doc = json.loads(value)
    except json.JSONDecodeError as exc:
        return f"is not valid JSON ({exc.msg})"
    token, signing = str(doc.get("token") or ""), str(doc.get("signing_token") or "")
    for what, item in (("token", token), ("signing_token", signing)):
        if item != item.strip():
            return f"has whitespace around its {what}"
    if signing:
        if not signing.startswith(SIGNING_PREFIX):
            return "has a signing_token that does not start with whsec_"
        try:
            key = base64.b64decode(signing[len(SIGNING_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            return "has a signing_token that is not base64 after whsec_"
        if not key:
            return "has a signing_token with no key after whsec_ (signature checking would be off)"
    if not token and not signing:
        return "holds neither a token nor a signing_token"
    return None


def _tracker_of(secret_id: str) -> str | None:
    name = secret_id.rsplit(":", 1)[-1] if secret_id.startswith("arn:") else secret_id
    name = name.rsplit("/", 1)[-1]
    for tracker in TRACKERS:
        if name.startswith(f"{tracker}{WEBHOOK_SECRET_SUFFIX}"):
            return tracker
    return None


def check_webhook_secrets(secretsmanager: Any, stack: StackView) -> CheckResult:
    """ok when every webhook secret of the stack is usable (or the stack has none), fail naming the bad ones."""
    name = "webhook-secrets"
    secrets = [(s, t) for s in stack.owns(SECRET_TYPE) if (t := _tracker_of(s))]
    if not stack.exists or not secrets:
        return CheckResult(name, "ok", "no webhook secrets in the stage's stack")
    problems: list[str] = []
    for secret_id, tracker in secrets:
        try:
            value = secretsmanager.get_secret_value(SecretId=secret_id).get("SecretString") or ""
        except (ClientError, BotoCoreError) as exc:
            code, _message = error_of(exc)
            if code == "ResourceNotFoundException" or "no value" in _message.lower():
                problems.append(f"{tracker} secret has no value yet")
                continue
            return CheckResult(
                name,
                "warn",
                f"cannot read {secret_id} ({code})",
                "run as an operator with secretsmanager:GetSecretValue on the webhook secrets",
            )
        problem = webhook_secret_problem(tracker, value)
        if problem:
            problems.append(f"{tracker} webhook secret {problem}")
    if problems:
        return CheckResult(
            name,
            "fail",
            "; ".join(problems),
            "store the exact value (printf '%s' VALUE | aws secretsmanager put-secret-value --secret-id ID "
            "--secret-string file:///dev/stdin)",
        )
    return CheckResult(name, "ok", f"{len(secrets)} webhook secret(s) hold usable values")
