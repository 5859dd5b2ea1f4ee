"""``python -m runtime``: serve the AgentCore HTTP contract (``POST /invocations``, ``GET /ping``).

Binds ``--host`` > ``AGENTKIT_HOST`` (default 127.0.0.1, inside a container too: the runtime has no
authentication of its own, so a devcontainer or Codespace must not expose it; the image sets 0.0.0.0 because
AgentCore authenticates callers in front of it) and ``--port`` > ``AGENTKIT_PORT`` (default 8080). A warning
is logged at start when the address is not loopback. ``--help`` prints the options and every environment variable, and exits;
``--print-config-table`` prints the settings table of ``docs/configuration.md`` (both generated from
:class:`runtime.config.settings.Settings`). Bad settings exit with code 2 and a message naming the variable.
SIGTERM/SIGINT close every warm Claude session cleanly before the process exits.

Start-up order follows ``AGENTKIT_PLATFORM_VERSION`` (:mod:`runtime.process.prewarm`, ``docs/platform.md``): ``v1``
answers ``/ping`` at once and warms up in the background; ``v2`` warms up completely before it listens, because
AgentCore V2 snapshots the process at its first healthy ``/ping``.

Local extras: ``POST /stopruntimesession`` (:mod:`runtime.http.local_stop`, for ``agentkit sessions stop
--local``) and, when ``AGENTKIT_SPANS_FILE`` is set, spans written to that file (:mod:`runtime.observe.span_file`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.config.settings import Settings

#: Import names of the runtime's dependencies (pyproject.toml ``dependencies``), checked before anything imports
#: them, so a Python without them gets a sentence instead of a traceback.
DEPENDENCIES = (
    "bedrock_agentcore",
    "claude_agent_sdk",
    "boto3",
    "aws_lambda_powertools",
    "pydantic",
    "opentelemetry",
)

#: Longest a shutdown may take (closing CLI processes, flushing the store and metrics) before the process exits.
SHUTDOWN_TIMEOUT_S = 25.0


def build_arg_parser() -> argparse.ArgumentParser:
    """Options of ``python -m runtime``; the epilog lists every setting's variable, generated from the settings
    model (:mod:`runtime.config.reference`)."""
    from runtime.config.reference import help_table

    epilog = (
        "environment variables (all optional; an option wins over its variable, a variable over the\n"
        "default; docs/configuration.md has the same table):\n"
        f"{help_table()}\n\n"
        "Serves POST /invocations and GET /ping (the AgentCore contract); locally also POST /stopruntimesession."
    )
    parser = argparse.ArgumentParser(
        prog="python -m runtime",
        description="Serve the AgentCore Claude Kit runtime: the AgentCore HTTP contract around a Claude agent.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", help="bind address (AGENTKIT_HOST; default 127.0.0.1, in a container too)")
    parser.add_argument("--port", type=int, help="port (AGENTKIT_PORT; default 8080)")
    parser.add_argument(
        "--print-config-table",
        action="store_true",
        help="print the settings table of docs/configuration.md (Markdown, generated from the settings model) "
        "and exit",
    )
    return parser


def missing_dependencies() -> list[str]:
    """The runtime's dependencies this interpreter cannot import (found without importing them)."""
    from importlib.util import find_spec

    return [name for name in DEPENDENCIES if find_spec(name) is None]


def main(argv: Sequence[str] | None = None) -> int:
    missing = missing_dependencies()
    if missing:  # e.g. a system `python` or a CI job's: the runtime lives in the kit's .venv
        print(
            f"agentkit runtime: this Python ({sys.executable}) lacks the runtime's dependencies "
            f"({', '.join(missing)}). Run it with the kit's virtualenv, from the checkout: "
            "`.venv/bin/python -m runtime` (`make setup` creates it).",
            file=sys.stderr,
        )
        return 2
    args = build_arg_parser().parse_args(argv)  # --help exits here, before anything starts
    if args.print_config_table:
        from runtime.config.reference import markdown_table

        sys.stdout.write(markdown_table())
        return 0

    from runtime.errors import ConfigurationError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        app, settings = prepare(host=args.host, port=args.port)
    except ConfigurationError as exc:
        print(f"agentkit runtime: {exc.message}", file=sys.stderr)
        return 2
    logging.getLogger(__name__).info(
        "agentkit runtime on %s:%s (model %s, platform %s)",
        settings.host,
        settings.port,
        settings.model,
        settings.platform_version,
    )
    from runtime.http.edge import ContractH11Protocol

    app.run(port=settings.port, host=settings.host, http=ContractH11Protocol)
    return 0


def prepare(*, host: str | None = None, port: int | None = None) -> tuple[Any, Settings]:
    """Everything ``python -m runtime`` does before the server listens: settings, the app, and the start-up work
    in the order of the platform version (:mod:`runtime.process.prewarm`): on ``v2`` it is all done when this returns
    (the process is what AgentCore snapshots), on ``v1`` it is scheduled to run once the server is up.

    Raises:
        ConfigurationError: invalid settings, or (``v2``) a required start-up step failed.
    """
    from runtime.config.settings import Settings
    from runtime.http.local_stop import add_stop_route
    from runtime.http.server import build_app
    from runtime.observe import otel_setup
    from runtime.observe.span_file import install_span_file
    from runtime.process import restore
    from runtime.process.shutdown import EarlyClose

    settings = Settings.from_env(host=host, port=port)
    from runtime.process.startup_checks import check_start

    check_start(settings)  # a bad agent or state dir stops the process here, before /ping can say Healthy
    exposure = settings.exposure_warning()
    if exposure is not None:
        logging.getLogger(__name__).warning(exposure)
    if settings.spans_file is not None:
        install_span_file(str(settings.spans_file))
    app = build_app(settings)
    add_stop_route(app, actor_header=settings.actor_header)
    runtime = app.state.runtime
    # What a snapshot restore must renew beyond runtime.process.restore's own list (the first invocation runs them).
    restore.on_restore("ping clock", app.reset_ping_clock)
    restore.on_restore(
        "telemetry instance", lambda: otel_setup.refresh_instance_resource(restore.instance_id())
    )
    background = _initialise(app, settings) if settings.platform_version == "v2" else _prewarm(app, settings)

    # SIGTERM starts closing the warm clients at once, on the loop that owns them (runtime.process.shutdown).
    early_close = EarlyClose(runtime.close, app.worker_loop)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        for work in background:
            work.start()
        early_close.install()
        yield
        future = early_close.begin()  # already under way after a signal
        try:
            await asyncio.wait_for(asyncio.wrap_future(future), timeout=SHUTDOWN_TIMEOUT_S)
            _flush_traces()
            # atexit hooks never run here (see _flush_traces): the sessions' cgroups go now
            from runtime.guard.resources import release_all_session_cgroups

            release_all_session_cgroups()
            logging.getLogger(__name__).info("shutdown complete: every Claude session closed")
        except Exception as exc:  # shutdown must finish
            logging.getLogger(__name__).warning("error while closing sessions: %s", exc)

    app.router.lifespan_context = lifespan
    return app, settings


def _npm_root() -> None:
    """npm's answer for the sandboxed CLI (:mod:`runtime.agent.npm_root`), asked before the runner needs it."""
    from runtime.agent.npm_root import npm_global_root

    npm_global_root(os.environ.get("PATH") or "")


def _import_sdk() -> None:
    """The Claude Agent SDK import (~1 s, mostly ``mcp``), through the module of the runtime that needs it (one
    importing thread at a time: :data:`runtime.process.prewarm.GRAPH_IMPORT`)."""
    from runtime.process.prewarm import GRAPH_IMPORT

    with GRAPH_IMPORT:
        import runtime.agent.turn  # noqa: F401


def _cli_binary(cli_path: Path | None) -> Path | None:
    """The CLI the runtime will spawn: ``AGENTKIT_CLI_PATH`` or the SDK's bundled one."""
    if cli_path is not None:
        return cli_path if cli_path.is_file() else None
    with contextlib.suppress(Exception):
        from runtime.agent.orphan_guard import bundled_cli

        bundled = bundled_cli()
        return Path(bundled) if bundled else None
    return None


def _cli_pages(settings: Settings, *, read: bool) -> None:
    from runtime.process.prewarm import page_in

    path = _cli_binary(Path(settings.cli_path) if settings.cli_path else None)
    if path is not None:
        page_in(path, read=read)


def _initialise(app: Any, settings: Settings) -> list[Any]:
    """Platform v2: the whole start-up now, in this thread, before the server listens (:func:`prewarm.initialise`);
    nothing is left for the background."""
    from runtime import aws
    from runtime.observe.otel_setup import OtelSetup, install
    from runtime.process.prewarm import initialise

    otel = install(OtelSetup())
    runtime = app.state.runtime

    def services() -> None:
        from runtime.wiring import build_services

        runtime.services = build_services(settings)

    initialise(
        [
            ("sdk_import", _import_sdk),
            ("cli_pages", lambda: _cli_pages(settings, read=True)),
            ("aws_models", aws.warm),
            ("services", services),
            ("otel", otel.run),
        ],
        required=frozenset({"sdk_import", "services"}),
    )
    return []


def _prewarm(app: Any, settings: Settings) -> list[Any]:
    """Platform v1: the background start-up work (:mod:`runtime.process.prewarm`): the CLI binary's read-ahead (its own
    thread: a system call, no GIL), then the SDK import, the runtime's object graph on the app's worker loop, and
    the OpenTelemetry set-up."""
    from runtime.observe.otel_setup import OtelSetup, install
    from runtime.process.prewarm import Prewarm

    otel = install(OtelSetup())

    def registry() -> None:
        loop = app.worker_loop()
        asyncio.run_coroutine_threadsafe(app.state.runtime.get_services(), loop).result(timeout=60)

    otel.schedule()  # turns wait for it from now on (it runs last; see runtime.process.prewarm)
    readahead: list[tuple[str, Callable[[], object]]] = [
        ("cli_pages", lambda: _cli_pages(settings, read=False))
    ]
    if settings.sandbox == "required":  # a child process: overlaps the SDK import without holding the GIL
        readahead.append(("npm_root", _npm_root))
    return [
        Prewarm(readahead, name="agentkit-readahead"),
        Prewarm([("sdk_import", _import_sdk), ("registry", registry), ("otel", otel.run)]),
    ]


def _flush_traces() -> None:
    """Export buffered spans now: uvicorn re-raises SIGTERM after shutdown, so atexit hooks never run."""
    from opentelemetry import trace

    flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if flush is not None:
        flush(5000)


if __name__ == "__main__":
    sys.exit(main())
