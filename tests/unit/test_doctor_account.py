"""agentkit doctor, account-level checks: Region resolution, one fix per failure kind, skipped checks listed,
``--output json``, the GitHub OIDC provider, Anthropic's use-case form in organizations, exact quota names,
the Docker daemon and arm64 emulation, and help texts without reST markup. moto where it covers the call,
botocore's Stubber elsewhere."""

from __future__ import annotations

import argparse
import io
import json
import socket
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from agentkit import doctor
from agentkit.cli import main as agentkit_main
from agentkit.commands import doctor as doctor_command
from tests.unit.test_doctor import REGION, Account, Session, codebuild_cdk_json, config, stubbed

# --- Region and credentials ----------------------------------------------------------------------------------


def test_region_order_is_flag_cdk_json_aws_region_default_region_profile() -> None:
    env = {"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-central-1"}
    assert doctor.resolve_region("ap-south-1", "us-west-2", env, "sa-east-1") == ("ap-south-1", "--region")
    assert doctor.resolve_region(None, "us-west-2", env, "sa-east-1") == (
        "us-west-2",
        "cdk.json agentkit.region",
    )
    assert doctor.resolve_region(None, None, env, "sa-east-1") == ("eu-west-1", "AWS_REGION")
    assert doctor.resolve_region(None, None, {"AWS_DEFAULT_REGION": "eu-central-1"}, "sa-east-1") == (
        "eu-central-1",
        "AWS_DEFAULT_REGION",
    )
    assert doctor.resolve_region(None, None, {}, "sa-east-1") == ("sa-east-1", "the AWS profile")
    assert doctor.resolve_region(None, None, {}, None) == (None, "nowhere")


def test_aws_region_is_used_when_the_session_has_none(
    aws: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/deploy.md tells you to export AWS_REGION; boto3's Session() does not read it, the doctor does."""
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    account = Account()
    account.healthy()
    out = io.StringIO()
    args = argparse.Namespace(
        stage="dev", cdk_json=codebuild_cdk_json(tmp_path), region=None, profile=None, ignore=[]
    )
    with account:
        code = doctor_command.execute(
            args, session_factory=lambda **_: account.session(region_name=None), out=out
        )
    assert f"region: {REGION} (from AWS_REGION), AgentCore answers" in out.getvalue(), out.getvalue()
    assert code == 0


def test_no_region_anywhere_skips_the_aws_checks_and_says_how_to_set_one(aws: None) -> None:
    account = Account()
    with account:
        results = doctor.run_checks(account.session(region_name=None), config(), env={})
    region = next(r for r in results if r.name == "region")
    assert (region.status, region.fix) == (
        "fail",
        "pass --region, set agentkit.region in cdk.json, or export AWS_REGION",
    )
    skipped = [r.name for r in results if r.status == "skip"]
    assert skipped == doctor.aws_check_names(config())[1:]
    assert {r.detail for r in results if r.status == "skip"} == {"not run: no usable Region"}


@pytest.mark.parametrize(
    ("code", "kind", "fix"),
    [
        ("ExpiredToken", "expired", "aws sso login"),
        ("InvalidClientTokenId", "invalid-credentials", "access key is wrong"),
    ],
)
def test_each_credential_failure_has_its_own_fix(code: str, kind: str, fix: str) -> None:
    sts, stub = stubbed("sts")
    stub.add_client_error("get_caller_identity", code, "no")
    with stub:
        result = doctor.check_credentials(sts, config())
    assert result.status == "fail" and fix in result.fix
    stub.add_client_error("get_caller_identity", code, "no")
    with stub:
        try:
            sts.get_caller_identity()
        except Exception as exc:
            assert doctor.failure_kind(exc) == kind


def test_an_unreachable_endpoint_is_a_network_failure_not_expired_credentials(aws: None) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sts = boto3.client(
        "sts",
        region_name=REGION,
        endpoint_url=f"http://127.0.0.1:{port}",
        config=Config(connect_timeout=1, retries={"max_attempts": 1}),
    )
    result = doctor.check_credentials(sts, config())
    assert result.status == "fail" and result.detail.startswith("cannot reach AWS STS")
    assert "proxy" in result.fix and "refresh" not in result.fix


# --- report formats --------------------------------------------------------------------------------------


def test_output_json_lists_checks_and_skipped_ones(tmp_path: Path) -> None:
    class NoCredentials(Session):
        def client(self, name: str, region_name: str | None = None) -> Any:
            if name == "sts":
                sts, stub = stubbed("sts")
                stub.add_client_error("get_caller_identity", "ExpiredTokenException", "expired")
                stub.activate()
                return sts
            return super().client(name, region_name)

    out = io.StringIO()
    args = argparse.Namespace(
        stage="dev", cdk_json=codebuild_cdk_json(tmp_path), region=REGION, profile=None, ignore=[]
    )
    code = doctor_command.execute(
        args, session_factory=lambda **_: NoCredentials({}), out=out, output="json", env={}
    )
    document = json.loads(out.getvalue())
    assert code == 1 and document["ready"] is False and document["blocking"] == ["credentials"]
    assert document["skipped"] == doctor.aws_check_names(config())
    assert document["checks"][0]["fix"].startswith("the session expired")
    assert {c["name"]: c["status"] for c in document["checks"]}["docker"] == "ok"


def test_agentkit_output_json_reaches_doctor(aws: None, tmp_path: Path) -> None:
    account = Account()
    account.healthy()
    clients = account.session().clients
    out, err = io.StringIO(), io.StringIO()
    argv = ["--output", "json", "doctor", "--cdk-json", str(codebuild_cdk_json(tmp_path)), "--region", REGION]

    def factory(service: str, *, region: str | None, profile: str | None, config: Any = None) -> Any:
        return clients[service]

    with account:
        code = agentkit_main(argv, client_factory=factory, stdout=out, stderr=err, env={})
    document = json.loads(out.getvalue())
    assert code == 0 and document["ready"] is True and document["skipped"] == []


def test_text_report_lists_the_skipped_checks() -> None:
    results = [
        doctor.CheckResult("credentials", "fail", "no AWS credentials found", "aws configure"),
        doctor.CheckResult("region", "skip", "not run: no usable credentials"),
        doctor.CheckResult("quotas", "skip", "not run: no usable credentials"),
    ]
    text = doctor_command.report(results, as_json=False).splitlines()
    assert text[-2] == "2 check(s) skipped (no usable credentials): region, quotas"
    assert text[-1] == "1 check(s) block the deploy: credentials"


# --- GitHub OIDC provider -----------------------------------------------------------------------------------


def test_oidc_provider_setting_matches_the_account(aws: None) -> None:
    iam = boto3.client("iam", region_name=REGION)
    absent_default = doctor.check_oidc_provider(iam, config(github_oidc=True))
    assert absent_default.status == "fail" and "create_provider to true" in absent_default.fix
    assert doctor.check_oidc_provider(iam, config(github_oidc=True, create_oidc_provider=True)).status == "ok"
    iam.create_open_id_connect_provider(
        Url="https://token.actions.githubusercontent.com",
        ClientIDList=["sts.amazonaws.com"],
        ThumbprintList=[],
    )
    collision = doctor.check_oidc_provider(iam, config(github_oidc=True, create_oidc_provider=True))
    assert collision.status == "fail" and "EntityAlreadyExists" in collision.detail
    assert "create_provider to false" in collision.fix
    owned = doctor.check_oidc_provider(
        iam, config(github_oidc=True, create_oidc_provider=True), stack_owns_it=True
    )
    assert owned.status == "ok"
    assert doctor.check_oidc_provider(iam, config(github_oidc=True)).status == "ok"
    assert doctor.check_oidc_provider(iam, config()).detail == "github_oidc is off"


def test_oidc_settings_come_from_cdk_json(tmp_path: Path) -> None:
    context = json.loads(codebuild_cdk_json(tmp_path).read_text())
    context["context"]["agentkit"]["github_oidc"] = {
        "enabled": True,
        "repository": "a/b",
        "create_provider": True,
    }
    path = tmp_path / "oidc.json"
    path.write_text(json.dumps(context))
    loaded = doctor.load_doctor_config(path, "dev")
    assert loaded.github_oidc and loaded.create_oidc_provider


# --- Anthropic use-case form -------------------------------------------------------------------------------


def _use_case_missing() -> Any:
    bedrock, stub = stubbed("bedrock")
    stub.add_client_error("get_use_case_for_model_access", "ResourceNotFoundException", "none")
    stub.activate()
    return bedrock


def test_use_case_missing_in_a_member_account_warns(aws: None) -> None:
    organizations, stub = stubbed("organizations")
    stub.add_response(
        "describe_organization",
        {"Organization": {"Id": "o-abc1234567", "MasterAccountId": "999999999999"}},
    )
    with stub:
        result = doctor.check_use_case(_use_case_missing(), organizations, "123456789012")
    assert result.status == "warn" and "member of organization o-abc1234567" in result.detail
    assert "999999999999" in result.fix


def test_use_case_missing_standalone_or_in_the_management_account_fails(aws: None) -> None:
    organizations = boto3.client("organizations", region_name=REGION)  # moto: not in an organization
    standalone = doctor.check_use_case(_use_case_missing(), organizations, "123456789012")
    assert standalone.status == "fail" and "in no organization" in standalone.detail
    organizations.create_organization(FeatureSet="ALL")  # moto: the caller is the management account
    management = doctor.check_use_case(_use_case_missing(), organizations, "123456789012")
    assert management.status == "fail" and "management account" in management.detail


# --- quotas --------------------------------------------------------------------------------------------------


def test_quotas_match_exact_names_only() -> None:
    """A loose match counted "Versions per agent" as the agents quota; exact names do not."""
    quotas, stub = stubbed("service-quotas")
    stub.add_response(
        "list_service_quotas",
        {
            "Quotas": [
                {"QuotaName": "Versions per agent", "Value": 1000.0},
                {"QuotaName": "Endpoints (aliases) per agent", "Value": 10.0},
            ]
        },
        {"ServiceCode": "bedrock-agentcore"},
    )
    stub.add_response(
        "list_service_quotas",
        {"Quotas": [{"QuotaName": "Total agents per account", "Value": 0.0}]},
        {"ServiceCode": "bedrock-agentcore"},
    )
    with stub:
        unlisted = doctor.check_quotas(quotas)
        short = doctor.check_quotas(quotas)
    assert unlisted.status == "warn" and "'Total agents per account'" in unlisted.detail
    assert short.status == "fail" and "Total agents per account = 0 (needs 1)" in short.detail


# --- docker ---------------------------------------------------------------------------------------------------


def fake_docker(answers: dict[str, tuple[int, str]]) -> Any:
    def run(command: Any) -> tuple[int, str]:
        return answers.get(command[1], (1, "unknown command"))

    return run


@pytest.mark.parametrize(
    ("answers", "binfmt", "status", "fragment"),
    [
        (
            {"info": (1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock")},
            "",
            "fail",
            "not reachable",
        ),
        ({"info": (0, "aarch64\n")}, "", "ok", "natively"),
        (
            {"info": (0, "x86_64\n"), "buildx": (0, "Platforms: linux/amd64, linux/arm64\n")},
            "",
            "ok",
            "buildx",
        ),
        (
            {"info": (0, "x86_64\n"), "buildx": (0, "Platforms: linux/amd64\n")},
            "enabled\ninterpreter x\n",
            "ok",
            "enabled",
        ),
        (
            {"info": (0, "x86_64\n"), "buildx": (0, "Platforms: linux/amd64\n")},
            "disabled\n",
            "fail",
            "no arm64 emulation",
        ),
        ({"info": (0, "x86_64\n")}, "", "fail", "no arm64 emulation"),
    ],
)
def test_docker_daemon_and_arm64_emulation(
    tmp_path: Path, answers: dict[str, tuple[int, str]], binfmt: str, status: str, fragment: str
) -> None:
    path = tmp_path / "qemu-aarch64"
    if binfmt:
        path.write_text(binfmt)
    result = doctor.check_docker("local", lambda _: "/usr/bin/docker", fake_docker(answers), path)
    assert (result.status, fragment in result.detail) == (status, True), result.line()
    if status == "fail":
        assert "image_build=codebuild" in result.fix
    if "emulation" in result.detail:
        assert "tonistiigi/binfmt --install arm64" in result.fix


# --- help texts ------------------------------------------------------------------------------------------------

COMMANDS = ("invoke", "sessions", "status", "logs", "cost", "report", "doctor")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_texts_carry_no_rest_markup(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert agentkit_main([command, "--help"], stdout=out, stderr=err) == 0
    text = out.getvalue()
    assert text.startswith(f"usage: agentkit {command}")
    for markup in ("``", ":func:", ":class:", ":mod:", ":meth:", ":data:"):
        assert markup not in text, (command, markup)


def test_standalone_doctor_help_carries_no_rest_markup(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        doctor_command.main(["--help"])
    text = capsys.readouterr().out
    assert "usage: agentkit doctor" in text and "``" not in text and "--output" in text
