"""Metric and dimension names the runtime emits (its ``runtime/observe/metrics/__init__.py``), owned here as data.

The client cannot import the container package, so it keeps its own copy; ``tests/client/
test_runtime_contract.py`` checks this copy against what the runtime really emits.
"""

from __future__ import annotations

# dimensions
AGENT, MODEL, TOOL, ERROR_CODE = "Agent", "Model", "Tool", "ErrorCode"

# per turn, dimensions [Agent, Model] and [Agent]
COST = "CostUSD"
INPUT_TOKENS = "InputTokens"
OUTPUT_TOKENS = "OutputTokens"
CACHE_READ_TOKENS = "CacheReadTokens"
CACHE_WRITE_TOKENS = "CacheWriteTokens"
TURNS = "Turns"
LATENCY = "InvocationLatencyMs"
TTFT = "TimeToFirstTokenMs"
TOKEN_METRICS: tuple[str, ...] = (INPUT_TOKENS, OUTPUT_TOKENS, CACHE_READ_TOKENS, CACHE_WRITE_TOKENS)
TURN_METRICS: tuple[str, ...] = (COST, *TOKEN_METRICS, TURNS, LATENCY, TTFT)

# per tool call, dimensions [Agent, Tool] and [Agent]
TOOL_CALLS, TOOL_ERRORS, TOOL_LATENCY, TOOL_DENIED = "ToolCalls", "ToolErrors", "ToolLatencyMs", "ToolDenied"
TOOL_METRICS: tuple[str, ...] = (TOOL_CALLS, TOOL_ERRORS, TOOL_LATENCY, TOOL_DENIED)

# events, dimensions [Agent, <one of Model/Tool/ErrorCode>] and [Agent]
INVOCATION_ERRORS = "InvocationErrors"  # dimension ErrorCode: the error code the caller got
# tool calls waiting for a person (dimension Tool); Withdrawn: a waiting request taken back unanswered (its job
# was stopped); ApprovalDecisionSeconds: request → answer, unit Seconds
APPROVAL_METRICS: tuple[str, ...] = (
    "ApprovalsRequested",
    "Approved",
    "Denied",
    "Expired",
    "Withdrawn",
    "ApprovalDecisionSeconds",
)
EVENT_METRICS: tuple[str, ...] = (
    *APPROVAL_METRICS,
    "BudgetExceeded",
    "Disconnected",
    INVOCATION_ERRORS,
    "JobResultsDeadLettered",
    "JobResultsKept",
    "JobsAccepted",
    "JobsInterrupted",
    "MemoryEventsWritten",
    "MemoryRetrievals",
    "SandboxUnavailable",
    "SandboxUnsafe",
    "SessionLimitHit",
    "SessionLimitsUnenforced",
    "SessionResumed",
    "SessionStoreDeadLetters",
    "SessionStoreErrors",
    "SessionStoreLateWrites",
)

# AgentCore Memory usage the runtime counts (one event document per billed call, property ClaudeSessionId)
MEMORY_EVENTS = "MemoryEventsWritten"
MEMORY_RETRIEVALS = "MemoryRetrievals"

# EMF properties of a turn's main document (never dimensions)
PROP_SESSION = "SessionId"
PROP_CALLER = "Caller"
PROP_TURN_COST = "TurnCostUSD"
PROP_CLAUDE_SESSION = "ClaudeSessionId"

#: Short names of the token types, in display order.
TOKEN_TYPES: dict[str, str] = {
    INPUT_TOKENS: "input",
    OUTPUT_TOKENS: "output",
    CACHE_READ_TOKENS: "cache_read",
    CACHE_WRITE_TOKENS: "cache_write",
}
