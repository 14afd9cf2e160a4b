"""Every page of README.md and docs/, run as written: each fenced shell and Python block in
page order, in a scratch directory of its own (tests/support/doc_pages.py says how).

A block is left out only when the page marks it (``<!-- skip: next "…" -->``, docs/index.md)
for one of three reasons, and the marked blocks are listed here, so a new one shows in review.
Pages that start servers or run whole suites run in the slow lane.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.doc_pages import MARK_REASONS, ROOT, marks, normalise, pages, run_page, unmatched_lines

# Each runs a whole conformance suite, starts an emulator or a server, or runs Deno.
SLOW = {
    "docs/tutorial.md", "docs/how-to/async-store.md",
    "docs/how-to/multi-host.md", "docs/how-to/s3-gcs-emulators.md",
    "docs/how-to/typescript-store.md",
    "docs/how-to/read-the-report.md",
    "docs/explanation/example-adapters.md", "docs/explanation/engine.md",
    "docs/reference/store-protocol.md",
}

# Pages run as written by a test of their own, which first lays out the store author's
# repository the page speaks of (the gate script beside a TypeScript store).
OWN_TEST = {"docs/how-to/gate-ci.md": "tests/docs/test_gate_ci_page.py"}

# Pages read in a clone of the repository: their directory starts as one.
CLONE = {"README.md", "docs/contract.md", "docs/explanation/example-adapters.md",
         "docs/how-to/read-the-report.md"}

# Every marked block, page by page in page order, by its reason: the reader fills it in,
# it needs a real cloud account, or it runs the project's own tests.
MARKED = {
    "README.md": [
        "runs the project's own tests: .ci/run runs this line verbatim; a docs test running "
        "it would run itself",
        "fill in: your store's module and your TypeScript store"],
    "docs/how-to/multi-host.md": ["needs a cloud account: a real bucket and its credentials"],
    "docs/how-to/network-faults.md": [
        "fill in: your store, your server and how to start it",
        "fill in: the provider above, in your package",
        "fill in: your store and its server's port"],
    "docs/how-to/read-the-report.md": ["fill in: your store's name"] * 2,
    "docs/how-to/s3-gcs-emulators.md": [
        "fill in: your package's store and its testing module",
        "runs the project's own tests: the slow lane these docs tests are part of"],
    "docs/how-to/test-a-store-on-a-server.md": ["fill in: your package's provider module"],
    "docs/how-to/test-your-store.md": [
        "fill in: your store's module and factory",
        "fill in: your package, installed from its own directory",
        "fill in: your package"],
    "docs/reference/store-protocol.md": ["fill in: your store.ts"],
}


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", [
    pytest.param(p, id=_name(p), marks=[pytest.mark.slow] if _name(p) in SLOW else [])
    for p in pages() if _name(p) not in OWN_TEST])
def test_the_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    run = run_page(page, tmp_path / "page", clone=_name(page) in CLONE)
    assert len(run.marked) == len(marks(page))


def test_every_marked_block_is_listed_here_with_a_reason() -> None:
    found = {_name(p): [reason for _, reason in marks(p)] for p in pages()}
    assert {name: reasons for name, reasons in found.items() if reasons} == MARKED, (
        "the pages' marked blocks differ from MARKED in tests/docs/test_pages.py")
    wrong = [f"{name}: {reason!r}" for name, reasons in MARKED.items() for reason in reasons
             if not reason.startswith(MARK_REASONS)]
    assert wrong == [], f"a mark's reason must start with one of {MARK_REASONS}"
    assert sum(map(len, MARKED.values())) <= 25, "the marked list no longer fits on a screen"


def test_the_slow_list_names_pages_that_exist() -> None:
    assert {s for s in SLOW | CLONE | set(MARKED) | set(OWN_TEST) | set(OWN_TEST.values())
            if not (ROOT / s).is_file()} == set()


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
    with pytest.raises(AssertionError, match="no line like 'release-42'"):
        run_page(page, tmp_path / "a")
