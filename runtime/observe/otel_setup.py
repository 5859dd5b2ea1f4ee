"""OpenTelemetry set-up: in the background after ``/ping`` answers (platform V1), or before the server listens (V2).

The image used to start under ``opentelemetry-instrument``: its ``sitecustomize`` loads the ADOT distro, the
configurator (tracer/logger providers, OTLP exporters) and every installed instrumentation (about 50 entry
points) before ``python -m runtime`` runs its first line: 2.6-5 s to a healthy ``/ping`` against 0.8-1.5 s for a
bare ``BedrockAgentCoreApp``. The image now runs ``python -m runtime`` and this module does the same set-up
programmatically, in a daemon thread once the server is up, with the same public entry point the wrapper's
``sitecustomize`` calls (``opentelemetry.instrumentation.auto_instrumentation.initialize``) — so the distro
and configurator named by ``OTEL_PYTHON_DISTRO`` / ``OTEL_PYTHON_CONFIGURATOR`` (``aws_distro`` /
``aws_configurator`` in the image) and AgentCore's preset ``OTEL_*`` exporter variables apply unchanged.

Only the instrumentations the runtime uses are loaded (:data:`RUNTIME_INSTRUMENTATIONS`: botocore for the
Memory / CloudWatch calls, logging for trace ids in log records) unless ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS``
is set explicitly. The HTTP server span the Starlette instrumentation used to make is replaced by the runtime's
own ``invoke_agent`` span, parented on the trace context AgentCore sends (:mod:`runtime.observe.baggage`).

Spans started before the set-up finishes would go to the no-op provider: a turn waits for :func:`wait_ready`
(bounded) before its first span (``Observer.spans_ready``). Under the old wrapper (a real tracer
provider is already installed) nothing is done.

On AgentCore Runtime V2 the set-up runs before the snapshot, so the providers' resource, with its
``service.instance.id`` (a random id the SDK draws once per pid), is shared by every restored session:
:func:`refresh_instance_resource` gives each restored process its own (:mod:`runtime.process.restore` runs it).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, MutableMapping

logger = logging.getLogger(__name__)

#: Variables naming a distro / configurator: when either is set, OpenTelemetry is wanted.
ENV_OTEL_DISTRO = "OTEL_PYTHON_DISTRO"
ENV_OTEL_CONFIGURATOR = "OTEL_PYTHON_CONFIGURATOR"
ENV_OTEL_DISABLED_INSTRUMENTATIONS = "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"
ENV_OTEL_SDK_DISABLED = "OTEL_SDK_DISABLED"

#: Instrumentor entry-point names the runtime needs (everything else installed stays unloaded).
RUNTIME_INSTRUMENTATIONS = frozenset({"botocore", "logging"})

INSTRUMENTOR_GROUP = "opentelemetry_instrumentor"


def otel_requested(env: Mapping[str, str]) -> bool:
    """True when the environment asks for OpenTelemetry (a distro or configurator is named) and the SDK is
    not disabled."""
    if env.get(ENV_OTEL_SDK_DISABLED, "").strip().lower() == "true":
        return False
    return bool(env.get(ENV_OTEL_DISTRO) or env.get(ENV_OTEL_CONFIGURATOR))


def provider_installed() -> bool:
    """True when a real tracer provider is already the global one (e.g. set up by ``opentelemetry-instrument``)."""
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def disabled_instrumentations(installed: list[str], keep: frozenset[str] = RUNTIME_INSTRUMENTATIONS) -> str:
    """The ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` value that leaves only ``keep`` enabled."""
    return ",".join(sorted(name for name in set(installed) if name not in keep))


def installed_instrumentors() -> list[str]:
    from importlib.metadata import entry_points

    return [ep.name for ep in entry_points(group=INSTRUMENTOR_GROUP)]


def _auto_initialize() -> None:
    from opentelemetry.instrumentation.auto_instrumentation import initialize

    initialize()


class OtelSetup:
    """Runs the distro/configurator/instrumentor set-up once, off the start path.

    Args:
        env: the process environment (mutated: the disabled-instrumentations default is written into it, as
            the distro reads it from there).
        initialize: the set-up itself (default: OpenTelemetry's auto-instrumentation ``initialize``).
        instrumentors: lists the installed instrumentor names (injectable for tests).
    """

    def __init__(
        self,
        env: MutableMapping[str, str] | None = None,
        *,
        initialize: Callable[[], None] = _auto_initialize,
        instrumentors: Callable[[], list[str]] = installed_instrumentors,
    ) -> None:
        self.env = os.environ if env is None else env
        self._initialize = initialize
        self._instrumentors = instrumentors
        self._ready = threading.Event()
        self.started = False
        self.seconds: float | None = None
        self.error: BaseException | None = None

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def schedule(self) -> bool:
        """Declare that :meth:`run` will be called (from a background thread): from now on :meth:`wait` blocks
        until it has finished. Returns False (and declares nothing) when there is nothing to set up."""
        if not otel_requested(self.env):
            return False
        self.started = True
        return True

    def run(self) -> None:
        """Set up now, in this thread (the background thread calls this). Never raises."""
        self.started = True
        started = time.perf_counter()
        try:
            if not otel_requested(self.env) or provider_installed():
                return
            if ENV_OTEL_DISABLED_INSTRUMENTATIONS not in self.env:
                self.env[ENV_OTEL_DISABLED_INSTRUMENTATIONS] = disabled_instrumentations(
                    self._instrumentors()
                )
            self._initialize()
            self.seconds = time.perf_counter() - started
            logger.info("OpenTelemetry set up in the background in %.2f s", self.seconds)
        except Exception as exc:  # telemetry must never take the runtime down
            self.error = exc
            logger.warning("OpenTelemetry set-up failed; spans are not exported: %r", exc)
        finally:
            self._ready.set()

    def wait(self, timeout: float) -> bool:
        """Block until the set-up finished (or was never wanted). False on timeout."""
        if not self.started:
            return True
        return self._ready.wait(timeout)


_current: OtelSetup | None = None


def install(setup: OtelSetup) -> OtelSetup:
    """Make ``setup`` the process's set-up (what :func:`wait_ready` waits for)."""
    global _current
    _current = setup
    return setup


def wait_ready(timeout: float = 10.0) -> bool:
    """Wait for the process's set-up, if one was started. Called before the first span of an invocation."""
    setup = _current
    return True if setup is None else setup.wait(timeout)


def refresh_instance_resource(instance_id: str, providers: list[object] | None = None) -> int:
    """Set ``service.instance.id`` of ``providers`` (default: the installed tracer and logger providers) to
    ``instance_id``. Returns how many were updated (0 without the OpenTelemetry SDK or with no-op providers).

    The SDK renews this attribute only in its at-fork handler (``TracerProvider._handle_fork``), which a snapshot
    restore never runs; the same private ``_update_resource`` that handler uses is called here
    (``tests/unit/test_restore.py`` fails if the SDK drops it).
    """
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, Resource
    except ImportError:
        return 0
    if providers is None:
        providers = [trace.get_tracer_provider()]
        try:
            from opentelemetry import _logs

            providers.append(_logs.get_logger_provider())
        except ImportError:
            pass
    updated = 0
    for provider in providers:
        update = getattr(provider, "_update_resource", None)
        if callable(update):
            update(Resource({SERVICE_INSTANCE_ID: instance_id}))
            updated += 1
    return updated


def is_ready() -> bool:
    setup = _current
    return setup is None or not setup.started or setup.ready


__all__ = [
    "RUNTIME_INSTRUMENTATIONS",
    "OtelSetup",
    "disabled_instrumentations",
    "install",
    "is_ready",
    "otel_requested",
    "provider_installed",
    "refresh_instance_resource",
    "wait_ready",
]
