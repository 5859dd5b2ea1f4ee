"""Asynchronous jobs: a turn that answers ``202`` at once and reports its progress and result through SQS.

For work longer than a caller can wait (the webhook worker Lambda runs at most 15 minutes; AgentCore keeps a busy
session alive up to its maximum lifetime). The request and the events are in :mod:`runtime.jobs.protocol`, the
flow in :mod:`runtime.jobs.service`, delivery in :mod:`runtime.jobs.sink` and :mod:`runtime.jobs.outbox`; the
contract for consumers is docs/http-api.md#asynchronous-jobs.
"""
