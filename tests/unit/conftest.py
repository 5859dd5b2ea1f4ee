"""Fixtures shared by unit tests: moto for ``agentkit doctor`` (tests/unit/test_doctor*.py), and a second event loop
running in a thread (as bedrock-agentcore's worker loop does) for the runtime's cross-loop code."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from moto import mock_aws


@pytest.fixture
def aws() -> Iterator[None]:
    """moto's in-memory AWS (STS, IAM, Organizations, Secrets Manager, SSM, CloudFormation ...)."""
    with mock_aws():
        yield


@pytest.fixture
def worker_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running forever on its own thread; stopped and closed afterwards."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()
