"""Writing files so that a reader never sees half of one, and cleaning up after a killed writer.
Stdlib only: reports, baselines and the plugin use it before numpy is loaded.

``write_file`` is the one home of an output a user names (``-o FILE``, ``--perfgate-report``): atomic where the
target is a regular file or a new path, written through where it is something else a shell writes to (a
character device such as ``/dev/null``, a FIFO, ``/dev/stdout``), which a rename would replace and destroy."""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
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


def _fill(fd: int, name: str, content: str | bytes | Iterable[str | bytes | bytearray]) -> None:
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


class NotWritable(OSError):
    """A target perfgate refuses to write (a block device, a socket): ``strerror`` says what it is."""


_MAX_LINKS = 40  # as the kernel's ELOOP limit


def write_file(path: Path, text: str | bytes | Iterable[str | bytes]) -> None:
    """Write a command's or the plugin's output to ``path``: atomically (``write_atomically``) where it is a
    regular file or a new path, also through a symbolic link (the file it names is replaced, the link kept);
    through to anything else a shell would write to (a character device, a FIFO, a process's own descriptor
    such as ``/dev/stdout``), as ``>`` would, since renaming a file over it would destroy it (as root) and
    lose the output. A directory, a block device or a socket raises ``OSError`` (``strerror`` says why), as
    does a full device (``/dev/full``: ENOSPC)."""
    replaceable = _replaceable(path)
    if replaceable is not None:
        write_atomically(replaceable, text)
    else:
        _write_through(path, text)


def written_through(path: Path) -> bool:
    """Whether ``write_file`` writes through to ``path`` (a device, a FIFO, a process's own descriptor) rather than
    replace a file there."""
    return _replaceable(path) is None


def _replaceable(path: Path) -> Path | None:
    """The regular file (or new path) that ``path`` names, following symbolic links; None when it names
    anything else, or a process's open descriptor (``/dev/stdout`` -> ``/proc/self/fd/1``): replacing the file
    behind one would leave the descriptor writing to the old one."""
    current = path
    for _ in range(_MAX_LINKS):
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return current  # a new file (or a dangling link's target, made as ``>`` would)
        except OSError:
            return current  # not a directory, no permission...: write_atomically says so
        if stat.S_ISREG(info.st_mode):
            return current
        if not stat.S_ISLNK(info.st_mode):
            return None
        folder = os.path.realpath(os.path.dirname(os.path.abspath(current)))
        if folder == "/proc" or folder.startswith("/proc/"):
            return None
        current = Path(folder, os.readlink(current))
    return None  # a loop of links: opening it says so (ELOOP)


def _write_through(path: Path, text: str | bytes | Iterable[str | bytes]) -> None:
    """Write to what ``path`` names without replacing it: a FIFO (waiting for its reader as long as a FIFO
    input may wait for its writer), a character device, or this process's stdout."""
    info = os.stat(path)
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        what = "a block device" if stat.S_ISBLK(mode) else "a socket"
        raise NotWritable(errno.EINVAL, f"{what}, which perfgate never writes: give a file name, or - for stdout",
                          str(path))
    parts = [text] if isinstance(text, (str, bytes)) else text
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        buffer = getattr(stream, "buffer", None)
        if buffer is not None and _same_as_fd(info, fd):
            # /dev/stdout and the like: write to the descriptor this process has, after what it printed, rather
            # than open the file again at its start (stdout redirected to a file would be truncated).
            stream.flush()
            for part in parts:
                buffer.write(part.encode("utf-8") if isinstance(part, str) else part)
            buffer.flush()
            return
    fd = _open_fifo(path) if stat.S_ISFIFO(mode) else os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    with os.fdopen(fd, "wb") as out:
        for part in parts:
            out.write(part.encode("utf-8") if isinstance(part, str) else part)


def _same_as_fd(info: os.stat_result, fd: int) -> bool:
    try:
        mine = os.fstat(fd)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (info.st_dev, info.st_ino)


def _open_fifo(path: Path) -> int:
    """A FIFO opened for writing once a reader has it open; ``ENXIO`` when none came within the FIFO wait."""
    from perfgate.limits import fifo_wait_seconds

    deadline = time.monotonic() + fifo_wait_seconds()
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                if exc.errno == errno.ENXIO:
                    exc.strerror = f"a named pipe (FIFO) that nothing read within {fifo_wait_seconds():g} s"
                raise
            time.sleep(0.05)
            continue
        os.set_blocking(fd, True)
        return fd


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
