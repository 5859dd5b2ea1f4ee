"""``agentkit doctor``'s webhook-secrets check: it refuses exactly what the receiver refuses, reads the secrets
the stack owns (moto), and never prints a value."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from agentkit.doctor.deployed import StackView
from agentkit.doctor.secrets import check_webhook_secrets, webhook_secret_problem
from webhook.errors import TrackerConfigError
from webhook.trackers.base import check_secret_text
from webhook.trackers.gitlab import GitLabWebhookSecret

CASES = [
    ("github", "s3cret"),
    ("github", "s3cret\n"),
    ("github", "   "),
    ("gitlab", "plain-token"),
    ("gitlab", '{"token": "t", "signing_token": "whsec_"}'),
    ("gitlab", '{"signing_token": "whsec_c2VjcmV0"}'),
    ("gitlab", '{"signing_token": "whsec_not base64!"}'),
    ("gitlab", '{"signing_token": "sk_abc"}'),
    ("gitlab", '{"token": " t"}'),
    ("gitlab", "{not json"),
    ("gitlab", "{}"),
    ("jira", "jira-secret\r\n"),
]


def _receiver_refuses(tracker: str, value: str) -> bool:
    try:
        check_secret_text(value, "secret")
        if tracker == "gitlab":
            GitLabWebhookSecret.parse(value)
    except TrackerConfigError:
        return True
    return False


@pytest.mark.parametrize(("tracker", "value"), CASES)
def test_doctor_refuses_exactly_what_the_receiver_refuses(tracker: str, value: str) -> None:
    assert (webhook_secret_problem(tracker, value) is not None) is _receiver_refuses(tracker, value)


@mock_aws
def test_the_check_reads_the_stacks_webhook_secrets_and_names_the_bad_ones() -> None:
    sm = boto3.client("secretsmanager", region_name="us-east-1")
    good = sm.create_secret(Name="agentkit-dev/github-webhook-secret", SecretString="fine")["ARN"]
    bad = sm.create_secret(
        Name="agentkit-dev/gitlab-webhook-secret", SecretString='{"signing_token": "whsec_"}'
    )
    token = sm.create_secret(Name="agentkit-dev/gitlab-token", SecretString="glpat-\n")[
        "ARN"
    ]  # not a webhook secret
    stack = StackView("AgentKit-dev", True, {"AWS::SecretsManager::Secret": (good, bad["ARN"], token)})
    result = check_webhook_secrets(sm, stack)
    assert result.status == "fail"
    assert "gitlab webhook secret has a signing_token with no key" in result.detail
    assert "whsec_" not in result.fix and "fine" not in result.detail  # no value is ever shown
    sm.put_secret_value(SecretId=bad["ARN"], SecretString='{"signing_token": "whsec_c2VjcmV0"}')
    assert check_webhook_secrets(sm, stack).status == "ok"


def test_no_stack_or_no_webhook_secrets_is_fine() -> None:
    class Unused:
        def get_secret_value(self, **_: Any) -> Any:  # pragma: no cover - must not be called
            raise AssertionError("read a secret with nothing to check")

    assert check_webhook_secrets(Unused(), StackView("AgentKit-dev", False)).status == "ok"
    assert check_webhook_secrets(Unused(), StackView("AgentKit-dev", True, {})).status == "ok"
