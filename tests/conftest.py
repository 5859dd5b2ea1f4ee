"""Suite-wide settings: async tests run on asyncio (anyio's pytest plugin), AWS calls never leave the machine."""

from __future__ import annotations

import os

import boto3
import pytest

# No test may reach a real AWS endpoint or use real credentials: a developer's own keys, session token and
# profile are replaced, not kept (boto3 prefers environment keys, but a profile could still name an SSO
# session or a credential process).
os.environ["AWS_ACCESS_KEY_ID"] = "testing"
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
for _name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
    os.environ.pop(_name, None)
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
# The webhook scene files load tests.functional.fix_flow as a plugin (for its fixture): pytest rewrites a plugin's
# asserts, which it can do only when told before the module is first imported (else it warns, for every run).
pytest.register_assert_rewrite("tests.functional.fix_flow")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _fresh_boto3_default_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts without boto3's process-wide default session. ``boto3.client()`` builds that session once
    and keeps the credentials it first resolved: a test that set other keys in the environment (monkeypatched,
    so undone afterwards) would otherwise have every later test in the process sign with them, and which test
    ran first depends on how the suite is split across workers."""
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)


_CLI_USER_PROBLEM: list[str | None] = []


def _cli_user_problem() -> str | None:
    if not _CLI_USER_PROBLEM:
        from harness.cli_user import cli_user_problem

        _CLI_USER_PROBLEM.append(cli_user_problem())
    return _CLI_USER_PROBLEM[0]


def pytest_sessionstart(session: pytest.Session) -> None:
    """Said once, at the start, at any verbosity: a root run whose CLI user cannot reach the CLI or the tests'
    workspaces (every command test would fail with an unrelated-looking assert)."""
    problem = _cli_user_problem()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if problem and reporter is not None:
        reporter.write_line(f"WARNING: {problem}", yellow=True, bold=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int) -> None:
    problem = _CLI_USER_PROBLEM[0] if _CLI_USER_PROBLEM else None
    if problem and exitstatus != 0:
        terminalreporter.write_line(f"failures above may come from this: {problem}", yellow=True)
