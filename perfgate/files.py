"""Writing files so that a reader never sees half of one, and cleaning up after a killed writer.
Stdlib only: reports, baselines and the plugin use it before numpy is loaded."""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# Temporary files of a write in progress: ``.perfgate-<name>.<random>.tmp`` beside the file they become.
# Hidden, and no reader ever opens them (readers open ``<dir>/<gpu>/<name>.json`` by name);
# ``remove_leftovers`` deletes the ones a killed writer left behind, and only those: the prefix is
# perfgate's, so a user's own ``.notes.abc123.tmp`` is never touched.
_TEMP_PREFIX = ".perfgate-"
_TEMP_SUFFIX = ".tmp"
_LEFTOVER = re.compile(r"^\.perfgate-.+\.[A-Za-z0-9_]{6,}\.tmp$")
STALE_SECONDS = 3600.0  # without flock (Windows): a temporary file this old is a leftover


try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def _lock(fd: int, *, wait: bool) -> bool:
    """flock ``fd`` exclusively; False when another process holds it (``wait=False``). True where there is no
    flock: there the age of a file decides (``remove_leftovers``)."""
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _same_file(path: str, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _locked_temp(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path``, flocked for as long as its descriptor stays open.

    The lock tells a concurrent ``remove_leftovers`` that a live writer owns the file (a killed writer's
    lock is released by the kernel). One created but not yet locked may be removed by such a cleaner; the
    name then leads to no file of ours, and a new one is made.
    """
    while True:
        fd, name = tempfile.mkstemp(prefix=f"{_TEMP_PREFIX}{path.name}.", suffix=_TEMP_SUFFIX, dir=path.parent)
        _lock(fd, wait=True)
        if _same_file(name, fd):
            return fd, name
        os.close(fd)


def _fill(fd: int, name: str, content: str | bytes | Iterable[str | bytes]) -> None:
    """Write ``content`` to the temporary file, flush it to disk and give it a normal file's mode; fd stays open."""
    parts = [content] if isinstance(content, (str, bytes)) else content
    with os.fdopen(os.dup(fd), "wb") as raw:
        for part in parts:
            raw.write(part.encode("utf-8") if isinstance(part, str) else part)  # no newline translation, anywhere
        raw.flush()
        os.fsync(raw.fileno())
    os.chmod(name, 0o666 & ~_umask())  # mkstemp makes 0600; a report or baseline is a normal file


def _discard(fd: int, name: str) -> None:
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass
    os.close(fd)


def _sync_folder(folder: Path) -> None:
    """fsync a folder so the renames in it survive a power cut (POSIX; elsewhere nothing to do)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(path: Path, text: str | bytes | Iterable[str | bytes]) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half of one.

    ``text`` may come in parts (an iterable of str, or of UTF-8 bytes), each written as it is made: the text of a
    large report then never exists whole in memory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = _locked_temp(path)
    try:
        _fill(fd, tmp_name, text)
        os.replace(tmp_name, path)
    except BaseException:
        _discard(fd, tmp_name)
        raise
    os.close(fd)
    _sync_folder(path.parent)


def remove_leftovers(folder: Path) -> list[Path]:
    """Delete the temporary files killed writers left in ``folder`` (``.<name>.<random>.tmp``); returns them.

    A file a live writer holds (flocked) is left alone, so concurrent writers are safe; where there is no
    flock, only files older than ``STALE_SECONDS`` are removed.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not _LEFTOVER.match(entry.name) or not entry.is_file(follow_symlinks=False):
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            if not _lock(fd, wait=False):
                continue  # a writer is at work on it
            if fcntl is None and time.time() - os.fstat(fd).st_mtime < STALE_SECONDS:
                continue  # pragma: no cover - Windows: maybe a live writer's
            if _same_file(entry.path, fd):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed
