"""The reporter keeps the bytes of only the files its patch reads, whatever the repository's size.

:meth:`TrackerRepos.propose` against the GitHub and GitLab repository stand-ins (real git objects, real archives):
the archive is downloaded to a spool file (never returned whole by ``Rest.download``), every entry is still
checked, and ``tarfile`` hands out the contents of the two files the patch modifies and deletes only — of a
repository of hundreds. Counting stand-ins wrap the real ``TarFile.extractfile`` and ``Rest.download``; the
proposed change is the one the whole in-memory view gives (``apply_patch`` on every file).
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from harness.github_repo_api import GitHubRepoApi
from harness.gitlab_repo_api import GitLabRepoApi
from webhook.fix.jobs import FixJob
from webhook.fix.repos import TrackerRepos
from webhook.repo import FileEntry, apply_patch, git_blob_sha
from webhook.repo.change import MAX_CHANGED_FILES
from webhook.repo.errors import TooManyChangedFiles
from webhook.repo.rest import Rest

TOKEN = "ghp_reader_token"
FILES: dict[str, tuple[str, bytes]] = {
    f"src/pkg{i // 50}/mod{i:03d}.py": ("100644", f"value = {i}\n".encode()) for i in range(400)
}
FILES["run.sh"] = ("100755", b"#!/bin/sh\necho run\n")
FILES["docs/link.py"] = ("120000", b"../src/pkg0/mod001.py")
CHANGED, DELETED = "src/pkg0/mod001.py", "src/pkg0/mod002.py"


def _patch() -> str:
    old, new = FILES[CHANGED][1], b"value = 'one'\n"
    gone, added = FILES[DELETED][1], b"new\n"
    return (
        f"diff --git a/{CHANGED} b/{CHANGED}\nindex {git_blob_sha(old)}..{git_blob_sha(new)} 100644\n"
        f"--- a/{CHANGED}\n+++ b/{CHANGED}\n@@ -1 +1 @@\n-value = 1\n+value = 'one'\n"
        f"diff --git a/{DELETED} b/{DELETED}\ndeleted file mode 100644\nindex {git_blob_sha(gone)}..{'0' * 40}\n"
        f"--- a/{DELETED}\n+++ /dev/null\n@@ -1 +0,0 @@\n-value = 2\n"
        f"diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex {'0' * 40}..{git_blob_sha(added)}\n"
        "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n"
    )


class Counted:
    """What the reporter asked of ``tarfile`` and of the REST client (the real ones do the work)."""

    def __init__(self) -> None:
        self.contents: list[str] = []
        self.whole_downloads = 0


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counted]:
    seen = Counted()
    extract, download = tarfile.TarFile.extractfile, Rest.download

    def extractfile(self: tarfile.TarFile, member: Any) -> Any:
        seen.contents.append(member.name.split("/", 1)[1])
        return extract(self, member)

    def spooled(self: Rest, path: str, **kwargs: Any) -> bytes:
        if kwargs.get("sink") is None:
            seen.whole_downloads += 1
        return download(self, path, **kwargs)

    monkeypatch.setattr(tarfile.TarFile, "extractfile", extractfile)
    monkeypatch.setattr(Rest, "download", spooled)
    yield seen


def _job(tracker: Literal["github", "gitlab"], base_sha: str) -> FixJob:
    return FixJob(
        tracker=tracker,
        repository="octo/big" if tracker == "github" else "g/big",
        scope_id="1",
        issue_number=7,
        issue_id="7",
        issue_ref="#7",
        title="t",
        session_id="gh-" + "e" * 64,
        target_tracker=tracker,
        target_repository="octo/big" if tracker == "github" else "g/big",
        target_project_id="" if tracker == "github" else "9",
        base_branch="main",
        base_sha=base_sha,
        pr_base="main",
    )


@pytest.mark.parametrize("tracker", ["github", "gitlab"])
def test_the_reporter_keeps_the_bytes_of_the_files_its_patch_reads_only(
    tracker: Literal["github", "gitlab"], counted: Counted, tmp_path: Path
) -> None:
    server = (
        GitHubRepoApi(token=TOKEN, repository="octo/big", files=dict(FILES))
        if tracker == "github"
        else GitLabRepoApi(token=TOKEN, project_id=9, path="g/big", files=dict(FILES))
    )
    with server as api:
        url = api.url if tracker == "github" else api.api_url  # type: ignore[union-attr]
        repos = TrackerRepos(
            tokens={tracker: lambda: TOKEN},
            api_urls={tracker: url},
            sleep=lambda _: None,
            spool_dir=str(tmp_path),
        )
        proposal = repos.propose(
            _job(tracker, api.base_commit), "d" * 64, _patch(), mode="draft_pr", title="Fix", body="b"
        )
        assert proposal is not None and proposal.files == 3
        assert sorted(counted.contents) == [CHANGED, DELETED]  # of 402 files and a link
        assert counted.whole_downloads == 0 and list(tmp_path.iterdir()) == []
        # The same change the whole in-memory view gives, committed as it.
        whole = {path: FileEntry(data, mode) for path, (mode, data) in FILES.items()}
        expected = {
            c.path: None if c.action == "delete" else (c.mode, c.content)
            for c in apply_patch(whole, _patch())
        }
        assert api.branch_changes(proposal.result.branch) == expected


def test_a_patch_reading_more_files_than_a_change_may_touch_is_refused_before_any_download(
    counted: Counted, tmp_path: Path
) -> None:
    sections = "".join(
        f"diff --git a/f{i} b/f{i}\ndeleted file mode 100644\nindex {'1' * 40}..{'0' * 40}\n"
        for i in range(MAX_CHANGED_FILES + 1)
    )
    repos = TrackerRepos(
        tokens={"github": lambda: TOKEN}, api_urls={"github": "http://127.0.0.1:9"}, spool_dir=str(tmp_path)
    )
    with pytest.raises(TooManyChangedFiles, match=f"copies {MAX_CHANGED_FILES + 1} files"):
        repos.propose(_job("github", "a" * 40), "d" * 64, sections, mode="draft_pr", title="t", body="b")
    assert counted.contents == [] and counted.whole_downloads == 0
