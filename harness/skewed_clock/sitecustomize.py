"""Test-only: put this directory first on ``PYTHONPATH`` and set ``FAKE_CLOCK_SKEW_S`` to run a process whose
wall clock (``time.time``, ``time.time_ns``) is that many seconds off, like a microVM with a skewed clock.
Monotonic clocks are left alone. Nothing in the product imports this."""

import os
import time

_skew = float(os.environ.get("FAKE_CLOCK_SKEW_S") or 0)
if _skew:
    _time, _time_ns = time.time, time.time_ns
    time.time = lambda: _time() + _skew
    time.time_ns = lambda: _time_ns() + int(_skew * 1e9)
