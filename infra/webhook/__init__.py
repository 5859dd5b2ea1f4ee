"""The CDK side of the issue webhook: the :class:`~infra.webhook.construct.IssueWebhook` construct and its parts.

``construct`` composes the receiver, the task queue and the worker; ``fix`` adds the fix-job reporter and grants;
``secrets`` the per-tracker secrets; ``props`` the construct's settings and their checks; ``trackers`` each
tracker's CDK settings; ``config`` the ``agentkit.webhook`` keys of ``cdk.json``; ``asset`` the Lambda code.
The Lambda code itself is the top-level ``webhook`` package.

Nothing is re-exported here: :mod:`infra.config` imports :mod:`infra.webhook.config`, and the construct imports
:mod:`infra.config` (through ``props`` and ``infra.nag``), so a re-export of the construct here would be a cycle.
"""
