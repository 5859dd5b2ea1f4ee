"""``agentkit``: invoke the agent from a terminal or a pipeline, stop a session, report cost.

Synopsis::

    agentkit invoke [PROMPT|-] [--prompt-file F] [--session ID]
                    [--runtime-arn ARN | --stack NAME | --local URL] [--json] [--no-stream]
                    [--qualifier Q] [--max-budget-usd X] [--timeout S] [--region R] [--profile P]
    agentkit sessions stop SESSION_ID (--runtime-arn ARN | --stack NAME) [--qualifier Q] [--region R]
    agentkit cost [--days N] [--namespace NS] [--agent NAME] [--region R]

Exit codes: 0 success · 1 agent error (error result, runtime unreachable, bad reply) · 2 usage error (bad
arguments, empty prompt, request rejected as invalid) · 3 budget exceeded · 4 AWS/transport error
(credentials, access denied, throttled after retries, stack not found, read timeout or connection lost
after the request was sent) · 130 interrupted.

``InvokeAgentRuntime`` is sent once (botocore does not retry it); only throttling is retried, with backoff.

Env vars: ``AGENTKIT_RUNTIME_ARN`` (default target of ``invoke`` and ``sessions stop``),
``AGENTKIT_METRICS_NAMESPACE`` / ``AGENTKIT_AGENT_NAME`` (``cost`` defaults), plus the usual boto3 variables
(``AWS_REGION``, ``AWS_PROFILE``, ``AWS_ENDPOINT_URL_*``; ``AWS_RETRY_MODE``/``AWS_MAX_ATTEMPTS`` apply to
``sessions stop``, ``--stack`` and ``cost`` but never to the invocation itself).

IAM actions: ``bedrock-agentcore:InvokeAgentRuntime`` (invoke), ``bedrock-agentcore:StopRuntimeSession``
(sessions stop), ``cloudformation:DescribeStacks`` (``--stack``), ``cloudwatch:GetMetricData`` (cost).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TextIO

from runtime.client import (
    ExitCode,
    InvocationRequest,
    InvokeError,
    aws_error,
    error_code_exit,
    invoke_agentcore,
    invoke_config,
    invoke_local,
    new_session_id,
    region_of_runtime_arn,
    retry_config,
    runtime_arn_from_stack,
    stop_session,
    validate_session_id,
)

ENV_RUNTIME_ARN = "AGENTKIT_RUNTIME_ARN"
ENV_METRICS_NAMESPACE = "AGENTKIT_METRICS_NAMESPACE"  # same name as runtime/settings.py
ENV_AGENT_NAME = "AGENTKIT_AGENT_NAME"  # same name as runtime/settings.py
DEFAULT_NAMESPACE = "AgentCoreClaudeKit"
DEFAULT_AGENT = "agentkit"
MAX_PROMPT_BYTES = 10_000_000  # the service accepts 100 MB payloads; prompts beyond this are a mistake


class ClientFactory(Protocol):
    """Builds a boto3 client; tests pass one that returns stubbed clients."""

    def __call__(
        self, service: str, *, region: str | None, profile: str | None, config: Any = None
    ) -> Any: ...


def boto3_client_factory(service: str, *, region: str | None, profile: str | None, config: Any = None) -> Any:
    """Default :class:`ClientFactory`: a client from a fresh ``boto3.session.Session``."""
    import boto3

    session = boto3.session.Session(region_name=region, profile_name=profile)
    return session.client(service, config=config)  # type: ignore[call-overload]


# ----------------------------------------------------------------------------------------------- parsing
def build_parser() -> argparse.ArgumentParser:
    """The ``agentkit`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="agentkit", description="Invoke and operate an AgentCore Claude agent."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{invoke,sessions,cost}")

    invoke = commands.add_parser("invoke", help="send a prompt and stream the answer")
    invoke.add_argument("prompt", nargs="?", help="the prompt; '-' or omitted with piped stdin reads stdin")
    invoke.add_argument("--prompt-file", metavar="F", help="read the prompt from file F ('-' for stdin)")
    invoke.add_argument("--session", metavar="ID", help="continue runtime session ID (33-256 chars)")
    _add_target(invoke, local=True)
    invoke.add_argument("--json", action="store_true", help="print every event as one JSON line on stdout")
    invoke.add_argument("--no-stream", action="store_true", help="ask for one JSON reply instead of SSE")
    invoke.add_argument("--max-budget-usd", type=_positive_float, metavar="X", help="cost cap for this turn")
    invoke.add_argument("--timeout", type=_positive_float, default=900.0, help="read timeout, seconds (900)")
    invoke.add_argument(
        "--throttle-retries", type=int, default=3, metavar="N", help="extra tries when throttled (3)"
    )

    sessions = commands.add_parser("sessions", help="manage runtime sessions")
    session_commands = sessions.add_subparsers(dest="session_command", required=True, metavar="{stop}")
    stop = session_commands.add_parser("stop", help="stop a runtime session now (the kill switch)")
    stop.add_argument("session_id", metavar="SESSION_ID")
    _add_target(stop, local=False)

    cost = commands.add_parser("cost", help="cost per day and model from CloudWatch metrics")
    cost.add_argument("--days", type=int, default=7, help="days to report, counting today (7)")
    cost.add_argument("--namespace", default=None, help=f"metric namespace (${ENV_METRICS_NAMESPACE})")
    cost.add_argument("--agent", default=None, help=f"Agent dimension (${ENV_AGENT_NAME})")
    cost.add_argument("--region", help="AWS region")
    cost.add_argument("--profile", help="AWS profile")
    return parser


def _add_target(parser: argparse.ArgumentParser, *, local: bool) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--runtime-arn", metavar="ARN", help=f"runtime ARN (${ENV_RUNTIME_ARN})")
    group.add_argument("--stack", metavar="NAME", help="read the runtime ARN from this stack's outputs")
    if local:
        group.add_argument("--local", metavar="URL", help="a local runtime, e.g. http://127.0.0.1:8080")
    parser.add_argument("--qualifier", metavar="Q", help="runtime endpoint name (AWS only; default DEFAULT)")
    parser.add_argument("--region", help="AWS region (default: from the ARN, then the AWS config)")
    parser.add_argument("--profile", help="AWS profile")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


# ------------------------------------------------------------------------------------------------- main
def main(
    argv: Sequence[str] | None = None,
    *,
    client_factory: ClientFactory = boto3_client_factory,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
) -> int:
    """Run ``agentkit`` and return its exit code (see the module docstring).

    Args:
        argv: arguments without the program name (default ``sys.argv[1:]``).
        client_factory: builds boto3 clients (``bedrock-agentcore``, ``cloudformation``, ``cloudwatch``).
        sleep: used between throttling retries.
        now: clock for ``cost``.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage and the message
        return int(exc.code or 0)
    try:
        if args.command == "invoke":
            return _cmd_invoke(args, parser=parser, client_factory=client_factory, sleep=sleep)
        if args.command == "sessions":
            return _cmd_stop(args, client_factory=client_factory)
        return _cmd_cost(args, client_factory=client_factory, now=now)
    except InvokeError as exc:
        if exc.exit_code == ExitCode.USAGE and exc.code == "":
            parser.print_usage(sys.stderr)
        print(f"agentkit: error: {exc.message}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("agentkit: interrupted", file=sys.stderr)
        return 130


def _cmd_invoke(
    args: argparse.Namespace,
    *,
    parser: argparse.ArgumentParser,
    client_factory: ClientFactory,
    sleep: Callable[[float], None],
) -> int:
    prompt = _read_prompt(args)
    if args.local and (args.qualifier or args.region or args.profile):
        raise InvokeError(
            "--qualifier, --region and --profile apply to AWS targets, not --local", exit_code=ExitCode.USAGE
        )
    if args.throttle_retries < 0:
        raise InvokeError("--throttle-retries must be >= 0", exit_code=ExitCode.USAGE)
    session_id = validate_session_id(args.session) if args.session else new_session_id()
    request = InvocationRequest(
        prompt=prompt, session_id=session_id, stream=not args.no_stream, max_budget_usd=args.max_budget_usd
    )
    events: Iterator[dict[str, Any]]
    if args.local:
        events = invoke_local(args.local, request, timeout=args.timeout)
    else:
        arn, region = _resolve_target(args, client_factory=client_factory)
        client = client_factory(
            "bedrock-agentcore",
            region=region,
            profile=args.profile,
            config=invoke_config(read_timeout=args.timeout),
        )
        events = invoke_agentcore(
            client,
            request,
            runtime_arn=arn,
            qualifier=args.qualifier,
            throttle_retries=args.throttle_retries,
            sleep=sleep,
        )
    print(f"session: {session_id}", file=sys.stderr, flush=True)
    printer = EventPrinter(stdout=sys.stdout, stderr=sys.stderr, json_lines=args.json)
    try:
        for event in events:
            printer.handle(event)
    except InvokeError:
        printer.end_line()  # main() prints the error on a line of its own
        raise
    except KeyboardInterrupt:
        print(
            f"\nagentkit: interrupted; the turn may still run: agentkit sessions stop {session_id} ...",
            file=sys.stderr,
        )
        return 130
    return int(printer.finish())


def _read_prompt(args: argparse.Namespace) -> str:
    if args.prompt is not None and args.prompt_file is not None:
        raise InvokeError(
            "give the prompt as an argument or with --prompt-file, not both", exit_code=ExitCode.USAGE
        )
    if args.prompt_file is not None and args.prompt_file != "-":
        try:
            with open(args.prompt_file, encoding="utf-8") as handle:
                prompt = handle.read(MAX_PROMPT_BYTES + 1)
        except OSError as exc:
            raise InvokeError(f"cannot read --prompt-file: {exc}", exit_code=ExitCode.USAGE) from exc
        except UnicodeDecodeError as exc:
            raise InvokeError(f"--prompt-file is not UTF-8 text: {exc}", exit_code=ExitCode.USAGE) from exc
    elif args.prompt == "-" or args.prompt_file == "-" or (args.prompt is None and not sys.stdin.isatty()):
        prompt = sys.stdin.read(MAX_PROMPT_BYTES + 1)
    elif args.prompt is None:
        raise InvokeError(
            "no prompt: pass PROMPT, --prompt-file F, or pipe it on stdin", exit_code=ExitCode.USAGE
        )
    else:
        prompt = args.prompt
    if not prompt.strip():
        raise InvokeError("the prompt is empty", exit_code=ExitCode.USAGE)
    if len(prompt) > MAX_PROMPT_BYTES:
        raise InvokeError(
            f"the prompt is longer than {MAX_PROMPT_BYTES} characters", exit_code=ExitCode.USAGE
        )
    return prompt


def _resolve_target(args: argparse.Namespace, *, client_factory: ClientFactory) -> tuple[str, str | None]:
    """Runtime ARN and region of an AWS target: ``--runtime-arn`` > ``--stack`` > ``$AGENTKIT_RUNTIME_ARN``.

    The region is ``--region``, else the one inside the ARN."""
    arn = args.runtime_arn
    if args.stack:
        cloudformation = client_factory("cloudformation", region=args.region, profile=args.profile)
        arn = runtime_arn_from_stack(cloudformation, stack_name=args.stack)
    arn = arn or os.environ.get(ENV_RUNTIME_ARN)
    if not arn:
        raise InvokeError(
            f"no target: pass --runtime-arn ARN, --stack NAME or --local URL (or set ${ENV_RUNTIME_ARN})",
            exit_code=ExitCode.USAGE,
        )
    return arn, args.region or region_of_runtime_arn(arn)


def _cmd_stop(args: argparse.Namespace, *, client_factory: ClientFactory) -> int:
    session_id = validate_session_id(args.session_id)
    arn, region = _resolve_target(args, client_factory=client_factory)
    client = client_factory("bedrock-agentcore", region=region, profile=args.profile, config=retry_config())
    status = stop_session(client, runtime_arn=arn, session_id=session_id, qualifier=args.qualifier)
    print(f"stopped session {session_id} (HTTP {status})")
    return int(ExitCode.OK)


def _cmd_cost(
    args: argparse.Namespace, *, client_factory: ClientFactory, now: Callable[[], dt.datetime]
) -> int:
    if not 1 <= args.days <= 455:
        raise InvokeError(
            "--days must be between 1 and 455 (CloudWatch keeps daily data 455 days)",
            exit_code=ExitCode.USAGE,
        )
    try:
        from runtime import cost_report as report  # lazy: keeps `agentkit invoke` start-up light
    except ImportError as exc:
        raise InvokeError(f"cost reporting is unavailable: {exc}", exit_code=ExitCode.AGENT_ERROR) from exc
    end = now()
    start = (end - dt.timedelta(days=args.days - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    cloudwatch = client_factory("cloudwatch", region=args.region, profile=args.profile)
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        rows = report.cost_report(
            cloudwatch_client=cloudwatch,
            namespace=args.namespace or os.environ.get(ENV_METRICS_NAMESPACE) or DEFAULT_NAMESPACE,
            agent=args.agent or os.environ.get(ENV_AGENT_NAME) or DEFAULT_AGENT,
            start=start,
            end=end,
            period="day",
        )
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(exc, action="reading cost metrics (cloudwatch:GetMetricData)") from exc
    print(report.format_table(rows))
    return int(ExitCode.OK)


# ----------------------------------------------------------------------------------------------- output
class EventPrinter:
    """Renders invocation events: text deltas to stdout, tool progress and errors to stderr, or JSON lines.

    :meth:`finish` returns the exit code the events call for.
    """

    def __init__(self, *, stdout: TextIO, stderr: TextIO, json_lines: bool = False) -> None:
        self._out, self._err, self._json = stdout, stderr, json_lines
        self._streamed_text = False
        self._at_line_start = True
        self._exit: ExitCode | None = None

    def handle(self, event: dict[str, Any]) -> None:
        """Render one event and remember what it means for the exit code."""
        kind = event.get("type")
        if self._json:
            self._out.write(json.dumps(event, ensure_ascii=False) + "\n")
            self._out.flush()
        if kind == "text":
            self._streamed_text = True
            self._write_text(str(event.get("text", "")))
        elif kind == "tool_use":
            summary = event.get("input_summary") or ""
            self._progress(f"[tool] {event.get('name', '?')} {summary}".rstrip())
        elif kind == "tool_result":
            failed = event.get("is_error") or event.get("ok") is False
            line = f"[tool] {event.get('name') or 'result'} {'failed' if failed else 'ok'}"
            self._progress(f"{line}: {event['summary']}" if failed and event.get("summary") else line)
        elif kind == "result":
            self._on_result(event)
        elif kind == "error":
            code = str(event.get("code") or "error")
            self._progress(f"agentkit: error [{code}]: {event.get('message', '')}")
            self._exit = error_code_exit(code)

    def end_line(self) -> None:
        """End a partly written line of text on stdout."""
        if not self._json and not self._at_line_start:
            self._out.write("\n")
            self._out.flush()
            self._at_line_start = True

    def finish(self) -> ExitCode:
        """Close the output and return the exit code; a stream without result or error is an agent error."""
        self.end_line()
        if self._exit is None:
            print("agentkit: error: the reply ended without a result", file=self._err)
            return ExitCode.AGENT_ERROR
        return self._exit

    def _on_result(self, event: dict[str, Any]) -> None:
        subtype = str(event.get("subtype") or "success")
        if not self._streamed_text and event.get("text"):
            self._write_text(str(event["text"]))
        if subtype == "error_max_budget_usd":
            self._exit = ExitCode.BUDGET_EXCEEDED
        elif subtype.startswith("error") or event.get("is_error"):
            self._exit = ExitCode.AGENT_ERROR
        else:
            self._exit = ExitCode.OK
        if not self._json:
            cost = event.get("cost_usd")
            cost_text = f" cost=${cost:.4f}" if isinstance(cost, int | float) else ""
            line = f"[done] {subtype} turns={event.get('num_turns', '?')}{cost_text}"
            self._progress(line)

    def _write_text(self, text: str) -> None:
        if self._json or not text:
            return
        self._out.write(text)
        self._out.flush()
        self._at_line_start = text.endswith("\n")

    def _progress(self, line: str) -> None:
        self._err.write(line + "\n")
        self._err.flush()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
