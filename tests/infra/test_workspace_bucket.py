"""The workspace-snapshot bucket (``workspace_bucket: true``): private, TLS only, objects expiring after a day, the
runtime reading and the GitHub OIDC role uploading under the stage prefix only, the runtime told where, cdk-nag clean
(the synth fails on any unacknowledged finding). Off by default."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra.conftest import Synth

pytestmark = pytest.mark.infra


@pytest.fixture(scope="module")
def with_bucket(optional: Synth) -> Synth:
    """The optional-features stack (conftest): the bucket on, with the GitHub OIDC invoker role."""
    return optional


def of_type(s: Synth, cfn_type: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in s.raw["Resources"].items() if r["Type"] == cfn_type}


def statements_of(s: Synth, role_id: str) -> list[dict[str, Any]]:
    found = []
    for policy in of_type(s, "AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def test_the_bucket_is_private_encrypted_tls_only_and_short_lived(with_bucket: Synth) -> None:
    ((bucket_id, bucket),) = of_type(with_bucket, "AWS::S3::Bucket").items()
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ] == {"SSEAlgorithm": "AES256"}
    rules = {r["Id"]: r for r in props["LifecycleConfiguration"]["Rules"]}
    rule = rules["expire-snapshots"]
    assert rule["Status"] == "Enabled" and rule["Prefix"] == "dev/" and rule["ExpirationInDays"] == 1
    assert set(rules) == {"expire-snapshots", "expire-job-patches"}  # jobs/: tests/infra/test_job_events.py
    policies = [
        p
        for p in of_type(with_bucket, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    denies = [
        s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"
    ]
    assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in denies)


def test_the_runtime_reads_and_the_oidc_role_uploads_under_the_stage_prefix_only(with_bucket: Synth) -> None:
    ((bucket_id, _),) = of_type(with_bucket, "AWS::S3::Bucket").items()
    objects = {"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/dev/*"]]}
    (runtime,) = of_type(with_bucket, "AWS::BedrockAgentCore::Runtime").values()
    runtime_role = runtime["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    s3_runtime = [s for s in statements_of(with_bucket, runtime_role) if "s3" in json_actions(s)]
    # The other: s3:PutObject on jobs/* for asynchronous jobs' patches (tests/infra/test_job_events.py).
    assert {"Action": "s3:GetObject", "Effect": "Allow", "Resource": objects} in s3_runtime
    assert all(s["Resource"] != objects or s["Action"] == "s3:GetObject" for s in s3_runtime)
    roles = of_type(with_bucket, "AWS::IAM::Role")
    (oidc_role,) = [
        k for k, r in roles.items() if "WebIdentity" in str(r["Properties"]["AssumeRolePolicyDocument"])
    ]
    s3_oidc = [s for s in statements_of(with_bucket, oidc_role) if "s3" in json_actions(s)]
    assert s3_oidc == [{"Action": "s3:PutObject", "Effect": "Allow", "Resource": objects}]
    env = runtime["Properties"]["EnvironmentVariables"]
    assert env["AGENTKIT_WORKSPACE_S3_URI"] == {"Fn::Join": ["", ["s3://", {"Ref": bucket_id}, "/dev/"]]}
    assert with_bucket.raw["Outputs"]["WorkspaceBucketName"]["Value"] == {"Ref": bucket_id}


def test_off_by_default(dev: Synth) -> None:
    assert not of_type(dev, "AWS::S3::Bucket")
    (runtime,) = of_type(dev, "AWS::BedrockAgentCore::Runtime").values()
    assert "AGENTKIT_WORKSPACE_S3_URI" not in runtime["Properties"]["EnvironmentVariables"]


def json_actions(statement: dict[str, Any]) -> str:
    action = statement.get("Action")
    return " ".join(action) if isinstance(action, list) else str(action)
