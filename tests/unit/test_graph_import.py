"""The pre-warm's SDK import and the first invocation's build of the services run on two threads; both import the
runtime's object graph, which has import cycles inside packages, so they must import one at a time (a concurrent
pair failed the first turn with "cannot import name 'Baseline' from partially initialized module")."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from runtime.process import prewarm


class RecordingLock:
    def __init__(self) -> None:
        self.inner = threading.Lock()
        self.held_by: list[str] = []

    def __enter__(self) -> RecordingLock:
        self.inner.acquire()
        self.held_by.append(threading.current_thread().name)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.inner.release()


def test_the_sdk_import_and_the_services_build_take_the_same_import_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import runtime.__main__ as main
    from runtime.http import server

    lock = RecordingLock()
    monkeypatch.setattr(prewarm, "GRAPH_IMPORT", lock)
    built: list[object] = []

    def build(settings: object) -> str:
        built.append(settings)
        return "services"

    monkeypatch.setattr("runtime.wiring.build_services", build)

    main._import_sdk()
    assert server._build_services("settings") == "services"  # type: ignore[arg-type]
    assert len(lock.held_by) == 2 and built == ["settings"]
