"""``agentkit``: the slim client of AgentCore Claude Kit (boto3 is its only third-party dependency).

It invokes a deployed agent (or a local runtime), stops sessions, and reads status, logs, cost and a
self-contained HTML report from CloudWatch or from the files a local run writes. It never imports the
container package (``runtime``), and the container never imports it.
"""

__version__ = "0.2.0"
