"""``make webhook-demo``: an issue comment becomes a draft pull request, offline, on loopback.

A signed GitHub ``issue_comment`` delivery ``/agent fix …`` is POSTed to the REAL receiver Lambda (behind a
Function URL on loopback); the REAL worker Lambda takes the task from SQS, posts a progress comment, snapshots
the repository and starts a job on the REAL runtime (``python -m runtime``, through the AgentCore data-plane
stand-in, which checks SigV4); the runtime's turn is played by the fake Claude CLI of ``harness/`` (the model is
the only simulated part: the comment's bracketed directive tells the fake to make the edit a model would make);
the runtime puts the job's events on SQS and the REAL reporter Lambda applies the patch and opens a draft pull
request on the GitHub repository stand-in, then edits the progress comment into the answer.

The repository is tiny: ``src/calc.py`` subtracts where it should add, and ``tests/test_calc.py`` fails. The
demo runs that test before and after, on the default branch and on the pull request's branch.

AWS (SQS, DynamoDB, Secrets Manager) is a moto server; every part is started and stopped here. Exit status 0
when the pull request was opened with the fix, 1 otherwise.

Options: ``--keep DIR`` keeps the runtime's and the Lambdas' logs in ``DIR`` (default: a temporary directory,
removed at the end).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The Lambdas log and print EMF metrics to stdout, as in Lambda; here that goes to a file (see `lambda_output`)
# and only warnings are logged. Read at import time by Powertools, so set before the handlers are imported.
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

from moto.server import ThreadedMotoServer  # noqa: E402

from harness.agentcore_dataplane import AgentCoreDataPlane  # noqa: E402
from harness.github_repo_api import GitHubRepoApi  # noqa: E402
from harness.runtime_server import fake_cli_server, free_port  # noqa: E402
from harness.webhook_scene import (  # noqa: E402
    ACTOR_HEADER,
    FunctionUrl,
    Handler,
    aws_clients,
    create_job_resources,
    deliver_events,
    deliver_tasks,
    issue_comment_delivery,
    lambda_environment,
    sign,
)

BOLD, DIM, CYAN, GREEN, RED, RESET = (
    ("\033[1m", "\033[2m", "\033[36m", "\033[32m", "\033[31m", "\033[0m")
    if sys.stdout.isatty()
    else ("",) * 6
)
REPOSITORY = "octo/calc"
REPOSITORY_ID = 424242
WEBHOOK_SECRET = "demo-webhook-secret"
GITHUB_TOKEN = "ghp_demo_token"
SECRETS = {
    "agentkit/github-webhook-secret": WEBHOOK_SECRET,
    "agentkit/github-token": json.dumps({"token": GITHUB_TOKEN}),
}
FILES = {
    "src/calc.py": ("100644", b"def add(a, b):\n    return a - b\n"),
    "tests/test_calc.py": (
        "100644",
        b"from src.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    ),
    "README.md": ("100644", b"# calc\n"),
}
#: What the fake CLI is told to do (a model would decide this edit from the issue and the failing test).
EDIT = '[tool:Edit {"file_path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}]'
COMMENT = f"/agent fix the failing test in tests/test_calc.py {EDIT}"
AGENT = {
    "builtin_tools": ["Read", "Glob", "Grep", "Edit"],
    "allowed_tools": ["Read", "Glob", "Grep", "Edit"],
    "disallowed_tools": ["WebFetch", "WebSearch"],
    "include_sample_tools": False,
}


def step(text: str) -> None:
    print(f"{BOLD}==> {text}{RESET}", flush=True)


def detail(text: str) -> None:
    for line in text.splitlines() or [""]:
        print(f"    {line}", flush=True)


def quoted(text: str, limit: int = 12, width: int = 150) -> str:
    """A comment as a reader skims it: the first ``limit`` lines, each cut to ``width`` characters."""
    lines = [line if len(line) <= width else line[: width - 1] + "…" for line in text.strip().splitlines()]
    shown = lines[:limit] + (["…"] if len(lines) > limit else [])
    return "\n".join(f"> {line}" for line in shown)


def run_tests(files: dict[str, tuple[str, bytes]], where: Path) -> bool:
    """Run the tiny repository's tests on ``files`` checked out in ``where``; True when they pass."""
    for path, (_, data) in files.items():
        (where / path).parent.mkdir(parents=True, exist_ok=True)
        (where / path).write_bytes(data)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=where,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    return proc.returncode == 0


def unified_diff(before: dict[str, tuple[str, bytes]], after: dict[str, tuple[str, bytes]]) -> str:
    out: list[str] = []
    for path in sorted(set(before) | set(after)):
        old = before.get(path, ("", b""))[1].decode().splitlines(keepends=True)
        new = after.get(path, ("", b""))[1].decode().splitlines(keepends=True)
        if old != new:
            out += difflib.unified_diff(old, new, f"a/{path}", f"b/{path}")
    return "".join(out)


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:  # noqa: S310 - the URL built above
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access-log line per AWS call
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def demo(work: Path) -> int:
    with (work / "lambdas.log").open("a") as lambda_log:
        return scene(work, lambda_log)


def scene(work: Path, lambda_log: Any) -> int:
    started = time.monotonic()

    def quiet(handler: Handler) -> Handler:
        """``handler`` with what it prints (EMF metrics, as in Lambda) going to ``lambdas.log``."""

        def call(event: dict[str, Any], context: Any) -> dict[str, Any]:
            with contextlib.redirect_stdout(lambda_log):
                return handler(event, context)

        return call

    step("starting the scene on loopback (everything stops at the end)")
    with moto_server() as moto:
        aws = aws_clients(moto)
        made = create_job_resources(aws, SECRETS)
        detail(f"moto server (SQS, DynamoDB, Secrets Manager): {moto}")
        (work / "agent.json").write_text(json.dumps(AGENT))
        runtime = fake_cli_server(
            work,
            AGENTKIT_AGENT_FILE=str(work / "agent.json"),
            AGENTKIT_ACTOR_HEADER=ACTOR_HEADER,
            AGENTKIT_JOB_EVENTS_QUEUE_URL=made.events,
            AGENTKIT_JOB_PROGRESS_SECONDS="0.2",
            AWS_ENDPOINT_URL_SQS=moto,
        )
        with (
            runtime,
            AgentCoreDataPlane(runtime_port=runtime.port) as plane,
            GitHubRepoApi(token=GITHUB_TOKEN, repository=REPOSITORY, files=dict(FILES)) as github,
        ):
            detail(f"runtime (python -m runtime, fake Claude CLI): http://127.0.0.1:{runtime.port}")
            detail(
                f"AgentCore data-plane stand-in: {plane.url}   GitHub stand-in ({REPOSITORY}): {github.url}"
            )
            # Only people with write access may start a fix (the worker asks GitHub's permission endpoint).
            github.permissions["carol"] = "write"
            detail("@carol has write access to the repository (fixes need it)")
            os.environ.update(configure_lambdas(moto, plane.url, github.url, made))
            from webhook import receiver, reporter, worker  # the handlers, built from the environment above

            failing = not run_tests(FILES, work / "before")
            detail(f"tests/test_calc.py on main: {'FAILS' if failing else 'passes'}")
            if not failing:
                raise SystemExit("the tiny repository's test should fail before the fix")

            with FunctionUrl(quiet(receiver.handler)) as url:
                step(f"GitHub delivers a signed issue comment on {REPOSITORY}#7 → POST {url.url}/github")
                detail(f"@carol: {COMMENT}")
                body = issue_comment_delivery(COMMENT, repository=REPOSITORY, repository_id=REPOSITORY_ID)
                headers = {
                    "Content-Type": "application/json",
                    "User-Agent": "GitHub-Hookshot/demo",
                    "X-GitHub-Event": "issue_comment",
                    "X-GitHub-Delivery": "demo-delivery-1",
                    "X-Hub-Signature-256": sign(body, WEBHOOK_SECRET),
                }
                status, answer = post(f"{url.url}/github", body, headers)
                print(f"{CYAN}    receiver answered {status} {json.dumps(answer)}{RESET}", flush=True)
                if status != 202:
                    raise SystemExit(f"the receiver did not queue the comment ({status})")

            step("worker: takes the task from SQS, posts a progress comment, starts the job on the runtime")
            deliver_tasks(aws.sqs, made.tasks, quiet(worker.handler))
            for call in plane.calls:
                detail(
                    f"InvokeAgentRuntime (SigV4 checked) → runtime answered {call['status']} (job accepted)"
                )
            for comment in github.comments.values():
                detail(f"progress comment on #{comment['issue']}:")
                print(f"{DIM}{quoted(str(comment['body']))}{RESET}", flush=True)

            step("runtime: the agent's turn runs; reporter: handles the job's events from SQS")

            def seen(kind: str, raw: str) -> None:
                detail(f"job event {kind!r} handled by the reporter{outcome(kind, raw)}")

            deliver_events(aws.sqs, made.events, quiet(reporter.handler), until="result", seen=seen)
            if not github.pulls:
                raise SystemExit("the reporter opened no pull request")
            pull = github.pulls[-1]
            head = github.branch_files(pull["head"]["ref"])

            step(f"the change on branch {pull['head']['ref']}:")
            print(f"{CYAN}{unified_diff(dict(FILES), head)}{RESET}", end="", flush=True)
            passing = run_tests(head, work / "after")
            detail(f"tests/test_calc.py on the pull request's branch: {'passes' if passing else 'FAILS'}")
            print(
                f"{GREEN}{BOLD}draft PR #{pull['number']} opened: {pull['title']}{RESET}"
                if pull["draft"]
                else f"PR #{pull['number']} opened (not a draft): {pull['title']}",
                flush=True,
            )
            detail(f"{pull['html_url']}  ({pull['head']['ref']} → {pull['base']['ref']})")
            [final] = [c for c in github.comments.values()]
            detail(
                f"the progress comment, edited into the answer on #{final['issue']} (the fake CLI echoes its prompt):"
            )
            print(f"{DIM}{quoted(str(final['body']))}{RESET}", flush=True)
            if not (passing and pull["draft"]):
                raise SystemExit("the pull request does not fix the test")
    print(f"{DIM}done in {time.monotonic() - started:.1f} s; everything started here is stopped{RESET}")
    return 0


def outcome(kind: str, raw: str) -> str:
    """What a job event says, in a few words: a tool call of a progress event, a result's subtype."""
    doc = json.loads(raw)
    if kind == "result":
        result = doc.get("result") or {}
        return f": {result.get('code') or result.get('subtype') or 'done'}"
    return ""


def configure_lambdas(moto: str, plane: str, github_api: str, made: Any) -> dict[str, str]:
    """The Lambdas' environment, as the construct sets it for a deployment serving GitHub only."""
    from webhook.settings import ENV

    return {
        **lambda_environment(
            moto=moto, plane=plane, github_api=github_api, queue_url=made.tasks, table=made.table
        ),
        ENV["trackers"]: "github",
        ENV["github_webhook_secret_name"]: "agentkit/github-webhook-secret",
        ENV["github_token_secret_name"]: "agentkit/github-token",
        ENV["github_trigger_mention"]: "/agent",
        ENV["github_bot_login"]: "agentkit-bot",
        ENV["github_repository_ids"]: str(REPOSITORY_ID),
        ENV["progress_min_seconds"]: "0",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--keep", type=Path, help="keep the runtime's and the Lambdas' logs in this directory"
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        if args.keep:
            work = args.keep.resolve()
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="webhook-demo-")))
        try:
            return demo(work)
        except (SystemExit, Exception) as exc:
            print(f"{RED}webhook demo failed: {exc}{RESET}", file=sys.stderr)
            for log in ("server.log", "lambdas.log"):
                if (work / log).exists():
                    print(f"--- {log} (last lines)\n{(work / log).read_text()[-3000:]}", file=sys.stderr)
            return 1
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
