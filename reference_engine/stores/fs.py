"""The filesystem store: the embedded default (``./.dw``).

Records are files under ``<root>/_control/``; :mod:`reference_engine.stores.fs_layout`
maps keys to paths and back. At open the store checks that the directory can hard-link
and whether it folds case (then the layout spells capitals so ``Foo`` and ``foo`` differ).

``put_if_absent`` writes a complete temp file beside the target, then ``os.link``s it into
place: the link fails with EEXIST when a record exists, and a reader never sees a partial
record. ``put`` is temp + ``os.replace``. With ``fsync=True`` (the default) the file and its
directory are fsynced, so a returned create survives a power cut.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import itertools
import os
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import SplitResult, unquote

from reference_engine.errors import StoreError, StoreUnavailable, TransientStoreError
from reference_engine.stores.fs_layout import CONTROL_DIR, TEMP_SUFFIX, FsLayout
from reference_engine.stores.keys import validate_key, validate_prefix
from reference_engine.stores.uri_options import flag_option, uri_options

# A create that keeps losing its directory to racing deletes gives up after this many tries.
_MAX_DIR_RACE_RETRIES = 64
# errno values meaning "this filesystem cannot hard-link": the store refuses to run there.
_NO_LINK_ERRNOS = frozenset(
    {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.ENOSYS}
)
_UNAVAILABLE_ERRNOS = frozenset({errno.EACCES, errno.EROFS, errno.EPERM})
_TRANSIENT_ERRNOS = frozenset({errno.EINTR, errno.EAGAIN, errno.EBUSY})
_PRUNE_STOP_ERRNOS = frozenset({errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT, errno.EBUSY})
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
# "sqlite:x.db" or "file:/p" is a mistyped URI, not a directory to create; a one-letter
# scheme would be a Windows drive.
_LOOKS_LIKE_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")


def _errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, "OSError")


def _mapped(exc: OSError, op: str, key: str) -> StoreError:
    """A store error for ``exc`` that names the operation and key, never a payload."""
    detail = f"{_errno_name(exc)}: {exc.strerror or exc}"
    message = f"file store: {op} of key {key!r} failed ({detail})"
    if exc.errno in _TRANSIENT_ERRNOS:
        return TransientStoreError(message + "; retry the call", op=op, key=key)
    if exc.errno in _UNAVAILABLE_ERRNOS:
        return StoreUnavailable(
            message + "; check the store directory's permissions and that it is writable",
            op=op, key=key,
        )
    return StoreError(message, op=op, key=key)


def _no_link_error(root: str, exc: OSError, *, op: str = "open", key: str = "") -> StoreUnavailable:
    return StoreUnavailable(
        f"file store at {root!r} cannot hard-link files ({_errno_name(exc)}), which its "
        "write-once create needs so no reader sees a partial record; put the store on a "
        "local POSIX filesystem (ext4, xfs, apfs, tmpfs) or use sqlite:///path.db",
        op=op, key=key,
    )


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    if written < len(data):  # short write: rare, so the slicing view is built only then
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view):]


class FsStore:
    """Records as files under ``<root>/_control``, laid out by :class:`FsLayout`."""

    def __init__(self, root: Path | str, *, fsync: bool = True) -> None:
        self.root = os.path.abspath(os.path.expanduser(os.fspath(root)))
        self.fsync = fsync
        self._control = os.path.join(self.root, CONTROL_DIR)
        # Temp names are unique per process (token) and per call (counter).
        self._token = f"{os.getpid()}-{os.urandom(4).hex()}"
        self._counter = itertools.count()
        self._layout = self._open()

    def __repr__(self) -> str:
        return f"FsStore({self.root!r}, fsync={self.fsync})"

    @property
    def case_insensitive(self) -> bool:
        """Whether the store's directory folds case, so the layout spells capitals."""
        return self._layout.case_insensitive

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> FsLayout:
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            raise StoreUnavailable(
                f"file store path {self.root!r} exists but is not a directory; point the store "
                "at a directory (it is created if missing) or remove that file",
                op="open",
            )
        try:
            os.makedirs(self._control, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot create the file store directory {self._control!r} "
                f"({_errno_name(exc)}: {exc.strerror}); check the path and its permissions",
                op="open",
            ) from None
        if not os.path.isdir(self._control):
            raise StoreUnavailable(
                f"{self._control!r} exists but is not a directory; remove it or choose "
                "another store path",
                op="open",
            )
        self._probe_hard_links()
        return FsLayout(self._control, is_case_insensitive(self._control, self._temp_path))

    def _probe_hard_links(self) -> None:
        source = self._temp_path(self._control)
        target = source[: -len(TEMP_SUFFIX)] + "-link" + TEMP_SUFFIX
        try:
            fd = os.open(source, _CREATE_FLAGS, 0o600)
            os.close(fd)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot write in the file store directory {self._control!r} "
                f"({_errno_name(exc)}: {exc.strerror}); check its permissions",
                op="open",
            ) from None
        try:
            os.link(source, target)
        except OSError as exc:
            raise _no_link_error(self.root, exc) from None
        finally:
            for path in (source, target):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)

    def _temp_path(self, directory: str) -> str:
        return f"{directory}/.{self._token}-{next(self._counter)}{TEMP_SUFFIX}"

    # -- writing ---------------------------------------------------------------------------

    def _ensure_dir(self, directory: str) -> None:
        """Create ``directory`` and its missing parents; fsync what was created if durable.

        A racing delete may prune a parent between two mkdirs: FileNotFoundError then
        propagates and the caller retries from the top.
        """
        missing: list[str] = []
        current = directory
        while current != self._control and not os.path.isdir(current):
            missing.append(current)
            current = os.path.dirname(current)
        for path in reversed(missing):
            try:
                os.mkdir(path)
            except FileExistsError:
                continue
            if self.fsync:
                _fsync_dir(os.path.dirname(path))

    def _write_temp(self, directory: str, data: bytes, op: str, key: str) -> str:
        """A complete (and, if durable, fsynced) temp file in ``directory``; mkdir on demand."""
        for _ in range(_MAX_DIR_RACE_RETRIES):
            temp = self._temp_path(directory)
            try:
                fd = os.open(temp, _CREATE_FLAGS, 0o644)
            except FileNotFoundError:
                # A racing delete may prune a parent mid-way: just go round again.
                with contextlib.suppress(FileNotFoundError):
                    self._ensure_dir(directory)
                continue
            except FileExistsError:
                continue  # a stale temp from a crashed process: pick another name
            try:
                _write_all(fd, data)
                if self.fsync:
                    os.fsync(fd)
            except BaseException:
                os.close(fd)
                _unlink_quietly(temp)
                raise
            os.close(fd)
            return temp
        raise TransientStoreError(
            f"file store: {op} of key {key!r} failed: its directory kept vanishing under "
            "racing deletes; retry the call",
            op=op, key=key,
        )

    def _staged(self, key: str, data: bytes, op: str) -> tuple[str, str, str]:
        """(directory, record path, complete temp file) for a write of ``data`` to ``key``."""
        validate_key(key, op=op)
        directory, final = self._layout.record_path(key)
        try:
            return directory, final, self._write_temp(directory, data, op, key)
        except OSError as exc:
            raise _mapped(exc, op, key) from None

    def put_if_absent(self, key: str, data: bytes) -> bool:
        directory, final, temp = self._staged(key, data, "put_if_absent")
        try:
            os.link(temp, final)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno in _NO_LINK_ERRNOS:
                raise _no_link_error(self.root, exc, op="put_if_absent", key=key) from None
            raise _mapped(exc, "put_if_absent", key) from None
        finally:
            _unlink_quietly(temp)
        if self.fsync:
            self._sync_dir(directory, "put_if_absent", key)
        return True

    def put(self, key: str, data: bytes) -> None:
        directory, final, temp = self._staged(key, data, "put")
        try:
            os.replace(temp, final)
        except OSError as exc:
            _unlink_quietly(temp)
            raise _mapped(exc, "put", key) from None
        if self.fsync:
            self._sync_dir(directory, "put", key)

    def _sync_dir(self, directory: str, op: str, key: str) -> None:
        try:
            _fsync_dir(directory)
        except OSError as exc:
            raise _mapped(exc, op, key) from None

    # -- reading ---------------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        validate_key(key, op="get")
        _, final = self._layout.record_path(key)
        try:
            with open(final, "rb") as handle:
                return handle.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _mapped(exc, "get", key) from None

    def delete(self, key: str) -> None:
        validate_key(key, op="delete")
        directory, final = self._layout.record_path(key)
        try:
            os.unlink(final)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise _mapped(exc, "delete", key) from None
        if self.fsync:
            try:
                _fsync_dir(directory)
            except FileNotFoundError:
                # A concurrent delete of a sibling pruned the now-empty directory: the
                # record is gone with it, which is all this delete promised.
                return
            except OSError as exc:
                raise _mapped(exc, "delete", key) from None
        self._prune(directory, key)

    def _prune(self, directory: str, key: str) -> None:
        """Remove empty directories from ``directory`` up to ``_control``; races just stop it."""
        current = directory
        while current != self._control:
            try:
                os.rmdir(current)
            except OSError as exc:
                if exc.errno in _PRUNE_STOP_ERRNOS:
                    return
                raise _mapped(exc, "delete", key) from None
            current = os.path.dirname(current)

    def list(self, prefix: str) -> list[str]:
        normalised = validate_prefix(prefix)
        segments = normalised.split("/") if normalised else []
        keys: builtins.list[str] = []
        try:
            self._layout.collect_keys(self._layout.directory_of(segments), normalised, keys)
        except OSError as exc:
            raise _mapped(exc, "list", normalised) from None
        keys.sort()
        return keys

    def close(self) -> None:
        """Nothing to release: every call opens and closes its own files."""


def is_case_insensitive(directory: str, temp_path: Callable[[str], str]) -> bool:
    """Whether ``directory``'s file system folds case: a probe file with a lower-case name
    is also found under its upper-case name."""
    probe = temp_path(directory)
    head, tail = os.path.split(probe)
    try:
        fd = os.open(probe, _CREATE_FLAGS, 0o600)
        os.close(fd)
    except OSError:
        return False  # the hard-link probe already proved the directory writable
    try:
        return os.path.exists(os.path.join(head, tail.upper()))
    finally:
        _unlink_quietly(probe)


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)



def from_uri(parsed: SplitResult) -> FsStore:
    """``file:///abs/path[?fsync=0]``: the filesystem store at an absolute path."""
    if parsed.netloc not in ("", "localhost"):
        raise StoreUnavailable(
            f"file URI has a host part {parsed.netloc!r}; write file:///abs/path (three "
            "slashes) or pass a bare path such as ./.dw",
            op="open",
        )
    path = unquote(parsed.path)
    if not path.startswith("/"):
        raise StoreUnavailable(
            "a file URI needs an absolute path (file:///abs/path); use a bare path for a "
            "relative one, e.g. ./.dw",
            op="open",
        )
    options = uri_options(parsed, store="file store", known={"fsync"},
                          advice="the only option is fsync=0|1")
    fsync = (flag_option(options["fsync"], "fsync", store="file store")
             if "fsync" in options else True)
    return FsStore(Path(path), fsync=fsync)


def from_path(path: str) -> FsStore:
    """A bare path (relative ones resolve against the current directory): durable mode."""
    if not path:
        raise StoreUnavailable("empty store path; pass a directory such as ./.dw", op="open")
    scheme = _LOOKS_LIKE_URI.match(path)
    if scheme is not None and not os.path.exists(path):
        raise StoreUnavailable(
            f"store {path!r} looks like a URI missing its '//'; write {scheme.group(1)}://... "
            "(e.g. file:///abs/path), or ./ before a directory name that holds a ':'",
            op="open",
        )
    return FsStore(Path(path))
