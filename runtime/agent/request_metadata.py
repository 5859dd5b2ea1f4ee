"""Attribution on every Bedrock call: the ``X-Amzn-Bedrock-Request-Metadata`` header.

Bedrock Runtime's ``InvokeModel`` and ``InvokeModelWithResponseStream`` take ``requestMetadata`` as that header,
holding a JSON object of key-value pairs "that you can use to filter invocation logs" (botocore's
``bedrock-runtime`` model, shape ``RequestMetadataJson``, at most 8,500 characters; ``Converse`` takes the same
pairs as a map: at most 16, keys 1-256 and values 0-256 characters of ``[a-zA-Z0-9\\s:_@$#=/+,-.]``). With the
runtime session, the caller, the agent and the stage in it, Bedrock's model-invocation logs can be joined to
the kit's sessions and cost lines, and one stage's calls told from another's in a shared account.

The Claude Code CLI makes the Bedrock calls; it adds the headers listed in ``ANTHROPIC_CUSTOM_HEADERS``
(``Name: Value``, one per line) to each model request, so the runtime sets that variable per CLI process (one
process per runtime session).

A Bedrock project (``AGENTKIT_BEDROCK_PROJECT``) goes with every call too, as ``X-Amzn-Bedrock-ProjectIdentifier``
(botocore 1.44.18 ``bedrock-runtime``, member ``projectIdentifier`` of InvokeModel / InvokeModelWithResponseStream:
a project id or ARN): Bedrock then attributes the call to that project, its cost and retention boundary.

Env vars: sets ``ANTHROPIC_CUSTOM_HEADERS`` in the CLI's environment. IAM actions: none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

HEADER = "X-Amzn-Bedrock-Request-Metadata"
PROJECT_HEADER = "X-Amzn-Bedrock-ProjectIdentifier"
#: botocore's pattern for ``projectIdentifier`` (1-2048 characters): a project id or a project ARN.
PROJECT_PATTERN = re.compile(
    r"([a-zA-Z0-9_-]+|arn:aws(|-us-gov|-cn|-iso|-iso-b|-iso-f|-eusc):bedrock:[0-9a-z-]{1,20}:[0-9]{12}:project/[a-zA-Z0-9_-]+)"
)
CUSTOM_HEADERS_VARIABLE = "ANTHROPIC_CUSTOM_HEADERS"
MAX_VALUE = 256
#: Characters Bedrock accepts in a metadata key or value; anything else (and line breaks, which would end the
#: header line) becomes ``_``.
_REFUSED = re.compile(r"[^a-zA-Z0-9 :_@$#=/+,\-.]")


def _clean(value: str) -> str:
    return _REFUSED.sub("_", value)[:MAX_VALUE]


def request_metadata(
    *, session_id: str, actor: str | None, agent: str, stage: str | None = None
) -> dict[str, str]:
    """The pairs sent with each model call: ``agentkit.session``, ``agentkit.agent`` and, when known,
    ``agentkit.actor`` and ``agentkit.stage`` (``AGENTKIT_STAGE``, set by the stack), each cleaned to Bedrock's
    character set and length."""
    pairs = {"agentkit.session": _clean(session_id), "agentkit.agent": _clean(agent)}
    if actor:
        pairs["agentkit.actor"] = _clean(actor)
    if stage:
        pairs["agentkit.stage"] = _clean(stage)
    return pairs


def custom_headers_env(metadata: Mapping[str, str], *, project: str | None = None) -> dict[str, str]:
    """``{"ANTHROPIC_CUSTOM_HEADERS": "X-Amzn-Bedrock-Request-Metadata: {...}"}`` for the CLI's environment, with
    a second line ``X-Amzn-Bedrock-ProjectIdentifier: <project>`` when a project is set.

    Raises:
        ValueError: ``project`` does not match Bedrock's pattern (it would also break the header line).
    """
    lines = []
    if metadata:
        lines.append(f"{HEADER}: {json.dumps(dict(metadata), separators=(',', ':'), sort_keys=True)}")
    if project:
        if len(project) > 2048 or not PROJECT_PATTERN.fullmatch(project):
            raise ValueError(f"{project!r} is not a Bedrock project id or ARN")
        lines.append(f"{PROJECT_HEADER}: {project}")
    return {CUSTOM_HEADERS_VARIABLE: "\n".join(lines)} if lines else {}
