"""Suite-wide settings: async tests run on asyncio (anyio's pytest plugin), AWS calls never leave the machine."""

from __future__ import annotations

import os

import pytest

# No test may reach a real AWS endpoint or use real credentials: a developer's own keys, session token and
# profile are replaced, not kept (boto3 prefers environment keys, but a profile could still name an SSO
# session or a credential process).
os.environ["AWS_ACCESS_KEY_ID"] = "testing"
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
for _name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
    os.environ.pop(_name, None)
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
