"""The file store's on-disk layout: which path holds each key, and which key each path is.

Under ``<root>/_control/`` every key segment but the last is a directory named
``<segment>.d``; the last is a file named ``<segment>.rec``. The two suffixes make the
key -> path mapping injective, so ``a`` (``a.rec``) and ``a/b`` (``a.d/b.rec``) coexist,
and a key such as ``a.rec/x`` (``a.rec.d/x.rec``) cannot collide with either. Temp files
end in ``.tmp``, a suffix no key maps to, so a listing skips them.

On a case-insensitive file system (macOS and Windows by default) ``Foo`` and ``foo``
would share one file. There every upper-case letter ``X`` of a key is written ``^x`` (and
``^`` as ``^^``) on disk, so keys stay distinct; a key without capitals or ``^`` keeps its
usual name, so stores made before keep working.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

CONTROL_DIR = "_control"
RECORD_SUFFIX = ".rec"
DIR_SUFFIX = ".d"
TEMP_SUFFIX = ".tmp"
_CAPITAL_OR_MARK = re.compile(r"[A-Z^]")
_FOLDED = re.compile(r"\^(.)")


def fold_name(text: str) -> str:
    """``text`` spelled for a case-insensitive file system: ``X`` -> ``^x``, ``^`` -> ``^^``."""
    return _CAPITAL_OR_MARK.sub(lambda m: "^^" if m.group() == "^" else "^" + m.group().lower(),
                                text)


def unfold_name(name: str) -> str:
    """The inverse of :func:`fold_name`."""
    return _FOLDED.sub(lambda m: "^" if m.group(1) == "^" else m.group(1).upper(), name)


@dataclass(frozen=True)
class FsLayout:
    """The key <-> path mapping under one ``_control`` directory."""

    control: str
    case_insensitive: bool = False

    def directory_of(self, segments: list[str]) -> str:
        """The directory holding every key under the key prefix ``segments``."""
        if self.case_insensitive:
            segments = [fold_name(s) for s in segments]
        return os.path.join(self.control, *[s + DIR_SUFFIX for s in segments])

    def record_path(self, key: str) -> tuple[str, str]:
        """(directory, record path) of a validated key; string concatenation, as it is hot."""
        if self.case_insensitive:
            key = fold_name(key)
        parents, _, leaf = key.rpartition("/")
        if parents:
            directory = self.control + "/" + parents.replace("/", DIR_SUFFIX + "/") + DIR_SUFFIX
        else:
            directory = self.control
        return directory, directory + "/" + leaf + RECORD_SUFFIX

    def collect_keys(self, directory: str, key_prefix: str, out: list[str]) -> None:
        """Append to ``out`` the key of every record below ``directory`` (keyed
        ``key_prefix``), unsorted; paths no key maps to, such as temp files, are skipped."""
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return  # nothing there, or a racing delete pruned it
        lead = key_prefix + "/" if key_prefix else ""
        unfold = unfold_name if self.case_insensitive else str
        for entry in entries:
            name = entry.name
            if name.endswith(RECORD_SUFFIX) and entry.is_file(follow_symlinks=False):
                out.append(lead + unfold(name[: -len(RECORD_SUFFIX)]))
            elif name.endswith(DIR_SUFFIX) and entry.is_dir(follow_symlinks=False):
                self.collect_keys(entry.path, lead + unfold(name[: -len(DIR_SUFFIX)]), out)
