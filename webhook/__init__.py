"""The issue front door: the Lambda functions behind the issue-tracker webhooks (GitHub, GitLab, Jira).

``webhook.receiver.handler`` verifies a delivery and queues it; ``webhook.worker.handler`` runs the turn on the
AgentCore Runtime and answers on the issue; ``webhook.reporter.handler`` reports fix jobs. The CDK side that
deploys them is ``infra/webhook``; the Lambda asset is this package (``infra/webhook/asset.py``).
"""
