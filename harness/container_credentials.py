"""The ECS/AgentCore container credentials endpoint on loopback: what botocore's container provider reads from
``AWS_CONTAINER_CREDENTIALS_FULL_URI`` (a JSON document with ``AccessKeyId``, ``SecretAccessKey``, ``Token`` and
``Expiration``). Each GET answers new temporary keys, so a test can tell which fetch signed what."""

from __future__ import annotations

import datetime as dt
import json
import time
from http.server import BaseHTTPRequestHandler

from harness.loopback import LoopbackServer, send_reply


class ContainerCredentials(LoopbackServer):
    """A context manager: the endpoint at :attr:`full_uri`. Fetch ``n`` (from 1) gets the access key id
    ``ASIA`` + ``n`` in 16 digits, valid for an hour; :attr:`calls` holds when each fetch came (``time.time()``)."""

    def __init__(self) -> None:
        self.calls: list[float] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.calls.append(time.time())
                expires = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
                body = json.dumps(
                    {
                        "AccessKeyId": f"ASIA{len(outer.calls):016d}",
                        "SecretAccessKey": "restored-secret",
                        "Token": "restored-token",
                        "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    }
                ).encode()
                send_reply(self, 200, body)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler, poll_interval=0.05)

    @property
    def full_uri(self) -> str:
        """The value for ``AWS_CONTAINER_CREDENTIALS_FULL_URI``."""
        return f"{self.url}/creds"
