"""The one place ``agentkit`` builds a boto3 session and clients, with the AWS CLI's precedence.

Region: ``--region`` > ``AWS_REGION`` > ``AWS_DEFAULT_REGION`` > the profile's ``region`` setting (boto3 on
its own reads only ``AWS_DEFAULT_REGION``; the AWS CLI v2 and the SDKs read ``AWS_REGION`` first). Profile:
``--profile`` > ``AWS_PROFILE`` (read by botocore). Endpoints: botocore's ``AWS_ENDPOINT_URL_<SERVICE>``.

Building a client never raises a botocore exception at the user: a missing region, an unknown profile or
missing credentials become an :class:`~agentkit.errors.AgentkitError` (exit 4) that names the fix.

Env vars: ``AWS_REGION``, ``AWS_DEFAULT_REGION`` (here); ``AWS_PROFILE`` and the rest by botocore.
IAM actions: none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Protocol

from agentkit.env import ENV_DEFAULT_REGION, ENV_REGION
from agentkit.errors import aws_error


class ClientFactory(Protocol):
    """Builds a boto3 client; tests pass one that returns stubbed or moto-backed clients."""

    def __call__(
        self, service: str, *, region: str | None, profile: str | None, config: Any = None
    ) -> Any: ...


def resolve_region(explicit: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The region as the AWS CLI picks it before looking at the profile: ``explicit`` > ``AWS_REGION`` >
    ``AWS_DEFAULT_REGION``; ``None`` leaves it to the profile's configuration."""
    env = os.environ if env is None else env
    return explicit or env.get(ENV_REGION) or env.get(ENV_DEFAULT_REGION) or None


def make_session(*, region: str | None, profile: str | None) -> Any:
    """A ``boto3.session.Session`` for ``region`` (already resolved, or None) and ``profile``.

    Raises:
        botocore.exceptions.ProfileNotFound: the profile does not exist.
    """
    import boto3

    return boto3.session.Session(region_name=region, profile_name=profile)


def boto3_client_factory(service: str, *, region: str | None, profile: str | None, config: Any = None) -> Any:
    """Default :class:`ClientFactory`: a client from :func:`make_session`."""
    return make_session(region=region, profile=profile).client(service, config=config)


class Aws:
    """AWS access for one command: the resolved region and profile, and clients built from them.

    Args:
        region: ``--region`` (None: the environment, then the profile).
        profile: ``--profile`` (None: ``AWS_PROFILE``, then the default profile).
        factory: builds the clients (default :func:`boto3_client_factory`).
        env: the environment to read (default ``os.environ``).
    """

    def __init__(
        self,
        *,
        region: str | None = None,
        profile: str | None = None,
        factory: ClientFactory = boto3_client_factory,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.explicit_region = region
        self.region = resolve_region(region, env)
        self.profile = profile
        self._factory = factory

    def client(self, service: str, *, region: str | None = None, config: Any = None) -> Any:
        """A client for ``service``.

        Region: ``--region`` > ``region`` (where the resource lives, e.g. the region inside a runtime ARN)
        > ``AWS_REGION`` > ``AWS_DEFAULT_REGION`` > the profile's region.

        Raises:
            AgentkitError: no region, unknown profile, or another set-up failure (exit 4, with the fix).
        """
        from botocore.exceptions import BotoCoreError

        chosen = self.explicit_region or region or self.region
        try:
            return self._factory(service, region=chosen, profile=self.profile, config=config)
        except BotoCoreError as exc:
            raise aws_error(exc, action=f"setting up the {service} client") from exc
