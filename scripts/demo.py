"""``make demo``: the kit's main job on embedded defaults, offline.

1. ``cdk synth`` of the stack as it stands, and a summary of what ``cdk deploy`` would create.
2. The runtime (``python -m runtime``) started locally with the REAL bundled Claude Code CLI, pointed at a
   local Bedrock Runtime stand-in (the only simulated part: the model's replies are scripted), a SQLite
   session store and EMF metrics written to a file.
3. A two-turn conversation on one session that calls a tool, with the streamed events printed.
4. The runtime process is killed and a new one started with an empty CLI config dir: the third turn
   resumes the session from the store.
5. What it cost, read back by the slim client from the EMF metrics the runtime emitted
   (``agentkit cost --local``), and an HTML report of the run (``agentkit report``: cost, tokens, latency,
   tools, sessions, and the session's trace from the spans the runtime wrote to ``AGENTKIT_SPANS_FILE``).

Everything the run writes stays in ``.agentkit/demo/`` (emptied at the start of each run): the EMF file
``metrics.emf.jsonl``, the spans ``spans.jsonl``, the report ``report.html``, the runtime logs and the session
store. The last lines printed are the ``agentkit cost --local`` and ``agentkit report`` commands that read those
files again, and the report's path.

Your agent: ``--agent-dir DIR`` (or ``AGENTKIT_AGENT_DIR``; ``AGENTKIT_AGENT_FILE`` is honoured too) runs the
demo on an agent directory (docs/customize.md): the synth includes its Gateway tools, the gateway stand-in serves
them, the model stand-in calls its first tool (``--prefer-tool NAME`` picks another), and the demo fails (exit 1)
when that tool was not called or failed: it never prints an answer for a tool that did not run.

Options: ``--skip-synth``, ``--fake-cli`` (use the test fake CLI instead of the real one), ``--dir DIR`` (where
the run's files go; default ``.agentkit/demo``; a second demo running at the same time gets ``DIR-<pid>``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO_DIR = ROOT / ".agentkit" / "demo"
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "client"))
sys.path.insert(2, str(ROOT / "scripts"))  # the slim agentkit client, also when it is not pip-installed

from harness.runtime_server import RuntimeServer  # noqa: E402
from standins import BedrockStandIn, Reply, Usage  # noqa: E402

BOLD, DIM, CYAN, YELLOW, GREEN, RESET = (
    ("\033[1m", "\033[2m", "\033[36m", "\033[33m", "\033[32m", "\033[0m")
    if sys.stdout.isatty()
    else ("",) * 6
)
SESSION = "demo-session-0001-invoices-review-2026"
MARKER = ".agentkit-demo"
SAMPLE_TOOL = "mcp__kit__list_overdue_invoices"


def banner(text: str) -> None:
    print(f"\n{BOLD}== {text}{RESET}", flush=True)


def synth_summary(agent_dir: Path | None = None) -> None:
    banner("1/5  cdk synth (offline, no Docker needed)")
    cdk = ROOT / "node_modules" / ".bin" / "cdk"
    env = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    started = time.monotonic()
    argv = [str(cdk), "synth", "--quiet", "-c", "stage=dev"]
    if agent_dir is not None:
        argv += ["-c", f"agent_dir={agent_dir}"]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n")
        raise SystemExit(f"cdk synth failed (exit {proc.returncode})")
    print(f"synthesized in {time.monotonic() - started:.1f} s (cdk-nag AwsSolutions checks ran during synth)")
    from resource_summary import summary_lines

    print("\n".join(summary_lines(ROOT / "cdk.out")))


def print_events(reply) -> dict:
    result = {}
    for event in reply.events:
        kind = event["type"]
        if kind == "text":
            print(event["text"], end="", flush=True)
        elif kind == "tool_use":
            print(f"\n{CYAN}  → tool {event['name']}({event['input_summary']}){RESET}")
        elif kind == "tool_result":
            status = "ok" if event["ok"] else "ERROR"
            print(f"{CYAN}  ← {status}: {event['summary'][:100]}{RESET}")
        elif kind == "result":
            result = event
            print(
                f"\n{DIM}  [result] subtype={event['subtype']} turns={event['num_turns']} "
                f"cost=${event['cost_usd']:.6f} (SDK says ${event['sdk_cost_usd'] or 0:.6f}) "
                f"tokens in/out/cache-read/cache-write={event['usage']['input_tokens']}/"
                f"{event['usage']['output_tokens']}/{event['usage']['cache_read_input_tokens']}/"
                f"{event['usage']['cache_creation_input_tokens']} resumed={event['resumed']}{RESET}"
            )
        elif kind == "error":
            print(f"\n{YELLOW}  [error] {event['code']}: {event['message']}{RESET}")
    return result


def turn(server: RuntimeServer, n: int, prompt: str) -> tuple[dict, list[dict]]:
    """One turn, printed; its result event and all its events."""
    print(f"\n{BOLD}you >{RESET} {prompt}\n{BOLD}agent >{RESET} ", end="")
    started = time.monotonic()
    reply = server.invoke(prompt, session=SESSION, timeout=120)
    result = print_events(reply)
    connected = n in (1, 3)  # the session's first turn in a runtime process connects (turn 3: resumes) it
    note = " (includes connecting the session; the report's turn latency does not)" if connected else ""
    print(f"{DIM}  turn {n}: {(time.monotonic() - started) * 1000:.0f} ms over HTTP{note}{RESET}")
    return result, reply.events


def shown(path: Path) -> str:
    """``path`` as a command to paste from the repository root shows it (relative when it is inside)."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def agentkit_commands(emf_file: Path, spans_file: Path, report: Path) -> list[list[str]]:
    """The client commands that read the run's files: what step 5 runs, and what the demo tells you to run."""
    return [
        ["cost", "--local", shown(emf_file), "--by", "model"],
        ["cost", "--local", shown(emf_file), "--by", "session"],
        ["report", "--emf", shown(emf_file), "--spans", shown(spans_file), "--out", shown(report)],
    ]


def cost_and_report(emf_file: Path, spans_file: Path, report: Path) -> None:
    """Step 5 through the client itself: ``agentkit cost --local`` and ``agentkit report``."""
    from agentkit.cli import main as agentkit

    banner("5/5  agentkit cost --local and agentkit report (the slim client reads the run's EMF and spans)")
    by_model, by_session, report_argv = agentkit_commands(emf_file, spans_file, report)
    cwd = Path.cwd()
    os.chdir(ROOT)  # the commands name paths relative to the repository root, as printed
    try:
        print(f"{DIM}$ agentkit {' '.join(by_model)}{RESET}")
        if agentkit(by_model) != 0:
            raise SystemExit("agentkit cost failed")
        print(f"\n{DIM}$ agentkit {' '.join(by_session)}{RESET}")
        agentkit(by_session)
        print(f"\n{DIM}$ agentkit {' '.join(report_argv)}{RESET}")
        if agentkit([*report_argv, "--title", "agentkit demo"], stdout=io.StringIO()) != 0:
            raise SystemExit("agentkit report failed")
    finally:
        os.chdir(cwd)


def fresh_dir(path: Path) -> Path:
    """``path`` emptied (the previous demo run's files), created if absent. Refuses a directory that does not
    look like the demo's own, so a wrong ``--dir`` never deletes someone's files."""
    if path.exists() and any(path.iterdir()) and not (path / MARKER).exists():
        raise SystemExit(
            f"{path} is not empty and was not made by the demo ({MARKER} missing); choose another --dir"
        )
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    (path / MARKER).write_text("files of the last `make demo` run; emptied by the next one\n")
    return path


@dataclass
class Agent:
    """What the demo runs and which tool it must see called."""

    env: dict[str, str]
    tool: str
    sample: bool
    directory: Path | None = None
    gateway: Any = None


def choose_agent(agent_dir: Path | None, prefer_tool: str | None) -> Agent:
    """The agent the runtime will load (``--agent-dir``, ``AGENTKIT_AGENT_DIR``, ``AGENTKIT_AGENT_FILE`` or the
    sample) and the tool the demo expects it to call. Exits (code 1) when that agent has no tool to show."""
    from runtime.agent.definition import AgentDefinitionSpec
    from runtime.agent.loaded import load_agent
    from runtime.errors import ConfigurationError

    agent_file = os.environ.get("AGENTKIT_AGENT_FILE") or None
    env: dict[str, str] = {}
    try:
        if agent_dir is not None:
            loaded = load_agent(None, agent_dir)
            env["AGENTKIT_AGENT_DIR"] = str(agent_dir)
            tools = [*loaded.tools.tool_names, *(loaded.directory.tool_names if loaded.directory else [])]
            definition = loaded.definition
        elif agent_file is not None:
            definition = AgentDefinitionSpec.from_file(Path(agent_file))
            env["AGENTKIT_AGENT_FILE"] = str(Path(agent_file).resolve())
            tools = []
        else:
            definition, tools = AgentDefinitionSpec(), []
    except ConfigurationError as exc:
        raise SystemExit(f"demo: {exc.message}") from None
    if definition.include_sample_tools:
        tools.append(SAMPLE_TOOL)
    if prefer_tool:
        tools = [t for t in tools if prefer_tool in t] or [prefer_tool]
    if not tools:
        raise SystemExit(
            "demo: the agent has no tool to show: include_sample_tools is false and it brings none (add a tools/ "
            "package or a gateway/<target>/ to its agent directory: docs/customize.md), or name one with --prefer-tool"
        )
    tool = tools[0]
    return Agent(env=env, tool=tool, sample=tool == SAMPLE_TOOL, directory=agent_dir)


def check_tool_called(result: list[dict], tool: str) -> None:
    """Exit 1 unless ``tool`` was called and answered without error in the turn's events."""
    uses = [e for e in result if e["type"] == "tool_use"]
    results = [e for e in result if e["type"] == "tool_result"]
    if not any(e["name"] == tool for e in uses):
        called = ", ".join(e["name"] for e in uses) or "none"
        raise SystemExit(f"demo FAILED: the agent did not call {tool} (tools called: {called})")
    failed = [e for e in results if e["name"] == tool and not e["ok"]]
    if failed:
        raise SystemExit(f"demo FAILED: {tool} answered with an error: {failed[0]['summary'][:300]}")


def claim_dir(path: Path) -> tuple[Path, Any]:
    """``path``, or ``path-<pid>`` while another demo holds it: two demos at once never empty each other's files.
    Returns the directory and the open lock file (held until the process exits)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    lock = open(path.parent / f".{path.name}.lock", "w")  # noqa: SIM115 - held for the whole run
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        other = path.with_name(f"{path.name}-{os.getpid()}")
        print(f"another demo is using {shown(path)}; this run writes to {shown(other)}")
        return claim_dir(other)
    return path, lock


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-synth", action="store_true")
    parser.add_argument(
        "--fake-cli", action="store_true", help="use the test fake CLI instead of the bundled one"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=DEMO_DIR,
        help="where the run's files go, emptied first (default .agentkit/demo)",
    )
    parser.add_argument(
        "--agent-dir",
        type=Path,
        default=Path(os.environ["AGENTKIT_AGENT_DIR"]) if os.environ.get("AGENTKIT_AGENT_DIR") else None,
        help="your agent directory (default: AGENTKIT_AGENT_DIR, else the kit's sample)",
    )
    parser.add_argument("--prefer-tool", help="the tool (name or part of it) the model stand-in calls")
    args = parser.parse_args()
    started = time.monotonic()
    agent_dir = args.agent_dir.resolve() if args.agent_dir else None
    agent = choose_agent(agent_dir, args.prefer_tool)
    if not args.skip_synth:
        synth_summary(agent_dir)

    directory, _lock = claim_dir(args.dir.resolve())
    state = fresh_dir(directory)
    emf_file = state / "metrics.emf.jsonl"
    spans_file = state / "spans.jsonl"
    report = state / "report.html"
    store = f"sqlite:///{state / 'sessions.db'}"
    with contextlib.ExitStack() as stack:
        bedrock = stack.enter_context(BedrockStandIn(prefer_tools=(agent.tool,)))
        banner(
            "2/5  local runtime: real Claude Code CLI → local Bedrock stand-in (SIMULATED: scripted model)"
        )
        env = {
            "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
            "AGENTKIT_STATE_DIR": str(state),
            "AGENTKIT_SESSION_STORE": store,
            "AGENTKIT_METRICS": "emf",
            "AGENTKIT_EMF_FILE": str(emf_file),
            "AGENTKIT_SPANS_FILE": str(spans_file),
            "CLAUDE_CONFIG_DIR": str(state / "claude-a"),
            **agent.env,
        }
        if agent_dir is not None and agent.tool.startswith("mcp__gateway__"):
            from harness.agent_gateway import agent_gateway_control
            from harness.gateway_standin import ACCESS_KEY, REGION, SECRET_KEY, serve_gateway

            gateway_url, _ = stack.enter_context(serve_gateway(agent_gateway_control(agent_dir)))
            env.update(
                AGENTKIT_GATEWAY_URL=gateway_url,
                AWS_REGION=REGION,
                AWS_ACCESS_KEY_ID=ACCESS_KEY,
                AWS_SECRET_ACCESS_KEY=SECRET_KEY,
            )
            print(f"Gateway stand-in (your agent directory's targets, run in process): {gateway_url}")
        if args.fake_cli:
            from harness.cli import write_fake_cli

            env["AGENTKIT_CLI_PATH"] = str(write_fake_cli(state))
        print(f"Bedrock stand-in: {bedrock.url}   session store: {store}   metrics: {emf_file}")
        print(
            f"Agent: {agent_dir or os.environ.get('AGENTKIT_AGENT_FILE') or 'the kit sample'}; tool to call: {agent.tool}"
        )
        print(
            "Everything else is real: HTTP server, Claude Agent SDK, Claude Code CLI, hooks, policy, store."
        )
        usage = Usage(
            input_tokens=1800,
            output_tokens=160,
            cache_creation_input_tokens=2400,
            cache_read_input_tokens=9600,
        )
        if agent.sample:
            first_prompt = "Analyze my overdue invoices."
            scripted = [
                Reply.tool_use(
                    SAMPLE_TOOL,
                    {"as_of": "2026-11-22"},
                    text="Let me look up the overdue invoices.",
                    usage=usage,
                ),
                Reply.text(
                    "Three invoices are overdue, $24,000.75 in total. The oldest is INV-1001 (Acme Corp, "
                    "$12,500, due 2026-09-30), then Hooli (INV-1005, $7,300.25) and Globex (INV-1002, "
                    "$4,200.50). Initech's INV-1003 is not due until 2026-11-30.",
                    usage=usage,
                ),
            ]
            second = "Start with Acme Corp: it owes $12,500 and is 53 days overdue."
            third = "You asked me to analyze your overdue invoices; Acme Corp is first."
        else:  # the stand-in's default reply calls the tool with input from its schema, then summarises it
            first_prompt = f"Look it up with {agent.tool.rsplit('__', 1)[-1]}, please."
            scripted = []
            second = "That is what the tool said; ask me to look again any time."
            third = "You asked me to look something up with your tool."

        server = RuntimeServer(env=env, log_path=state / "runtime-a.log").start()
        try:
            banner("3/5  two turns on one session (one warm CLI process)")
            bedrock.enqueue(*scripted)
            check_tool_called(turn(server, 1, first_prompt)[1], agent.tool)
            bedrock.enqueue(Reply.text(second, usage=usage))
            turn(server, 2, "Which one first?" if agent.sample else "Thanks. Anything else?")
            cli_starts = sum(1 for r in bedrock.requests if r.operation == "inference-profiles")
            print(f"{GREEN}CLI processes started so far: {cli_starts} (two turns, one warm process){RESET}")
        finally:
            server.kill()  # like a reaped microVM: nothing is flushed on the way out

        banner(
            "4/5  the microVM is gone: a NEW runtime process with an EMPTY CLI config dir resumes the session"
        )
        env["CLAUDE_CONFIG_DIR"] = str(state / "claude-b")
        server = RuntimeServer(env=env, log_path=state / "runtime-b.log").start()
        try:
            bedrock.enqueue(Reply.text(third, usage=usage))
            result, _ = turn(server, 3, "Remind me: what did I ask you first?")
            messages = bedrock.model_requests[-1].body["messages"]
            print(
                f"{GREEN}resumed={result.get('resumed')}: the model received {len(messages)} messages, "
                f"the first turns restored from the SQLite store{RESET}"
            )
        finally:
            server.stop()
    time.sleep(0.2)
    cost_and_report(emf_file, spans_file, report)
    print(
        f"\n{DIM}demo finished in {time.monotonic() - started:.1f} s; the model was scripted (standins/bedrock.py){RESET}"
    )
    print(f"\nThe run's files are kept in {shown(state)}/ (EMF metrics, spans, runtime logs, the report).")
    print("Read them again with the client (from the repository root):")
    for argv in agentkit_commands(emf_file, spans_file, report):
        print(f"  .venv/bin/agentkit {' '.join(argv)}")
    print(f"{GREEN}report:{RESET} {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
