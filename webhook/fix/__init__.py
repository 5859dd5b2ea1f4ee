"""Fix jobs: ``/agent fix`` (or the fix label) proposes the agent's change as a pull/merge request.

``jobs`` is the job, its states and the conditional writes that move it; ``worker`` starts a job (snapshot,
invocation, progress comment); ``repos`` reaches the target repository through the tracker's API; ``stop``
ends a running job (``/agent stop``); ``gate`` decides who may start or stop one and how many run;
``config`` the fix settings. The reporter (:mod:`webhook.reporter`) reports each job's result.
"""
