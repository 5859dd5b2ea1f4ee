"""The environment contract of the runtime container: every ``AGENTKIT_*`` name, as a constant, in one place.

Read only by :meth:`runtime.config.settings.Settings.from_env` (the boundary), where each name is declared as exactly one
setting with its default and meaning (``tests/unit/test_config_reference.py`` checks it); the CDK stack
(``infra/stack.py``) imports the names from here to set them, and ``tests/infra`` checks that what it sets parses
through ``Settings``.
This module imports nothing, so the stack can import it without the runtime's dependencies.
"""

from __future__ import annotations

ENV_HOST = "AGENTKIT_HOST"
ENV_PORT = "AGENTKIT_PORT"
ENV_CLI_PATH = "AGENTKIT_CLI_PATH"
ENV_SESSION_STORE = "AGENTKIT_SESSION_STORE"
ENV_STATE_DIR = "AGENTKIT_STATE_DIR"
ENV_STORE_WRITE_BEHIND = "AGENTKIT_STORE_WRITE_BEHIND"
ENV_STORE_STRICT = "AGENTKIT_STORE_STRICT"
ENV_STORE_CALL_TIMEOUT = "AGENTKIT_STORE_CALL_TIMEOUT"
ENV_METRICS = "AGENTKIT_METRICS"
ENV_METRICS_NAMESPACE = "AGENTKIT_METRICS_NAMESPACE"
ENV_EMF_FILE = "AGENTKIT_EMF_FILE"
ENV_SPANS_FILE = "AGENTKIT_SPANS_FILE"
ENV_AGENT_NAME = "AGENTKIT_AGENT_NAME"
#: The stack's stage (``dev``, ``prod``): attribution in each Bedrock call's request metadata.
ENV_STAGE = "AGENTKIT_STAGE"
ENV_AGENT_FILE = "AGENTKIT_AGENT_FILE"
#: An agent directory (:mod:`runtime.agent.agent_dir`): the image sets it to the directory it copied in.
ENV_AGENT_DIR = "AGENTKIT_AGENT_DIR"
ENV_PRICES = "AGENTKIT_PRICES"
ENV_MODEL = "AGENTKIT_MODEL"
ENV_SMALL_MODEL = "AGENTKIT_SMALL_MODEL"
ENV_FALLBACK_MODEL = "AGENTKIT_FALLBACK_MODEL"
ENV_BEDROCK_PROJECT = "AGENTKIT_BEDROCK_PROJECT"
ENV_BEDROCK_ENDPOINT = "AGENTKIT_BEDROCK_ENDPOINT"
ENV_MAX_PROMPT_CHARS = "AGENTKIT_MAX_PROMPT_CHARS"
ENV_TURN_TIMEOUT = "AGENTKIT_TURN_TIMEOUT"
#: Seconds without a byte from the model (while a turn waits on it) before the log says so (:mod:`runtime.agent.silence`).
ENV_MODEL_SILENCE_WARN = "AGENTKIT_MODEL_SILENCE_WARN_SECONDS"
ENV_IDLE_TIMEOUT = "AGENTKIT_IDLE_TIMEOUT"
ENV_MAX_QUEUED = "AGENTKIT_MAX_QUEUED"
ENV_MAX_SESSIONS = "AGENTKIT_MAX_SESSIONS"
ENV_MAX_TURNS = "AGENTKIT_MAX_TURNS"
ENV_MAX_BUDGET_USD = "AGENTKIT_MAX_BUDGET_USD"
ENV_SESSION_BUDGET_USD = "AGENTKIT_SESSION_BUDGET_USD"
ENV_MEMORY_ID = "AGENTKIT_MEMORY_ID"
ENV_RECALL_NAMESPACES = "AGENTKIT_RECALL_NAMESPACES"
ENV_RECALL_TIMEOUT_MS = "AGENTKIT_RECALL_TIMEOUT_MS"
ENV_GATEWAY_URL = "AGENTKIT_GATEWAY_URL"
ENV_ACTOR_HEADER = "AGENTKIT_ACTOR_HEADER"
ENV_WORKSPACE = "AGENTKIT_WORKSPACE"
#: Workspace snapshots (:mod:`runtime.workspace`): the largest archive accepted inline (compressed bytes), what
#: it may unpack to, how many entries it may hold, the largest single file, and the largest patch returned.
ENV_WORKSPACE_MAX_BYTES = "AGENTKIT_WORKSPACE_MAX_BYTES"
ENV_WORKSPACE_MAX_UNPACKED_BYTES = "AGENTKIT_WORKSPACE_MAX_UNPACKED_BYTES"
ENV_WORKSPACE_MAX_FILES = "AGENTKIT_WORKSPACE_MAX_FILES"
ENV_WORKSPACE_MAX_FILE_BYTES = "AGENTKIT_WORKSPACE_MAX_FILE_BYTES"
ENV_WORKSPACE_MAX_PATCH_BYTES = "AGENTKIT_WORKSPACE_MAX_PATCH_BYTES"
#: Protected-path classes (:mod:`runtime.workspace.protected_paths`) a patch may carry, comma-separated; none by
#: default (CI configuration, CODEOWNERS, new executable bits, … are withheld and listed in ``withheld_files``).
ENV_WORKSPACE_ALLOW_PROTECTED = "AGENTKIT_WORKSPACE_ALLOW_PROTECTED"
#: ``s3://<bucket>/<prefix>``: the only place snapshots too large to send inline may be read from (the stack's
#: workspace bucket and stage prefix); unset: no S3 snapshots. And the largest such archive.
ENV_WORKSPACE_S3_URI = "AGENTKIT_WORKSPACE_S3_URI"
ENV_WORKSPACE_MAX_S3_BYTES = "AGENTKIT_WORKSPACE_MAX_S3_BYTES"
ENV_WORKSPACE_RETENTION_HOURS = "AGENTKIT_WORKSPACE_RETENTION_HOURS"
#: Asynchronous jobs (:mod:`runtime.jobs`): the SQS queue their progress and result events go to (unset: jobs off),
#: the least time between two progress events of one job, how long a job's turn may take, and the bucket a patch
#: too large for one message goes to.
ENV_JOB_EVENTS_QUEUE_URL = "AGENTKIT_JOB_EVENTS_QUEUE_URL"
ENV_JOB_PROGRESS_SECONDS = "AGENTKIT_JOB_PROGRESS_SECONDS"
ENV_JOB_TIMEOUT = "AGENTKIT_JOB_TIMEOUT"
ENV_WORKSPACE_BUCKET = "AGENTKIT_WORKSPACE_BUCKET"
ENV_AWS_REGION = "AWS_REGION"
ENV_CLAUDE_CONFIG_DIR = "CLAUDE_CONFIG_DIR"
ENV_SANDBOX = "AGENTKIT_SANDBOX"
ENV_NETWORK_HOSTS = "AGENTKIT_NETWORK_HOSTS"
ENV_TOOL_DISK_MB = "AGENTKIT_TOOL_DISK_MB"
#: Memory (MiB) and processes one session's CLI process tree may use (runtime.guard.resources).
ENV_SESSION_MEMORY_MB = "AGENTKIT_SESSION_MEMORY_MB"
ENV_SESSION_PROCESSES = "AGENTKIT_SESSION_PROCESSES"
ENV_NETWORK_ALLOWED_CIDRS = "AGENTKIT_NETWORK_ALLOWED_CIDRS"
ENV_AGENT_PROFILE = "AGENTKIT_AGENT_PROFILE"
#: JSON approval rules (runtime.approvals.rules) that replace the agent definition's; the stack passes cdk.json's.
ENV_APPROVALS = "AGENTKIT_APPROVALS"
#: ``v1`` | ``v2``: the AgentCore Runtime platform version the stack deployed (start-up order, docs/platform.md).
ENV_PLATFORM_VERSION = "AGENTKIT_PLATFORM_VERSION"

#: The one ``AGENTKIT_SANDBOX`` value that runs the agent's commands without OS isolation where the runtime is on
#: AgentCore (``off`` is refused there): any such command can read the execution role's credentials from the
#: microVM's metadata service and reach its platform server (docs/platform-security.md).
SANDBOX_UNSAFE = "unsafe-no-isolation"

#: The CloudWatch namespace of the agent's metrics unless configured (runtime, stack config, webhook, IAM).
DEFAULT_METRICS_NAMESPACE = "AgentCoreClaudeKit"

#: The largest prompt the runtime accepts unless ``AGENTKIT_MAX_PROMPT_CHARS`` says otherwise: room for a
#: pull-request review of a 190 kB diff (the ready workflow's cut) plus its instructions, about 50k tokens,
#: well inside the model's context next to Claude Code's own system prompt and tools.
DEFAULT_MAX_PROMPT_CHARS = 200_000

#: Workspace snapshot limits unless configured (docs/repository-work.md explains the choice). The inline archive
#: travels base64-encoded in the JSON body (4/3 of its size): 20 MiB is about 27 MiB on the wire, well inside
#: AgentCore's 100 MB payload limit next to the largest prompt, and holds the tracked files of most repositories.
DEFAULT_WORKSPACE_MAX_BYTES = 20 * 1024 * 1024
#: Unpacked: ten times the inline cap (source compresses 3-10x; anything far beyond is a bomb).
DEFAULT_WORKSPACE_MAX_UNPACKED_BYTES = 200 * 1024 * 1024
DEFAULT_WORKSPACE_MAX_FILES = 50_000
DEFAULT_WORKSPACE_MAX_FILE_BYTES = 25 * 1024 * 1024
#: The patch goes back in the reply; a rewrite bigger than this is more than a reviewer can read.
DEFAULT_WORKSPACE_MAX_PATCH_BYTES = 20 * 1024 * 1024
#: An archive read from S3 does not travel in the body: it may be larger than the inline cap (the unpacked-bytes
#: limit still applies to what it holds).
DEFAULT_WORKSPACE_MAX_S3_BYTES = 100 * 1024 * 1024
