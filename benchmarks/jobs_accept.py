"""How fast an asynchronous job is answered: the ``202`` against the synchronous reply of the same turn.

``python -m runtime`` with the fake CLI and a job events queue on a moto server (loopback). Each round sends one
job and one synchronous turn with the same prompt (a turn of about 0.9 s: two ``[slow:...]`` steps) on fresh
sessions, interleaved. The ``202`` must not wait for the turn: target, accept time / synchronous turn ≤ 0.25.

Run: ``.venv/bin/python benchmarks/jobs_accept.py [-n 10]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from pathlib import Path

from _harness import banner, describe, median, verdict

from harness.runtime_server import fake_cli_server, session_id

PROMPT = "[read:a.txt] [slow:600] [slow:300] done"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def run(n: int) -> None:
    import boto3
    from moto.server import ThreadedMotoServer

    banner("asynchronous job: 202 vs the synchronous reply of the same turn")
    print(load())
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    moto.start()
    host, port = moto.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    sqs = boto3.client(
        "sqs",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    queue = sqs.create_queue(QueueName="jobs-bench")["QueueUrl"]
    accepts: list[float] = []
    turns: list[float] = []
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            fake_cli_server(
                Path(tmp),
                AGENTKIT_SANDBOX="off",
                AWS_ENDPOINT_URL_SQS=endpoint,
                AWS_ACCESS_KEY_ID="testing",
                AWS_SECRET_ACCESS_KEY="testing",
                AWS_REGION="us-east-1",
                AGENTKIT_JOB_EVENTS_QUEUE_URL=queue,
            ) as srv,
        ):
            for i in range(n):
                job = {"async": True, "job": {"id": f"bench-{uuid.uuid4().hex[:8]}", "context": {}}}
                started = time.perf_counter()
                reply = srv.invoke(PROMPT, session=session_id(f"bench-job-{i}"), stream=False, extra=job)
                accepts.append(time.perf_counter() - started)
                if reply.status != 202:
                    raise RuntimeError(f"job refused: {reply.status} {reply.body}")
                started = time.perf_counter()
                reply = srv.invoke(PROMPT, session=session_id(f"bench-sync-{i}"), stream=False)
                turns.append(time.perf_counter() - started)
                if reply.status != 200:
                    raise RuntimeError(f"turn failed: {reply.status} {reply.body}")
                srv.until_idle(timeout=30)
    finally:
        moto.stop()
    print(describe("202 (job accepted)", accepts))
    print(describe("synchronous reply", turns))
    ratio = median(accepts) / median(turns)
    print(f"accept / synchronous turn: {ratio:.3f} ({verdict(ratio, at_most=0.25)})")
    print(load())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10)
    run(parser.parse_args().n)
