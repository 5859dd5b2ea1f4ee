"""docs/deploy.md says what the deployer's own IAM needs and what CDK's default bootstrap grants."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_deployer_iam_is_documented() -> None:
    text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = text.split("### Who may deploy: the deployer's IAM", 1)[1].split("\n## ", 1)[0]
    for needed in (
        "sts:AssumeRole",
        "cdk-hnb659fds-",
        "deploy-role",
        "file-publishing-role",
        "image-publishing-role",
        "cfn-exec-role",
        "AdministratorAccess",
        "--cloudformation-execution-policies",
    ):
        assert needed in section, needed
    for module in ("account.py", "models.py", "deployed.py"):
        assert (ROOT / "client" / "agentkit" / "doctor" / module).is_file(), module
