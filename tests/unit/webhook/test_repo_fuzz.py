"""Hostile patches and archives, property-based (hypothesis): whatever the mutation of a real patch of the
runtime or of a real repository archive, the library answers with its own clear error (``PatchRefused``,
``SnapshotError``) or a result — never another exception — and an accepted patch still obeys the path rules."""

from __future__ import annotations

import gzip
import io
import random
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.webhook.repo_trees import runtime_patch
from webhook.repo import PatchRefused, SnapshotError, apply_patch, repack
from webhook.repo.files import is_sensitive_name

FUZZ = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:  # type: ignore[type-arg]
    files: dict[str, bytes | str] = {
        "a.txt": "".join(f"line {i}\n" for i in range(30)),
        "b.bin": b"\0" + random.Random(5).randbytes(800),
        "c/d.py": "x = 1\n",
    }

    def change(work: Path) -> None:
        (work / "a.txt").write_text("".join(f"line {i}\n" for i in range(30) if i % 7) + "end")
        data = bytearray((work / "b.bin").read_bytes())
        data[100:104] = b"ZZZZ"
        (work / "b.bin").write_bytes(bytes(data))
        (work / "c/d.py").unlink()
        (work / "new.txt").write_text("new\n")

    before, patch, _ = runtime_patch(tmp_path_factory.mktemp("fuzz"), files, change)
    assert apply_patch(before, patch)
    return before, patch


edits = st.lists(
    st.tuples(
        st.sampled_from(["drop", "dup", "char", "insert"]),
        st.integers(min_value=0, max_value=10_000),
        st.sampled_from([*' +-\\@/.\n0aZ"\t', "../", "/dev/null", ".git/", "\x00", "\u202e"]),
    ),
    min_size=1,
    max_size=4,
)


def _mutate(text: str, steps: list[tuple[str, int, str]]) -> str:
    lines = text.split("\n")
    for kind, at, piece in steps:
        i = at % len(lines)
        if kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "char" and lines[i]:
            j = at % len(lines[i])
            lines[i] = lines[i][:j] + piece + lines[i][j + 1 :]
        else:
            lines.insert(i, piece + lines[i][:20])
        if not lines:
            lines = [""]
    return "\n".join(lines)


@FUZZ
@given(steps=edits)
def test_a_mutated_runtime_patch_applies_or_is_refused_cleanly(
    real: tuple[dict, str], steps: list[tuple[str, int, str]]
) -> None:  # type: ignore[type-arg]
    before, patch = real
    try:
        changes = apply_patch(before, _mutate(patch, steps))
    except PatchRefused:
        return
    for change in changes:
        parts = change.path.split("/")
        assert ".." not in parts and ".git" not in parts and not change.path.startswith("/")
        assert not is_sensitive_name(change.path)


@pytest.fixture(scope="module")
def tarball() -> bytes:
    raw = io.BytesIO()
    with tarfile.open(
        fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": "c" * 40}
    ) as tar:
        for name, data in (("top/a.txt", b"hello\n" * 20), ("top/src/b.py", b"print(1)\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


@FUZZ
@given(
    flips=st.lists(
        st.tuples(st.integers(min_value=0, max_value=100_000), st.integers(0, 255)), min_size=1, max_size=6
    )
)
def test_a_corrupted_archive_repacks_or_is_refused_cleanly(
    tarball: bytes, flips: list[tuple[int, int]]
) -> None:
    raw = bytearray(gzip.decompress(tarball))  # corrupt the tar stream itself, then compress it again
    for at, value in flips:
        raw[at % len(raw)] = value
    try:
        repacked = repack(gzip.compress(bytes(raw)))
    except SnapshotError:
        return
    for path in repacked.files:
        assert ".." not in path.split("/") and not path.startswith("/")
