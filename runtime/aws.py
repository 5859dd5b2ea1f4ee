"""Every boto3 client the runtime uses is built here, with one retry configuration, safe to snapshot.

Retries: botocore's ``standard`` mode with :data:`MAX_ATTEMPTS` attempts in all (the first call and 3 retries)
for every service. botocore's ``retries`` config: ``total_max_attempts`` counts the first call, ``max_attempts``
does not (docstring of ``botocore.config.Config``). Timeouts differ by use: metrics must never hold a turn, so
CloudWatch gets shorter ones than AgentCore. Endpoint overrides come from boto3's own variables
(``AWS_ENDPOINT_URL_CLOUDWATCH``, ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``, ``AWS_ENDPOINT_URL_S3``,
``AWS_ENDPOINT_URL_SQS``).

Snapshots (AgentCore Runtime V2 restores every session from one memory image, see ``docs/platform.md``):
botocore resolves credentials when a client is created and keeps them, with its connection pool, for the
client's life. A client built before the snapshot would hand every restored session the same credentials
(which expire) and sockets opened by another machine. So the objects returned here are :class:`Restorable`
proxies: the real client (and with it the credentials) is built on first use, and :func:`reset_all` — called
once a restore is detected (:mod:`runtime.process.restore`) — drops them so the next call builds fresh ones. What is the
same for the life of an image version (the parsed service models, ~tens of ms per service) lives in one shared
botocore loader, warmed before the snapshot by :func:`warm`, so a rebuild after a restore costs little.

boto3 is imported when a client is built, not when this module is imported (the server starts without it).
IAM actions: none here (each caller documents its own).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable
from typing import Any

#: Attempts per call in all (the first call plus retries), for every AWS client of the runtime.
MAX_ATTEMPTS = 4
RETRY_MODE = "standard"
#: The services the runtime's clients talk to (what :func:`warm` loads).
SERVICES = ("bedrock-agentcore", "cloudwatch", "sqs")

_loader_lock = threading.Lock()
_loader: Any = None
_live: weakref.WeakSet[Restorable] = weakref.WeakSet()
_live_lock = threading.Lock()


def client_config(*, connect_timeout: float, read_timeout: float) -> Any:
    """The ``botocore.config.Config`` of every runtime client: one retry policy, the given timeouts."""
    from botocore.config import Config

    return Config(
        retries={"mode": RETRY_MODE, "total_max_attempts": MAX_ATTEMPTS},
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
    )


def shared_loader() -> Any:
    """The process's botocore data loader (service models, endpoint rules): pure data, safe to snapshot."""
    global _loader
    with _loader_lock:
        if _loader is None:
            from botocore.loaders import create_loader

            _loader = create_loader()
        return _loader


def new_session(region: str | None) -> Any:
    """A fresh ``boto3.Session``: its own credential resolver (nothing cached from before a restore), the shared
    loader."""
    import boto3
    import botocore.session

    core = botocore.session.get_session()
    core.register_component("data_loader", shared_loader())
    return boto3.Session(botocore_session=core, region_name=region)


class Restorable:
    """A boto3 client or session built on first use and rebuilt after :meth:`reset` (attribute access is
    forwarded to it, so callers use it as the object itself)."""

    def __init__(self, build: Callable[[], Any], *, kind: str) -> None:
        self._build = build
        self._kind = kind
        self._target: Any = None
        self._lock = threading.Lock()
        self.builds = 0
        with _live_lock:
            _live.add(self)

    def target(self) -> Any:
        """The object now behind the proxy (built if needed)."""
        target = self._target
        if target is None:
            with self._lock:
                if self._target is None:
                    self._target = self._build()
                    self.builds += 1
                target = self._target
        return target

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.target(), name)

    def reset(self) -> None:
        """Forget the object (its credentials and connections); the next use builds a new one."""
        with self._lock:
            old, self._target = self._target, None
        close = getattr(old, "close", None)  # botocore clients close their connection pool
        if callable(close):
            with contextlib.suppress(Exception):  # sockets from before a restore may already be dead
                close()

    def __repr__(self) -> str:
        return f"<Restorable {self._kind} built={self._target is not None}>"


def reset_all() -> int:
    """Reset every live :class:`Restorable` (after a restore). Returns how many were reset."""
    with _live_lock:
        live = list(_live)
    for item in live:
        item.reset()
    return len(live)


def warm(services: tuple[str, ...] = SERVICES) -> None:
    """Parse the service models (and endpoint rules) into the shared loader, without resolving credentials or
    opening a connection: start-up work that a V2 snapshot can keep."""
    loader = shared_loader()
    for service in services:
        loader.load_service_model(service, "service-2")
        loader.load_service_model(service, "endpoint-rule-set-1")
    loader.load_data("endpoints")
    loader.load_data("partitions")
    loader.load_data("sdk-default-configuration")


def _client(service: str, region: str | None, *, connect_timeout: float, read_timeout: float) -> Restorable:
    def build() -> Any:
        return new_session(region).client(
            service,
            config=client_config(connect_timeout=connect_timeout, read_timeout=read_timeout),
        )

    return Restorable(build, kind=f"{service} client")


def cloudwatch_client(region: str | None) -> Any:
    """CloudWatch (``PutMetricData``): short timeouts, metrics never hold a turn."""
    return _client("cloudwatch", region, connect_timeout=2, read_timeout=5)


def agentcore_client(region: str | None) -> Any:
    """AgentCore data plane (Memory events and records)."""
    return _client("bedrock-agentcore", region, connect_timeout=3, read_timeout=10)


def s3_client(region: str | None) -> Any:
    """S3 (``GetObject`` of workspace snapshots, :mod:`runtime.workspace.s3`): a snapshot of up to
    ``AGENTKIT_WORKSPACE_MAX_S3_BYTES`` may take a while to read."""
    return _client("s3", region, connect_timeout=5, read_timeout=60)


def sqs_client(region: str | None) -> Any:
    """SQS (``SendMessage`` of job events, :mod:`runtime.jobs.sink`): a send is small; what the retries cannot
    deliver is kept on disk and sent again later, so a call never waits long."""
    return _client("sqs", region, connect_timeout=3, read_timeout=10)


def session(region: str | None) -> Any:
    """A ``boto3.Session`` (for signing the gateway's requests; credentials are fetched per request)."""
    return Restorable(lambda: new_session(region), kind="session")
