"""FakeClock moves only forward, and DW_CLOCK carries it into CLI processes."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dw_testing.kit.clock import DEFAULT_EPOCH, FakeClock
from dw_testing.kit.together import run_together
from reference_engine.clock import Clock, ClockError, FileClock, SystemClock, clock_from_env


def test_fake_clock_moves_only_when_told() -> None:
    clock = FakeClock(start=100.0)
    assert isinstance(clock, Clock)
    assert clock.now() == clock.monotonic() == 100.0
    assert clock.advance(2.5) == 102.5
    assert clock.advance(0) == 102.5
    assert clock.now() == 102.5


def test_default_start_is_far_from_zero() -> None:
    assert FakeClock().now() == DEFAULT_EPOCH > 1e9


@pytest.mark.parametrize("step", [-0.001, math.nan, math.inf])
def test_fake_clock_refuses_to_go_back_or_jump_to_nowhere(step: float) -> None:
    clock = FakeClock(start=100.0)
    with pytest.raises(ValueError, match="forward by a finite amount"):
        clock.advance(step)
    assert clock.now() == 100.0


def test_fake_clock_refuses_a_non_finite_start() -> None:
    with pytest.raises(ValueError, match="finite"):
        FakeClock(start=math.nan)


def test_concurrent_advances_all_count_and_the_file_ends_in_step(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    clock = FakeClock(start=0.0, mirror_to=path)
    def tick() -> None:
        for _ in range(50):
            clock.advance(1)

    run_together([tick] * 4)
    assert clock.now() == 200.0
    assert FileClock(path).now() == 200.0


def test_mirror_file_is_what_a_cli_process_reads(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    clock = FakeClock(start=1_767_225_600.25, mirror_to=path)
    reader = clock_from_env(clock.env)
    assert isinstance(reader, FileClock)
    assert reader.now() == 1_767_225_600.25
    clock.advance(3600)
    assert reader.now() == reader.monotonic() == 1_767_229_200.25


def test_a_child_process_reads_the_fake_time(tmp_path: Path) -> None:
    clock = FakeClock(start=1_767_225_600.0, mirror_to=tmp_path / "clock")
    clock.advance(60)
    code = "from reference_engine.clock import clock_from_env; print(clock_from_env().now())"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **clock.env}, check=True,
                         capture_output=True, text=True).stdout
    assert float(out) == 1_767_225_660.0


def test_env_without_a_mirror_file_teaches_mirror_to() -> None:
    with pytest.raises(RuntimeError, match="mirror_to"):
        _ = FakeClock().env


def test_no_dw_clock_means_the_system_clock() -> None:
    assert isinstance(clock_from_env({}), SystemClock)
    assert isinstance(clock_from_env({"DW_CLOCK": ""}), SystemClock)


@pytest.mark.parametrize("value", ["1767225600", "time:1767225600", "file:"])
def test_dw_clock_must_name_a_file(value: str) -> None:
    with pytest.raises(ClockError, match="file:/path/to/clock"):
        clock_from_env({"DW_CLOCK": value})


def test_a_missing_clock_file_fails_at_startup(tmp_path: Path) -> None:
    with pytest.raises(ClockError, match="must hold epoch seconds"):
        clock_from_env({"DW_CLOCK": f"file:{tmp_path / 'absent'}"})


@pytest.mark.parametrize("content", ["soon", "", "nan", "inf"])
def test_a_clock_file_without_a_finite_time_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "clock"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ClockError, match=str(path)):
        FileClock(path).now()


def test_file_clock_monotonic_never_goes_back(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    path.write_text("200", encoding="utf-8")
    clock = FileClock(path)
    assert clock.monotonic() == 200.0
    path.write_text("150", encoding="utf-8")     # someone rewinds the file by hand
    assert clock.now() == 150.0                  # wall time may jump back...
    assert clock.monotonic() == 200.0            # ...lease ages may not
