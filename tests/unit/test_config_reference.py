"""The settings model is the one source of the runtime's configuration: the variables of ``runtime.env``, the
table in ``docs/configuration.md`` and ``python -m runtime --help`` all agree with it, and no module reads an
``AGENTKIT_*`` variable behind its back."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import runtime.env
from runtime.config.reference import TABLE_BEGIN, TABLE_END, documented_table, help_table, markdown_table
from runtime.config.settings import Settings
from runtime.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "configuration.md"

#: Every variable the runtime reads. The CDK stack, the Dockerfile, the demo, the docs and users' deployments set
#: these names: renaming or dropping one breaks them, so the list is spelled out here on purpose.
CONTRACT_NAMES = {
    "AGENTKIT_HOST",
    "AGENTKIT_PORT",
    "AGENTKIT_CLI_PATH",
    "AGENTKIT_SESSION_STORE",
    "AGENTKIT_STATE_DIR",
    "AGENTKIT_STORE_WRITE_BEHIND",
    "AGENTKIT_STORE_STRICT",
    "AGENTKIT_STORE_CALL_TIMEOUT",
    "AGENTKIT_WORKSPACE",
    "AGENTKIT_WORKSPACE_MAX_BYTES",
    "AGENTKIT_WORKSPACE_MAX_UNPACKED_BYTES",
    "AGENTKIT_WORKSPACE_MAX_FILES",
    "AGENTKIT_WORKSPACE_MAX_FILE_BYTES",
    "AGENTKIT_WORKSPACE_MAX_PATCH_BYTES",
    "AGENTKIT_WORKSPACE_ALLOW_PROTECTED",
    "AGENTKIT_WORKSPACE_S3_URI",
    "AGENTKIT_WORKSPACE_MAX_S3_BYTES",
    "AGENTKIT_WORKSPACE_RETENTION_HOURS",
    "AGENTKIT_METRICS",
    "AGENTKIT_METRICS_NAMESPACE",
    "AGENTKIT_EMF_FILE",
    "AGENTKIT_SPANS_FILE",
    "AGENTKIT_AGENT_NAME",
    "AGENTKIT_MODEL",
    "AGENTKIT_SMALL_MODEL",
    "AGENTKIT_FALLBACK_MODEL",
    "AGENTKIT_BEDROCK_PROJECT",
    "AGENTKIT_PRICES",
    "AGENTKIT_BEDROCK_ENDPOINT",
    "AGENTKIT_MAX_PROMPT_CHARS",
    "AGENTKIT_TURN_TIMEOUT",
    "AGENTKIT_IDLE_TIMEOUT",
    "AGENTKIT_MAX_QUEUED",
    "AGENTKIT_MAX_SESSIONS",
    "AGENTKIT_MAX_TURNS",
    "AGENTKIT_MAX_BUDGET_USD",
    "AGENTKIT_SESSION_BUDGET_USD",
    "AGENTKIT_MEMORY_ID",
    "AGENTKIT_RECALL_NAMESPACES",
    "AGENTKIT_RECALL_TIMEOUT_MS",
    "AGENTKIT_GATEWAY_URL",
    "AGENTKIT_ACTOR_HEADER",
    "AWS_REGION",
    "CLAUDE_CONFIG_DIR",
    "AGENTKIT_AGENT_FILE",
    "AGENTKIT_AGENT_DIR",
    "AGENTKIT_MODEL_SILENCE_WARN_SECONDS",
    "AGENTKIT_SANDBOX",
    "AGENTKIT_NETWORK_HOSTS",
    "AGENTKIT_TOOL_DISK_MB",
    "AGENTKIT_SESSION_MEMORY_MB",
    "AGENTKIT_SESSION_PROCESSES",
    "AGENTKIT_NETWORK_ALLOWED_CIDRS",
    "AGENTKIT_AGENT_PROFILE",
    "AGENTKIT_APPROVALS",
    "AGENTKIT_PLATFORM_VERSION",
    "AGENTKIT_JOB_EVENTS_QUEUE_URL",
    "AGENTKIT_JOB_PROGRESS_SECONDS",
    "AGENTKIT_JOB_TIMEOUT",
    "AGENTKIT_WORKSPACE_BUCKET",
    "AGENTKIT_STAGE",
}


def _env_constants() -> dict[str, str]:
    return {name: value for name, value in vars(runtime.env).items() if name.startswith("ENV_")}


def test_the_docs_table_is_the_one_generated_from_the_model() -> None:
    page = PAGE.read_text()
    assert page.count(TABLE_BEGIN) == 1 and page.count(TABLE_END) == 1, "the table markers are missing"
    assert documented_table(page) == markdown_table(), (
        "docs/configuration.md differs from the settings model: run "
        "`.venv/bin/python -m runtime --print-config-table` and replace the table between the markers"
    )


def test_every_variable_of_the_env_module_is_read_by_exactly_one_setting() -> None:
    declared = list(Settings.env_names().values())
    assert len(declared) == len(set(declared)), "two settings read the same variable"
    assert set(declared) == set(_env_constants().values())


def test_the_variable_names_are_kept() -> None:
    assert set(Settings.env_names().values()) == CONTRACT_NAMES


def test_every_setting_says_what_it_means_in_one_table_row() -> None:
    for row in Settings.reference():
        assert row.meaning and row.default, row
        for text in (row.meaning, row.default):
            assert "|" not in text and "\n" not in text, row  # would break the Markdown table


def test_a_variable_and_its_default_appear_in_the_table_and_the_help() -> None:
    table, help_text = markdown_table(), help_table()
    for row in Settings.reference():
        assert f"| `{row.env}` | {row.default} |" in table
        assert row.env in help_text
    assert "| `AGENTKIT_STORE_WRITE_BEHIND` | `0` |" in table
    assert "| `AGENTKIT_MAX_TURNS` | `25` |" in table


def test_python_m_runtime_prints_the_help_and_the_table_without_starting() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "runtime", "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert help_table() in shown.stdout
    printed = subprocess.run(
        [sys.executable, "-m", "runtime", "--print-config-table"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == markdown_table() == documented_table(PAGE.read_text())


@pytest.mark.parametrize(
    ("field", "env", "raw", "value"),
    [
        ("spans_file", "AGENTKIT_SPANS_FILE", "/tmp/spans.jsonl", Path("/tmp/spans.jsonl")),
        ("store_write_behind", "AGENTKIT_STORE_WRITE_BEHIND", "1", True),
        ("store_write_behind", "AGENTKIT_STORE_WRITE_BEHIND", "0", False),
    ],
)
def test_the_settings_once_read_elsewhere_are_read_through_the_model(
    field: str, env: str, raw: str, value: object
) -> None:
    assert getattr(Settings.from_env({env: raw}), field) == value
    assert getattr(Settings.from_env({env: ""}), field) == Settings.model_fields[field].default


def test_a_bad_value_names_its_variable() -> None:
    with pytest.raises(ConfigurationError, match="AGENTKIT_STORE_WRITE_BEHIND"):
        Settings.from_env({"AGENTKIT_STORE_WRITE_BEHIND": "sometimes"})


def _reads_of_own_variables(tree: ast.AST, constants: dict[str, str]) -> list[str]:
    """``os.environ[...]``, ``os.environ.get(...)``, ``os.getenv(...)`` and ``... in os.environ`` of an
    ``AGENTKIT_*`` variable, by literal or by its ``runtime.env`` constant."""

    def own(node: ast.expr) -> str | None:
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("AGENTKIT_")
        ):
            return node.value
        if isinstance(node, ast.Name) and constants.get(node.id, "").startswith("AGENTKIT_"):
            return constants[node.id]
        return None

    def is_environ(node: ast.expr) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    found = []
    for node in ast.walk(tree):
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and is_environ(node.value):
            key = node.slice
        elif isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
            if (node.func.attr == "get" and is_environ(node.func.value)) or node.func.attr == "getenv":
                key = node.args[0]
        elif isinstance(node, ast.Compare) and any(is_environ(c) for c in node.comparators):
            key = node.left
        name = own(key) if key is not None else None
        if name is not None:
            found.append(f"line {getattr(node, 'lineno', '?')}: {name}")
    return found


def test_no_runtime_module_reads_an_agentkit_variable_outside_the_settings() -> None:
    constants = _env_constants()
    offenders = {}
    for path in sorted((ROOT / "runtime").rglob("*.py")):
        if path.name in ("settings.py", "env.py"):
            continue
        reads = _reads_of_own_variables(ast.parse(path.read_text()), constants)
        if reads:
            offenders[str(path.relative_to(ROOT))] = reads
    assert offenders == {}, "read these through runtime.config.settings.Settings instead"


def test_the_scan_finds_the_reads_it_looks_for() -> None:
    code = (
        "import os\nfrom runtime.env import ENV_SPANS_FILE\n"
        "a = os.environ.get(ENV_SPANS_FILE)\nb = os.environ['AGENTKIT_PORT']\nc = os.getenv('AGENTKIT_HOST')\n"
        "d = 'AGENTKIT_MODEL' in os.environ\ne = os.environ.get('HOME')\n"
    )
    found = _reads_of_own_variables(ast.parse(code), _env_constants())
    assert sorted(f.split(": ")[1] for f in found) == sorted(
        ["AGENTKIT_SPANS_FILE", "AGENTKIT_PORT", "AGENTKIT_HOST", "AGENTKIT_MODEL"]
    )
