"""The HTML report as a person sees it: headless Chromium loads the page of a failing run.

The DOM Chromium built is read back (``--dump-dom``) and a screenshot is taken; the
timeline must be laid out (one shape per call, the marked calls present, nothing drawn
outside its picture) and the page must not be blank. Chromium comes from Debian's
packages (``.ci/run`` installs it). Without it the test skips, except under ``CI=true``,
where a missing browser fails the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import html5lib
import pytest
from png_pixels import Image, read_png

SVG = "{http://www.w3.org/2000/svg}"
WINDOW = (1280, 1800)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--force-color-profile=srgb", "--hide-scrollbars")
DOC_PICTURE_ENV = "DW_DOC_SCREENSHOT"  # set to a path to keep the screenshot for the docs

# The example: a torn read found by the real history checker, as a store author meets it.
FAILING_RUN = '''
import pytest
from dw_testing.history.checker import assert_linearizable
from dw_testing.history.events import Operation


def test_the_store_answers_a_get(dw_store):
    dw_store.put("k", b"v")
    assert dw_store.get("k") == b"v"


@pytest.mark.dw_clause("C-PUT-1")
def test_racing_handles_are_linearizable(dw_store):
    assert_linearizable([
        Operation("handle-1", "put_if_absent", "job/42", b"alice", True, 0, 100),
        Operation("handle-2", "get", "job/42", None, b"", 10, 20),
        Operation("handle-3", "put_if_absent", "job/42", b"bob", False, 30, 40),
    ])
'''


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but chromium is not installed; .ci/run installs it with "
                    "`apt-get install -y chromium`")
    pytest.skip("chromium is not installed here (apt-get install chromium); CI runs this test")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``report.html`` of a real failing run: a torn read reported by the plugin."""
    work = tmp_path_factory.mktemp("failing-run")
    (work / "test_history.py").write_text(FAILING_RUN)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q",
         "--rootdir", str(work), "test_history.py", "--dw-store=memory", "--dw-seed=7",
         "--dw-report=out/report.json"],
        cwd=work, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    return work / "out" / "report.html"


@pytest.fixture(scope="module")
def history(page: Path) -> dict[str, Any]:
    """The violation as the JSON report holds it: the page must draw exactly this."""
    report = json.loads(page.with_suffix(".json").read_text())
    [failed] = [t for t in report["tests"] if t["outcome"] == "FAIL"]
    found: dict[str, Any] = failed["history"]
    assert found["marked"], "the checker marked no call"
    return found


def browse(chromium: str, tmp: Path, page: Path, *action: str) -> subprocess.CompletedProcess[str]:
    command = [chromium, *FLAGS, f"--user-data-dir={tmp / 'profile'}",
               f"--window-size={WINDOW[0]},{WINDOW[1]}", *action, page.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-1500:]}"
    return done


@pytest.fixture(scope="module")
def dom(chromium: str, page: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    dumped = browse(chromium, tmp_path_factory.mktemp("dom"), page, "--dump-dom").stdout
    assert "<svg" in dumped, "chromium returned no DOM with the timeline"
    return html5lib.parse(dumped)


@pytest.fixture(scope="module")
def screenshot(chromium: str, page: Path, tmp_path_factory: pytest.TempPathFactory) -> Image:
    tmp = tmp_path_factory.mktemp("shot")
    png = tmp / "report.png"
    browse(chromium, tmp, page, f"--screenshot={png}")
    keep = os.environ.get(DOC_PICTURE_ENV)
    if keep:
        shutil.copyfile(png, keep)
    return read_png(png.read_bytes())


def calls_of(svg: Any) -> list[Any]:
    return [g for g in svg.iter(f"{SVG}g") if "call" in g.get("class", "").split()]


def test_the_rendered_timeline_has_one_shape_per_call_and_the_marked_calls(
        dom: Any, history: dict[str, Any]) -> None:
    [svg] = list(dom.iter(f"{SVG}svg"))
    drawn = calls_of(svg)
    assert len(drawn) == len(history["ops"]) >= 2
    assert all(len(list(g.iter(f"{SVG}rect"))) == 1 for g in drawn)
    marked = sorted(int(g.get("data-index")) for g in drawn
                    if "marked" in g.get("class", "").split())
    assert marked == sorted(history["marked"])
    assert all(g.find(f"{SVG}title") is not None for g in drawn)


def test_nothing_is_drawn_outside_the_picture_or_the_window(dom: Any) -> None:
    [svg] = list(dom.iter(f"{SVG}svg"))
    width, height = float(svg.get("width")), float(svg.get("height"))
    assert width <= WINDOW[0], "the timeline is wider than the window"
    for g in calls_of(svg):
        rect = g.find(f"{SVG}rect")
        x, y = float(rect.get("x")), float(rect.get("y"))
        assert x >= 0 and x + float(rect.get("width")) <= width
        assert y >= 0 and y + float(rect.get("height")) <= height


def test_the_page_is_painted_with_the_timeline(dom: Any, screenshot: Image) -> None:
    assert (screenshot.width, screenshot.height) == WINDOW
    colours = screenshot.colours()
    assert len(colours) > 20, "the screenshot is (nearly) one colour: a blank page"
    [svg] = list(dom.iter(f"{SVG}svg"))
    marked = next(g for g in calls_of(svg) if "marked" in g.get("class", "").split())
    fill = marked.find(f"{SVG}rect").get("fill").lstrip("#")
    rgb = (int(fill[0:2], 16), int(fill[2:4], 16), int(fill[4:6], 16))
    assert colours[rgb] >= 200, f"the marked calls' fill {rgb} is barely on screen"
