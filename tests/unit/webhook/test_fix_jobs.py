"""Fix jobs' state in the reply table (moto DynamoDB): each transition happens once, in order, or not at all."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from webhook.fix.jobs import (
    ANSWERED,
    AWAITING,
    DONE,
    EXPIRED,
    JOB,
    REPORTING,
    STOPPED,
    TIMED_OUT,
    FixJob,
    JobStore,
)

KEY = "a" * 64
SESSION = "gh-" + "b" * 64
JOB_DOC = FixJob(
    tracker="github",
    repository="octo/kit",
    scope_id="186853002",
    issue_number=7,
    issue_id="7",
    issue_ref="#7",
    session_id=SESSION,
    comment_id="1001",
    target_tracker="github",
    target_repository="octo/kit",
    base_branch="main",
    base_sha="c" * 40,
    pr_base="main",
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(aws: SimpleNamespace) -> tuple[JobStore, Clock]:
    clock = Clock()
    return JobStore(client=aws.ddb, table_name="idem", clock=clock), clock


def started(store: JobStore) -> None:
    assert store.claim(KEY)
    claim = store.get(KEY)
    assert claim is not None
    assert store.started(KEY, JOB_DOC, claimed_at=claim.stored_at)


def test_a_claim_is_taken_once_and_a_released_one_keeps_its_progress_comment(
    store: tuple[JobStore, Clock],
) -> None:
    jobs, _ = store
    assert jobs.claim(KEY) and not jobs.claim(KEY)
    jobs.remember_progress_comment(KEY, comment_id="1001", url="https://x/1001")
    jobs.release(KEY)
    assert jobs.claim(KEY)  # claimable again ...
    state = jobs.get(KEY)
    assert state is not None and state.progress_comment_id == "1001"  # ... with the comment it posted


def test_started_records_the_job_and_points_the_issue_session_at_it(store: tuple[JobStore, Clock]) -> None:
    jobs, _ = store
    assert jobs.claim(KEY)
    claim = jobs.get(KEY)
    assert claim is not None
    assert not jobs.started(KEY, JOB_DOC, claimed_at=claim.stored_at - 1)  # another claim's time: not ours
    assert jobs.started(KEY, JOB_DOC, claimed_at=claim.stored_at)
    state = jobs.get(KEY)
    assert state is not None and state.status == JOB and state.job == JOB_DOC
    assert jobs.active_job(SESSION) == KEY


def test_progress_is_kept_only_when_newer_and_edits_are_throttled(store: tuple[JobStore, Clock]) -> None:
    jobs, clock = store
    started(jobs)
    assert jobs.record_progress(KEY, seq=2, cost_usd=0.01, tool_calls=1, last_tool="Read", elapsed_s=3)
    assert not jobs.record_progress(KEY, seq=2, cost_usd=0.01, tool_calls=1, last_tool="Read", elapsed_s=3)
    assert not jobs.record_progress(KEY, seq=1, cost_usd=0.0, tool_calls=0, last_tool="", elapsed_s=1)
    assert jobs.take_edit_slot(KEY, min_interval=20) and not jobs.take_edit_slot(KEY, min_interval=20)
    clock.now += 21
    assert jobs.take_edit_slot(KEY, min_interval=20)
    state = jobs.get(KEY)
    assert state is not None and (state.last_seq, state.cost_so_far, state.tool_calls) == (2, 0.01, 1)


def test_a_result_is_reported_once_and_a_dead_reporters_lease_is_taken_over(
    store: tuple[JobStore, Clock],
) -> None:
    jobs, clock = store
    started(jobs)
    assert jobs.begin_report(KEY, lease_seconds=300)
    assert not jobs.begin_report(KEY, lease_seconds=300)  # the duplicate delivery
    clock.now += 301
    assert jobs.begin_report(KEY, lease_seconds=300)  # its reporter died: taken over
    assert jobs.finish(KEY, pr_url="https://x/pull/1", cost_usd=0.5, duration_ms=1200)
    assert not jobs.begin_report(KEY, lease_seconds=300) and not jobs.finish(KEY)
    state = jobs.get(KEY)
    assert state is not None and state.status == DONE and state.pr_url == "https://x/pull/1"
    assert not jobs.record_progress(KEY, seq=9, cost_usd=1, tool_calls=1, last_tool="x", elapsed_s=1)


def test_unreport_hands_the_result_back(store: tuple[JobStore, Clock]) -> None:
    jobs, _ = store
    started(jobs)
    assert jobs.begin_report(KEY, lease_seconds=300)
    jobs.unreport(KEY)
    state = jobs.get(KEY)
    assert state is not None and state.status == JOB
    assert jobs.begin_report(KEY, lease_seconds=300)
    assert (jobs.get(KEY) or state).status == REPORTING


def test_a_stop_wins_over_a_later_result_and_a_second_stop_changes_nothing(
    store: tuple[JobStore, Clock],
) -> None:
    jobs, _ = store
    started(jobs)
    assert jobs.record_progress(KEY, seq=1, cost_usd=0.02, tool_calls=2, last_tool="Bash", elapsed_s=40)
    assert jobs.stop(KEY, by="carol", stop_key="s1")
    assert not jobs.stop(KEY, by="dave", stop_key="s2")
    assert not jobs.begin_report(KEY, lease_seconds=300)  # the result after the stop opens nothing
    state = jobs.get(KEY)
    assert state is not None and state.status == STOPPED
    assert (state.stopped_by, state.stop_key, state.cost_so_far) == ("carol", "s1", 0.02)


def test_a_job_being_reported_cannot_be_stopped(store: tuple[JobStore, Clock]) -> None:
    jobs, _ = store
    started(jobs)
    assert jobs.begin_report(KEY, lease_seconds=300)
    assert not jobs.stop(KEY, by="carol", stop_key="s1")


def test_context_fits_the_runtimes_limit() -> None:
    assert len(JOB_DOC.context()) > 5
    huge = JOB_DOC.model_copy(update={"html_url": "https://x/" + "y" * 5000})
    with pytest.raises(ValueError, match="4096"):
        huge.context()


def test_the_requesters_id_is_kept_and_a_job_without_one_keeps_its_earlier_document() -> None:
    # A GitHub job names no id: its document (and so the context its result comes back with) has no such key, as
    # before the field existed; a job kept or started before then reads back as the same job.
    assert "author_id" not in JOB_DOC.context() and "author_id" not in json.loads(JOB_DOC.model_dump_json())
    assert FixJob.model_validate(JOB_DOC.context()) == JOB_DOC
    jira = FixJob.model_validate(
        {**JOB_DOC.context(), "tracker": "jira", "author_id": "5b10ac8d82e05b22cc7d4ef5"}
    )
    assert jira.context()["author_id"] == "5b10ac8d82e05b22cc7d4ef5"
    assert FixJob.model_validate_json(jira.model_dump_json()) == jira


def test_a_dead_workers_claim_is_taken_over_once_and_keeps_what_it_kept(
    store: tuple[JobStore, Clock],
) -> None:
    jobs, clock = store
    assert jobs.claim(KEY, session_id=SESSION)
    claim = jobs.get(KEY)
    assert claim is not None
    jobs.remember_progress_comment(KEY, comment_id="1001", url="https://x/1001")
    assert jobs.prepared(KEY, JOB_DOC, claimed_at=claim.stored_at)
    assert jobs.session_jobs(SESSION) == (None, KEY)
    clock.now += 901
    taken = jobs.adopt(KEY, claimed_at=claim.stored_at)
    assert taken is not None and jobs.adopt(KEY, claimed_at=claim.stored_at) is None  # once
    assert not jobs.started(KEY, JOB_DOC, claimed_at=claim.stored_at)  # the dead worker's late write fails
    state = jobs.get(KEY)
    assert state is not None and (state.job, state.progress_comment_id) == (JOB_DOC, "1001")
    assert jobs.started(KEY, JOB_DOC, claimed_at=taken)
    assert jobs.session_jobs(SESSION) == (KEY, KEY)


def test_a_stop_request_keeps_a_claim_from_becoming_a_job(store: tuple[JobStore, Clock]) -> None:
    jobs, _ = store
    assert jobs.claim(KEY, session_id=SESSION)
    claim = jobs.get(KEY)
    assert claim is not None
    assert not jobs.stop_unstarted(KEY, claimed_at=claim.stored_at)  # nobody asked
    assert jobs.request_stop(KEY, by="carol", stop_key="s1")
    assert jobs.request_stop(KEY, by="carol", stop_key="s1")  # the same stop task again
    assert not jobs.request_stop(KEY, by="dave", stop_key="s2")  # a second stop
    assert not jobs.started(KEY, JOB_DOC, claimed_at=claim.stored_at)
    assert jobs.stop_unstarted(KEY, claimed_at=claim.stored_at)
    state = jobs.get(KEY)
    assert state is not None and (state.status, state.stopped_by, state.stop_key) == (STOPPED, "carol", "s1")
    assert not jobs.request_stop(KEY, by="carol", stop_key="s1")  # stopped: nothing to request any more
    assert jobs.active_job(SESSION) is None


def test_only_a_job_still_running_times_out_and_a_result_or_stop_then_finds_it_final(
    store: tuple[JobStore, Clock],
) -> None:
    """The sweep's write and the reporter's take both require ``job``: whichever comes first, the other fails."""
    jobs, clock = store
    started(jobs)
    assert jobs.begin_report(KEY, lease_seconds=300)
    assert not jobs.time_out(KEY, status=JOB)  # being reported: the result stands
    assert jobs.finish(KEY, pr_url="https://x/pr/1") and not jobs.time_out(KEY, status=JOB)
    other = "f" * 64
    assert jobs.claim(other)
    assert not jobs.time_out(other, status=JOB)  # a claim is not a started job
    claim = jobs.get(other)
    assert claim is not None and jobs.started(other, JOB_DOC, claimed_at=claim.stored_at)
    clock.now += 10
    assert not jobs.notified(other)  # only a timed-out job is marked told
    assert jobs.time_out(other, status=JOB) and not jobs.time_out(other, status=JOB)
    assert not jobs.begin_report(other, lease_seconds=300)
    assert not jobs.stop(other, by="carol", stop_key="s" * 64)
    assert not jobs.record_progress(other, seq=5, cost_usd=0.1, tool_calls=1, last_tool="Bash", elapsed_s=9)
    state = jobs.get(other)
    assert state is not None and state.status == TIMED_OUT and state.error_code == "timed_out"
    assert state.finished_at == clock.now and state.notified_at == 0
    assert jobs.notified(other) and jobs.get(other).notified_at == clock.now  # type: ignore[union-attr]


APPROVAL_ID = "apv-0123456789abcdef0123"
APPROVAL: dict[str, object] = {"id": APPROVAL_ID, "tool": "Edit", "expires_at": 1_800_086_400.0}


def paused(jobs: JobStore) -> None:
    started(jobs)
    assert jobs.begin_report(KEY, lease_seconds=60)
    assert jobs.await_approval(KEY, APPROVAL, cost_usd=0.02, hold_seconds=3600)


def test_a_paused_job_keeps_its_request_and_only_the_first_answer_counts(
    store: tuple[JobStore, Clock],
) -> None:
    jobs, _ = store
    paused(jobs)
    # A duplicate result moves nothing.
    assert not jobs.await_approval(KEY, APPROVAL, cost_usd=0.02, hold_seconds=3600)
    state = jobs.get(KEY)
    assert state is not None and state.status == AWAITING and state.approval == APPROVAL
    assert state.cost_so_far == 0.02
    first = {"outcome": "approved", "by": "github:dave", "at": 1.0, "reason": "", "key": "k1"}
    second = {"outcome": "denied", "by": "github:erin", "at": 2.0, "reason": "no", "key": "k2"}
    assert not jobs.decide(KEY, approval_id="apv-ffffffffffffffffffff", decision=first)  # another id
    assert jobs.decide(KEY, approval_id=APPROVAL_ID, decision=first)
    assert not jobs.decide(KEY, approval_id=APPROVAL_ID, decision=second)
    state = jobs.get(KEY)
    assert state is not None and state.status == ANSWERED and state.approval_decision == first


def test_a_stopped_waiting_job_takes_no_answer_and_an_expiry_ends_it(store: tuple[JobStore, Clock]) -> None:
    jobs, _ = store
    paused(jobs)
    assert jobs.stop(KEY, by="carol", stop_key="s1")
    answer = {"outcome": "approved", "by": "github:dave", "at": 1.0, "reason": "", "key": "k1"}
    assert not jobs.decide(KEY, approval_id=APPROVAL_ID, decision=answer)
    state = jobs.get(KEY)
    assert state is not None and state.status == STOPPED and state.approval_decision is None
    other = "d" * 64
    assert jobs.claim(other)
    claim = jobs.get(other)
    assert claim is not None and jobs.started(other, JOB_DOC, claimed_at=claim.stored_at)
    assert jobs.begin_report(other, lease_seconds=60) and jobs.await_approval(
        other, APPROVAL, cost_usd=None, hold_seconds=3600
    )
    expired = {"outcome": "expired", "by": "", "at": 9.0, "reason": "", "key": ""}
    assert jobs.decide(other, approval_id=APPROVAL_ID, decision=expired)
    assert not jobs.stop(other, by="carol", stop_key="s2")  # ended: nothing left to stop
    state = jobs.get(other)
    assert state is not None and state.status == EXPIRED


def test_the_active_fix_marker_holds_until_a_final_state_or_its_deadline(
    store: tuple[JobStore, Clock],
) -> None:
    jobs, clock = store
    hold = {"hold_seconds": 3600, "claim_grace_seconds": 600}
    session = JOB_DOC.session_id
    assert jobs.take_active(session, KEY, **hold) and jobs.take_active(session, KEY, **hold)  # a redelivery
    assert not jobs.take_active(session, "other", **hold)  # taken, its job not claimed yet
    assert jobs.claim(KEY, session_id=session)
    claim = jobs.get(KEY)
    assert claim is not None and jobs.started(KEY, JOB_DOC, claimed_at=claim.stored_at)
    clock.now += 1200  # past the claim grace: a started job still holds it
    assert not jobs.take_active(session, "other", **hold)
    assert jobs.time_out(KEY, status=JOB)  # the sweeper's final write gives it up
    assert jobs.take_active(session, "other", **hold)
    assert not jobs.take_active(session, "third", **hold)  # "other" never claimed: held for the grace
    clock.now += 601
    assert jobs.take_active(session, "third", **hold)  # ... then free (its worker died before the claim)
    assert jobs.claim("third", session_id=session)
    clock.now += 3601  # a marker past its deadline never blocks the issue, whatever its job says
    assert jobs.take_active(session, "fourth", **hold)


def test_a_fix_waiting_for_approval_holds_the_marker_through_its_continuation_and_an_expiry_frees_it(
    store: tuple[JobStore, Clock],
) -> None:
    """Waiting is not final; the answered job lives on as the job keyed by the approval id, which holds the
    issue until it ends; an expired one gives the marker up."""
    jobs, clock = store
    hold = {"hold_seconds": 36_000, "claim_grace_seconds": 600}
    session = JOB_DOC.session_id
    assert jobs.take_active(session, KEY, **hold)
    assert jobs.claim(KEY, session_id=session)
    claim = jobs.get(KEY)
    assert claim is not None and jobs.started(KEY, JOB_DOC, claimed_at=claim.stored_at)
    assert jobs.begin_report(KEY, lease_seconds=60)
    assert jobs.await_approval(KEY, APPROVAL, cost_usd=0.02, hold_seconds=3600)
    clock.now += 1200
    assert not jobs.take_active(session, "other", **hold)  # waiting
    answer = {"outcome": "approved", "by": "github:dave", "at": clock.now, "reason": "", "key": "k1"}
    assert jobs.decide(KEY, approval_id=APPROVAL_ID, decision=answer)
    assert not jobs.take_active(session, "other", **hold)  # the continuation is being started
    assert jobs.claim(APPROVAL_ID, session_id=session)
    cont = jobs.get(APPROVAL_ID)
    assert cont is not None and jobs.started(APPROVAL_ID, JOB_DOC, claimed_at=cont.stored_at)
    clock.now += 1200
    assert not jobs.take_active(session, "other", **hold)  # the continuation runs
    assert jobs.begin_report(APPROVAL_ID, lease_seconds=60) and jobs.finish(
        APPROVAL_ID, pr_url="https://x/pr/1"
    )
    assert jobs.take_active(session, "other", **hold)  # the fix ended with its continuation
    # Another issue's fix that waits and expires gives its issue up.
    second = "e" * 64
    doc = JOB_DOC.model_copy(update={"session_id": "gh-" + "9" * 64})
    assert jobs.take_active(doc.session_id, second, **hold)
    assert jobs.claim(second, session_id=doc.session_id)
    claim = jobs.get(second)
    assert claim is not None and jobs.started(second, doc, claimed_at=claim.stored_at)
    assert jobs.begin_report(second, lease_seconds=60) and jobs.await_approval(
        second, APPROVAL, cost_usd=None, hold_seconds=3600
    )
    assert not jobs.take_active(doc.session_id, "next", **hold)
    expired = {"outcome": "expired", "by": "", "at": clock.now, "reason": "", "key": ""}
    assert jobs.decide(second, approval_id=APPROVAL_ID, decision=expired)
    assert jobs.take_active(doc.session_id, "next", **hold)


DEADLINE = 8 * 3600 + 1800  # JOB_DEADLINE_SECONDS' default
HOUR = 3600.0


def marker(jobs: JobStore, session: str) -> dict[str, object]:
    item = jobs._client.get_item(TableName="idem", Key={"id": {"S": f"reply#active#{session}"}})["Item"]
    return {name: next(iter(value.values())) for name, value in item.items()}


def waiting(jobs: JobStore, key: str, approval_id: str, expires_at: float) -> None:
    """The job ``key`` (started) pauses for ``approval_id``, the reporter holding the marker as it does."""
    assert jobs.begin_report(key, lease_seconds=60)
    approval = {"id": approval_id, "tool": "Edit", "expires_at": expires_at}
    assert jobs.await_approval(key, approval, cost_usd=0.02, hold_seconds=DEADLINE)


def start(jobs: JobStore, key: str, doc: FixJob = JOB_DOC) -> None:
    assert jobs.claim(key, session_id=doc.session_id)
    claim = jobs.get(key)
    assert claim is not None and jobs.started(key, doc, claimed_at=claim.stored_at)


def answered(jobs: JobStore, paused_key: str, approval_id: str, decision: dict[str, Any]) -> None:
    """The job ``paused_key`` waiting for ``approval_id`` gets ``decision``, and its continuation (the job keyed by
    the approval id) is claimed and started as the worker does it, taking the paused job's progress comment over."""
    assert jobs.decide(paused_key, approval_id=approval_id, decision=decision)
    assert jobs.claim(approval_id, session_id=SESSION)
    jobs.remember_progress_comment(approval_id, comment_id="1001", url="u", paused_key=paused_key)
    claim = jobs.get(approval_id)
    assert claim is not None and jobs.started(approval_id, JOB_DOC, claimed_at=claim.stored_at)


@pytest.mark.parametrize("end", ["expired", "stopped", "continuation_done", "continuation_expired"])
def test_a_wait_longer_than_the_job_deadline_keeps_the_issue_until_the_fix_ends(
    store: tuple[JobStore, Clock], end: str
) -> None:
    """The marker lasts the job deadline; a job waiting for a 24 h approval holds it until the approval's expiry
    plus the deadline (its continuation's run), through a continuation that pauses again, and gives it up at
    every final state of the fix."""
    jobs, clock = store
    hold = {"hold_seconds": DEADLINE, "claim_grace_seconds": 600}
    t0 = clock.now
    assert jobs.take_active(SESSION, KEY, **hold)
    start(jobs, KEY)
    waiting(jobs, KEY, APPROVAL_ID, t0 + 24 * HOUR)
    clock.now = t0 + 9 * HOUR  # past the job deadline: the fix still waits
    assert not jobs.take_active(SESSION, "other", **hold)
    clock.now = t0 + 24 * HOUR - 1
    assert not jobs.take_active(SESSION, "other", **hold)
    assert marker(jobs, SESSION)["active_until"] == str(int(t0 + 24 * HOUR + DEADLINE))
    if end == "expired":
        expiry = {"outcome": "expired", "by": "", "at": clock.now, "reason": "", "key": ""}
        assert jobs.decide(KEY, approval_id=APPROVAL_ID, decision=expiry)
    elif end == "stopped":
        assert jobs.stop(KEY, by="carol", stop_key="s1")
    else:
        answer = {"outcome": "approved", "by": "github:dave", "at": clock.now, "reason": "", "key": "k1"}
        answered(jobs, KEY, APPROVAL_ID, answer)
        clock.now = t0 + 30 * HOUR  # the continuation runs (past the first approval's expiry)
        assert not jobs.take_active(SESSION, "other", **hold)
        second = "apv-ffffffffffffffffffff"
        waiting(jobs, APPROVAL_ID, second, clock.now + 24 * HOUR)  # ... and waits again
        clock.now += 20 * HOUR
        assert not jobs.take_active(SESSION, "other", **hold)
        if end == "continuation_expired":
            expiry = {"outcome": "expired", "by": "", "at": clock.now, "reason": "", "key": ""}
            assert jobs.decide(APPROVAL_ID, approval_id=second, decision=expiry)
        else:
            answer = {"outcome": "denied", "by": "github:dave", "at": clock.now, "reason": "", "key": "k2"}
            answered(jobs, APPROVAL_ID, second, answer)
            assert not jobs.take_active(SESSION, "other", **hold)
            assert jobs.begin_report(second, lease_seconds=60) and jobs.finish(second)
    assert "job_key" not in marker(jobs, SESSION)  # given up by the final state itself
    assert jobs.take_active(SESSION, "other", **hold)


def test_a_pause_never_extends_another_fixs_marker(store: tuple[JobStore, Clock]) -> None:
    """A job whose marker was taken over (its own ran out meanwhile) does not lengthen the new holder's."""
    jobs, clock = store
    hold = {"hold_seconds": DEADLINE, "claim_grace_seconds": 600}
    assert jobs.take_active(SESSION, KEY, **hold)
    start(jobs, KEY)
    clock.now += DEADLINE + 1
    assert jobs.take_active(SESSION, "other", **hold)
    before = marker(jobs, SESSION)
    waiting(jobs, KEY, APPROVAL_ID, clock.now + 24 * HOUR)
    assert marker(jobs, SESSION) == before
