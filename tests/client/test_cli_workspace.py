"""``agentkit invoke --workspace DIR [--apply] [--patch-file F]``.

The end-to-end case runs against the real runtime (``python -m runtime``, the real SDK, the fake CLI whose Write and
Edit change files): DIR ends changed exactly as the agent changed its copy. Hostile or stale patches come from a
loopback stand-in that answers a scripted result: each is refused, DIR stays as it was, and the patch is kept.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentkit.cli import main
from harness.runtime_server import EDITING_AGENT, RuntimeServer, fake_cli_server
from harness.sse_runtime import Reply, SseRuntimeStandIn, sse
from runtime.identity import claude_session_id

pytestmark = pytest.mark.timeout(120)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "README.md").write_text("# calc\n")
    (repo / "gone.txt").write_text("deleted in the working tree\n")
    (repo / ".gitignore").write_text("*.log\nsecrets/\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (repo / "gone.txt").unlink()  # tracked, deleted: not in the snapshot
    (repo / "notes.txt").write_text("untracked, not ignored: sent\n")
    (repo / "debug.log").write_text("ignored: never sent\n")
    (repo / "secrets").mkdir()
    (repo / "secrets" / "token").write_text("ghp_notsent\n")
    return repo


def files_of(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeServer]:
    tmp = tmp_path_factory.mktemp("cli-workspace")
    (tmp / "agent.json").write_text(json.dumps(EDITING_AGENT))
    srv = fake_cli_server(tmp, AGENTKIT_AGENT_FILE=str(tmp / "agent.json"), AGENTKIT_SANDBOX="off").start()
    srv.tmp = tmp  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def test_invoke_workspace_apply_changes_dir_exactly_as_the_agent_did(
    runtime: RuntimeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path)
    before = files_of(repo)
    prompt = (
        '[tool:Edit {"file_path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}] '
        '[tool:Write {"file_path": "tests/test_calc.py", "content": "def test_add():\\n    assert True\\n"}] '
        '[tool:Write {"file_path": "notes.txt", "content": "seen by the agent\\n"}]'
    )
    patch_file = tmp_path / "agent.patch"
    url = f"http://127.0.0.1:{runtime.port}"
    code = main(
        [
            "invoke",
            "--local",
            url,
            "--workspace",
            str(repo),
            "--apply",
            "--patch-file",
            str(patch_file),
            prompt,
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "echo: " in out  # the answer still goes to stdout
    assert files_of(repo) == {
        **before,
        "src/calc.py": "def add(a, b):\n    return a + b\n",
        "tests/test_calc.py": "def test_add():\n    assert True\n",
        "notes.txt": "seen by the agent\n",
    }
    assert sorted(git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()) == [
        " D gone.txt",
        " M src/calc.py",
        "?? notes.txt",
        "?? tests/test_calc.py",
    ]
    assert "diff --git a/src/calc.py b/src/calc.py" in patch_file.read_text()
    assert "workspace: applied to" in err and "src/calc.py" in err
    # What was sent: tracked and new files, never ignored ones, never the deleted one.
    session = next(line for line in err.splitlines() if line.startswith("session: ")).removeprefix(
        "session: "
    )
    tree = runtime.tmp / "state" / "workspaces" / claude_session_id(session, None)  # type: ignore[attr-defined]
    assert sorted(files_of(tree)) == [
        ".gitignore",
        "README.md",
        "notes.txt",
        "src/calc.py",
        "tests/test_calc.py",
    ]


def test_a_subdirectory_of_a_repository_works_too(
    runtime: RuntimeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path)
    prompt = '[tool:Edit {"file_path": "calc.py", "old_string": "a - b", "new_string": "a * b"}]'
    url = f"http://127.0.0.1:{runtime.port}"
    assert main(["invoke", "--local", url, "--workspace", str(repo / "src"), "--apply", prompt]) == 0
    assert (repo / "src" / "calc.py").read_text() == "def add(a, b):\n    return a * b\n"
    assert not (repo / "calc.py").exists()


def test_not_a_git_work_tree_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("x")
    code = main(["invoke", "--local", "http://127.0.0.1:9", "--workspace", str(plain), "hi"])
    err = capsys.readouterr().err
    assert code == 2 and "not a git work tree" in err


def test_apply_without_workspace_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["invoke", "--local", "http://127.0.0.1:9", "--apply", "hi"]) == 2
    assert "need --workspace" in capsys.readouterr().err


# -- patches the client refuses -----------------------------------------------------------------------------------


def result_with(patch: str) -> Reply:
    return Reply(
        parts=sse(
            {
                "type": "result",
                "subtype": "success",
                "text": "done",
                "num_turns": 1,
                "patch": patch,
                "changed_files": [],
                "withheld_files": [],
            }
        )
    )


def new_file(path: str, line: str, mode: str = "100644") -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode {mode}\nindex 0000000..1111111\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n+{line}\n"
    )


HOSTILE = {
    "traversal": new_file("../outside.txt", "x"),
    "git_dir": new_file(".git/hooks/post-checkout", "#!/bin/sh"),
    "absolute": "diff --git a//etc/cron.d/x b//etc/cron.d/x\nnew file mode 100644\n--- /dev/null\n+++ b//etc/cron.d/x\n@@ -0,0 +1 @@\n+x\n",
    "symlink_out": new_file("link", "/etc/passwd", mode="120000").replace(
        "+/etc/passwd\n", "+/etc/passwd\n\\ No newline at end of file\n"
    ),
    "symlink_up": new_file("sub/link", "../../x", mode="120000").replace(
        "+../../x\n", "+../../x\n\\ No newline at end of file\n"
    ),
    "stale": (
        "diff --git a/README.md b/README.md\nindex 1111111..2222222 100644\n--- a/README.md\n+++ b/README.md\n"
        "@@ -1 +1 @@\n-# not what the file says\n+# new\n"
    ),
    "garbage": "this is not a patch\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_or_stale_patches_are_refused_and_kept(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path)
    before = files_of(repo)
    status_before = git(repo, "status", "--porcelain")
    with SseRuntimeStandIn(result_with(HOSTILE[name])) as server:
        code = main(["invoke", "--local", server.url, "--workspace", str(repo), "--apply", "fix"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "the patch was not applied" in err
    assert files_of(repo) == before and git(repo, "status", "--porcelain") == status_before
    assert not (tmp_path / "outside.txt").exists()
    kept = Path(err.split("(the patch is in ")[1].split(")")[0])
    assert kept.read_text() == HOSTILE[name]
    kept.unlink()


def test_the_snapshot_sent_is_the_working_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path)
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "readme-link").symlink_to("README.md")
    with SseRuntimeStandIn(result_with("")) as server:
        code = main(
            [
                "invoke",
                "--local",
                server.url,
                "--workspace",
                str(repo),
                "--patch-file",
                str(tmp_path / "p"),
                "x",
            ]
        )
        body: dict[str, Any] = server.received[0].json()
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "p").read_text() == ""
    archive = base64.b64decode(body["workspace"]["tar_gz_b64"])
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert sorted(members) == [".gitignore", "README.md", "notes.txt", "readme-link", "run.sh", "src/calc.py"]
    assert members["run.sh"].mode == 0o755 and members["README.md"].mode == 0o644
    assert members["readme-link"].issym() and members["readme-link"].linkname == "README.md"
    assert all(m.isfile() or m.issym() for m in members.values())
