"""What a taker saw of each run's newest claim lease, and since when (monotonic).

In memory by default. With a directory the looks are shared by this user's CLI
processes on this host (one small file per run), so a first ``dw resume`` records a
look and a later one (after ``DW_CLOCK`` moved) can prove the lease stale. A lost or
refused look only costs a look, which errs towards ``busy``.

The directory is private state, and a forged look must never shorten a takeover:

- a directory that is a symlink, not this user's, or writable by others is refused,
  and the looks fall back to a fresh private ``mkdtemp`` directory (the caller is told);
- files are created ``O_EXCL | O_NOFOLLOW`` under a random name, mode 0600, then
  renamed into place, and read ``O_NOFOLLOW`` from files this user owns;
- with the system clock, a look also needs its file to be as old as the wait: the
  kernel sets a file's change time when it is written, and nobody can set it back, so
  a planted record with an early ``since`` still waits ``ttl + grace`` from its planting.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Seen:
    generation: int
    digest: str  # sha256 of the lease bytes: the same bytes, the same digest
    since: float
    written_at: float | None = None  # the file's change time (wall), when read from disk


def private_dir_problem(path: Path) -> str | None:
    """Why ``path`` (which exists) is not a private directory of this user, or None."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return f"it cannot be examined ({exc.strerror or type(exc).__name__})"
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    if info.st_uid != os.getuid():
        return "another user owns it"
    if info.st_mode & 0o022:
        return "other users can write to it"
    return None


def ensure_private_dir(path: Path, warn: Callable[[str], None]) -> Path:
    """``path`` made (0700) or checked private; otherwise a fresh private directory."""
    with contextlib.suppress(FileExistsError, FileNotFoundError):
        os.mkdir(path, 0o700)
    problem = private_dir_problem(path)
    if problem is None:
        return path
    fallback = Path(tempfile.mkdtemp(prefix="dw-claim-looks-"))
    warn(f"claim looks: not using {path}: {problem}; using the private {fallback} for this "
         "process (a takeover of a dead owner's claim may wait longer). Remove or fix that "
         "directory, or set DW_CLAIM_LOOKS_DIR to a private one")
    return fallback


class Looks:
    """The looks of one taker; see the module docstring for where they live."""

    def __init__(self, directory: Path | None, *, wall_clock_check: bool = False) -> None:
        self.directory = directory
        self.wall_clock_check = wall_clock_check
        if directory is not None:
            with contextlib.suppress(OSError):  # the CLI checks it is private first
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._memory: dict[str, Seen] = {}
        self._lock = threading.Lock()

    def _file(self, run_id: str) -> Path:
        assert self.directory is not None
        return self.directory / f"{hashlib.sha256(run_id.encode()).hexdigest()[:32]}.json"

    def _read(self, run_id: str) -> Seen | None:
        if self.directory is None:
            return self._memory.get(run_id)
        try:
            fd = os.open(self._file(run_id), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                return None
            raw = json.loads(os.read(fd, 4096).decode("utf-8"))
            return Seen(int(raw["g"]), str(raw["digest"]), float(raw["since"]),
                        info.st_ctime)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        finally:
            os.close(fd)

    def _write(self, run_id: str, seen: Seen) -> None:
        if self.directory is None:
            self._memory[run_id] = seen
            return
        body = json.dumps({"g": seen.generation, "digest": seen.digest, "since": seen.since})
        tmp = self.directory / f".{secrets.token_hex(8)}.tmp"
        with contextlib.suppress(OSError):  # a lost look only delays a takeover
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, body.encode("utf-8"))
            finally:
                os.close(fd)
            os.replace(tmp, self._file(run_id))  # replaces a planted link, never follows it
        with contextlib.suppress(OSError):
            tmp.unlink()

    def _old_enough(self, seen: Seen, stale_after: float) -> bool:
        if not self.wall_clock_check or seen.written_at is None:
            return True
        return time.time() - seen.written_at >= stale_after

    def judge(self, run_id: str, g: int, raw: bytes, now: float, stale_after: float) -> str:
        """``stale``, ``alive`` (the bytes changed since the last look) or ``unknown``."""
        digest = hashlib.sha256(raw).hexdigest()
        with self._lock:
            seen = self._read(run_id)
            verdict = "unknown"
            if seen is not None and seen.generation == g and seen.digest == digest:
                if now < seen.since:  # the host rebooted: monotonic time restarted
                    seen = None
                elif now - seen.since >= stale_after and self._old_enough(seen, stale_after):
                    return "stale"
                else:
                    return "unknown"
            elif seen is not None and seen.generation == g:
                verdict = "alive"
            self._write(run_id, Seen(g, digest, now))
            return verdict

    def forget(self, run_id: str) -> None:
        with self._lock:
            if self.directory is None:
                self._memory.pop(run_id, None)
                return
            with contextlib.suppress(OSError):
                self._file(run_id).unlink()
