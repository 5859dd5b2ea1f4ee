"""Approval rules, input-hash binding and the approvals service (runtime.approvals), with an in-memory state store and
a hand-driven clock."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runtime.agent.definition import AgentDefinitionSpec
from runtime.approvals import Answer, ApprovalRecord, ApprovalRules, Approvals, TurnBinding, input_hash
from runtime.approvals.rules import glob_match, held_paths, named_paths, rules_from
from runtime.errors import (
    ApprovalExpired,
    ApprovalNotFound,
    ApprovalNotPending,
    ApprovalWithdrawn,
    ConfigurationError,
)

SID = "claude-session-1"
WS = "/work/repo"


class StateStore:
    def __init__(self) -> None:
        self.states: dict[str, dict[str, Any]] = {}
        self.fail = False

    async def get_state(self, session_id: str) -> dict[str, Any] | None:
        return self.states.get(session_id)

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None:
        if self.fail:
            raise RuntimeError("store down")
        self.states[session_id] = state


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, float | None]] = []

    def approval(self, event: str, record: ApprovalRecord, *, wait_s: float | None = None) -> None:
        self.events.append((event, record.id, wait_s))


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- rules ----------------------------------------------------------------------------------------------------------


def test_no_rules_match_nothing() -> None:
    rules = ApprovalRules()
    assert not rules.enabled
    assert rules.match("Bash", {"command": "git push"}, cost_usd=1e9) is None


@pytest.mark.parametrize(
    ("tool", "expected"),
    [("mcp__gateway__refund", "mcp__gateway__*"), ("WebFetch", "WebFetch"), ("mcp__kit__list", None)],
)
def test_tool_rules_by_name_and_prefix(tool: str, expected: str | None) -> None:
    hit = ApprovalRules(tools=("WebFetch", "mcp__gateway__*")).match(tool, {})
    assert (hit.rule if hit else None) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status", "git"),
        ("ls && /usr/bin/git push origin main", "git"),
        ("echo $(git rev-parse HEAD)", "git"),
        ("ls -la", None),
        ("echo git", None),
    ],
)
def test_bash_programs_found_by_the_shell_parser(command: str, expected: str | None) -> None:
    hit = ApprovalRules(bash_programs=("git",)).match("Bash", {"command": command})
    assert (hit.rule if hit else None) == expected


def test_bash_patterns_match_each_simple_command() -> None:
    rules = ApprovalRules(bash_patterns=("npm publish*",))
    hit = rules.match("Bash", {"command": "npm test; npm publish --tag next"})
    assert hit is not None and hit.matched == "npm publish --tag next"
    assert rules.match("Bash", {"command": "npm test"}) is None


def test_unparsable_bash_waits_only_when_programs_are_named() -> None:
    weird = {"command": "cat <<EOF\nx\nEOF"}
    assert ApprovalRules(bash_programs=("git",)).match("Bash", weird) is not None
    assert ApprovalRules(bash_patterns=("git*",)).match("Bash", weird) is None


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        (".github/**", ".github/workflows/ci.yml", True),
        (".github/**", "src/.github/x", False),
        ("**/*.tf", "infra/main/net.tf", True),
        ("**/*.tf", "net.tf", True),
        ("infra/*", "infra/a/b", False),
        (".gitlab-ci.yml", ".gitlab-ci.yml", True),
        (".gitlab-ci.yml", "x/.gitlab-ci.yml", False),
    ],
)
def test_path_globs(glob: str, path: str, matches: bool) -> None:
    assert glob_match(glob, path) is matches


def test_path_rules_apply_to_file_tools_relative_to_the_workspace() -> None:
    rules = ApprovalRules(paths=(".github/**",))
    hit = rules.match("Write", {"file_path": f"{WS}/.github/workflows/ci.yml"}, workspace=WS)
    assert hit is not None and hit.describe() == "paths: .github/** (.github/workflows/ci.yml)"
    assert rules.match("Edit", {"file_path": ".github/../.github/x"}, workspace=WS) is not None
    assert rules.match("Write", {"file_path": f"{WS}/src/app.py"}, workspace=WS) is None
    assert rules.match("Read", {"file_path": f"{WS}/.github/workflows/ci.yml"}, workspace=WS) is None
    assert rules.match("NotebookEdit", {"notebook_path": ".github/n.ipynb"}, workspace=WS) is not None


@pytest.mark.parametrize(
    ("command", "matched"),
    [
        ("sed -i s/make/make\\ lint/ .github/workflows/ci.yml", ".github/workflows/ci.yml"),
        ("cp ci.yml .github/workflows/ci.yml", ".github/workflows/ci.yml"),
        ("tee .github/workflows/ci.yml < new.yml", ".github/workflows/ci.yml"),
        ("echo x | tee -a ./.github/workflows/../workflows/ci.yml", ".github/workflows/ci.yml"),
        (f"cp ci.yml {WS}/.github/workflows/ci.yml", ".github/workflows/ci.yml"),
        ("ls && mv new.yml src/../.github/x.yml", ".github/x.yml"),
        ("cp -r workflows .github", ".github"),  # a directory holding what the rule names
        ("rm -rf .github/", ".github"),
        ("cp new.yml .github/workflows/*.yml", ".github/workflows"),  # a glob: its literal directory
        ("dd if=new.yml of=.github/ci.yml", ".github/ci.yml"),  # an option's value
        ("install -D -t.github/workflows new.yml", ".github/workflows"),
        ("git show HEAD:.github/workflows/ci.yml", ".github/workflows/ci.yml"),
        ("echo $(cp a .github/b)", ".github/b"),  # inside a substitution
        ("cp a infra/main.tf", "infra/main.tf"),
    ],
)
def test_path_rules_see_the_paths_a_bash_command_names(command: str, matched: str) -> None:
    rules = ApprovalRules(paths=(".github/**", "infra/**"))
    hit = rules.match("Bash", {"command": command}, workspace=WS)
    assert hit is not None and hit.kind == "paths" and hit.matched == matched, hit


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat src/app.py > /dev/null",
        "ls .",  # the whole workspace: every rule would match
        "cp a /tmp/.github/x",  # outside the workspace
        "cp a ../.github/x",
        "cp a src/.github/x",  # .github/** is anchored at the workspace's top
        "grep -r github src",
        "python -c 'print(1)'",
    ],
)
def test_path_rules_let_other_bash_commands_run(command: str) -> None:
    rules = ApprovalRules(paths=(".github/**", "infra/**"))
    assert rules.match("Bash", {"command": command}, workspace=WS) is None


def test_an_unparsable_command_waits_under_a_path_rule() -> None:
    hit = ApprovalRules(paths=(".github/**",)).match("Bash", {"command": "cat <<EOF\nx\nEOF"}, workspace=WS)
    assert hit is not None and hit.describe() == "paths: unparsable command"


def test_the_backstop_withholds_changes_under_a_path_rule_that_no_approved_call_named() -> None:
    rules = ApprovalRules(paths=(".github/**", "infra/**"))
    approved = named_paths("Edit", {"file_path": f"{WS}/.github/workflows/ci.yml"}, WS)
    approved += named_paths("Bash", {"command": "cp -r modules infra/net"}, WS)
    changed = [
        ".github/workflows/ci.yml",
        ".github/workflows/deploy.yml",
        "infra/net/a.tf",
        "infra/b.tf",
        "src/x",
    ]
    assert held_paths(rules, changed, approved) == {
        ".github/workflows/deploy.yml": ".github/**",
        "infra/b.tf": "infra/**",
    }


def test_path_hold_counts_only_calls_that_ran_after_their_approval() -> None:
    approvals, _, _ = make(ApprovalRules(paths=(".github/**",)))
    edit = {"file_path": ".github/a.yml", "old_string": "x", "new_string": "y"}
    waiting = run(approvals.check("Edit", edit, claude_session_id=SID))
    other = run(approvals.check("Bash", {"command": "cp x .github/b.yml"}, claude_session_id=SID))
    run(approvals.answer(SID, Answer(other.id, approved=True)))  # approved, never made: not used
    hold = run(approvals.path_hold(SID, workspace=WS))
    assert hold is not None and hold(".github/a.yml") == "needs approval: paths .github/**"
    assert hold(".github/b.yml") is not None and hold("src/a.py") is None
    run(approvals.answer(SID, Answer(waiting.id, approved=True)))
    assert run(approvals.check("Edit", edit, claude_session_id=SID)) is None  # ran: used
    hold = run(approvals.path_hold(SID, workspace=WS))
    assert hold is not None and hold(".github/a.yml") is None and hold(".github/b.yml") is not None
    assert run(make()[0].path_hold(SID, workspace=WS)) is None  # no paths rule: no backstop


def test_network_rule_names_hosts_outside_the_allowlist() -> None:
    rules = ApprovalRules(network=True)
    allowed = ("pypi.internal", "git.example.com:8443")
    hit = rules.match("WebFetch", {"url": "https://evil.example/x"}, allowed_hosts=allowed)
    assert hit is not None and hit.matched == "evil.example"
    assert rules.match("WebFetch", {"url": "https://PyPI.internal/simple"}, allowed_hosts=allowed) is None
    assert (
        rules.match("Bash", {"command": "curl https://git.example.com:8443/x"}, allowed_hosts=allowed) is None
    )
    bash = rules.match("Bash", {"command": "ls; curl -s http://10.0.0.1/meta"}, allowed_hosts=allowed)
    assert bash is not None and bash.matched == "10.0.0.1"
    assert rules.match("Bash", {"command": "ls"}, allowed_hosts=allowed) is None


def test_cost_rule_counts_the_session_spend() -> None:
    rules = ApprovalRules(cost_above_usd=2.0)
    assert rules.match("Read", {}, cost_usd=2.0) is None
    hit = rules.match("Read", {}, cost_usd=2.5)
    assert hit is not None and hit.describe() == "cost_above_usd: 2 (2.5000)"


@pytest.mark.parametrize(
    "bad",
    [
        {"tools": ["mcp__*__x"]},
        {"paths": ["/etc/**"]},
        {"paths": ["../x"]},
        {"expiry_hours": 0},
        {"tools": [""]},
    ],
)
def test_bad_rules_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="AGENTKIT_APPROVALS"):
        rules_from(__import__("json").dumps(bad), ApprovalRules())


def test_env_rules_replace_the_definitions() -> None:
    declared = AgentDefinitionSpec.model_validate({"approvals": {"tools": ["WebFetch"]}}).approvals
    assert rules_from(None, declared) is declared
    assert rules_from('{"bash_programs": ["git"]}', declared) == ApprovalRules(bash_programs=("git",))
    assert AgentDefinitionSpec().approvals == ApprovalRules()


# -- hash binding ---------------------------------------------------------------------------------------------------


def test_input_hash_binds_session_tool_and_exact_input() -> None:
    base = input_hash(SID, "Bash", {"command": "git push", "timeout": 5})
    assert base == input_hash(SID, "Bash", {"timeout": 5, "command": "git push"})  # key order does not matter
    assert base != input_hash(SID, "Bash", {"command": "git push ", "timeout": 5})
    assert base != input_hash("claude-session-2", "Bash", {"command": "git push", "timeout": 5})
    assert base != input_hash(SID, "mcp__x__Bash", {"command": "git push", "timeout": 5})


# -- the service ----------------------------------------------------------------------------------------------------


def make(
    rules: ApprovalRules | None = None, store: StateStore | None = None
) -> tuple[Approvals, Sink, Clock]:
    sink, clock = Sink(), Clock()
    approvals = Approvals(
        rules or ApprovalRules(bash_programs=("git",), expiry_hours=1),
        store=store if store is not None else StateStore(),
        sink=sink,
        clock=clock,
        workspace=WS,
    )
    return approvals, sink, clock


PUSH = {"command": "git push"}


def test_a_matching_call_is_stored_and_pauses_the_bound_turn() -> None:
    store = StateStore()
    approvals, sink, clock = make(store=store)
    binding = TurnBinding(runtime_session_id="rt-1", cost_so_far=lambda: 0.25, job_id="job-7")

    async def go() -> ApprovalRecord | None:
        with approvals.bind(SID, binding):
            return await approvals.check("Bash", PUSH, claude_session_id=SID, tool_use_id="tu1")

    record: ApprovalRecord = run(go())
    assert binding.paused is record
    assert (record.session_id, record.job_id, record.cost_usd) == ("rt-1", "job-7", 0.25)
    assert record.expires_at == clock.now + 3600 and record.rule == "bash_programs: git"
    (stored,) = store.states[SID + ".approvals"]["approvals"]
    assert stored["id"] == record.id and stored["status"] == "pending"
    assert sink.events == [("requested", record.id, None)]
    assert run(approvals.check("Bash", {"command": "ls"}, claude_session_id=SID)) is None


def test_the_same_call_again_does_not_ask_twice() -> None:
    approvals, sink, _ = make()
    first = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    second = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    assert first is not None and second is not None and first.id == second.id
    assert [e for e, _, _ in sink.events] == ["requested"]


def test_an_approval_lets_the_exact_call_through_once() -> None:
    approvals, sink, clock = make()
    record = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    clock.now += 90
    answered, prompt = run(approvals.answer(SID, Answer(record.id, approved=True, by="ada")))
    assert answered.status == "approved" and "git push" in prompt and "by ada" in prompt
    assert sink.events[-1] == ("approved", record.id, 90)
    # another input is not covered: it waits for its own approval
    other = run(approvals.check("Bash", {"command": "git push --force"}, claude_session_id=SID))
    assert other is not None and other.id != record.id
    # the exact call runs once, then waits again
    assert run(approvals.check("Bash", PUSH, claude_session_id=SID, tool_use_id="tu9")) is None
    assert record.status == "used" and record.history[-1]["tool_use_id"] == "tu9"
    again = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    assert again is not None and again.id not in (record.id, other.id)
    with pytest.raises(ApprovalNotPending):
        run(approvals.answer(SID, Answer(record.id, approved=True)))


def test_an_approval_is_bound_to_its_session() -> None:
    approvals, _, _ = make()
    record = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    with pytest.raises(ApprovalNotFound):
        run(approvals.answer("claude-session-2", Answer(record.id, approved=True)))


def test_a_denial_is_final_and_tells_the_reason() -> None:
    approvals, sink, _ = make()
    record = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    answered, prompt = run(approvals.answer(SID, Answer(record.id, approved=False, by="bob", reason="no")))
    assert (
        answered.status == "denied"
        and "Reason given: no" in prompt
        and "Do not make this call again" in prompt
    )
    assert sink.events[-1][0] == "denied"
    with pytest.raises(ApprovalNotPending):
        run(approvals.answer(SID, Answer(record.id, approved=True)))


def test_expiry_refuses_the_answer_and_is_recorded_once() -> None:
    approvals, sink, clock = make()
    record = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    clock.now = record.expires_at
    with pytest.raises(ApprovalExpired):
        run(approvals.answer(SID, Answer(record.id, approved=True)))
    with pytest.raises(ApprovalExpired):
        run(approvals.answer(SID, Answer(record.id, approved=True)))
    assert [e for e, _, _ in sink.events] == ["requested", "expired"]
    assert run(approvals.pending(SID)) == []


def test_an_unused_approval_expires_too() -> None:
    approvals, _, clock = make()
    record = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    run(approvals.answer(SID, Answer(record.id, approved=True)))
    clock.now = record.expires_at + 1
    fresh = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    assert record.status == "expired" and fresh is not None and fresh.id != record.id


def test_a_new_process_reads_the_book_from_the_store() -> None:
    store = StateStore()
    first, _, _ = make(store=store)
    record = run(first.check("Bash", PUSH, claude_session_id=SID))
    second, _, _ = make(store=store)
    assert [c["id"] for c in run(second.pending(SID))] == [record.id]
    run(second.answer(SID, Answer(record.id, approved=True)))
    third, _, _ = make(store=store)
    assert run(third.check("Bash", PUSH, claude_session_id=SID)) is None  # approved in the store: runs
    fourth, _, _ = make(store=store)
    assert run(fourth.check("Bash", PUSH, claude_session_id=SID)) is not None  # used in the store: asks again


def test_an_answer_that_cannot_be_stored_is_not_given() -> None:
    store = StateStore()
    approvals, _, _ = make(store=store)
    record = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    store.fail = True
    with pytest.raises(RuntimeError):
        run(approvals.answer(SID, Answer(record.id, approved=True)))
    assert record.status == "pending"


def test_undo_puts_an_unused_answer_back() -> None:
    approvals, _, _ = make()
    record = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    run(approvals.answer(SID, Answer(record.id, approved=True)))
    run(approvals.undo(SID, record.id))
    assert record.status == "pending"
    run(approvals.answer(SID, Answer(record.id, approved=True)))
    assert run(approvals.check("Bash", PUSH, claude_session_id=SID)) is None
    run(approvals.undo(SID, record.id))  # used: stays used
    assert record.status == "used"


class Index:
    """The pending index (runtime.approvals.index) in memory."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    async def add(self, record: ApprovalRecord) -> str | None:
        self.entries[f"ev-{record.id}"] = record.id
        return f"ev-{record.id}"

    async def remove(self, entry_id: str) -> None:
        del self.entries[entry_id]


def test_a_withdrawn_request_can_no_longer_be_answered_and_leaves_the_index() -> None:
    store, index, sink, clock = StateStore(), Index(), Sink(), Clock()
    approvals = Approvals(
        ApprovalRules(bash_programs=("git",)), store=store, sink=sink, clock=clock, index=index
    )
    record = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    assert list(index.entries.values()) == [record.id]
    clock.now += 30
    withdrawn = run(approvals.withdraw(SID, record.id, by="github:dave", reason="the job was stopped"))
    assert withdrawn is record and record.status == "withdrawn"
    assert (record.decided_at, record.decided_by, record.reason) == (
        clock.now,
        "github:dave",
        "the job was stopped",
    )
    assert index.entries == {} and run(approvals.pending(SID)) == []
    (stored,) = store.states[SID + ".approvals"]["approvals"]
    assert stored["status"] == "withdrawn" and stored["history"][-1]["by"] == "github:dave"
    assert sink.events[-1] == ("withdrawn", record.id, None)
    for approved in (True, False):
        with pytest.raises(ApprovalWithdrawn, match="withdrawn by github:dave"):
            run(approvals.answer(SID, Answer(record.id, approved=approved)))
    # a new process reads it withdrawn too; withdrawing again answers the same and records nothing more
    again, sink2, clock2 = make(store=store)
    clock2.now = clock.now + 60
    same = run(again.withdraw(SID, record.id, by="someone-else", reason=None))
    assert (same.status, same.decided_by, same.decided_at) == ("withdrawn", "github:dave", clock.now)
    assert sink2.events == []
    with pytest.raises(ApprovalWithdrawn):
        run(again.answer(SID, Answer(record.id, approved=True)))
    # the same call asks again (a new request), it is not let through
    fresh = run(again.check("Bash", PUSH, claude_session_id=SID))
    assert fresh is not None and fresh.id != record.id


def test_withdrawing_what_cannot_be_withdrawn_changes_nothing() -> None:
    store = StateStore()
    approvals, sink, clock = make(store=store)
    with pytest.raises(ApprovalNotFound):
        run(approvals.withdraw(SID, "apv-" + "0" * 20, by=None, reason=None))
    answered = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    run(approvals.answer(SID, Answer(answered.id, approved=True)))
    with pytest.raises(ApprovalNotPending):
        run(approvals.withdraw(SID, answered.id, by=None, reason=None))
    assert answered.status == "approved"
    waiting = run(approvals.check("Bash", {"command": "git fetch"}, claude_session_id=SID))
    store.fail = True  # not stored: not withdrawn
    with pytest.raises(RuntimeError):
        run(approvals.withdraw(SID, waiting.id, by="x", reason=None))
    assert waiting.status == "pending" and waiting.decided_by is None
    store.fail = False
    clock.now = waiting.expires_at
    with pytest.raises(ApprovalExpired):
        run(approvals.withdraw(SID, waiting.id, by=None, reason=None))
    assert waiting.status == "expired"
    assert "withdrawn" not in [e for e, _, _ in sink.events]


def test_without_rules_nothing_is_read_or_stored() -> None:
    class Untouchable(StateStore):
        async def get_state(self, session_id: str) -> dict[str, Any] | None:
            raise AssertionError("read")

    approvals, sink, _ = make(rules=ApprovalRules(), store=Untouchable())
    assert run(approvals.check("Bash", PUSH, claude_session_id=SID)) is None
    assert sink.events == []


# -- the permission gate --------------------------------------------------------------------------------------------


class Denials:
    def __init__(self) -> None:
        self.denied: list[str] = []

    def tool_denied(
        self, tool_name: str, *, tool_use_id: str | None = None, claude_session_id: str | None = None
    ):
        self.denied.append(tool_name)


def gate(approvals: Approvals) -> tuple[Any, Denials]:
    from runtime.guard.gate import PermissionGate
    from runtime.guard.policy import PermissionPolicy

    policy = PermissionPolicy(
        allowed_tools=frozenset({"Bash", "Read"}), workspace=Path(WS), bash_allowlist={"git", "ls"}
    )
    denials = Denials()
    return PermissionGate(policy, denials, approvals), denials


def hook_input(command: str) -> dict[str, Any]:
    return {"tool_name": "Bash", "tool_input": {"command": command}, "session_id": SID, "tool_use_id": "tu1"}


def test_the_gate_stops_the_turn_for_a_call_that_waits() -> None:
    approvals, _, _ = make()
    g, denials = gate(approvals)
    out = run(g.pre_tool_use(hook_input("git log -1"), "tu1", None))
    assert out["continue"] is False and out["stopReason"].startswith("awaiting approval apv-")
    spec = out["hookSpecificOutput"]
    assert (
        spec["permissionDecision"] == "deny"
        and "needs a person's approval (bash_programs: git)" in (spec["permissionDecisionReason"])
    )
    assert denials.denied == ["Bash"]
    assert run(g.pre_tool_use(hook_input("ls"), "tu2", None)) == {}


def test_a_policy_refusal_wins_and_never_asks_for_approval() -> None:
    approvals, sink, _ = make(rules=ApprovalRules(bash_programs=("rm",)))
    g, _ = gate(approvals)
    out = run(g.pre_tool_use(hook_input("rm -rf /"), "tu1", None))
    assert "continue" not in out and out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert sink.events == []


def test_the_gate_fails_closed_when_the_request_cannot_be_stored() -> None:
    store = StateStore()
    store.fail = True
    approvals, _, _ = make(store=store)
    g, _ = gate(approvals)
    out = run(g.pre_tool_use(hook_input("git log -1"), "tu1", None))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny" and "continue" not in out
    assert "could not be recorded" in out["hookSpecificOutput"]["permissionDecisionReason"]


# -- per stage, from cdk.json ---------------------------------------------------------------------------------------


def test_a_stage_passes_its_rules_to_the_container() -> None:
    import copy

    from infra.config import ConfigError, load_config
    from infra.stack import runtime_environment
    from tests.infra.conftest import base_context

    data = copy.deepcopy(base_context()["agentkit"])
    plain = runtime_environment(
        load_config(data, stage="dev"), memory_id="m", gateway_url=None, region="us-east-1"
    )
    assert "AGENTKIT_APPROVALS" not in plain  # none configured: the definition's rules (none) hold
    data["stages"]["dev"]["approvals"] = {"paths": [".github/**"], "network": True}
    env = runtime_environment(
        load_config(data, stage="dev"), memory_id="m", gateway_url=None, region="us-east-1"
    )
    assert rules_from(env["AGENTKIT_APPROVALS"], ApprovalRules()) == ApprovalRules(
        paths=(".github/**",), network=True
    )
    data["stages"]["dev"]["approvals"] = {"paths": ["/etc/**"]}
    with pytest.raises(ConfigError, match="approvals"):
        load_config(data, stage="dev")


def test_a_request_or_use_that_cannot_be_stored_leaves_nothing_behind() -> None:
    store = StateStore()
    approvals, sink, _ = make(store=store)
    store.fail = True
    with pytest.raises(RuntimeError):
        run(approvals.check("Bash", PUSH, claude_session_id=SID))
    assert run(approvals.book(SID).records()) == {} and sink.events == []
    store.fail = False
    record = run(approvals.check("Bash", PUSH, claude_session_id=SID))
    run(approvals.answer(SID, Answer(record.id, approved=True)))
    store.fail = True
    with pytest.raises(
        RuntimeError
    ):  # the gate refuses the call: it did not run, so the approval is not used
        run(approvals.check("Bash", PUSH, claude_session_id=SID))
    assert record.status == "approved"
    store.fail = False
    assert run(approvals.check("Bash", PUSH, claude_session_id=SID)) is None
    assert record.status == "used"
