# AgentCore runtime image for the Claude Agent SDK agent.
# Built for linux/arm64 by CDK (DockerImageAsset or CodeBuild); the platform is not pinned here.
# The claude-agent-sdk wheel bundles the Claude Code CLI for aarch64, so no Node is installed.
# From ECR Public (AWS's mirror of the Docker official image): no Docker Hub rate limits in CodeBuild.
FROM public.ecr.aws/docker/library/python:3.11.14-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# The OS sandbox around the agent's commands (Claude Code's sandbox: bubblewrap + socat). Versions are not pinned
# so Debian security updates apply on rebuild (pins would break the build when bookworm supersedes them).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap socat \
    && rm -rf /var/lib/apt/lists/*

# Dependencies first (fully pinned), so code changes do not reinstall them.
COPY requirements/runtime.txt /app/requirements/runtime.txt
RUN pip install --no-cache-dir --only-binary=:all: -r /app/requirements/runtime.txt

# The CLI refuses bypass-permissions as root: run as an unprivileged user with writable state dirs.
RUN groupadd --system --gid 10001 agent \
    && useradd --system --uid 10001 --gid agent --create-home --home-dir /home/agent --shell /usr/sbin/nologin agent \
    && mkdir -p /home/agent/.claude /home/agent/tmp /home/agent/.cache /home/agent/state \
    && chown -R agent:agent /home/agent

COPY runtime/ /app/runtime/
# The stage's agent directory (cdk.json `agent_dir`, staged into the build context as agent/ by
# infra/image_context.py): its definition, its tools package and the wheels its tools need.
COPY agent/ /app/agent/
# Bytecode compiled at build time: PYTHONDONTWRITEBYTECODE stops the runtime writing it, so without this every
# fresh microVM would compile the runtime's modules on start-up (pip already compiled the dependencies).
RUN if [ -f /app/agent/requirements.txt ]; then \
      pip install --no-cache-dir --only-binary=:all: -r /app/agent/requirements.txt; \
    fi \
    && python -m compileall -q /app/runtime /app/agent

# AGENTKIT_HOST: the runtime binds 127.0.0.1 unless told otherwise (it has no authentication of its own); in the
# deployed image AgentCore authenticates every caller before a request reaches the container, and its port must be
# reachable from outside the container, so the image opts in to all interfaces (docs/configuration.md).
ENV HOME=/home/agent \
    AGENTKIT_HOST=0.0.0.0 \
    AGENTKIT_PORT=8080 \
    AGENTKIT_STATE_DIR=/home/agent/state \
    AGENTKIT_AGENT_DIR=/app/agent \
    CLAUDE_CONFIG_DIR=/home/agent/.claude \
    CLAUDE_CODE_TMPDIR=/home/agent/tmp \
    XDG_CACHE_HOME=/home/agent/.cache \
    DISABLE_AUTOUPDATER=1 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    OTEL_PYTHON_DISTRO=aws_distro \
    OTEL_PYTHON_CONFIGURATOR=aws_configurator

USER 10001:10001
EXPOSE 8080

# AgentCore Runtime presets the OTLP exporter environment (traces/logs to CloudWatch). The runtime sets up
# OpenTelemetry itself, in the background once /ping answers, with the ADOT distro and configurator named
# above (what `opentelemetry-instrument` did before the first line ran, 2-4 s of start-up):
# see runtime/observe/otel_setup.py.
CMD ["python", "-m", "runtime"]
