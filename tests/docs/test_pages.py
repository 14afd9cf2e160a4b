"""Every page of README.md and docs/, run as written: each fenced shell and Python block in
page order, in a scratch directory of its own (tests/support/doc_pages.py says how).

A block is left out only when the page marks it (``<!-- skip: next "…" -->``, docs/index.md)
for one of three reasons, and the marked blocks are listed here, so a new one shows in review.
Pages that start servers or run whole suites run in the slow lane.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.doc_pages import MARK_REASONS, ROOT, marks, normalise, pages, run_page, \
    unmatched_lines

# Each runs a whole conformance suite, starts an emulator or a server, or runs Deno.
SLOW = {
    "docs/tutorial.md", "docs/how-to/async-store.md",
    "docs/how-to/multi-host.md", "docs/how-to/s3-gcs-emulators.md",
    "docs/how-to/test-a-store-on-a-server.md", "docs/how-to/typescript-store.md",
    "docs/how-to/read-the-report.md",
    "docs/explanation/example-adapters.md", "docs/explanation/engine.md",
    "docs/reference/store-protocol.md",
}

# Pages read in a clone of the repository: their directory starts as one.
CLONE = {"README.md", "docs/contract.md", "docs/explanation/example-adapters.md",
         "docs/how-to/read-the-report.md", "docs/how-to/s3-gcs-emulators.md"}

# Every marked block, by page and line: the reader fills it in, it needs a real cloud
# account, or .ci/run runs it.
MARKED = {
    "README.md": 2,
    "docs/contract.md": 0,
}


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", [
    pytest.param(p, id=_name(p), marks=[pytest.mark.slow] if _name(p) in SLOW else [])
    for p in pages()])
def test_the_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    run = run_page(page, tmp_path, clone=_name(page) in CLONE)
    assert len(run.marked) == len(marks(page))


def test_every_marked_block_is_listed_here_with_a_reason() -> None:
    found = {_name(p): marks(p) for p in pages()}
    counted = {name: len(m) for name, m in found.items() if m}
    assert counted == {k: v for k, v in MARKED.items() if v}, (
        "a page marks blocks not listed in tests/docs/test_pages.py MARKED (or the reverse)")
    for name, listed in found.items():
        for line, reason in listed:
            assert reason.startswith(MARK_REASONS), (
                f"{name}:{line}: a block may be marked only with a reason starting "
                f"{' / '.join(MARK_REASONS)}, not {reason!r}")
    assert sum(counted.values()) <= 25, "the marked list no longer fits on one screen"


def test_the_slow_list_names_pages_that_exist() -> None:
    assert {s for s in SLOW | CLONE | set(MARKED) if not (ROOT / s).is_file()} == set()


def test_normalisation_hides_ids_seeds_times_and_paths_only(tmp_path: Path) -> None:
    printed = (f"run 5e0c2a1b-1c2d-4e5f-8a9b-0c1d2e3f4a5b at 2026-01-01T01:00:30.123Z, "
               f"seed 2787431086, in 14.3 s, under {tmp_path}/out")
    shown = "run 5e0c… at 2026-01-01T00:00:00Z, seed 7, in 1 s, under /tmp/x/out"
    assert normalise(printed, tmp_path) == normalise(shown)
    assert unmatched_lines(shown, printed, tmp_path) == []
    assert unmatched_lines("run 5e0c… failed", printed, tmp_path) == ["run <id> failed"]


def test_shown_output_is_matched_in_order() -> None:
    printed = "alpha\nbeta\ngamma\n"
    assert unmatched_lines("alpha\n…\ngamma", printed) == []
    assert unmatched_lines("gamma\nalpha", printed) == ["alpha"]


def test_a_page_whose_output_differs_fails(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```bash\necho release-\n```\n\n```\nrelease-42\n```\n", encoding="utf-8")
    (tmp_path / "a").mkdir()
    with pytest.raises(AssertionError, match="no line like 'release-42'"):
        run_page(page, tmp_path / "a")
