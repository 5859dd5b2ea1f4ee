"""A missing or unreadable EMF or span file is a usage error (exit 2) that names the file and where a local
run writes it; a readable one is parsed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentkit.data.emf import read_emf_file
from agentkit.data.spans import read_span_file
from agentkit.errors import AgentkitError, ExitCode


@pytest.mark.parametrize(
    ("read", "kind", "env_var"),
    [(read_emf_file, "EMF", "AGENTKIT_EMF_FILE"), (read_span_file, "span", "AGENTKIT_SPANS_FILE")],
)
def test_missing_and_unreadable_files_are_usage_errors(
    tmp_path: Path, read: Callable[[Path], object], kind: str, env_var: str
) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(AgentkitError) as caught:
        read(missing)
    assert caught.value.exit_code == ExitCode.USAGE
    assert (
        caught.value.message
        == f"no such {kind} file: {missing} (a local run writes it where {env_var} points)"
    )

    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00not utf-8\n")
    with pytest.raises(AgentkitError) as caught:
        read(binary)
    assert caught.value.exit_code == ExitCode.USAGE
    assert caught.value.message.startswith(f"cannot read the {kind} file {binary}: ")

    with pytest.raises(AgentkitError) as caught:
        read(tmp_path)  # a directory: open() fails with an OSError other than FileNotFoundError
    assert caught.value.message.startswith(f"cannot read the {kind} file {tmp_path}: ")


def test_readable_files_are_parsed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert read_span_file(empty) == []
    assert read_emf_file(empty).samples == []
