"""Builds the runtime's object graph from :class:`runtime.config.settings.Settings` (no logic of its own).

Imports the Claude Agent SDK (via :mod:`runtime.agent.runner`), so the server calls it lazily on the first
invocation (platform V1) or ``python -m runtime`` before it listens (V2, :mod:`runtime.process.prewarm`). Outside
dependencies are created here (boto3 clients through :mod:`runtime.aws`, built on first use); what a snapshot
restore must renew registers with :mod:`runtime.process.restore`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime import aws
from runtime.accounting import Accounting
from runtime.agent.budget_policy import BudgetPolicy
from runtime.agent.definition import AgentDefinitionSpec
from runtime.agent.process import CliProcess
from runtime.agent.runner import AgentDeps, AgentTurnRunner
from runtime.approvals import Approvals
from runtime.approvals.rules import rules_from
from runtime.config.settings import Settings
from runtime.env import SANDBOX_UNSAFE
from runtime.errors import ConfigurationError
from runtime.guard import resources, tool_disk
from runtime.guard.confine import release_session_dirs
from runtime.guard.policy import PermissionPolicy, is_sensitive_name
from runtime.guard.profiles import DEVELOPER_PROGRAMS, SandboxStatus
from runtime.observe.costs import load_price_table
from runtime.observe.metrics import make_metrics
from runtime.observe.observer import Observer
from runtime.observe.tracing import Tracing
from runtime.process import restore
from runtime.process.limits import default_max_sessions
from runtime.sessions import SessionRegistry, TurnRunner
from runtime.workspace import SnapshotLimits, Workspaces, default_tree_for
from runtime.workspace.retention import Retention
from runtime.workspace.s3 import S3Location, S3Snapshots

if TYPE_CHECKING:
    from claude_agent_sdk.types import McpServerConfig

    from runtime.approvals.index import MemoryPendingIndex
    from runtime.jobs.service import Jobs
    from runtime.session_store.recall import MemoryRecall
    from runtime.session_store.spool import SpoolingSessionStore

logger = logging.getLogger(__name__)


async def _no_store(budget_s: float) -> None:
    """No session store to close."""


@dataclass(frozen=True)
class Services:
    """What the server runs on: the session registry, its turn runner, and how to close the rest."""

    registry: SessionRegistry[CliProcess]
    runner: TurnRunner[CliProcess]
    #: Closes the remaining dependencies (metrics, tracing) last, once the jobs and the store are closed.
    aclose: Callable[[], Awaitable[None]]
    #: Store writes accepted and not yet delivered: ``/ping`` stays busy while this is above 0, so AgentCore
    #: does not reap the microVM whose disk holds the only copy (docs/reliability.md).
    pending_writes: Callable[[], int] = lambda: 0
    #: Asynchronous jobs (``AGENTKIT_JOB_EVENTS_QUEUE_URL`` set), else None.
    jobs: Jobs | None = None
    #: The sweep of unused sessions' workspaces (``AGENTKIT_WORKSPACE_RETENTION_HOURS`` > 0), else None; the server
    #: starts it on the loop that owns the sessions.
    retention: Retention | None = None
    #: Tool calls waiting for a person, and their answers (runtime.approvals); None: approvals are refused.
    approvals: Approvals | None = None
    #: Writes the spend still in flight and closes the session store, flushing its spool for at most the seconds
    #: given (the server runs it alongside the jobs' close, once the registry's sessions are closed).
    close_store: Callable[[float], Awaitable[None]] = _no_store


def build_services(settings: Settings, *, definition: AgentDefinitionSpec | None = None) -> Services:
    """The session registry and its runner, with every dependency wired from settings."""
    settings.ensure_dirs()
    clock = time.monotonic  # the one clock: latencies, time to first token, tool spans, least recently used
    from runtime.agent.loaded import load_agent

    agent = load_agent(settings.agent_file, settings.agent_dir)
    if definition is None:
        definition = agent.definition
    unsafe = settings.sandbox == SANDBOX_UNSAFE
    if unsafe:
        # Chosen on purpose (Settings refuses plain "off" on AgentCore); from here on it means "off".
        logger.error(
            "sandbox: OFF on purpose (AGENTKIT_SANDBOX=%s): the agent's commands run without OS isolation and can "
            "read the execution role's credentials from the metadata service and reach the platform server",
            SANDBOX_UNSAFE,
        )
        settings = settings.model_copy(update={"sandbox": "off"})
    if settings.cli_path is None and os.geteuid() == 0:
        # its CLI runs as an unprivileged user, who must be able to execute it (runtime.guard.cli_reach)
        from runtime.agent.orphan_guard import bundled_cli
        from runtime.guard.cli_reach import reachable_cli

        bundled = bundled_cli()
        if bundled is not None and (reached := reachable_cli(bundled)) != bundled:
            settings = settings.model_copy(update={"cli_path": reached})
    definition, sandbox = _sandboxed_definition(settings, definition)
    if (not sandbox.sandboxed or not sandbox.commands_enabled) and settings.sandbox == "required":
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
    if unsafe:
        metrics.record_event("SandboxUnsafe")
    limits = resources.decided()
    if limits is not None and limits.enforcement == "none":
        metrics.record_event("SessionLimitsUnenforced", properties=limits.describe())

    def memory_usage(metric: str, claude_session_id: str | None) -> None:
        # What AgentCore Memory bills (events written, retrievals), per Claude session: `agentkit cost` prices it.
        metrics.record_event(metric, properties={"ClaudeSessionId": claude_session_id})

    store = build_store(
        settings,
        on_error=lambda exc: metrics.record_event("SessionStoreErrors"),
        on_event=lambda name: metrics.record_event(name),
        on_usage=memory_usage,
    )
    memory: MemoryRecall | None = None
    if settings.memory_id and settings.recall_namespaces:
        from runtime.session_store.recall import MemoryRecall

        memory = MemoryRecall(
            client=aws.agentcore_client(settings.aws_region),
            memory_id=settings.memory_id,
            namespaces=list(settings.recall_namespaces),
            timeout_s=settings.recall_timeout_ms / 1000,
            on_usage=memory_usage,
        )
    observer = Observer(
        metrics=metrics, tracing=Tracing(agent=settings.agent_name), model=settings.model, clock=clock
    )
    accounting = Accounting(store=store, memory=memory, on_store_error=observer.store_error)
    jobs = _jobs(settings, clock, on_event=metrics.record_event)
    retention = (
        Retention(
            state_dir=settings.resolved_state_dir,
            retention_s=settings.workspace_retention_hours * 3600,
            # late-bound: the registry is built below, and both are used only once the server runs
            in_use=lambda: registry.claude_session_ids_in_use() | (jobs.session_keys() if jobs else set()),
        )
        if settings.workspace_retention_hours > 0
        else None
    )
    extra_servers: dict[str, McpServerConfig] = dict(agent.mcp_servers)
    if settings.gateway_url:
        from runtime.agent.gateway_tools import build_gateway_mcp_server

        extra_servers["gateway"] = build_gateway_mcp_server(
            settings.gateway_url,
            session=aws.session(settings.aws_region),
            region=settings.aws_region,
        )
    approvals = Approvals(
        rules_from(settings.approvals, definition.approvals),
        store=store,
        sink=observer,
        workspace=str(settings.resolved_workspace),
        allowed_hosts=definition.network_allowed_domains,
        index=_pending_index(settings),
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
        observer=observer,
        budgets=BudgetPolicy(
            max_turns=min(settings.max_turns, definition.max_turns),
            max_budget_usd=min(settings.max_budget_usd, definition.max_budget_usd),
            session_budget_usd=settings.session_budget_usd or None,
        ),
        prices=load_price_table(overrides=settings.prices),
        session_store=store,
        memory=memory,
        extra_mcp_servers=extra_servers,
        agent_hooks=agent.tools.hooks,
        agent_plugins=agent.plugins,
        workspaces=_workspaces(settings),
        retention=retention,
        approvals=approvals,
        clock=clock,
    )
    runner = AgentTurnRunner(deps)
    registry = SessionRegistry(
        runner=runner,
        idle_timeout_s=settings.idle_timeout_s,
        max_queued=settings.max_queued,
        max_sessions=settings.max_sessions or default_max_sessions(),
        accounting=accounting,
        on_client_dropped=lambda session: _release_session(settings, session.claude_session_id),
        on_finished=(lambda session: retention.note_used(session.claude_session_id))
        if retention is not None
        else (lambda session: None),
        clock=clock,
    )

    # After a snapshot restore (runtime.process.restore): directories the image lacks (a session storage mount is attached
    # only then) and the store's own handles are made anew.
    restore_hooks = [restore.on_restore("directories", settings.ensure_dirs)]
    if store is not None:
        restore_hooks.append(restore.on_restore("session store", store.after_restore))
    if jobs is not None:
        restore_hooks.append(restore.on_restore("job outbox", jobs.outbox.recount))

    async def close_store(budget_s: float) -> None:
        started = clock()
        await accounting.drain()  # spend written in the background reaches the store before it closes
        if store is not None:
            await store.close(flush_s=max(0.0, budget_s - (clock() - started)))

    async def aclose_dependencies() -> None:
        for remove in restore_hooks:
            remove()
        await observer.aclose()

    return Services(
        registry=registry,
        runner=runner,
        aclose=aclose_dependencies,
        pending_writes=(lambda: store.pending_count) if store is not None else (lambda: 0),
        jobs=jobs,
        retention=retention,
        approvals=approvals,
        close_store=close_store,
    )


def _pending_index(settings: Settings) -> MemoryPendingIndex | None:
    """The deployment's list of pending approvals: on the AgentCore Memory the sessions are stored in (the client's
    ``agentkit sessions pending`` reads it), none with a local store."""
    url = settings.resolved_session_store or ""
    if not url.startswith("agentcore://"):
        return None
    from runtime.approvals.index import MemoryPendingIndex

    return MemoryPendingIndex(aws.agentcore_client(settings.aws_region), url.removeprefix("agentcore://"))


def _jobs(settings: Settings, clock: Callable[[], float], *, on_event: Callable[[str], None]) -> Jobs | None:
    """Asynchronous jobs (docs/http-api.md#asynchronous-jobs): events to ``AGENTKIT_JOB_EVENTS_QUEUE_URL``, accepted
    jobs journaled under ``<state>/jobs/accepted``, results kept under ``<state>/jobs/outbox`` until sent, patches too large for a message in ``AGENTKIT_WORKSPACE_BUCKET``."""
    if not settings.job_events_queue_url:
        return None
    from runtime.jobs.journal import Journal
    from runtime.jobs.outbox import Outbox
    from runtime.jobs.service import Jobs
    from runtime.jobs.sink import S3Patches, SqsEvents

    return Jobs(
        events=SqsEvents(client=aws.sqs_client(settings.aws_region), queue_url=settings.job_events_queue_url),
        outbox=Outbox(settings.resolved_state_dir / "jobs" / "outbox"),
        journal=Journal(settings.resolved_state_dir / "jobs" / "accepted"),
        patches=S3Patches(client=aws.s3_client(settings.aws_region), bucket=settings.workspace_bucket)
        if settings.workspace_bucket
        else None,
        progress_s=settings.job_progress_s,
        clock=clock,
        on_event=on_event,
    )


def _release_session(settings: Settings, claude_session_id: str) -> None:
    """A session's CLI process is closed: its temp root, its cgroup and its tool disk's pid file go."""
    release_session_dirs(claude_session_id)
    resources.release_session_cgroup(claude_session_id)
    tool_disk.release(settings.resolved_state_dir, claude_session_id)


def _sandboxed_definition(
    settings: Settings, definition: AgentDefinitionSpec
) -> tuple[AgentDefinitionSpec, SandboxStatus]:
    """Probe the OS sandbox once and adapt the toolset to it (one log line says which mode the runtime got)."""
    from dataclasses import replace

    from runtime.agent.orphan_guard import bundled_cli
    from runtime.guard.confine import cli_confinement, sweep_stale_temp_roots
    from runtime.guard.profiles import probe_sandbox

    sweep_stale_temp_roots()  # left by a runtime that was killed before it could close its sessions

    definition = definition.with_profile(settings.agent_profile)
    status = probe_sandbox(settings.sandbox)
    confined = cli_confinement(
        settings.resolved_workspace,
        settings.cli_path or bundled_cli(),
        config_dir=settings.resolved_claude_config_dir,
    )
    limits = resources.decide(
        settings.session_memory_mb,
        settings.session_processes,
        wrapped=confined.confinement.wraps,
        prlimit=confined.confinement.prlimit is not None,
    )
    resources.set_decided(limits)
    if confined.problem and settings.sandbox == "off":
        # Explicitly unsandboxed: commands already run on the host without isolation; the drop was best effort.
        logger.warning("commands run as root without OS isolation: %s", confined.problem)
    elif confined.problem:
        logger.error("command tools switched off: %s", confined.problem)
        status = replace(status, blocked=confined.problem)
    elif confined.confinement.drops:
        logger.info(
            "runtime is root: the CLI runs as uid %s in its own IPC and UTS namespaces, one workspace per session",
            confined.confinement.run_as,
        )
    elif confined.confinement.own_namespaces:
        logger.info("the CLI runs in its own user, IPC and UTS namespaces, one workspace per session")
    memory = f"{limits.memory_mb} MiB" if limits.memory_mb else "no memory limit"
    if limits.enforcement == "none":
        logger.warning(
            "session limits: NOT enforced (the CLI is not started through the confinement wrapper): %s, %d "
            "processes configured",
            memory,
            limits.processes,
        )
    else:
        logger.info(
            "session limits: %s, %d processes per session, enforced by %s",
            memory,
            limits.processes,
            limits.enforcement,
        )
    if settings.sandbox == "off":
        logger.warning("sandbox: OFF (AGENTKIT_SANDBOX=off): agent commands run without OS isolation")
    elif status.available:
        logger.info("sandbox: on (bubblewrap); profile %s", definition.profile)
    else:
        logger.error("sandbox: unavailable, command tools switched off: %s", status.reason)
    return definition.for_sandbox(status), status


def build_store(
    settings: Settings,
    *,
    on_error: Callable[[BaseException], None] | None = None,
    on_event: Callable[[str], None] | None = None,
    on_usage: Callable[[str, str | None], None] | None = None,
) -> SpoolingSessionStore | None:
    """The session store named by ``AGENTKIT_SESSION_STORE``, wrapped so accepted writes are journaled first and
    delivered (``AGENTKIT_STORE_WRITE_BEHIND``, ``AGENTKIT_STORE_STRICT``, ``AGENTKIT_STORE_CALL_TIMEOUT``)."""
    url = settings.resolved_session_store
    if url is None:
        return None
    from runtime.session_store.factory import store_from_url
    from runtime.session_store.spool import SpoolingSessionStore

    if settings.store_strict and settings.store_write_behind:
        raise ConfigurationError(
            "AGENTKIT_STORE_STRICT and AGENTKIT_STORE_WRITE_BEHIND exclude each other: strict acknowledges a turn "
            "only once it is stored, write-behind before; set one of them"
        )
    client = aws.agentcore_client(settings.aws_region) if url.startswith("agentcore://") else None
    try:
        inner = store_from_url(
            url, state_dir=settings.resolved_state_dir, client=client, on_event=on_event, on_usage=on_usage
        )
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


def _workspaces(settings: Settings) -> Workspaces | None:
    """Repository work (docs/repository-work.md): each session sent a snapshot works in its own directory under
    ``<state>/workspaces``; the snapshot's history stays under ``<state>/snapshots``, out of the agent's reach."""
    if settings.workspace_max_bytes <= 0:
        return None
    state = settings.resolved_state_dir
    return Workspaces(
        trusted_root=state / "snapshots",
        tree_for=default_tree_for(state),
        # with a tool disk, the session's workspace is on it while its CLI runs (runtime.guard.tool_disk)
        view_for=tool_disk.view_for(state, settings.resolved_workspace, default_tree_for(state))
        if settings.tool_disk_mb > 0
        else None,
        limits=SnapshotLimits(
            max_archive_bytes=settings.workspace_max_bytes,
            max_unpacked_bytes=settings.workspace_max_unpacked_bytes,
            max_files=settings.workspace_max_files,
            max_file_bytes=settings.workspace_max_file_bytes,
        ),
        max_patch_bytes=settings.workspace_max_patch_bytes,
        withhold=is_sensitive_name,
        allow_protected=frozenset(settings.workspace_allow_protected),
        on_installed=lambda tree: _hand_over(tree, settings),
        s3=S3Snapshots(
            client=aws.s3_client(settings.aws_region),
            allowed=S3Location.parse(settings.workspace_s3_uri),
            max_bytes=settings.workspace_max_s3_bytes,
        )
        if settings.workspace_s3_uri
        else None,
    )


def _hand_over(tree: Path, settings: Settings) -> None:
    """A snapshot unpacked by the runtime becomes the confined CLI's user's, like the rest of the session's
    workspace (:func:`runtime.guard.confine.session_workspace`). Each entry is handed over: the directory itself
    may already be that user's, which makes ``give_to`` skip its walk."""
    from runtime.agent.orphan_guard import bundled_cli
    from runtime.guard.confine import decided_confinement, give_to

    confinement = decided_confinement(settings.resolved_workspace, settings.cli_path or bundled_cli())
    if not confinement.drops:
        return
    give_to(tree, confinement)
    for child in tree.iterdir():
        give_to(child, confinement, recursive=True)
