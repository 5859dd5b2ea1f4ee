"""Human approval of risky tool calls: a call a rule names waits, durably, until a person approves or denies it
(docs/approvals.md)."""

from runtime.approvals.records import ApprovalCard, ApprovalRecord, input_hash
from runtime.approvals.rules import ApprovalRules, RuleHit
from runtime.approvals.service import Answer, Approvals, TurnBinding

__all__ = [
    "Answer",
    "ApprovalCard",
    "ApprovalRecord",
    "ApprovalRules",
    "Approvals",
    "RuleHit",
    "TurnBinding",
    "input_hash",
]
