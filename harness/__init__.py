"""The development harness: everything the tests, ``make demo`` and the benchmarks run the product against.

Never deployed (``.dockerignore`` keeps it out of the image) and not part of either distribution. Modules:

- ``fake_claude`` (the fake Claude Code CLI speaking the SDK's stream-json protocol) and ``cli`` (writes its
  executable wrapper);
- ``runtime_server`` (starts ``python -m runtime`` on loopback and talks HTTP to it), ``load``, ``faults``,
  ``procmem``, ``dockerfile``, ``sandbox_tools``, ``snapshot_restore`` (copies a started runtime as a V2
  snapshot restore would);
- loopback stand-ins for what the product calls over HTTP, all served through ``loopback``: ``agentcore_dataplane``,
  ``memory_standin``, ``gateway_standin``, ``tracker_apis`` (+ ``adf_check``), ``otlp_collector``, ``sse_runtime``,
  ``flaky_proxy``, ``stalling_http``;
- ``skewed_clock/``: a ``sitecustomize`` that runs a process with its wall clock off by ``FAKE_CLOCK_SKEW_S``;
- ``docs_tables``: writes the reference tables of ``docs/`` from the code (``python -m harness.docs_tables``).

The Bedrock Runtime stand-in, which the demo and the real-CLI tests point the real CLI at, is ``standins``.
"""
