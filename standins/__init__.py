"""Local stand-ins for AWS services, for tests, the demo and the benchmarks (never deployed).

:class:`BedrockStandIn` imitates Amazon Bedrock Runtime well enough for the real Claude Code CLI to run
offline (``CLAUDE_CODE_USE_BEDROCK=1`` + ``ANTHROPIC_BEDROCK_BASE_URL``; see :func:`cli_env`).
"""

from standins.bedrock import DEFAULT_MODEL, BedrockStandIn, RecordedRequest, cli_env
from standins.replies import Reply, Text, ToolUse, Usage, default_reply

__all__ = [
    "DEFAULT_MODEL",
    "BedrockStandIn",
    "RecordedRequest",
    "Reply",
    "Text",
    "ToolUse",
    "Usage",
    "cli_env",
    "default_reply",
]
