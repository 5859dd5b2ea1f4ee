"""The runtime role's Memory actions are exactly the Memory operations the runtime's code calls (found by the same
source walk as tests/unit/test_botocore_calls.py, whatever the call's spelling): no grant for a call no code makes."""

from __future__ import annotations

import botocore.session

from infra.memory import RUNTIME_MEMORY_ACTIONS
from tests.unit.test_botocore_calls import calls_of, operations, unit_files


def test_the_runtime_role_allows_exactly_the_memory_calls_the_runtime_makes() -> None:
    ops = operations(botocore.session.get_session(), "bedrock-agentcore")
    # Memory operations: the ones addressed by a memory id (their IAM resource is the memory's ARN).
    memory_ops = {
        name: op for name, op in ops.items() if op.input_shape and "memoryId" in op.input_shape.members
    }
    called = {c.operation for c in calls_of(unit_files("runtime"), set(memory_ops))}
    assert "create_event" in called and "list_events" in called  # the walk sees the store's wrapped calls
    needed = {f"bedrock-agentcore:{memory_ops[name].name}" for name in called}
    assert set(RUNTIME_MEMORY_ACTIONS) == needed
