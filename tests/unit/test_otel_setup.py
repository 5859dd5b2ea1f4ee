"""The background OpenTelemetry set-up: when it runs, what it loads, and that it never takes the runtime down.

The set-up callable is injected (the real one installs a global tracer provider once per process; the
functional test in tests/infra/test_dockerfile.py runs it for real under the image's CMD).
"""

from __future__ import annotations

import threading

from runtime.observe.otel_setup import (
    ENV_OTEL_DISABLED_INSTRUMENTATIONS,
    RUNTIME_INSTRUMENTATIONS,
    OtelSetup,
    disabled_instrumentations,
    installed_instrumentors,
    otel_requested,
)

IMAGE_ENV = {"OTEL_PYTHON_DISTRO": "aws_distro", "OTEL_PYTHON_CONFIGURATOR": "aws_configurator"}


def test_requested_only_when_a_distro_or_configurator_is_named() -> None:
    assert otel_requested(IMAGE_ENV)
    assert otel_requested({"OTEL_PYTHON_CONFIGURATOR": "aws_configurator"})
    assert not otel_requested({})
    assert not otel_requested({**IMAGE_ENV, "OTEL_SDK_DISABLED": "true"})


def test_only_the_runtimes_instrumentations_stay_enabled() -> None:
    installed = installed_instrumentors()
    assert {"botocore", "starlette", "requests"} <= set(installed)  # what the distro ships
    disabled = disabled_instrumentations(installed).split(",")
    assert "starlette" in disabled and "requests" in disabled
    assert not RUNTIME_INSTRUMENTATIONS & set(disabled)


def test_runs_the_set_up_with_the_disabled_list_in_the_environment() -> None:
    env = dict(IMAGE_ENV)
    seen: list[str] = []
    setup = OtelSetup(
        env,
        initialize=lambda: seen.append(env[ENV_OTEL_DISABLED_INSTRUMENTATIONS]),
        instrumentors=lambda: ["botocore", "flask", "logging", "starlette"],
    )
    thread = threading.Thread(target=setup.run)
    thread.start()
    assert setup.wait(10) and setup.ready
    thread.join()
    assert seen == ["flask,starlette"]
    assert setup.error is None and setup.seconds is not None


def test_an_explicit_disabled_list_is_kept() -> None:
    env = {**IMAGE_ENV, ENV_OTEL_DISABLED_INSTRUMENTATIONS: "botocore"}
    setup = OtelSetup(env, initialize=lambda: None, instrumentors=lambda: ["botocore", "flask"])
    setup.run()
    assert env[ENV_OTEL_DISABLED_INSTRUMENTATIONS] == "botocore"


def test_nothing_happens_without_a_distro() -> None:
    calls: list[int] = []
    setup = OtelSetup({}, initialize=lambda: calls.append(1))
    setup.run()
    assert calls == [] and setup.ready


def test_a_failing_set_up_is_logged_and_releases_waiters(caplog) -> None:
    def boom() -> None:
        raise RuntimeError("exporter misconfigured")

    setup = OtelSetup(dict(IMAGE_ENV), initialize=boom, instrumentors=lambda: [])
    setup.run()
    assert setup.ready and isinstance(setup.error, RuntimeError)
    assert "spans are not exported" in caplog.text


def test_waiting_for_a_set_up_that_never_started_does_not_block() -> None:
    assert OtelSetup(dict(IMAGE_ENV), initialize=lambda: None).wait(0.01) is True


def test_scheduled_set_up_makes_waiters_wait_until_it_ran() -> None:
    setup = OtelSetup(dict(IMAGE_ENV), initialize=lambda: None, instrumentors=lambda: [])
    assert setup.schedule() is True
    assert setup.wait(0.05) is False  # scheduled, not run yet
    setup.run()
    assert setup.wait(0.05) is True


def test_nothing_is_scheduled_without_a_distro() -> None:
    setup = OtelSetup({}, initialize=lambda: None)
    assert setup.schedule() is False
    assert setup.wait(0.01) is True
