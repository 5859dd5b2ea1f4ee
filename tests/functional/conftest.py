"""Shared fixtures for functional tests: a moto server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto.server import ThreadedMotoServer

from harness.runtime_server import free_port


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def create_memory(endpoint: str, name: str = "agentkit_test") -> str:
    """A Memory created through the control plane on the moto server; returns its id."""
    control = boto3.client("bedrock-agentcore-control", region_name="us-east-1", endpoint_url=endpoint)
    return control.create_memory(name=name, eventExpiryDuration=30)["memory"]["id"]
