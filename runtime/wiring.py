"""Builds the runtime's object graph from :class:`runtime.settings.Settings` (no logic of its own).

Imports the Claude Agent SDK (via :mod:`runtime.agent.turn`), so the server calls it lazily on the first
invocation. Outside dependencies are created here (boto3 clients through :mod:`runtime.aws`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime import aws
from runtime.agent.definition import AgentDefinitionSpec
from runtime.agent.turn import AgentDeps, AgentTurnRunner
from runtime.errors import ConfigurationError
from runtime.guard.policy import PermissionPolicy
from runtime.guard.profiles import DEVELOPER_PROGRAMS
from runtime.limits import default_max_sessions
from runtime.observe.budgets import BudgetPolicy
from runtime.observe.costs import load_price_table
from runtime.observe.metrics import make_metrics
from runtime.observe.telemetry import Telemetry
from runtime.observe.tracing import Tracing
from runtime.sessions import SessionRegistry, TurnRunner
from runtime.settings import Settings

if TYPE_CHECKING:
    from runtime.store.spool import SpoolingSessionStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Services:
    """What the server runs on: the session registry, its turn runner, and how to close the rest."""

    registry: SessionRegistry
    runner: TurnRunner
    #: Closes the dependencies (store, metrics, tracing) once the registry's sessions are closed.
    aclose: Callable[[], Awaitable[None]]
    #: Store writes accepted and not yet delivered: ``/ping`` stays busy while this is above 0, so AgentCore
    #: does not reap the microVM whose disk holds the only copy (docs/reliability.md).
    pending_writes: Callable[[], int] = lambda: 0


def build_services(settings: Settings, *, definition: AgentDefinitionSpec | None = None) -> Services:
    """The session registry and its runner, with every dependency wired from settings."""
    settings.ensure_dirs()
    clock = time.monotonic  # the one clock: latencies, time to first token, tool spans, least recently used
    if definition is None:
        agent_file = settings.agent_file
        definition = AgentDefinitionSpec.from_file(agent_file) if agent_file else AgentDefinitionSpec()
    definition, sandbox = _sandboxed_definition(settings, definition)
    if not sandbox.sandboxed and settings.sandbox == "required":
        # Command tools are off; the CLI must not be asked for a sandbox it would refuse to start without.
        settings = settings.model_copy(update={"sandbox": "off"})
    emf_stream = None
    if settings.metrics == "emf" and settings.emf_file:
        settings.emf_file.parent.mkdir(parents=True, exist_ok=True)
        emf_stream = open(settings.emf_file, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    cloudwatch_client = (
        aws.cloudwatch_client(settings.aws_region) if settings.metrics == "cloudwatch" else None
    )
    metrics = make_metrics(
        settings.metrics,
        cloudwatch_client=cloudwatch_client,
        namespace=settings.metrics_namespace,
        agent=settings.agent_name,
        emf_stream=emf_stream,
    )
    if not sandbox.commands_enabled:
        metrics.record_event("SandboxUnavailable")
    store = build_store(
        settings,
        on_error=lambda exc: metrics.record_event("SessionStoreErrors"),
        on_event=lambda name: metrics.record_event(name),
    )
    recall = None
    recall_hook_factory = None
    if settings.memory_id and settings.recall_namespaces:
        from runtime.store.recall import MemoryRecall, make_recall_hook

        recall = MemoryRecall(
            client=aws.agentcore_client(settings.aws_region),
            memory_id=settings.memory_id,
            namespaces=list(settings.recall_namespaces),
            timeout_s=settings.recall_timeout_ms / 1000,
        )
        recall_hook_factory = _matcher_factory(make_recall_hook)
    telemetry = Telemetry(
        metrics=metrics,
        tracing=Tracing(agent=settings.agent_name),
        prices=load_price_table(overrides=settings.prices),
        model=settings.model,
        state_store=store,
        recall=recall,
        recall_hook_factory=recall_hook_factory,
        clock=clock,
    )
    extra_servers: dict[str, Any] = {}
    if settings.gateway_url:
        from runtime.agent.gateway_tools import build_gateway_mcp_server

        extra_servers["gateway"] = build_gateway_mcp_server(
            settings.gateway_url,
            session=aws.session(settings.aws_region),
            region=settings.aws_region,
        )
    deps = AgentDeps(
        settings=settings,
        definition=definition,
        policy=PermissionPolicy(
            allowed_tools=definition.permitted_tools,
            workspace=settings.resolved_workspace,
            bash_allowlist=definition.bash_allowlist,
            opaque_programs=DEVELOPER_PROGRAMS if sandbox.sandboxed else frozenset(),
        ),
        telemetry=telemetry,
        budgets=BudgetPolicy(
            max_turns=min(settings.max_turns, definition.max_turns),
            max_budget_usd=min(settings.max_budget_usd, definition.max_budget_usd),
            session_budget_usd=settings.session_budget_usd or None,
        ),
        session_store=store,
        extra_mcp_servers=extra_servers,
        clock=clock,
    )
    runner = AgentTurnRunner(deps)
    registry = SessionRegistry(
        runner=runner,
        idle_timeout_s=settings.idle_timeout_s,
        max_queued=settings.max_queued,
        max_sessions=settings.max_sessions or default_max_sessions(),
        clock=clock,
    )

    async def aclose_dependencies() -> None:
        await telemetry.drain()  # spend written in the background reaches the store before it closes
        if store is not None:
            await store.close()
        await telemetry.aclose()

    return Services(
        registry=registry,
        runner=runner,
        aclose=aclose_dependencies,
        pending_writes=(lambda: store.pending_count) if store is not None else (lambda: 0),
    )


def _sandboxed_definition(
    settings: Settings, definition: AgentDefinitionSpec
) -> tuple[AgentDefinitionSpec, Any]:
    """Probe the OS sandbox once and adapt the toolset to it (one log line says which mode the runtime got)."""
    from runtime.guard.profiles import effective_definition, probe_sandbox, with_profile

    definition = with_profile(definition, settings.agent_profile)
    status = probe_sandbox(settings.sandbox)
    if settings.sandbox == "off":
        logger.warning("sandbox: OFF (AGENTKIT_SANDBOX=off): agent commands run without OS isolation")
    elif status.available:
        logger.info("sandbox: on (bubblewrap); profile %s", definition.profile)
    else:
        logger.error("sandbox: unavailable, command tools switched off: %s", status.reason)
    return effective_definition(definition, status), status


def build_store(
    settings: Settings, *, on_error: Any = None, on_event: Any = None
) -> SpoolingSessionStore | None:
    """The session store named by ``AGENTKIT_SESSION_STORE``, wrapped so accepted writes are journaled first and
    delivered (``AGENTKIT_STORE_WRITE_BEHIND``, ``AGENTKIT_STORE_STRICT``, ``AGENTKIT_STORE_CALL_TIMEOUT``)."""
    url = settings.resolved_session_store
    if url is None:
        return None
    from runtime.store.factory import store_from_url
    from runtime.store.spool import SpoolingSessionStore

    if settings.store_strict and settings.store_write_behind:
        raise ConfigurationError(
            "AGENTKIT_STORE_STRICT and AGENTKIT_STORE_WRITE_BEHIND exclude each other: strict acknowledges a turn "
            "only once it is stored, write-behind before; set one of them"
        )
    client = aws.agentcore_client(settings.aws_region) if url.startswith("agentcore://") else None
    try:
        inner = store_from_url(url, state_dir=settings.resolved_state_dir, client=client, on_event=on_event)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    return SpoolingSessionStore(
        inner,
        spool_dir=settings.resolved_state_dir / "spool",
        on_error=on_error,
        on_event=on_event,
        call_timeout_s=settings.store_call_timeout_s,
        write_behind=settings.store_write_behind,
        strict=settings.store_strict,
        # A strict write's last try starts before this deadline and ends within the call timeout: inside the
        # SDK's 60 s per mirror append (SEND_TIMEOUT_SECONDS in claude_agent_sdk's transcript_mirror_batcher).
        strict_deadline_s=55.0 - settings.store_call_timeout_s,
    )


def _matcher_factory(make_hook: Any) -> Any:
    from claude_agent_sdk import HookMatcher

    def factory(recall: Any, *, actor_id: str, session_id: str) -> Any:
        return HookMatcher(matcher=None, hooks=[make_hook(recall, actor_id=actor_id, session_id=session_id)])

    return factory
