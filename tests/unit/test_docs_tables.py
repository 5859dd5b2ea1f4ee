"""The reference tables in docs/ are the code's: each generated block equals what the code gives now.

Regenerate with ``.venv/bin/python -m harness.docs_tables`` after changing the code a table describes.
"""

from __future__ import annotations

import re

import pytest

from harness import docs_tables
from runtime.errors import ERRORS_BY_CODE

EXPECTED = {
    "http-api.md": {"request", "events", "errors", "job_events"},
    "observability.md": {"metrics", "prices"},
    "security.md": {"protected_paths"},
    "fix-jobs.md": {"failure_hints"},  # docs/webhook/
}


def test_every_expected_table_is_in_its_page() -> None:
    found = {p.name: set(docs_tables.blocks(p.read_text(encoding="utf-8"))) for p in docs_tables.pages()}
    for page, names in EXPECTED.items():
        assert names <= found.get(page, set()), (page, found)


@pytest.mark.parametrize("page", docs_tables.pages(), ids=lambda p: p.name)
def test_generated_blocks_match_the_code(page) -> None:
    text = page.read_text(encoding="utf-8")
    assert docs_tables.render(text) == text, (
        f"{page.name} is out of date with the code: run `.venv/bin/python -m harness.docs_tables`"
    )


def test_the_error_table_lists_every_code_with_its_status() -> None:
    """Independent of the renderer: each code of ERRORS_BY_CODE is a row with its class's status, and no other."""
    page = docs_tables.ROOT / "docs" / "http-api.md"
    rows = docs_tables.blocks(page.read_text(encoding="utf-8"))["errors"].splitlines()[2:]
    documented = {row.split("|")[1].strip().strip("`"): int(row.split("|")[2]) for row in rows}
    assert documented == {code: cls.http_status for code, cls in ERRORS_BY_CODE.items()}


def test_the_failure_hints_table_lists_every_hinted_code_with_its_hint() -> None:
    """Independent of the renderer: docs/webhook/fix-jobs.md has one row per code of HINTS, with its sentence."""
    from webhook.fix.failure_hints import HINTS

    page = docs_tables.ROOT / "docs" / "webhook" / "fix-jobs.md"
    rows = docs_tables.blocks(page.read_text(encoding="utf-8"))["failure_hints"].splitlines()[2:]
    documented = {row.split("|")[1].strip().strip("`"): row.split("|")[2].strip() for row in rows}
    assert documented == HINTS


def test_a_changed_code_makes_the_page_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a new error class appears in the rendered table, so the committed page differs."""
    from runtime import errors

    class Teapot:  # not an AgentKitError subclass: it must not outlive this test in the class hierarchy
        """The kettle is busy."""

        code = "teapot"
        http_status = 418

    monkeypatch.setitem(errors.ERRORS_BY_CODE, "teapot", Teapot)
    page = docs_tables.ROOT / "docs" / "http-api.md"
    text = page.read_text(encoding="utf-8")
    rendered = docs_tables.render(text)
    assert rendered != text and "| `teapot` | 418 | `Teapot` | The kettle is busy. |" in rendered


def test_check_mode_reports_a_stale_page(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    stale = "# x\n<!-- generated: errors -->\n| old |\n<!-- end generated -->\n"
    (docs / "page.md").write_text(stale, encoding="utf-8")
    monkeypatch.setattr(docs_tables, "ROOT", tmp_path)
    assert docs_tables.main(["--check"]) == 1
    assert (docs / "page.md").read_text(encoding="utf-8") == stale  # --check never writes
    assert docs_tables.main([]) == 0
    assert "`invalid_request`" in (docs / "page.md").read_text(encoding="utf-8")
    assert docs_tables.main(["--check"]) == 0


def _cdk_settings_rows() -> list[str]:
    text = (docs_tables.ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = text.split("## Settings (`cdk.json`)", 1)[1].split("\n## ", 1)[0]
    return [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]


def test_the_cdk_settings_table_names_every_config_field_and_only_those() -> None:
    """docs/deploy.md's cdk.json table against infra.config.AppConfig: every top-level field has a row, and every
    key a row names (``a.b``, ``a.*``, ``stages.<stage>``) resolves to a field of the model."""
    from pydantic import BaseModel

    from infra.config import AppConfig, StageConfig

    named: set[str] = set()
    for cell in _cdk_settings_rows():
        for key in re.findall(r"`([a-z_.*<>]+)`", cell):
            named.add(key)
            if key == "stages.<stage>":
                continue  # the stage settings: StageConfig, checked below
            model: type[BaseModel] = AppConfig
            for part in key.split("."):
                if part == "*":
                    break
                assert part in model.model_fields, (
                    f"docs/deploy.md names `{key}`, which infra.config does not have"
                )
                annotation = model.model_fields[part].annotation
                if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                    model = annotation
    documented_top = {key.split(".")[0] for key in named}
    # `stage` is the -c stage=... choice and `settings` the chosen stage's values: both come from stages.<stage>.
    fields = set(AppConfig.model_fields) - {"stage", "settings"}
    assert fields <= documented_top, (
        f"settings without a row in docs/deploy.md: {sorted(fields - documented_top)}"
    )
    stage_cell = next(c for c in _cdk_settings_rows() if "stages.<stage>" in c)
    row = next(
        line
        for line in (docs_tables.ROOT / "docs" / "deploy.md").read_text().splitlines()
        if stage_cell in line
    )
    assert set(StageConfig.model_fields) <= set(re.findall(r"`([a-z_0-9]+)`", row))


def test_an_empty_block_is_filled_without_swallowing_the_next_one() -> None:
    """A table just added to a page has no rows yet: rendering fills it and leaves the blocks after it alone."""
    text = "a\n<!-- generated: errors -->\n<!-- end generated -->\nb\n<!-- generated: job_events -->\nold\n<!-- end generated -->\n"
    assert docs_tables.blocks(text) == {"errors": "", "job_events": "old"}
    rendered = docs_tables.render(text)
    assert "\nb\n" in rendered and rendered.count("<!-- generated: ") == 2
    assert docs_tables.blocks(rendered)["errors"] == docs_tables.errors_table()
