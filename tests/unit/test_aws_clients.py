"""Every boto3 client of the runtime is built in runtime.aws with one retry configuration."""

from __future__ import annotations

from pathlib import Path

from runtime import aws

ROOT = Path(__file__).resolve().parents[2]
#: The command-line client's modules, which leave runtime/ for client/; not part of the container.
CLIENT_MODULES = frozenset({"cli.py", "client.py", "client_errors.py", "cost_report.py"})


def test_every_runtime_client_uses_standard_retries_with_the_same_attempts() -> None:
    for client in (aws.cloudwatch_client("eu-west-1"), aws.agentcore_client("eu-west-1")):
        assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": aws.MAX_ATTEMPTS}
        assert client.meta.region_name == "eu-west-1"
    assert (
        aws.cloudwatch_client(None).meta.config.read_timeout
        < aws.agentcore_client(None).meta.config.read_timeout
    )


def test_no_other_runtime_module_builds_a_boto3_client() -> None:
    offenders = []
    for path in sorted((ROOT / "runtime").rglob("*.py")):
        if path == ROOT / "runtime" / "aws.py" or (
            path.parent == ROOT / "runtime" and path.name in CLIENT_MODULES
        ):
            continue
        text = path.read_text()
        if "boto3.client(" in text or "boto3.Session(" in text or "botocore.config" in text:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
