"""A command that eats memory stops at its session's limit; the runtime, the session's next turn and another
session go on (``AGENTKIT_SESSION_MEMORY_MB``, ``runtime.guard.resources``).

The REAL runtime with the REAL bundled CLI (``developer`` profile: interpreters run anything) and a Bedrock
stand-in. Session A's command allocates and touches memory in 32 MiB steps, printing each step, up to
:data:`CAP_MB` (so on code without a limit the test fails by reaching it, without exhausting this machine).
Observed on the host: how far the command got and how it ended, what the model was told, ``/ping``'s ``limits``,
the ``SessionLimitHit`` metric and log line, then session A's next turn and a new session B each running a command.

How the limit is enforced depends on the rights the runtime has: as root on this machine the runtime creates a
cgroup per session (v1 or v2, whichever the host has), the kernel kills the command and the runtime tells the model
which limit it hit; as the image's user (no cgroup of its own) each process gets ``RLIMIT_DATA`` and the command's
allocation fails (``MemoryError``). Run as root and as that user:
``scripts/attacks_as_uid.sh 10001 /usr/bin/python3 tests/e2e/test_session_limits.py``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.cli_user import reachable_tmp
from harness.runtime_server import RuntimeServer, session_id
from standins import BedrockStandIn, Reply
from standins.replies import ToolUse
from tests.e2e.real_cli_scene import confined_env

LIMIT_MB = 1024
CAP_MB = 2048
ROOT = os.geteuid() == 0
CGROUPS_HERE = ROOT and (
    Path("/sys/fs/cgroup/cgroup.controllers").is_file()
    or Path("/sys/fs/cgroup/memory/cgroup.procs").is_file()
)

pytestmark = pytest.mark.timeout(400)

HOG = (
    "import sys\n"
    "held = []\n"
    "try:\n"
    f"    while len(held) * 32 < {CAP_MB}:\n"
    "        held.append(b'x' * (32 * 2**20))\n"
    "        print('HELD', len(held) * 32, flush=True)\n"
    "except MemoryError:\n"
    "    print('MEMORYERROR at', len(held) * 32, flush=True)\n"
    "    sys.exit(3)\n"
    "print('REACHED', len(held) * 32, flush=True)\n"
)


@dataclass
class Scene:
    root: Path
    bedrock: BedrockStandIn
    env: dict[str, str]
    emf: Path


@pytest.fixture
def scene() -> Iterator[Scene]:
    with BedrockStandIn() as bedrock, reachable_tmp("ak-limits-") as root:
        emf = root / "metrics.emf"
        env = confined_env(
            root,
            bedrock.url,
            AGENTKIT_SESSION_MEMORY_MB=str(LIMIT_MB),
            AGENTKIT_METRICS="emf",
            AGENTKIT_EMF_FILE=str(emf),
        )
        (root / "ws" / "hog.py").write_text(HOG)
        yield Scene(root, bedrock, env, emf)


def bash(command: str) -> tuple[str, dict[str, Any]]:
    return "Bash", {"command": command, "description": "limits check"}


def tool_result(scene: Scene, tool_id: str) -> str:
    block = scene.bedrock.tool_results().get(tool_id)
    return json.dumps(block) if block else ""


def request_after(scene: Scene, tool_id: str) -> str:
    """The whole model request that carried ``tool_id``'s result (hook context rides along with it)."""
    for request in scene.bedrock.model_requests:
        text = json.dumps(request.body["messages"][-1])
        if tool_id in text:
            return text
    return ""


def turn(scene: Scene, server: RuntimeServer, session: str, prompt: str, *replies: Reply) -> None:
    scene.bedrock.enqueue(*replies)
    reply = server.invoke(prompt, session=session_id(session), timeout=300)
    log = (scene.root / "runtime.log").read_text(errors="replace")[-2000:]
    assert reply.status == 200 and reply.last["type"] == "result", (reply.events[-3:], log)
    assert not reply.last.get("is_error"), reply.last


def test_a_memory_hog_stops_at_its_limit_and_everything_else_goes_on(scene: Scene) -> None:
    prefix = ["unshare", "--uts", "--ipc", "--"] if ROOT else []
    server = RuntimeServer(env=scene.env, log_path=scene.root / "runtime.log", prefix=prefix).start(
        timeout=60
    )
    try:
        deadline = time.monotonic() + 60
        while "limits" not in (answer := server.ping()) and time.monotonic() < deadline:
            time.sleep(0.1)  # platform v1 answers /ping before start-up (which decides the limits) is done
        limits = answer["limits"]
        expected = ("cgroup-v1", "cgroup-v2") if CGROUPS_HERE else ("rlimit",)
        assert limits["enforcement"] in expected and limits["memory_mb"] == LIMIT_MB, limits
        scene.bedrock.reset()
        turn(
            scene,
            server,
            "a",
            "turn one: eat memory",
            Reply.message(ToolUse(*bash("python3 hog.py"), id="toolu_hog")),
            Reply.message(ToolUse(*bash("echo still-here-a"), id="toolu_after_a")),
            Reply.text("answer one"),
        )
        hog = tool_result(scene, "toolu_hog")
        held = [int(n) for n in re.findall(r"HELD (\d+)", hog)]
        print(
            f"\nhog held at most {max(held, default=0)} MiB; enforcement {limits['enforcement']}; tail: {hog[-300:]}"
        )
        assert "REACHED" not in hog and held and max(held) < LIMIT_MB, hog[-600:]
        assert "still-here-a" in tool_result(scene, "toolu_after_a")
        if limits["enforcement"].startswith("cgroup"):
            assert "memory limit" in request_after(scene, "toolu_hog"), request_after(scene, "toolu_hog")[
                -800:
            ]
            assert server.ping()["limits"]["hits"]["memory"] >= 1
            documents = [json.loads(line) for line in scene.emf.read_text().splitlines() if line.strip()]
            assert any("SessionLimitHit" in d and d.get("limit") == "memory" for d in documents), documents[
                -3:
            ]
            assert "hit its memory limit" in (scene.root / "runtime.log").read_text(errors="replace")
        else:
            assert "MEMORYERROR" in hog, hog[-600:]
        # the same session's next turn, and another session whose CLI starts now
        turn(
            scene,
            server,
            "a",
            "turn two: still there?",
            Reply.message(ToolUse(*bash("echo next-turn-ran"), id="toolu_next")),
            Reply.text("answer two"),
        )
        assert "next-turn-ran" in tool_result(scene, "toolu_next")
        assert "turn one" in json.dumps(scene.bedrock.model_requests[-1].body["messages"])
        turn(
            scene,
            server,
            "b",
            "another session",
            Reply.message(ToolUse(*bash("echo b-ran"), id="toolu_b")),
            Reply.text("b done"),
        )
        assert "b-ran" in tool_result(scene, "toolu_b")
        assert server.ping()["status"] in ("Healthy", "HealthyBusy")
    finally:
        server.stop()


#: Six processes of 180 MiB each (pages touched), held for a few seconds: over the limit together, each under it.
MANY = (
    "import subprocess, sys\n"
    "child = 'import time; b = bytearray(180 * 2**20); b[::4096] = b\"x\" * len(b[::4096]); time.sleep(6)'\n"
    "ps = [subprocess.Popen([sys.executable, '-c', child]) for _ in range(6)]\n"
    "print('CODES', [p.wait() for p in ps], flush=True)\n"
)


def test_many_processes_over_the_limit_together(scene: Scene) -> None:
    """cgroup enforcement counts the session as a whole: the out-of-memory killer ends the largest process, a
    command's or, when they are many and small, the CLI's own (the turn fails and says why); either way the
    session's next turn works. rlimit enforcement is per process: each of them is under the limit, so all of them
    finish (the gap docs/security.md states)."""
    (scene.root / "ws" / "many.py").write_text(MANY)
    prefix = ["unshare", "--uts", "--ipc", "--"] if ROOT else []
    server = RuntimeServer(env=scene.env, log_path=scene.root / "runtime.log", prefix=prefix).start(
        timeout=60
    )
    try:
        scene.bedrock.reset()
        scene.bedrock.enqueue(
            Reply.message(ToolUse(*bash("python3 many.py"), id="toolu_many")), Reply.text("many done")
        )
        reply = server.invoke("many processes", session=session_id("many"), timeout=300)
        enforcement = server.ping()["limits"]["enforcement"]
        told = json.dumps(reply.last) + request_after(scene, "toolu_many")
        print(f"\n{enforcement}: {reply.last.get('type')} {tool_result(scene, 'toolu_many')[:200]}")
        if enforcement.startswith("cgroup"):
            assert "memory limit" in told, told[-1500:]
            assert server.ping()["limits"]["hits"]["memory"] >= 1
        else:
            assert reply.last["type"] == "result" and "CODES [0, 0, 0, 0, 0, 0]" in tool_result(
                scene, "toolu_many"
            )
        scene.bedrock.reset()  # a reply an ended CLI never asked for
        turn(
            scene,
            server,
            "many",
            "and now?",
            Reply.message(ToolUse(*bash("echo after-many"), id="toolu_after_many")),
            Reply.text("fine"),
        )
        assert "after-many" in tool_result(scene, "toolu_after_many")
    finally:
        server.stop()


#: Fills one kind of memory that is not a process's private heap in 32 MiB steps up to CAP_MB: a file in the
#: sandbox's /tmp or /dev/shm (tmpfs mounts bubblewrap makes without a size), a memfd, or a shared anonymous
#: mapping. Prints how far it got and how it ended. Python ignores SIGXFSZ, so an RLIMIT_FSIZE hit is an OSError.
SINK = (
    "import mmap, os, sys\n"
    "kind = sys.argv[1]\n"
    "chunk = b'x' * (32 * 2**20)\n"
    "held = 0\n"
    "try:\n"
    "    if kind == 'shared_mmap':\n"
    f"        m = mmap.mmap(-1, {CAP_MB} * 2**20, flags=mmap.MAP_SHARED)\n"
    f"        while held < {CAP_MB}:\n"
    "            m[held * 2**20:(held + 32) * 2**20] = chunk\n"
    "            held += 32\n"
    "    else:\n"
    "        fd = os.memfd_create('x') if kind == 'memfd' else os.open(\n"
    "            '/tmp/fill' if kind == 'tmp' else '/dev/shm/fill', os.O_CREAT | os.O_WRONLY, 0o600)\n"
    f"        while held < {CAP_MB}:\n"
    "            os.write(fd, chunk)\n"
    "            held += 32\n"
    "except (OSError, MemoryError) as exc:\n"
    "    print('STOPPED', kind, held, type(exc).__name__, getattr(exc, 'errno', ''), flush=True)\n"
    "    sys.exit(3)\n"
    "print('REACHED', kind, held, flush=True)\n"
)


def test_tmpfs_shm_and_memfd_files_stop_at_the_limit(scene: Scene) -> None:
    """One process, no fork: a file in the sandbox's /tmp, one in /dev/shm and a memfd each stop at the session's
    limit. cgroup enforcement charges their pages to the session; rlimit enforcement bounds each file
    (``RLIMIT_FSIZE``), not their sum. A shared anonymous mapping is bounded only by a cgroup: printed, asserted
    only there (docs/security.md says what each mode bounds)."""
    (scene.root / "ws" / "sink.py").write_text(SINK)
    prefix = ["unshare", "--uts", "--ipc", "--"] if ROOT else []
    server = RuntimeServer(env=scene.env, log_path=scene.root / "runtime.log", prefix=prefix).start(
        timeout=60
    )
    kinds = ("tmp", "shm", "memfd", "shared_mmap")
    try:
        enforcement = ""
        held: dict[str, int] = {}
        for kind in kinds:
            scene.bedrock.reset()
            scene.bedrock.enqueue(
                Reply.message(ToolUse(*bash(f"python3 sink.py {kind}"), id=f"toolu_sink_{kind}")),
                Reply.text("sink done"),
            )
            reply = server.invoke("fill", session=session_id(f"sink-{kind}"), timeout=300)
            enforcement = server.ping()["limits"]["enforcement"]
            out = tool_result(scene, f"toolu_sink_{kind}")
            print(f"\n{enforcement} {kind}: {reply.last.get('type')} {out[:300]}")
            reached = re.search(r"(?:STOPPED|REACHED) \w+ (\d+)", out)
            if reached:
                held[kind] = int(reached.group(1))
            else:  # the kernel ended it (cgroup), or the CLI when it was the largest process: the turn says why
                told = json.dumps(reply.last) + request_after(scene, f"toolu_sink_{kind}")
                assert enforcement.startswith("cgroup") and "memory limit" in told, told[-1500:]
                held[kind] = 0
        for kind in ("tmp", "shm", "memfd"):
            assert held[kind] <= LIMIT_MB, (kind, held)
        if enforcement.startswith("cgroup"):
            assert held["shared_mmap"] <= LIMIT_MB, held
        # the sessions' processes are gone and nothing was left in the host's /dev/shm
        assert not [p for p in Path("/dev/shm").glob("fill*")]
    finally:
        server.stop()
