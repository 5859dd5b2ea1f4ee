"""The GitHub Actions workflow and composite action: parse, hold the keys they need, and run their shell."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentkit.transport import validate_session_id

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github/workflows/agent-pr-review.yml"
ACTION = ROOT / ".github/actions/agentkit-invoke/action.yml"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _load(path: Path) -> dict[Any, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path} is not a mapping"
    return data


def _steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if "runs" in doc:
        return list(doc["runs"]["steps"])
    return [step for job in doc["jobs"].values() for step in job["steps"]]


def _step(doc: dict[str, Any], name_part: str) -> dict[str, Any]:
    matches = [s for s in _steps(doc) if name_part in s.get("name", "")]
    assert len(matches) == 1, f"expected one step named like {name_part!r}"
    return matches[0]


def test_workflow_runs_on_pull_requests_with_oidc_permissions() -> None:
    workflow = _load(WORKFLOW)
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True
    assert triggers is not None
    assert "pull_request" in triggers and "pull_request_target" not in triggers
    assert workflow["permissions"] == {}  # nothing at workflow level; the job asks for what it needs
    for job in workflow["jobs"].values():
        assert job["permissions"] == {"id-token": "write", "contents": "read", "pull-requests": "write"}
        assert "github.repository" in job["if"], "fork pull requests must be skipped"


def test_workflow_wires_the_composite_action_with_role_and_runtime() -> None:
    workflow = _load(WORKFLOW)
    agent = _step(workflow, "Ask the agent")
    assert agent["uses"] == "./.github/actions/agentkit-invoke"
    assert agent["with"]["role-to-assume"] == "${{ vars.AGENTKIT_INVOKER_ROLE_ARN }}"
    assert agent["with"]["runtime-arn"] == "${{ vars.AGENTKIT_RUNTIME_ARN }}"
    assert "steps.session.outputs.id" in agent["with"]["session-id"]
    assert "steps.prompt.outputs.file" in agent["with"]["prompt-file"]
    action_inputs = set(_load(ACTION)["inputs"])
    assert set(agent["with"]) <= action_inputs, set(agent["with"]) - action_inputs
    prompt = _step(workflow, "Build the prompt")["run"]
    assert 'git diff --no-color "origin/${BASE_REF}...HEAD"' in prompt and "head -c" in prompt
    post = _step(workflow, "Post the answer")
    assert "gh pr comment" in post["run"] and post["env"]["GH_TOKEN"] == "${{ github.token }}"


def test_composite_action_assumes_the_role_and_runs_agentkit() -> None:
    action = _load(ACTION)
    assert action["runs"]["using"] == "composite"
    creds = [
        s
        for s in _steps(action)
        if str(s.get("uses", "")).startswith("aws-actions/configure-aws-credentials@")
    ]
    assert len(creds) == 1 and creds[0]["with"]["role-to-assume"] == "${{ inputs.role-to-assume }}"
    invoke = _step(action, "Invoke the agent")["run"]
    for flag in ("--runtime-arn", "--prompt-file", "--session", "--qualifier", "--max-budget-usd"):
        assert flag in invoke
    assert set(action["outputs"]) == {"exit-code", "session-id", "answer-file"}
    for output in action["outputs"].values():
        assert output["value"].startswith("${{ steps.invoke.outputs.")
    for step in _steps(action):
        assert "uses" in step or step.get("shell") == "bash", "composite run steps need an explicit shell"


@pytest.mark.parametrize("path", [WORKFLOW, ACTION], ids=["workflow", "action"])
def test_expressions_reference_declared_inputs_and_steps(path: Path) -> None:
    doc = _load(path)
    text = path.read_text(encoding="utf-8")
    declared_inputs = set(doc.get("inputs", {}))
    step_ids = {s["id"] for s in _steps(doc) if "id" in s}
    for expr in EXPR.findall(text):
        for name in re.findall(r"\binputs\.([A-Za-z0-9_-]+)", expr):
            assert name in declared_inputs, f"{path.name}: undeclared input {name!r}"
        for name in re.findall(r"\bsteps\.([A-Za-z0-9_-]+)\.outputs", expr):
            assert name in step_ids, f"{path.name}: unknown step id {name!r}"


@pytest.mark.parametrize("path", [WORKFLOW, ACTION], ids=["workflow", "action"])
def test_run_scripts_are_valid_bash_and_take_untrusted_data_only_through_env(path: Path) -> None:
    for step in _steps(_load(path)):
        script = step.get("run")
        if script is None:
            continue
        assert not EXPR.search(script), (
            f"{step['name']}: use env: for ${{{{ }}}} values, not inline expressions"
        )
        result = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"{step['name']}: {result.stderr}"
    for step in _steps(_load(path)):
        uses = step.get("uses", "")
        assert not uses or uses.startswith("./") or re.search(r"@v\d+$|@[0-9a-f]{40}$", uses), uses


@pytest.mark.parametrize(
    ("repo", "number"), [("octo-org/my.repo", "42"), ("a/b", "1"), ("x" * 39 + "/" + "y" * 100, "9")]
)
def test_session_step_derives_a_valid_stable_session_id(tmp_path: Path, repo: str, number: str) -> None:
    script = _step(_load(WORKFLOW), "Derive the session id")["run"]

    def run() -> str:
        out = tmp_path / "out"
        out.write_text("")
        env = {"PATH": os.environ["PATH"], "REPO": repo, "PR_NUMBER": number, "GITHUB_OUTPUT": str(out)}
        subprocess.run(["bash", "-e", "-c", script], env=env, check=True)
        (line,) = out.read_text().splitlines()
        return line.removeprefix("id=")

    first = run()
    assert validate_session_id(first) == first and first == run()
    assert first.startswith("pr-") and f"-{number}-" in first


def test_prompt_step_truncates_the_diff(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@e"

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)

    repo.mkdir()
    git("init", "-q", "-b", "main")
    (repo / "a.txt").write_text("base\n")
    git("add", ".")
    git("commit", "-qm", "base")
    git("update-ref", "refs/remotes/origin/main", "HEAD")
    (repo / "a.txt").write_text("base\n" + "changed line\n" * 500)
    git("commit", "-qam", "change")
    step = _step(_load(WORKFLOW), "Build the prompt")
    out = tmp_path / "out"
    run_env = {
        **env,
        "BASE_REF": "main",
        "PR_TITLE": "$(touch pwned) `rm -rf /`",
        "MAX_DIFF_BYTES": "1000",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(out),
    }
    subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=run_env, check=True)
    prompt = Path(out.read_text().strip().removeprefix("file=")).read_text()
    assert "Title: $(touch pwned) `rm -rf /`" in prompt and not (repo / "pwned").exists()
    assert "+changed line" in prompt and "(diff truncated: showing 1000 of" in prompt
    assert len(prompt.encode()) < 1600


def _run_config_check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = _step(_load(WORKFLOW), "Check the configuration")["run"]
    return subprocess.run(
        ["bash", "-e", "-c", script],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_configuration_check_runs_first() -> None:
    workflow = _load(WORKFLOW)
    [job] = workflow["jobs"].values()
    first = job["steps"][0]
    assert first["name"] == "Check the configuration"
    assert first["env"] == {
        "QUALIFIER": "${{ vars.AGENTKIT_QUALIFIER }}",
        "ROLE_ARN": "${{ vars.AGENTKIT_INVOKER_ROLE_ARN }}",
    }
    assert _step(workflow, "Ask the agent")["with"]["qualifier"] == "${{ vars.AGENTKIT_QUALIFIER }}"


@pytest.mark.parametrize(
    ("qualifier", "role", "ok", "message"),
    [
        ("dev", "arn:aws:iam::123456789012:role/r", True, "Invoking endpoint dev"),
        ("prod", "arn:aws:iam::123456789012:role/r", True, "Invoking endpoint prod"),
        ("", "arn:aws:iam::123456789012:role/r", False, "AGENTKIT_QUALIFIER is not set"),
        ("dev; rm -rf /", "arn:aws:iam::123456789012:role/r", False, "AGENTKIT_QUALIFIER is invalid"),
        ("dev", "", False, "AGENTKIT_INVOKER_ROLE_ARN is not set"),
    ],
    ids=["dev", "prod", "unset", "invalid", "no-role"],
)
def test_configuration_check_fails_early_with_a_clear_message(
    qualifier: str, role: str, ok: bool, message: str
) -> None:
    result = _run_config_check({"QUALIFIER": qualifier, "ROLE_ARN": role})
    assert (result.returncode == 0) is ok, result.stdout + result.stderr
    assert message in result.stdout
    if not ok:
        assert result.stdout.startswith("::error title=")


def test_checkout_does_not_persist_credentials() -> None:
    [checkout] = [
        s for s in _steps(_load(WORKFLOW)) if str(s.get("uses", "")).startswith("actions/checkout@")
    ]
    assert checkout["with"]["persist-credentials"] is False


@pytest.mark.parametrize("path", [WORKFLOW, ACTION], ids=["workflow", "action"])
def test_third_party_actions_are_pinned_to_commit_shas_with_their_version(path: Path) -> None:
    """Tags can be moved: each third-party `uses:` is a full commit SHA followed by its release tag."""
    lines = [
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"^\s*(-\s+)?uses:", line)  # YAML keys, not comments
    ]
    third_party = [line for line in lines if not line.split("uses:", 1)[1].strip().startswith("./")]
    assert third_party, f"{path.name}: expected third-party actions"
    for line in third_party:
        assert re.search(r"uses: [\w.-]+/[\w.-]+@[0-9a-f]{40}  # v\d+\.\d+\.\d+$", line), line


def test_composite_action_installs_the_slim_client_with_a_pip_cache() -> None:
    action = _load(ACTION)
    install = _step(action, "Install agentkit")
    assert install["env"]["CLIENT_DIR"] == "${{ github.action_path }}/../../../client"
    assert 'pip install --disable-pip-version-check --quiet "$CLIENT_DIR"' in install["run"]
    assert (ROOT / ".github/actions/agentkit-invoke" / "../../../client/pyproject.toml").resolve().is_file()
    cache = _step(action, "Cache pip downloads")
    assert cache["uses"].startswith("actions/cache@")
    assert cache["with"]["path"] == "${{ steps.pip-cache.outputs.dir }}"
    names = [s.get("name", "") for s in _steps(action)]
    assert names.index("Cache pip downloads") < names.index("Install agentkit (the slim client, boto3 only)")


def test_pip_cache_key_step_runs(tmp_path: Path) -> None:
    """The key step's script, run as the runner would: one cache dir and a key that changes with the client."""
    script = _step(_load(ACTION), "Locate the pip cache")["run"]
    out = tmp_path / "github_output"
    env = {**os.environ, "CLIENT_DIR": str(ROOT / "client"), "GITHUB_OUTPUT": str(out), "RUNNER_OS": "Linux"}
    subprocess.run(["bash", "-e", "-c", script], check=True, env=env)
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert outputs["dir"] and re.fullmatch(r"agentkit-pip-Linux-py3\.\d+-[0-9a-f]{16}", outputs["key"])


@pytest.mark.parametrize("diff_kib", [1, 1024])
def test_the_review_prompt_of_any_diff_fits_the_runtimes_prompt_limit(tmp_path: Path, diff_kib: int) -> None:
    """The workflow's diff cut and the runtime's default prompt limit are one budget: the prompt built from a
    1 MiB diff and a 256-character non-ASCII title is accepted by the runtime's own request parser."""
    from runtime.env import DEFAULT_MAX_PROMPT_CHARS
    from runtime.protocol import parse_body

    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "base")
    git("update-ref", "refs/remotes/origin/main", "HEAD")
    (repo / "big.txt").write_text("é line of the change\n" * (diff_kib * 1024 // 22 + 1), encoding="utf-8")
    git("add", "big.txt")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "change")
    step = _step(_load(WORKFLOW), "Build the prompt")
    output = tmp_path / "github_output"
    env = {
        **os.environ,
        **{k: str(v) for k, v in step["env"].items() if not EXPR.search(str(v))},
        "BASE_REF": "main",
        "PR_TITLE": "日" * 256,
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(output),
    }
    subprocess.run(["bash", "-e", "-c", step["run"]], check=True, cwd=repo, env=env, timeout=60)
    prompt_file = Path(output.read_text().strip().removeprefix("file="))
    prompt = prompt_file.read_bytes().decode("utf-8", "replace")  # a cut may split the last character
    assert len(prompt) <= DEFAULT_MAX_PROMPT_CHARS
    request = parse_body(
        json.dumps({"prompt": prompt, "stream": False}).encode(), max_prompt_chars=DEFAULT_MAX_PROMPT_CHARS
    )
    assert request.prompt == prompt
    assert ("diff truncated" in prompt) is (diff_kib > 190)


def test_the_docs_examples_cut_diffs_no_longer_than_the_workflow() -> None:
    cut = int(_step(_load(WORKFLOW), "Build the prompt")["env"]["MAX_DIFF_BYTES"])
    examples = [int(n) for n in re.findall(r"head -c (\d+)", (ROOT / "docs/ci-cd.md").read_text("utf-8"))]
    assert examples and all(n <= cut for n in examples), examples


def test_the_action_takes_a_session_key_and_the_docs_example_pads_nothing() -> None:
    action = yaml.safe_load(ACTION.read_text())
    assert "session-key" in action["inputs"]
    invoke = next(step for step in action["runs"]["steps"] if step.get("id") == "invoke")
    assert invoke["env"]["SESSION_KEY"] == "${{ inputs.session-key }}"
    assert 'args+=(--session-key "$SESSION_KEY")' in invoke["run"]
    doc = (ROOT / "docs" / "ci-cd.md").read_text()
    example = doc.split("### The composite action in your own workflows", 1)[1].split("```", 2)[1]
    assert "session-key: " in example and not re.search(r"-0{8,}", example)
