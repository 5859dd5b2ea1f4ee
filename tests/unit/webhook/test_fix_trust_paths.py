"""The reporter's applier and the snapshot share one path rule: no link with an absolute target or into
``.git``, no name a checkout opens as ``.git``. Driven through the real reporter handler (job events as
the runtime sends them, the GitHub repository stand-in with real git objects, moto DynamoDB)."""

from __future__ import annotations

import io
import tarfile
from types import SimpleNamespace

import pytest

from tests.unit.webhook import test_fix_reporter as base
from webhook.repo import SnapshotError, repack

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
# The reporter's world (a recorded job, the repository stand-in, the handler configured) and its helpers.
api, world, _base_sha, event, deliver = base.api, base.world, base._base_sha, base.event, base.deliver


def _link_patch(path: str, target: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )


def _file_patch(path: str) -> str:
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"


def _refused(world: SimpleNamespace, patch: str) -> str:
    result = {"type": "result", "text": "done", "cost_usd": 0.1, "patch": patch}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [comment] = world.api.comments.values()
    assert not world.api.pulls
    assert not [name for name in world.api.git.refs if name.startswith("agent/")]
    return str(comment["body"])


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("docs/link", "/etc/passwd"),
        ("docs/link", "//etc/passwd"),
        ("docs/link", "../.git/config"),
        ("hooks", ".git/hooks"),
        ("docs/link", "../.GIT./config"),
        ("docs/link", "C:/Windows/system.ini"),
    ],
)
def test_a_link_with_an_absolute_target_or_into_git_is_refused_by_the_reporter(
    world: SimpleNamespace, path: str, target: str
) -> None:
    body = _refused(world, _link_patch(path, target))
    assert "`patch_refused`" in body


@pytest.mark.parametrize(
    "path",
    [
        ".git./config",
        ".git::$INDEX_ALLOCATION/config",
        "git~1/hooks/pre-commit",
        "GIT~1/config",
        ".g\u200cit/hooks/post-checkout",
        "sub/.git /config",
        "\ufeff.git/config",
    ],
)
def test_names_a_checkout_opens_as_git_are_refused_by_the_reporter(world: SimpleNamespace, path: str) -> None:
    body = _refused(world, _file_patch(path))
    assert "`patch_refused`" in body


def _archive(**links: str) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        info = tarfile.TarInfo("top/README.md")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"x\n"))
        for name, target in links.items():
            link = tarfile.TarInfo(f"top/{name}")
            link.type, link.linkname = tarfile.SYMTYPE, target
            tar.addfile(link)
    return raw.getvalue()


@pytest.mark.parametrize("target", ["/etc/passwd", "../.git/config", ".git/hooks", "../.git./hooks"])
def test_the_snapshot_refuses_the_same_links(target: str) -> None:
    assert repack(_archive(ok="README.md")).files["ok"].data == b"README.md"
    with pytest.raises(SnapshotError, match="link"):
        repack(_archive(**{"docs/link": target}))


def test_a_link_reaching_git_through_another_link_is_refused(world: SimpleNamespace) -> None:
    patch = _link_patch("docs/up", "..") + _link_patch("docs/cfg", "up/.git/config")
    assert "`patch_refused`" in _refused(world, patch)
