"""``webhook.settings``: each variable declared once, read with the declared default, refused with its name."""

from __future__ import annotations

import subprocess
import sys

import pytest

from webhook.errors import TrackerConfigError
from webhook.settings import ENV, WebhookSettings


def test_each_variable_is_declared_once() -> None:
    assert len(set(ENV.values())) == len(ENV) == len(WebhookSettings.model_fields)


def test_unset_variables_read_as_their_declared_defaults() -> None:
    assert WebhookSettings.from_env({}) == WebhookSettings()


def test_an_empty_text_setting_is_kept_and_an_empty_number_is_unset() -> None:
    """An empty ``TRIGGER_LABEL`` turns the label trigger off; an empty number cannot mean anything but unset."""
    s = WebhookSettings.from_env({ENV["github_trigger_label"]: "", ENV["max_body_bytes"]: " "})
    assert s.github_trigger_label == "" and s.max_body_bytes == WebhookSettings().max_body_bytes


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MAX_BODY_BYTES": "1MB"}, "MAX_BODY_BYTES='1MB' is not a whole number"),
        ({"GITLAB_MIN_ACCESS_LEVEL": "-1"}, "GITLAB_MIN_ACCESS_LEVEL='-1' must be at least 0"),
        ({"INVOKE_READ_TIMEOUT_SECONDS": "0"}, "INVOKE_READ_TIMEOUT_SECONDS='0' must be greater than 0"),
        ({"TRACKERS": "github,svn"}, "TRACKERS='github,svn': use a comma list of github, gitlab, jira"),
        ({"FIX_JOBS": "maybe"}, "FIX_JOBS='maybe': use on or off"),
        ({"FIX_BRANCHES": "upstream"}, "FIX_BRANCHES='upstream': use one of fork, same_repository"),
        ({"FIX_MAX_PER_ACTOR_PER_HOUR": "-1"}, "FIX_MAX_PER_ACTOR_PER_HOUR='-1' must be at least 0"),
        (
            {"FIX_MAX_PER_REPOSITORY_PER_HOUR": "x"},
            "FIX_MAX_PER_REPOSITORY_PER_HOUR='x' is not a whole number",
        ),
        # a fix pushes with the bot's Developer token: asking for one must need at least that
        ({"GITLAB_FIX_MIN_ACCESS_LEVEL": "20"}, "GITLAB_FIX_MIN_ACCESS_LEVEL='20' must be at least 30"),
    ],
)
def test_a_bad_value_is_a_configuration_error_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(TrackerConfigError) as err:
        WebhookSettings.from_env(env)
    assert err.value.message == message and err.value.code == "misconfigured"


def test_a_tracker_variable_is_required_only_while_the_tracker_is_enabled() -> None:
    assert "JIRA_WEBHOOK_SECRET_NAME" not in WebhookSettings.required("receiver", ("github",))
    assert "JIRA_WEBHOOK_SECRET_NAME" in WebhookSettings.required("receiver", ("github", "jira"))
    assert "JIRA_WEBHOOK_SECRET_NAME" not in WebhookSettings.required("worker", ("jira",))


def test_importing_the_settings_creates_no_client() -> None:
    """The CDK app imports this module too: no boto3, botocore or Powertools at import."""
    code = (
        "import sys, webhook.settings; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'boto3', 'botocore', 'aws_lambda_powertools'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_fix_settings_read_as_the_gate_and_the_gitlab_adapter_use_them() -> None:
    from webhook import wiring
    from webhook.fix.gate import gate_settings

    s = WebhookSettings.from_env(
        {
            "TRACKERS": "gitlab",
            "GITLAB_TOKEN_SECRET_NAME": "kit/gitlab-token",
            "FIX_JOBS": " OFF ",
            "FIX_MAX_PER_ACTOR_PER_HOUR": "0",
            "FIX_MAX_PER_REPOSITORY_PER_HOUR": "7",
            "GITLAB_FIX_MIN_ACCESS_LEVEL": "40",
        }
    )
    gate = gate_settings(s)
    assert (gate.enabled, gate.max_per_actor_per_hour, gate.max_per_repository_per_hour) == (False, 0, 7)
    assert WebhookSettings().fix_branches == "fork" and WebhookSettings().fix_jobs == "on"
    gitlab = wiring.build_trackers("worker", env=s, secrets_client=None)["gitlab"]
    assert gitlab.fix_min_access_level == 40  # type: ignore[attr-defined]
