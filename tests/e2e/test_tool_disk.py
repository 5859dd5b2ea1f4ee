"""A command that fills its disk loses no turn: the session's tool disk (``AGENTKIT_TOOL_DISK_MB``).

The REAL runtime with the REAL bundled CLI (``developer`` profile) and a Bedrock stand-in. The session's workspace,
temp root and tool ``HOME`` share one size-limited tmpfs inside the CLI's mount namespace (``runtime.guard.confine``),
so a command that writes until ENOSPC fills only that, never the volume of the CLI's transcripts, ``sessions.db``
and the spool. Observed on the host: how much each write got before ENOSPC, that nothing reached the state dir while
the CLI ran, every answered turn in the model's context of a later turn and of a resume by a fresh runtime
process, and the workspace kept (copied back, within the limit) when the CLI process ends.

Each write stops at 64 MiB at most, so on code without the limit the test fails without filling this machine's disk.
Run as root and as the image's user (``scripts/attacks_as_uid.sh 10001 /usr/bin/python3 tests/e2e/test_tool_disk.py``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.archives import b64, tar_gz
from harness.cli_user import reachable_tmp
from harness.runtime_server import RuntimeServer, session_id
from standins import BedrockStandIn, Reply
from standins.replies import ToolUse
from tests.e2e.real_cli_scene import confined_env

DISK_MB = 32
CAP_MB = 64
ROOT = os.geteuid() == 0

pytestmark = pytest.mark.timeout(400)

#: Writes each path until ENOSPC (at most CAP_MB each); with --free it then gives 1 MiB back, so that the CLI
#: (which keeps a command's output in its temp dir, on the same tool disk) can still return what it printed.
FILL = (
    "import errno, os, sys\n"
    "free = sys.argv[1] == '--free'\n"
    "for arg in sys.argv[1 + free:]:\n"
    "    top, _, rest = arg.partition('/')\n"
    "    path = os.path.join(os.environ[top], rest) if top in ('TMPDIR', 'HOME') else arg\n"
    "    n, error = 0, 'no-error'\n"
    "    try:\n"
    "        with open(path, 'wb') as f:\n"
    f"            while n < {CAP_MB} * 2**20:\n"
    "                f.write(b'x' * 2**20); f.flush(); os.fsync(f.fileno()); n += 2**20\n"
    "    except OSError as e:\n"
    "        error = errno.errorcode.get(e.errno)\n"
    "    print('WROTE', n, error)\n"
    "if free:\n"
    "    os.truncate(sys.argv[2], max(0, os.path.getsize(sys.argv[2]) - 2**20))\n"
)


@dataclass
class Scene:
    root: Path
    state: Path
    workspace: Path
    bedrock: BedrockStandIn
    env: dict[str, str]
    last_result: dict[str, Any] | None = None


@pytest.fixture
def scene() -> Iterator[Scene]:
    with BedrockStandIn() as bedrock, reachable_tmp("ak-disk-") as root:
        env = confined_env(root, bedrock.url, AGENTKIT_TOOL_DISK_MB=str(DISK_MB))
        (root / "ws" / "fill.py").write_text(FILL)
        yield Scene(root, root / "state", root / "ws", bedrock, env)


def start(scene: Scene, name: str) -> RuntimeServer:
    prefix = ["unshare", "--uts", "--ipc", "--"] if ROOT else []
    return RuntimeServer(env=scene.env, log_path=scene.root / f"{name}.log", prefix=prefix).start(timeout=60)


def bash(command: str) -> tuple[str, dict[str, Any]]:
    return "Bash", {"command": command, "description": "disk check"}


def turn(
    scene: Scene,
    server: RuntimeServer,
    prompt: str,
    *replies: Reply,
    session: str = "disk",
    snapshot: dict[str, bytes] | None = None,
) -> dict[str, Any]:
    scene.bedrock.reset()
    scene.bedrock.enqueue(*replies)
    extra = {"workspace": {"tar_gz_b64": b64(tar_gz(list(snapshot.items())))}} if snapshot else None
    reply = server.invoke(prompt, session=session_id(session), timeout=300, extra=extra)
    scene.last_result = reply.last
    logs = "".join(p.read_text(errors="replace")[-1500:] for p in sorted(scene.root.glob("*.log")))
    assert reply.status == 200 and reply.last["type"] == "result", (reply.events[-3:], logs)
    assert not reply.last.get("is_error"), reply.last
    return scene.bedrock.model_requests[-1].body


def context_text(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"])


def test_a_command_filling_its_disk_loses_no_turn(scene: Scene) -> None:
    server = start(scene, "first")
    try:
        first = bash("python3 fill.py --free fill-ws.bin TMPDIR/fill-tmp.bin HOME/fill-home.bin")
        again = bash("python3 fill.py fill-again.bin")  # and full it stays: its output cannot even be kept
        after = bash("echo still-answering")
        ids = ["toolu_disk_first", "toolu_disk_again", "toolu_disk_echo"]
        body = turn(
            scene,
            server,
            "turn one: fill the disk",
            *(
                Reply.message(ToolUse(*call, id=i))
                for call, i in zip((first, again, after), ids, strict=True)
            ),
            Reply.text("answer one"),
        )
        results = tool_results(scene)
        written = [int(n) for n in re.findall(r"WROTE (\d+)", results["toolu_disk_first"])]
        errors = re.findall(r"WROTE \d+ (\w+)", results["toolu_disk_first"])
        print(f"\nwritten per path (MiB): {[n / 2**20 for n in written]}, errors: {errors}")
        print("refill:", results["toolu_disk_again"][:200], "\necho:", results["toolu_disk_echo"][:200])
        assert len(written) == 3, results["toolu_disk_first"]
        # HOME itself is read-only in the sandbox (only ~/.npm/_logs is writable): EROFS there is fine
        assert errors[:2] == ["ENOSPC", "ENOSPC"] and errors[2] in ("ENOSPC", "EROFS"), errors
        assert sum(written) <= DISK_MB * 2**20, written
        # with its disk full the CLI refuses further commands of this process ("Disk full: ... Claude Code's
        # temporary directory"); the turn itself still answers
        assert "still-answering" in results["toolu_disk_echo"] or "Disk full" in results["toolu_disk_echo"]
        # nothing of it on the state volume while the CLI runs
        on_host = [p for p in scene.state.rglob("fill-*.bin")] + list(Path("/tmp").glob("ak-*/fill-*.bin"))
        assert on_host == [], on_host
        body = turn(scene, server, "turn two: still there?", Reply.text("answer two"))
        assert "turn one" in context_text(body) and "answer one" in context_text(body)
    finally:
        server.stop()
    # the CLI process ended: the workspace is kept for the session (copied back, at most the tool disk's size)
    kept = sorted(scene.state.glob("workspaces/*/fill-ws.bin"))
    assert len(kept) == 1 and kept[0].stat().st_size <= DISK_MB * 2**20, kept
    # a fresh process as on a new microVM: its own state and config dirs, the same session store
    (scene.root / "vm2").mkdir()
    scene.env["AGENTKIT_STATE_DIR"] = str(scene.root / "vm2" / "state")
    scene.env["CLAUDE_CONFIG_DIR"] = str(scene.root / "vm2" / "claude")
    fresh = start(scene, "second")
    try:
        body = turn(scene, fresh, "turn three: after a restart", Reply.text("answer three"))
        text = context_text(body)
        for expected in ("turn one", "answer one", "turn two", "answer two", "turn three"):
            assert expected in text, (expected, text[-2000:])
    finally:
        fresh.stop()


def tool_results(scene: Scene) -> dict[str, str]:
    return {tool_id: json.dumps(block) for tool_id, block in scene.bedrock.tool_results().items()}


def test_workspace_snapshots_live_on_the_tool_disk_and_a_full_disk_loses_no_turn(scene: Scene) -> None:
    """Repository work with the tool disk on: the snapshot is the CLI's workspace on its tool disk. A command fills
    that disk; the turn's patch is read from it, the turn is persisted; a later snapshot sent while the CLI runs
    lands on the tool disk (not on the state volume); one too large for the tool disk is refused before anything of
    the workspace is touched; a fresh runtime process resumes every answered turn."""
    server = start(scene, "snap-first")
    try:
        fill = bash("python3 fill.py --free fill.bin")
        fix = bash(
            "python3 -c \"import os; os.remove('fill.bin'); open('src.txt', 'a').write('fixed\\\\n'); "
            "print('fixed-ok')\""
        )
        turn(
            scene,
            server,
            "snap turn one: fill the disk, then fix",
            Reply.message(ToolUse(*fill, id="toolu_snap_fill")),
            Reply.message(ToolUse(*fix, id="toolu_snap_fix")),
            Reply.text("snap answer one"),
            session="snap",
            snapshot={"fill.py": FILL.encode(), "src.txt": b"original\n"},
        )
        results = tool_results(scene)
        written = [int(n) for n in re.findall(r"WROTE (\d+) ENOSPC", results["toolu_snap_fill"])]
        assert written and written[0] <= DISK_MB * 2**20, results["toolu_snap_fill"][:400]
        assert "fixed-ok" in results["toolu_snap_fix"], results["toolu_snap_fix"][:400]
        result = scene.last_result
        assert result is not None
        print(f"\nfilled {written[0] / 2**20:.0f} MiB; patch: {result.get('patch')!r}")
        assert result["changed_files"] == ["src.txt"] and "+fixed" in result["patch"], result
        # a snapshot sent to the running CLI lands on its tool disk, not on the state volume
        turn(
            scene,
            server,
            "snap turn two: a new snapshot",
            Reply.message(ToolUse(*bash("cat new.txt"), id="toolu_snap_cat")),
            Reply.text("snap answer two"),
            session="snap",
            snapshot={"fill.py": FILL.encode(), "src.txt": b"v2\n", "new.txt": b"second-snapshot\n"},
        )
        assert "second-snapshot" in tool_results(scene)["toolu_snap_cat"]
        assert scene.last_result is not None and scene.last_result["patch"] == ""
        assert not list(scene.state.glob("workspaces/*/new.txt")), (
            "the live snapshot reached the state volume"
        )
        # too large for the tool disk (zeros: a tiny archive): refused, the workspace unchanged
        scene.bedrock.reset()
        big = server.invoke(
            "too big",
            session=session_id("snap"),
            timeout=120,
            stream=False,
            extra={
                "workspace": {"tar_gz_b64": b64(tar_gz([(f"big{i}.bin", bytes(20 * 2**20)) for i in (1, 2)]))}
            },
        )
        assert big.status == 413 and big.body["code"] == "workspace_too_large", big.body
        assert "tool disk" in big.body["message"], big.body
        turn(
            scene,
            server,
            "snap turn three: still the second snapshot?",
            Reply.message(ToolUse(*bash("cat new.txt"), id="toolu_snap_again")),
            Reply.text("snap answer three"),
            session="snap",
        )
        assert "second-snapshot" in tool_results(scene)["toolu_snap_again"]
    finally:
        server.stop()
    (scene.root / "vm2").mkdir()
    scene.env["AGENTKIT_STATE_DIR"] = str(scene.root / "vm2" / "state")
    scene.env["CLAUDE_CONFIG_DIR"] = str(scene.root / "vm2" / "claude")
    fresh = start(scene, "snap-second")
    try:
        body = turn(
            scene, fresh, "snap turn four: after a restart", Reply.text("snap answer four"), session="snap"
        )
        text = context_text(body)
        for expected in ("snap turn one", "snap answer one", "snap answer two", "snap answer three"):
            assert expected in text, (expected, text[-2000:])
    finally:
        fresh.stop()
