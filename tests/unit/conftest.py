"""Fixtures shared by the unit tests of ``agentkit doctor`` (tests/unit/test_doctor*.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws


@pytest.fixture
def aws() -> Iterator[None]:
    """moto's in-memory AWS (STS, IAM, Organizations, Secrets Manager, SSM, CloudFormation ...)."""
    with mock_aws():
        yield
