"""``agentkit invoke``: send a prompt and stream the answer (stdout) and progress (stderr).

``--output json`` (or ``--json``) prints every event as one JSON line instead; ``--final`` prints only the
final answer (what a CI job posts as a comment; an error's text never lands there). The runtime session id is
printed on stderr (``session: <id>``) once the runtime answers, so a pipeline can continue the conversation, and
with the result whether it was a new or a continued conversation (a mistyped id starts a new one); ``--session-key KEY``
derives a valid session id from a short key (a pull request number, a branch), the same one every time.
When nothing has arrived for ``--wait-notice`` seconds (30), a "still waiting" line goes to stderr.

Repository work (docs/repository-work.md): ``--workspace DIR`` sends DIR's working tree (a git work tree: the
files ``git ls-files -co --exclude-standard`` lists) and the result then carries the agent's change as a patch;
``--patch-file F`` writes it to F (also when it is empty), ``--apply`` applies it to DIR after checking that it
stays inside DIR, makes no protected change (CI configuration, CODEOWNERS, new executable bits, …; ``--allow-protected CLASSES`` allows classes) and applies cleanly. A refused patch is kept: in F, or in a temporary file the error names.
``--workspace-s3 s3://bucket/prefix/`` uploads the snapshot there (the runtime's ``AGENTKIT_WORKSPACE_S3_URI``)
instead of sending it inline, for working trees over the runtime's inline cap.

IAM actions: ``bedrock-agentcore:InvokeAgentRuntime`` (AWS target), ``cloudformation:DescribeStacks``
(``--stack``), ``s3:PutObject`` (``--workspace-s3``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from agentkit import protected_paths, workspace
from agentkit.context import Context
from agentkit.errors import AgentkitError, ExitCode, usage_error
from agentkit.printer import EventPrinter
from agentkit.targets import add_target_options, resolve_target
from agentkit.transport import (
    InvocationRequest,
    derive_session_id,
    invoke_agentcore,
    invoke_config,
    invoke_local,
    new_session_id,
    validate_session_id,
)

MAX_PROMPT_BYTES = 10_000_000  # the service accepts 100 MB payloads; prompts beyond this are a mistake


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "invoke",
        parents=[common],
        help="send a prompt and stream the answer",
        description="Send a prompt to the agent. The answer goes to stdout, progress to stderr.",
    )
    parser.add_argument("prompt", nargs="?", help="the prompt; '-' or omitted with piped stdin reads stdin")
    parser.add_argument("--prompt-file", metavar="F", help="read the prompt from file F ('-' for stdin)")
    session = parser.add_mutually_exclusive_group()
    session.add_argument("--session", metavar="ID", help="continue runtime session ID (33-256 chars)")
    session.add_argument(
        "--session-key",
        metavar="KEY",
        help="derive the session id from KEY (e.g. pr-42): the same key continues the same session",
    )
    add_target_options(parser, local=True)
    parser.add_argument("--json", action="store_true", help="same as --output json: one JSON event per line")
    parser.add_argument(
        "--final", action="store_true", help="print only the final answer on stdout (for CI comment files)"
    )
    parser.add_argument("--no-stream", action="store_true", help="ask for one JSON reply instead of SSE")
    parser.add_argument(
        "--wait-notice",
        type=float,
        default=30.0,
        metavar="S",
        help="say on stderr when nothing has arrived for S seconds (30; 0 = never)",
    )
    repo = parser.add_argument_group("repository work")
    repo.add_argument(
        "--workspace",
        metavar="DIR",
        help="send DIR's working tree (a git work tree); the result carries a patch",
    )
    repo.add_argument(
        "--apply", action="store_true", help="apply the returned patch to DIR (needs --workspace)"
    )
    repo.add_argument("--patch-file", metavar="F", help="write the returned patch to F (needs --workspace)")
    repo.add_argument(
        "--allow-protected",
        metavar="CLASSES",
        default="",
        help="let --apply write these protected-path classes (comma-separated: "
        f"{', '.join(protected_paths.NAMES)}, or all); refused by default (docs/security.md)",
    )
    repo.add_argument(
        "--workspace-s3",
        metavar="URI",
        help="upload the snapshot under s3://bucket/prefix/ (the runtime's AGENTKIT_WORKSPACE_S3_URI) instead of "
        "sending it inline",
    )
    parser.add_argument("--max-budget-usd", type=positive_float, metavar="X", help="cost cap for this turn")
    parser.add_argument("--timeout", type=positive_float, default=900.0, help="read timeout, seconds (900)")
    parser.add_argument(
        "--throttle-retries", type=int, default=3, metavar="N", help="extra tries when throttled (3)"
    )
    parser.set_defaults(handler=run, usage_parser=parser)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


def run(args: argparse.Namespace, ctx: Context) -> int:
    prompt = read_prompt(args, ctx)
    if args.local and (args.qualifier or ctx.aws.explicit_region or ctx.aws.profile):
        raise usage_error("--qualifier, --region and --profile apply to AWS targets, not --local")
    if args.throttle_retries < 0:
        raise usage_error("--throttle-retries must be >= 0")
    if args.wait_notice < 0:
        raise usage_error("--wait-notice must be >= 0")
    if args.final and (ctx.json or args.json):
        raise usage_error("--final prints the answer as text; it cannot be combined with JSON output")
    try:
        allow_protected = protected_paths.parse_allowed(args.allow_protected)
    except ValueError as exc:
        raise usage_error(f"--allow-protected: {exc}") from None
    if allow_protected and not args.apply:
        raise usage_error("--allow-protected applies to --apply")
    if (args.apply or args.patch_file or args.workspace_s3) and not args.workspace:
        raise usage_error(
            "--apply, --patch-file and --workspace-s3 need --workspace DIR (the tree the patch is made against)"
        )
    if args.session_key is not None:
        session_id = derive_session_id(args.session_key)
    else:
        session_id = _session_from(args.session) if args.session else new_session_id()
    tree, archive = None, None
    if args.workspace:
        tree = workspace.work_tree(args.workspace)
        archive, files = workspace.snapshot(tree)
        ctx.progress(f"workspace: {files} files, {len(archive)} bytes compressed")
    uploaded = None
    if archive is not None and args.workspace_s3:
        uploaded = workspace.upload(ctx.aws.client("s3"), args.workspace_s3, session_id, archive)
        ctx.progress(f"workspace: uploaded to {uploaded}")
    request = InvocationRequest(
        prompt=prompt,
        session_id=session_id,
        stream=not args.no_stream,
        max_budget_usd=args.max_budget_usd,
        workspace=archive,
        workspace_s3_uri=uploaded,
    )
    events: Iterator[dict[str, Any]]
    if args.local:
        events = invoke_local(args.local, request, timeout=args.timeout)
        stop_hint = f"agentkit sessions stop {session_id} --local {args.local}"
    else:
        target, _stack = resolve_target(args, ctx)
        client = ctx.aws.client(
            "bedrock-agentcore", region=target.region, config=invoke_config(read_timeout=args.timeout)
        )
        events = invoke_agentcore(
            client,
            request,
            runtime_arn=target.runtime_arn,
            qualifier=target.qualifier,
            throttle_retries=args.throttle_retries,
            sleep=ctx.sleep,
        )
        stop_hint = f"agentkit sessions stop {session_id} --runtime-arn {target.runtime_arn}"
        if target.qualifier:
            stop_hint += f" --qualifier {target.qualifier}"
    printer = EventPrinter(
        stdout=ctx.stdout, stderr=ctx.stderr, json_lines=ctx.json or args.json, final_only=args.final
    )
    result: dict[str, Any] | None = None
    said_session = False
    try:
        with WaitNotice(printer.notice, interval=args.wait_notice) as waiting:
            for event in events:
                waiting.touch()
                if not said_session:  # the runtime answered: there is a session to continue
                    ctx.progress(f"session: {session_id}")
                    said_session = True
                printer.handle(event)
                if event.get("type") == "result":
                    result = event
    except AgentkitError as exc:
        printer.end_line()  # the CLI prints the error on a line of its own
        if not said_session and exc.code != "connection_failed":  # sent, unanswered: the turn may run on
            ctx.progress(f"session: {session_id}")
        raise
    except KeyboardInterrupt:
        printer.end_line()
        ctx.progress(f"agentkit: interrupted; the turn may still run: {stop_hint}")
        return int(ExitCode.INTERRUPTED)
    code = printer.finish()
    conversation = _conversation(result) if result is not None else None
    if conversation:
        ctx.progress(f"session {session_id}: {conversation}")
    if tree is not None and code == ExitCode.OK:
        handle_patch(
            result,
            tree,
            apply=args.apply,
            patch_file=args.patch_file,
            ctx=ctx,
            allow_protected=allow_protected,
        )
    return int(code)


def _session_from(value: str) -> str:
    """``--session``'s id, or a usage error that offers ``--session-key`` for a short name like ``pr-42``."""
    try:
        return validate_session_id(value)
    except AgentkitError as exc:
        raise usage_error(
            f"{exc.message}; to name a conversation by a short key (a pull request, a branch), use "
            f"--session-key {value} (the same key gives the same session every time)"
        ) from None


def _conversation(result: dict[str, Any]) -> str | None:
    """``new conversation`` or ``continued conversation``, from the runtime's result (``continued``: the session had
    earlier turns, warm or restored from the store); None from a runtime too old to say (not guessed at)."""
    continued = result.get("continued")
    if not isinstance(continued, bool):
        return None
    return "continued conversation" if continued else "new conversation"


def handle_patch(
    result: dict[str, Any] | None,
    tree: workspace.WorkTree,
    *,
    apply: bool,
    patch_file: str | None,
    ctx: Context,
    allow_protected: frozenset[str] = frozenset(),
) -> None:
    """Write and/or apply the result's patch; say what changed (and what the runtime withheld) on stderr.

    Raises:
        AgentkitError: the result has no patch (exit 1), F cannot be written (exit 1), or the patch is refused
            (exit 1, code ``patch_refused``; the patch is then kept in F or a temporary file).
    """
    if result is None or not isinstance(result.get("patch"), str):
        raise AgentkitError(
            "the result carries no patch: does the runtime accept workspace snapshots (AGENTKIT_WORKSPACE_MAX_BYTES)?",
            exit_code=ExitCode.AGENT_ERROR,
        )
    patch: str = result["patch"]
    for withheld in result.get("withheld_files") or []:
        ctx.progress(f"workspace: withheld by the runtime: {withheld}")
    if patch_file:
        try:
            Path(patch_file).write_text(patch, encoding="utf-8")
        except OSError as exc:
            raise AgentkitError(f"cannot write --patch-file: {exc}", exit_code=ExitCode.AGENT_ERROR) from exc
        ctx.progress(f"workspace: patch written to {patch_file} ({len(patch.encode())} bytes)")
    if not patch:
        ctx.progress("workspace: the agent changed nothing")
        return
    if not apply:
        return
    try:
        changed = workspace.apply_patch(tree, patch, allow=allow_protected)
    except AgentkitError as exc:
        kept = patch_file or _keep(patch)
        raise AgentkitError(
            f"{exc.message} (the patch is in {kept})", exit_code=exc.exit_code, code=exc.code
        ) from None
    ctx.progress(f"workspace: applied to {tree.directory}: {', '.join(changed)}")


def _keep(patch: str) -> str:
    """Save a patch that could not be applied, so nothing is lost."""
    fd, name = tempfile.mkstemp(prefix="agentkit-", suffix=".patch")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(patch)
    return name


def read_prompt(args: argparse.Namespace, ctx: Context) -> str:
    """The prompt from the argument, ``--prompt-file`` or stdin (usage errors when absent, empty or huge)."""
    if args.prompt is not None and args.prompt_file is not None:
        raise usage_error("give the prompt as an argument or with --prompt-file, not both")
    if args.prompt_file is not None and args.prompt_file != "-":
        try:
            with open(args.prompt_file, encoding="utf-8") as handle:
                prompt = handle.read(MAX_PROMPT_BYTES + 1)
        except OSError as exc:
            raise usage_error(f"cannot read --prompt-file: {exc}") from exc
        except UnicodeDecodeError as exc:
            raise usage_error(f"--prompt-file is not UTF-8 text: {exc}") from exc
    elif args.prompt == "-" or args.prompt_file == "-" or (args.prompt is None and not ctx.stdin.isatty()):
        prompt = ctx.stdin.read(MAX_PROMPT_BYTES + 1)
    elif args.prompt is None:
        raise usage_error("no prompt: pass PROMPT, --prompt-file F, or pipe it on stdin")
    else:
        prompt = args.prompt
    if not prompt.strip():
        raise usage_error("the prompt is empty")
    if len(prompt) > MAX_PROMPT_BYTES:
        raise usage_error(f"the prompt is longer than {MAX_PROMPT_BYTES} characters")
    return prompt


class WaitNotice:
    """Says on stderr that the client is still waiting when no event has arrived for ``interval`` seconds,
    and again after each further ``interval``: a turn that waits on a slow or unreachable model must not
    look like a hung job. ``interval`` 0 turns it off. The clock is injectable for tests."""

    def __init__(
        self,
        notice: Callable[[str], None],
        *,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._notice, self._interval, self._clock = notice, interval, clock
        self._started = self._last = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def touch(self) -> None:
        """An event arrived."""
        self._last = self._clock()

    def __enter__(self) -> WaitNotice:
        if self._interval > 0:
            self._thread = threading.Thread(target=self._watch, name="agentkit-wait-notice", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _watch(self) -> None:
        told_at = self._last
        while not self._stop.wait(min(self._interval, 1.0)):
            now, last = self._clock(), self._last
            if last > told_at:
                told_at = last  # something arrived: count the quiet time from there
            if now - told_at >= self._interval:
                told_at = now
                self._notice(
                    f"agentkit: still waiting: nothing from the agent for {now - last:.0f} s "
                    f"({now - self._started:.0f} s since the request)"
                )
