"""A session's Claude Code CLI process: connect it (resume or start), the flags it runs with, when to replace it;
each turn on it is a :class:`runtime.agent.turn.Turn`.

:class:`AgentTurnRunner` implements :class:`runtime.sessions.TurnRunner` with the real Claude Agent SDK; what it
connects is a :class:`runtime.agent.process.CliProcess`, the session's connection until it is dropped.

Imports ``claude_agent_sdk`` (about a second); the server imports this module lazily, after ``/ping`` is up.
Environment variables: none read here (:class:`runtime.config.settings.Settings` carries them).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    CLIConnectionError,
    HookMatcher,
    ProcessError,
    project_key_for_directory,
)
from claude_agent_sdk.types import (
    CanUseToolShadowedWarning,
    HookCallback,
    McpServerConfig,
    SessionKey,
    SessionStore,
    SessionStoreEntry,
)

from runtime.agent.budget_policy import BudgetPolicy
from runtime.agent.definition import AgentDefinitionSpec
from runtime.agent.npm_root import npm_root_shim
from runtime.agent.options import build_options
from runtime.agent.orphan_guard import bundled_cli
from runtime.agent.process import CliProcess
from runtime.agent.request_metadata import request_metadata
from runtime.agent.turn import Turn
from runtime.config.settings import Settings
from runtime.env import ENV_WORKSPACE_RETENTION_HOURS
from runtime.errors import (
    AgentProcessError,
    InvalidWorkspace,
    PausedWorkLost,
    SessionStoreError,
    TurnTimeout,
    WorkspaceError,
    WorkspaceExpired,
)
from runtime.guard import resources
from runtime.guard.confine import decided_confinement
from runtime.guard.gate import PermissionGate
from runtime.guard.limit_hook import make_limit_hook
from runtime.guard.policy import PermissionPolicy
from runtime.observe.costs import TurnCostTracker
from runtime.observe.observer import Observer
from runtime.observe.prices import DEFAULT_PRICES, PriceTable
from runtime.protocol import Emit
from runtime.sessions import WarmSession
from runtime.turn_request import TurnRequest

if TYPE_CHECKING:
    from runtime.approvals import Approvals
    from runtime.session_store.recall import MemoryRecall
    from runtime.workspace import Changes, Workspaces
    from runtime.workspace.paused import PausedWork
    from runtime.workspace.retention import Retention

logger = logging.getLogger(__name__)

#: The CLI process's --max-budget-usd is this many invocation budgets (or the session budget, if larger).
PROCESS_BUDGET_FACTOR = 10

# Pre-allowed tools skip can_use_tool by design: the PreToolUse policy hook gates them instead.
warnings.filterwarnings("ignore", category=CanUseToolShadowedWarning)


@dataclass
class AgentDeps:
    """Everything the agent needs from outside, injected (tests pass their own)."""

    settings: Settings
    definition: AgentDefinitionSpec
    policy: PermissionPolicy
    observer: Observer
    budgets: BudgetPolicy
    prices: PriceTable = DEFAULT_PRICES
    session_store: SessionStore | None = None
    #: Long-term memory recalled as each prompt is submitted (a ``UserPromptSubmit`` hook); None: off.
    memory: MemoryRecall | None = None
    extra_mcp_servers: Mapping[str, McpServerConfig] | None = None
    #: The agent directory's Python hooks (:mod:`runtime.agent.agent_dir`), after the kit's own.
    agent_hooks: Mapping[str, list[HookMatcher]] | None = None
    #: The agent directory's plugin directories (commands, skills, subagents; ``--plugin-dir``).
    agent_plugins: tuple[Path, ...] = ()
    #: Workspaces made from snapshots (repository work, :mod:`runtime.workspace`); None: snapshots refused.
    workspaces: Workspaces | None = None
    #: Removes the directories of sessions unused for ``AGENTKIT_WORKSPACE_RETENTION_HOURS``; None: kept forever.
    retention: Retention | None = None
    #: Tool calls that wait for a person's approval (runtime.approvals); None: none do.
    approvals: Approvals | None = None
    #: Builds the SDK client for a connect (tests pass a scripted one).
    client_factory: Callable[[ClaudeAgentOptions], ClaudeSDKClient] = ClaudeSDKClient
    #: Monotonic seconds, for latencies and time to first token (the one clock of the runtime, from wiring).
    clock: Callable[[], float] = time.monotonic


class AgentTurnRunner:
    """Implements :class:`runtime.sessions.TurnRunner` with the real Claude Agent SDK."""

    def __init__(self, deps: AgentDeps) -> None:
        self.deps = deps
        self.settings = deps.settings
        self.clock = deps.clock
        self.cwd = deps.settings.resolved_workspace
        self.project_key = project_key_for_directory(self.cwd)
        self.gate = PermissionGate(deps.policy, deps.observer, deps.approvals)
        # Only turns that can pause (approval rules) on snapshot workspaces leave paused work to keep.
        self.paused_work: PausedWork | None = None
        if deps.approvals is not None and deps.workspaces is not None and deps.session_store is not None:
            from runtime.workspace.paused import PausedWork

            self.paused_work = PausedWork(cast(Any, deps.session_store))
        # A sandboxed CLI asks npm for its global root as it starts; asked once here instead, when the services
        # are built (before a V2 snapshot), not on each new session's path (runtime.agent.npm_root).
        self.npm_root_dir = (
            npm_root_shim(self.settings.resolved_state_dir / "bin", os.environ.get("PATH", ""))
            if self.settings.sandbox == "required"
            else None
        )

    # -- the CLI's flags --------------------------------------------------------------------------------------

    def max_turns_for(self, request: TurnRequest) -> int | None:
        """``--max-turns`` for a request: it counts per turn, so it is the invocation's limit.

        Raises:
            InvalidRequest: the request asks for more than the configured ceilings (it may only lower them).
        """
        return self.deps.budgets.effective_limits(request.max_turns, request.max_budget_usd).max_turns

    def process_budget(self) -> float | None:
        """``--max-budget-usd``: the CLI counts it over the *process's* cumulative cost (measured with the real
        CLI), so on a warm client it cannot be the invocation budget. It is a backstop with room for many
        invocations; the invocation budget is enforced by the turn from the streamed usage."""
        budgets = self.deps.budgets
        if budgets.max_budget_usd is None:
            return None
        return round(
            max(budgets.max_budget_usd * PROCESS_BUDGET_FACTOR, budgets.session_budget_usd or 0.0), 6
        )

    def check_request(self, request: TurnRequest) -> None:
        """Validate a request before it is queued (so a bad one never disturbs the warm client)."""
        self.max_turns_for(request)
        snapshot = request.workspace_archive is not None or request.workspace_s3_uri is not None
        if snapshot and self.deps.workspaces is None:
            raise InvalidWorkspace("this runtime does not accept workspace snapshots")
        if request.workspace_s3_uri is not None and self.deps.workspaces is not None:
            self.deps.workspaces.check_s3_uri(request.workspace_s3_uri)

    # -- the session's workspace ------------------------------------------------------------------------------

    def cwd_for(self, session: WarmSession[CliProcess]) -> Path:
        """The session's working directory as its CLI sees it.

        A session sent a snapshot works in its own directory (``Workspaces.tree_for``). Where the CLI is confined
        (:mod:`runtime.guard.confine`), that directory is the session's workspace the wrapper binds over the
        configured path inside the CLI's mount namespace, so the CLI keeps the configured path as its cwd (and
        the confinement decided for it); elsewhere the CLI is started in the directory itself."""
        workspaces = self.deps.workspaces
        if workspaces is None or not workspaces.has_snapshot(session.claude_session_id):
            return self.cwd
        if self.binds_session_workspace():
            return self.cwd
        return workspaces.tree_for(session.claude_session_id)

    def binds_session_workspace(self) -> bool:
        """Whether the CLI runs confined, with the session's own workspace bound over the configured path."""
        return decided_confinement(self.cwd, self.settings.cli_path or bundled_cli()).wraps

    async def prepare(self, session: WarmSession[CliProcess], request: TurnRequest) -> None:
        """Unpack the request's workspace snapshot (inline, or read from S3) as the session's workspace before the
        turn, and record the session's use for the retention sweep (:mod:`runtime.workspace.retention`).

        Raises:
            InvalidWorkspace / WorkspaceTooLarge: the archive is missing, unsafe or too large (the workspace is
                unchanged).
            WorkspaceExpired: the session's snapshot was removed after it went unused, and this turn sends none.
            WorkspaceIncomplete: a process died while it installed the session's snapshot, and this turn sends none.
            PausedWorkLost: an answer on a microVM without the session's workspace, whose paused work cannot be
                restored (:meth:`restore_paused_work`).
            WorkspaceError: the snapshot could not be read or recorded.
        """
        workspaces, retention = self.deps.workspaces, self.deps.retention
        sid = session.claude_session_id
        if retention is not None:
            await retention.settled(sid)  # a removal under way ends before this turn looks at the directories
        unpacked = None
        # An answer to a paused call is sent with the paused job's snapshot; where the session's workspace is still
        # here it holds that snapshot and the paused turn's work, which installing the snapshot would wipe.
        keep = request.answers_approval and workspaces is not None and workspaces.has_snapshot(sid)
        if workspaces is not None and not keep and request.workspace_archive is not None:
            unpacked = await asyncio.to_thread(workspaces.install, sid, request.workspace_archive)
        elif workspaces is not None and not keep and request.workspace_s3_uri is not None:
            unpacked = await asyncio.to_thread(workspaces.install_from_s3, sid, request.workspace_s3_uri)
        elif workspaces is not None and workspaces.interrupted_install(sid):
            raise workspaces.incomplete()
        elif not keep and request.answers_approval and self.paused_work is not None:
            # restorable raises PausedWorkLost where sending the snapshot would not bring the paused work back
            if await self.paused_work.restorable(sid, snapshot=None) is not None:
                raise WorkspaceExpired(
                    "this session paused with work in a workspace this microVM does not have (the one that paused "
                    "is gone); send the snapshot the session worked on with the answer to restore it"
                )
        elif retention is not None and retention.expired(sid):
            raise WorkspaceExpired(
                f"this session's workspace snapshot was removed after {retention.retention_s / 3600:g} h unused "
                f"({ENV_WORKSPACE_RETENTION_HOURS}); send the snapshot again with this turn (agentkit invoke "
                "--workspace DIR) to go on: the conversation is kept"
            )
        if retention is not None:
            await asyncio.to_thread(retention.touch, sid)
        if unpacked is not None:
            logger.info(
                "session %s: workspace snapshot unpacked (%d entries, %d bytes)",
                session.runtime_session_id,
                unpacked.files,
                unpacked.bytes,
            )
        if unpacked is not None and request.answers_approval and self.paused_work is not None:
            assert workspaces is not None
            await self.restore_paused_work(session, workspaces, self.paused_work)
        answered_here = request.answers_approval and workspaces is not None and workspaces.has_snapshot(sid)
        if answered_here and self.paused_work is not None:
            await self.spend_paused_work(session, self.paused_work)

    async def spend_paused_work(self, session: WarmSession[CliProcess], paused: PausedWork) -> None:
        """Mark the kept work of the pause being answered as used: should the session pause again and its work
        then fail to be stored, an answer on another microVM is refused instead of restoring this older pause's
        work in its place. A failure is logged: this answer goes on either way."""
        try:
            await paused.spend(session.claude_session_id)
        except Exception:
            logger.exception(
                "session %s: could not mark the paused turn's work as used", session.runtime_session_id
            )

    async def restore_paused_work(
        self, session: WarmSession[CliProcess], workspaces: Workspaces, paused: PausedWork
    ) -> None:
        """Apply the work kept at the session's pause to the snapshot just installed for an answer on a microVM
        that did not have the session's workspace (:mod:`runtime.workspace.paused`).

        Raises: PausedWorkLost: that work is unknown or cannot be applied. The installed snapshot is then forgotten,
        so a repeated answer here is refused the same way instead of going on in the bare snapshot as if it were the
        paused workspace.
        """
        from runtime.workspace.paused import paused_work_lost

        sid = session.claude_session_id
        try:
            patch = await paused.restorable(sid, snapshot=workspaces.snapshot_tree(sid))
            if patch is None:
                raise paused_work_lost(
                    "nothing of it is stored with the session (the session store failed at the pause, or the "
                    "session paused under a runtime version that did not keep it)"
                )
            if patch:
                try:
                    await asyncio.to_thread(workspaces.apply, sid, patch)
                except WorkspaceError as exc:
                    raise paused_work_lost(
                        "its patch does not apply to the snapshot sent with the answer"
                    ) from exc
        except PausedWorkLost as exc:
            logger.warning("session %s: %s", session.runtime_session_id, exc.message)
            await asyncio.to_thread(workspaces.forget, sid)
            raise
        if patch:
            logger.info(
                "session %s: the paused turn's work restored on this microVM (%d bytes of patch)",
                session.runtime_session_id,
                len(patch.encode()),
            )

    async def keep_paused_work(self, session: WarmSession[CliProcess], timeout_s: float) -> None:
        """Keep the workspace's change of a turn paused for approval with the session
        (:mod:`runtime.workspace.paused`). A failure is logged: the answer still works on this microVM, and one
        taken elsewhere is refused (``410 paused_work_lost``) instead of going on without this turn's work."""
        workspaces, paused = self.deps.workspaces, self.paused_work
        if workspaces is None or paused is None or not workspaces.has_snapshot(session.claude_session_id):
            return
        patch: str | None = None  # unknown: an earlier pause's work must not be restored in its place
        try:
            patch = (await asyncio.to_thread(workspaces.changes, session.claude_session_id, timeout_s)).patch
        except Exception:
            logger.exception("session %s: no patch of the paused turn's work", session.runtime_session_id)
        try:
            snapshot = workspaces.snapshot_tree(session.claude_session_id)
            await paused.save(session.claude_session_id, patch, snapshot=snapshot)
        except Exception:
            logger.exception(
                "session %s: could not keep the paused turn's work with the session; an answer taken on another "
                "microVM will not have it",
                session.runtime_session_id,
            )

    async def workspace_changes(
        self, session: WarmSession[CliProcess], timeout_s: float | None = None
    ) -> Changes | None:
        """The session's change against its snapshot (None when it has none), within ``timeout_s``.

        Raises:
            PatchTooLarge: over ``AGENTKIT_WORKSPACE_MAX_PATCH_BYTES``. WorkspaceError: git failed.
        """
        workspaces = self.deps.workspaces
        if workspaces is None or not workspaces.has_snapshot(session.claude_session_id):
            return None
        approvals = self.deps.approvals
        # Changes under a ``paths`` approval rule that no approved call made stay out of the patch (a command the
        # rule's parsing could not see wrote them).
        hold = (
            await approvals.path_hold(session.claude_session_id, workspace=str(self.cwd_for(session)))
            if approvals is not None
            else None
        )
        return await asyncio.to_thread(workspaces.changes, session.claude_session_id, timeout_s, hold)

    def wants_reconnect(self, session: WarmSession[CliProcess], request: TurnRequest) -> bool:
        process = session.client
        if process is None:
            return False
        if process.cwd is not None and process.cwd != self.cwd_for(session):
            return True  # the session moved to its snapshot workspace: the CLI's cwd must follow
        limits = self.deps.budgets.effective_limits(request.max_turns, request.max_budget_usd)
        if process.max_turns != limits.max_turns:  # a lower max_turns needs a CLI started with it
            return True
        if process.max_budget_usd != self.process_budget():
            return True
        # A process close to its cumulative budget is replaced (resuming the session) so that this
        # invocation still has its full budget.
        invocation, cap = limits.max_budget_usd, process.max_budget_usd
        return cap is not None and invocation is not None and process.sdk_cost_baseline + invocation > cap

    # -- connect ----------------------------------------------------------------------------------------------

    async def connect(self, session: WarmSession[CliProcess], request: TurnRequest) -> CliProcess:
        """Start the session's CLI process: ``resume`` when the store (or the local transcript) holds the
        session, else ``session_id``; its first ``load()`` is answered from the resume probe.

        Raises:
            SessionStoreError: the store did not answer the resume probe (nothing was lost; retry).
            TurnTimeout: the CLI did not start within the turn timeout.
            AgentProcessError: the CLI could not be started.
        """
        started = self.clock()
        # The first turn reads the session's stored spend right after this connect: start the read now, so its
        # store round trip overlaps the store load and the CLI's start-up instead of following them.
        session.account.prefetch()
        store = self.deps.session_store
        sid = session.claude_session_id
        cwd = self.cwd_for(session)
        # The SDK files a transcript under its cwd's project key: a session's own workspace has its own key.
        project_key = self.project_key if cwd == self.cwd else project_key_for_directory(cwd)
        key: SessionKey = {"project_key": project_key, "session_id": sid}
        entries = None
        if store is not None:
            with self.deps.observer.session_span("load", claude_session_id=sid):
                try:
                    entries = await store.load(key)
                    if not entries and cwd != self.cwd:
                        entries = await self._carry_over(store, key)
                except Exception as exc:
                    self.deps.observer.store_error("load", exc)
                    raise SessionStoreError(
                        f"the session store could not load session {session.runtime_session_id}: {exc}. "
                        "Retry shortly; nothing was lost."
                    ) from exc
        local = self.settings.resolved_claude_config_dir / "projects" / project_key / f"{sid}.jsonl"
        resume = bool(entries) or local.exists()
        max_turns, process_budget = self.max_turns_for(request), self.process_budget()
        # Every store call the SDK makes while it connects goes through this wrapper, so a failure of one (the
        # resume reads the session and its subagents' index, list_subkeys) is known for what it is below.
        prefetched = PrefetchedStore(store, key, entries or None) if store is not None else None
        gate = self.gate
        if cwd != self.cwd:  # file tools and paths are confined to the session's own workspace
            gate = PermissionGate(
                self.deps.policy.for_workspace(cwd), self.deps.observer, self.deps.approvals
            )
        options = build_options(
            settings=self.settings,
            definition=self.deps.definition,
            cwd=cwd,
            claude_session_id=sid,
            hooks=self._hooks_for(session),
            # The gate and the recall hook read plain dicts of the hook input (the SDK's TypedDicts at runtime).
            pre_tool_gate=cast(HookCallback, gate.pre_tool_use),
            can_use_tool=gate.can_use_tool_for(sid),
            max_turns=max_turns,
            max_budget_usd=process_budget,
            resume=resume,
            store=prefetched,
            extra_mcp_servers=self.deps.extra_mcp_servers,
            plugins=self.deps.agent_plugins,
            request_metadata=request_metadata(
                session_id=session.runtime_session_id,
                actor=session.actor_id,
                agent=self.settings.agent_name,
                stage=self.settings.stage,
            ),
            npm_root_dir=self.npm_root_dir,
        )
        client = self.deps.client_factory(options)
        try:
            await asyncio.wait_for(client.connect(), timeout=self.settings.turn_timeout_s)
        except TimeoutError:
            await discard_client(client)
            raise TurnTimeout(
                f"the Claude Code CLI did not start within {self.settings.turn_timeout_s:.0f} s; retry the invocation"
            ) from None
        except (CLIConnectionError, ProcessError, OSError) as exc:
            await discard_client(client)
            raise AgentProcessError(
                f"could not start the Claude Code CLI ({exc}). Check AGENTKIT_CLI_PATH and the runtime logs."
            ) from exc
        except Exception as exc:
            await discard_client(client)
            failed = prefetched.failed if prefetched is not None else None
            if failed is None:
                raise
            # The SDK wraps a store error during the resume in a RuntimeError; it is the store's, and retryable.
            self.deps.observer.store_error("load", failed)
            what = (
                "did not answer in time"
                if isinstance(failed, asyncio.CancelledError)
                else f"failed: {failed}"
            )
            raise SessionStoreError(
                f"the session store {what} while session {session.runtime_session_id} was resumed. "
                "Retry shortly; nothing was lost.",
                aws_code=getattr(failed, "aws_code", "") or _aws_code(failed),
                retryable=True,
            ) from exc
        except BaseException:  # cancelled (shutdown): never leave a spawned CLI behind
            await discard_client(client)
            raise
        if resume:
            self.deps.observer.session_resumed(session.runtime_session_id)
        logger.info(
            "connected session %s (claude %s, resume=%s) in %.0f ms",
            session.runtime_session_id,
            sid,
            resume,
            (self.clock() - started) * 1000,
        )
        # A new CLI process counts usage and cost from zero.
        return CliProcess(
            client=client,
            cost_tracker=TurnCostTracker(default_model=self.settings.model, table=self.deps.prices),
            max_turns=max_turns,
            max_budget_usd=process_budget,
            resumed=resume,
            cwd=cwd,
        )

    async def _carry_over(self, store: SessionStore, key: SessionKey) -> list[SessionStoreEntry] | None:
        """A session that started in the shared workspace and was then sent a snapshot keeps its conversation:
        its transcript is copied once to the key of its own workspace."""
        shared: SessionKey = {"project_key": self.project_key, "session_id": key["session_id"]}
        entries = await store.load(shared)
        if entries:
            await store.append(key, entries)
        return entries

    def _hooks_for(self, session: WarmSession[CliProcess]) -> dict[str, list[HookMatcher]]:
        """The observer's tool hooks and, for a known caller, long-term memory recall on each prompt."""
        hooks = self.deps.observer.tool_hooks()
        group = resources.session_cgroup(session.claude_session_id)
        limits = resources.decided()
        if group is not None and limits is not None:
            # after the telemetry hooks: a limit hit is said to the model with the tool's own result
            observer, runtime_session_id = self.deps.observer, session.runtime_session_id

            def on_hit(limit: str, times: int, limits: resources.ResourceLimits) -> None:
                value = limits.memory_mb if limit == "memory" else limits.processes
                observer.session_limit_hit(
                    runtime_session_id, limit, times, enforcement=limits.enforcement, limit_value=value
                )

            after = HookMatcher(
                matcher=None, hooks=[cast(HookCallback, make_limit_hook(group, limits, on_hit))]
            )
            for event in ("PostToolUse", "PostToolUseFailure"):
                hooks.setdefault(event, []).append(after)
        memory = self.deps.memory
        if memory is not None and session.actor_id is not None:
            from runtime.session_store.recall import make_recall_hook

            recall = make_recall_hook(memory, actor_id=session.actor_id, session_id=session.claude_session_id)
            hooks["UserPromptSubmit"] = [HookMatcher(matcher=None, hooks=[cast(HookCallback, recall)])]
        for event, matchers in (self.deps.agent_hooks or {}).items():
            hooks.setdefault(event, []).extend(matchers)
        return hooks

    # -- one turn ---------------------------------------------------------------------------------------------

    async def run_turn(
        self, session: WarmSession[CliProcess], process: CliProcess, request: TurnRequest, emit: Emit
    ) -> Awaitable[None]:
        """Run one turn (:class:`runtime.agent.turn.Turn`), emitting its events; returns its persist phase, which
        the session runs after the reply."""
        turn = Turn(
            session=session,
            process=process,
            request=request,
            emit=emit,
            workspace_changes=self.workspace_changes,
            keep_paused_work=self.keep_paused_work,
            settings=self.settings,
            budgets=self.deps.budgets,
            observer=self.deps.observer,
            prices=self.deps.prices,
            clock=self.clock,
            store=self.deps.session_store,
            approvals=self.deps.approvals,
        )
        return await turn.run()


class PrefetchedStore:
    """Wraps the session store so the resume probe's ``load()`` is not repeated by the SDK, and remembers the last
    store call that failed (:attr:`failed`).

    Other methods are the inner store's own (``__getattr__``), so the SDK's probe for optional methods sees
    exactly what the inner store implements.
    """

    def __init__(self, inner: SessionStore, key: SessionKey, entries: list[SessionStoreEntry] | None) -> None:
        self._inner, self._key = inner, key
        self._entries: list[SessionStoreEntry] | None = entries
        #: The exception of the last store call that failed (the SDK reports it wrapped, or not at all).
        self.failed: BaseException | None = None

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        await self._watched(self._inner.append(key, entries))

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        if self._entries is not None and key.get("subpath") is None and key == self._key:
            entries, self._entries = self._entries, None
            return entries
        return cast("list[SessionStoreEntry] | None", await self._watched(self._inner.load(key)))

    async def _watched(self, call: Awaitable[Any]) -> Any:
        try:
            return await call
        except BaseException as exc:  # a call the SDK's own timeout cut off ends cancelled
            self.failed = exc
            raise

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        async def watched(*args: Any, **kwargs: Any) -> Any:
            return await self._watched(attr(*args, **kwargs))

        return watched


def _aws_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return code if isinstance(code, str) else type(exc).__name__


async def discard_client(client: ClaudeSDKClient) -> None:
    """Disconnect a client that failed to connect (stops its CLI process); errors are only logged."""
    try:
        await asyncio.wait_for(client.disconnect(), timeout=15)
    except BaseException as exc:  # the caller re-raises what brought it here
        logger.debug("ignored error while discarding a client: %r", exc)
