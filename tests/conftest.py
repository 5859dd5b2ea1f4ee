"""Suite-wide settings: async tests run on asyncio (anyio's pytest plugin), AWS calls never leave the machine."""

from __future__ import annotations

import os

import pytest

# No test may reach a real AWS endpoint or use real credentials.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
