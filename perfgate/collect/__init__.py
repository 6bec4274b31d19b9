"""Collect: turn any supported input file into the normalized table (see ``perfgate.table``).

Supported inputs: ``.ncu-rep`` (ncu_report), ncu CSV (``--csv --page details|raw``),
pytest-benchmark JSON, perfgate baseline JSON, and timeline traces (PyTorch profiler Chrome traces,
Nsight Systems SQLite exports, perfgate's CUPTI trace: ``perfgate.collect.timeline``), each optionally compressed with xz or gzip
(Nsight Compute reports shrink 5-20x: perfgate's own H100 fixtures are stored as ``.ncu-rep.xz``).
The format is sniffed from the content, not trusted from the extension.
"""

from __future__ import annotations

import gzip
import lzma
import os
import select
import signal
import stat
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Collection
from pathlib import Path

from perfgate.limits import (
    ENV_FIFO_WAIT,
    FIX_SIZE,
    GZIP_MAGIC,
    XZ_MAGIC,
    fifo_wait_seconds,
    max_input_bytes,
    size_text,
)
from perfgate.collect.json_input import Stream, open_json
from perfgate.collect.timeline import SOURCE_SETTING, TIMELINE
from perfgate.collect.timeline.codes_file import trace_codes
from perfgate.collect.readers import (
    READERS,
    Input,
    JsonInput,
    Reader,
    either,
    json_rows,
    json_text,
    readable_inputs,
    recognized,
    stream_fix,
    streaming_row,
    streams_key,
    streams_top_level,
)
from perfgate.errors import InputError
from perfgate.process import Terminated, terminated_by
from perfgate.table import Measurement


_PIPE = "pipe"
_FILE = "file"


def _check_path(path: Path) -> str:
    """``"file"`` for a regular file within the size limit, ``"pipe"`` for a pipe; InputError for anything else."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise InputError(path, "no such file", "check the path") from None
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})", "check the path and its permissions") from None
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise InputError(path, "is a directory, not a report",
                         "pass one file: a .ncu-rep, an ncu CSV, a pytest-benchmark JSON or a baseline JSON")
    if not os.access(path, os.R_OK):
        raise InputError(path, "permission denied", "make the file readable")
    if stat.S_ISREG(mode):
        limit = max_input_bytes()
        if info.st_size > limit:
            raise InputError(path, f"{info.st_size:,} bytes, more than perfgate's input limit of {size_text(limit)}",
                             FIX_SIZE)
        return _FILE
    if stat.S_ISFIFO(mode):
        return _PIPE
    what = ("a character device (like /dev/zero or a terminal)" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
    raise InputError(path, f"is {what}, which cannot be read to an end",
                     "pass a file, or a pipe from a command that ends (<(cmd) or cmd | perfgate ... /dev/stdin)")


_SNIFF_BYTES = 8192


def _anonymous_pipe(path: Path) -> bool:
    """``<(cmd)`` and ``/dev/stdin`` of ``cmd |``: a pipe whose writer exists from the start (Linux names it
    ``pipe:[inode]``), unlike a ``mkfifo`` FIFO, which may not have been opened for writing yet."""
    return os.path.basename(os.path.realpath(path)).startswith("pipe:")


def _first_bytes(fd: int, path: Path) -> bytes:
    """Up to ``_SNIFF_BYTES`` from a pipe opened non-blocking; waits for a FIFO's writer at most ``fifo_wait_seconds``."""
    deadline = time.monotonic() + fifo_wait_seconds()
    anonymous = _anonymous_pipe(path)
    head = b""
    writer_seen = anonymous
    while len(head) < _SNIFF_BYTES:
        try:
            chunk = os.read(fd, _SNIFF_BYTES - len(head))
        except BlockingIOError:  # a writer is there, with nothing written yet: wait for it like cat would
            writer_seen = True
            select.select([fd], [], [])
            continue
        if chunk:
            head += chunk
            writer_seen = True
            continue
        if writer_seen:  # end of the stream
            break
        # A FIFO nobody has opened for writing yet (or an empty one): wait, but not forever.
        if time.monotonic() > deadline:
            raise InputError(path, f"a named pipe (FIFO) that nothing wrote to within {fifo_wait_seconds():g} s",
                             f"start the command that writes it first, or raise {ENV_FIFO_WAIT}=SECONDS")
        time.sleep(0.05)
    return head


def _spool(source: Path, made: list[Path], readers: tuple[Reader, ...]) -> Path:
    """Copy a pipe into a temporary file (readers need to seek), named in ``made`` as soon as it exists: the caller
    removes it, whatever ends the copy.

    Refused early: a stream whose first bytes are no supported format (nothing more is read), and a
    stream longer than ``max_input_bytes()`` (the partial copy is removed).
    """
    limit = max_input_bytes()
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(source, f"cannot read ({exc.strerror or exc})") from None
    copying: list[threading.Thread] = []
    try:
        head = _first_bytes(fd, source)
        if head and not _supported_head(head, readers):
            raise _unrecognized(source, readers)
        os.set_blocking(fd, True)
        handle, name = tempfile.mkstemp(prefix="perfgate-", suffix=source.suffix if source.suffix else "")
        made.append(Path(name))
        _copy_in_thread(fd, handle, head, limit, source, copying)
    except OSError as exc:
        raise InputError(source, f"cannot read ({exc.strerror or exc})") from None
    finally:
        if not copying:  # else the copy owns the pipe and closes it when it ends
            os.close(fd)
    return made[-1]


_SPOOL_CHUNK = 256 << 10
_STOP_SIGNALS = {getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name)}


def _copy_in_thread(fd: int, handle: int, head: bytes, limit: int, source: Path,
                    workers: list[threading.Thread]) -> None:
    """Write ``head`` and the rest of the pipe ``fd`` to the temporary file ``handle``, in a worker thread (put in
    ``workers``) that owns both and closes them when it ends.

    The main thread only waits, where SIGTERM reaches it at once: a write into a congested TMPDIR can keep a thread
    in the kernel for seconds (dirty-page throttling wakes for a fatal signal only, and a handled SIGTERM is not
    one), and the command must still end, its spool removed, without waiting for the disk. The worker stops at
    its next chunk once the wait was interrupted or the command terminated, or dies with the process."""
    failures: list[BaseException] = []
    stop = threading.Event()  # the wait was interrupted (Ctrl-C, a signal): the copy ends at its next chunk

    def copy() -> None:
        try:
            if hasattr(signal, "pthread_sigmask"):
                signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)  # signals go to the main thread
            with os.fdopen(handle, "wb") as out:
                out.write(head)
                written = len(head)
                while not stop.is_set() and terminated_by() is None and (chunk := os.read(fd, _SPOOL_CHUNK)):
                    written += len(chunk)
                    if written > limit:
                        raise InputError(source, f"the stream goes on beyond perfgate's input limit of "
                                                 f"{size_text(limit)}", FIX_SIZE)
                    out.write(chunk)
        except BaseException as exc:  # handed to the main thread
            failures.append(exc)
        finally:
            os.close(fd)

    worker = threading.Thread(target=copy, name="perfgate-spool", daemon=True)
    workers.append(worker)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)  # a bounded wait: a signal's handler runs within it whatever the Python version
    except BaseException:
        stop.set()
        raise
    signum = terminated_by()
    if signum is not None:  # the handler's exception was lost on its way (it is raised where the wait is)
        raise Terminated(signum)
    if failures:
        raise failures[0]


class _Expansion:
    """An xz or gzip file's expansion, read as it is made (``json_input.Stream``): past the input limit, or broken,
    one InputError naming the file."""

    def __init__(self, source: Path, head: bytes) -> None:
        opener = lzma.open if head.startswith(XZ_MAGIC) else gzip.open
        self.source, self.limit, self.expanded = source, max_input_bytes(), 0
        try:
            self.packed = opener(source, "rb")
        except OSError as exc:
            raise InputError(source, f"cannot read ({exc.strerror or exc})") from None

    def read(self, size: int, /) -> bytes:
        try:
            chunk: bytes = self.packed.read(size)
        except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:  # zlib.error: a bad deflate block
            raise InputError(self.source, f"broken compressed file ({exc})", "copy or download it again") from None
        self.expanded += len(chunk)
        if self.expanded > self.limit:
            raise _too_large_expansion(self.source, self.limit)
        return chunk

    def close(self) -> None:
        self.packed.close()


def _too_large_expansion(source: Path, limit: int) -> InputError:
    return InputError(source, f"decompresses to more than perfgate's input limit of {size_text(limit)}",
                      "decompress it yourself and pass the file")


def _decompress(source: Path, head: bytes, folder: Path) -> Path:
    """Expand an xz or gzip file into ``folder``, keeping its inner name (``mlp.ncu-rep.xz`` -> ``mlp.ncu-rep``)."""
    inner_name = source.name[: -len(source.suffix)] if source.suffix in (".xz", ".gz") else source.name
    target = folder / (inner_name or "input")
    opener = lzma.open if head.startswith(XZ_MAGIC) else gzip.open
    limit = max_input_bytes()
    written = 0
    try:
        with opener(source, "rb") as packed, target.open("wb") as out:
            while chunk := packed.read(1 << 20):
                written += len(chunk)
                if written > limit:
                    raise _too_large_expansion(source, limit)
                out.write(chunk)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:  # zlib.error: a bad deflate block
        raise InputError(source, f"broken compressed file ({exc})", "copy or download it again") from None
    return target


def _renamed(exc: InputError, inner: Path, outer: str | os.PathLike[str]) -> InputError:
    """The same error naming what the user passed rather than perfgate's temporary copy of it."""
    if exc.path != str(inner):
        return exc
    return InputError(outer, exc.problem, exc.fix)


def read_table(path: str | os.PathLike[str], metrics: Collection[str] | None = None, code: bool = False,
               readers: tuple[Reader, ...] = READERS) -> Measurement:
    """Read any supported input into the normalized table and the facts beside it.

    ``metrics`` is a hint: readers that can skip other metrics cheaply (``.ncu-rep``) do so. A pipe is
    copied to a temporary file first, and a compressed input expanded into a temporary folder: both
    are removed before this returns or raises. ``code``: read the kernels' machine code where the input holds it
    (``.ncu-rep``) or a codes file lies beside it (a trace: ``timeline.codes_file``), for the same-code rule.
    ``readers``: the formats read (``readers.READERS``, every one).
    """
    file_path = Path(path)
    spooled: list[Path] = []  # filled by _spool as soon as the file exists: removed here even if a signal ends it
    try:
        if _check_path(file_path) == _PIPE:
            # A pipe or process substitution can be read only once, and readers need to seek.
            file_path = _spool(file_path, spooled, readers)
        try:
            measurement = _read_file(file_path, metrics, str(path), code, readers)
        except InputError as exc:
            raise _renamed(exc, file_path, path) from None
        return measurement._replace(source=str(path)) if spooled else measurement
    finally:
        for made in spooled:
            made.unlink(missing_ok=True)


def _read_file(file_path: Path, metrics: Collection[str] | None, shown: str, code: bool,
               readers: tuple[Reader, ...]) -> Measurement:
    try:
        with file_path.open("rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError as exc:
        raise InputError(file_path, f"cannot read ({exc.strerror or exc})") from None
    if not head:
        raise InputError(file_path, "empty file",
                         f"expected {readable_inputs(readers)}")
    if head.startswith((XZ_MAGIC, GZIP_MAGIC)):
        expansion = _Expansion(file_path, head)
        try:
            inner_head = expansion.read(_SNIFF_BYTES)
        finally:
            expansion.close()
        if json_text(inner_head):  # JSON is read as it is expanded, never written out
            return _read_json(file_path, readers, code,
                              lambda _: _Expansion(file_path, head))._replace(source=shown)
        # The other readers (ncu_report, SQLite, the CSV pages) read a file: expanded into a temporary one.
        with tempfile.TemporaryDirectory(prefix="perfgate-") as folder:  # removed even when reading fails
            inner = _decompress(file_path, head, Path(folder))
            try:
                measurement = read_table(inner, metrics, code, readers)
            except InputError as exc:
                raise _renamed(exc, inner, shown) from None
        if code and measurement.code is None and measurement.settings.get(SOURCE_SETTING) == TIMELINE:
            measurement = trace_codes(measurement, file_path)  # beside the compressed file, not its expansion
        return measurement._replace(source=shown)
    return _read_by_format(file_path, head, metrics, code, readers)


def _supported_head(head: bytes, readers: tuple[Reader, ...]) -> bool:
    """Whether a stream's first bytes can start an input perfgate reads (decided before reading the rest)."""
    return head.startswith((XZ_MAGIC, GZIP_MAGIC)) or recognized(head, "", readers) is not None


def _unrecognized(path: Path, readers: tuple[Reader, ...]) -> InputError:
    return InputError(path, "unrecognized file format", f"expected {readable_inputs(readers)}")


def _read_by_format(file_path: Path, head: bytes, metrics: Collection[str] | None, code: bool,
                    readers: tuple[Reader, ...]) -> Measurement:
    """Hand an uncompressed file to the first row of ``readers`` that recognizes its first bytes ``head``."""
    row = recognized(head, file_path.suffix, readers)
    if row is None:
        raise _unrecognized(file_path, readers)
    if row.document is not None:
        return _read_json(file_path, readers, code)
    return row.read(Input(file_path, metrics, code))


def _read_json(file_path: Path, readers: tuple[Reader, ...], code: bool = False,
               opener: Callable[[Path], Stream] | None = None) -> Measurement:
    """A JSON input, parsed once, handed to the first JSON row that recognizes it: a list some row ``streams`` read
    one element at a time, anything else whole; ``opener``: how to read it (a compressed file's expansion, as it is
    made); ``code``: as ``read_table``'s."""
    rows = json_rows(readers)
    key_streams, list_streams = streams_key(rows), streams_top_level(rows)
    fix = stream_fix(rows)
    document, key, events = (open_json(file_path, key_streams, list_streams, stream_fix=fix) if opener is None
                             else open_json(file_path, key_streams, list_streams, opener, fix))
    parsed = JsonInput(document, key, events)
    if events is not None:  # a list read as it is used: the row that streams it reads it
        return streaming_row(rows, key, document).read(Input(file_path, code=code, json=parsed))
    for row in rows:
        if row.document is not None and row.document(document):
            return row.read(Input(file_path, code=code, json=parsed))
    raise InputError(file_path, f"JSON that is neither {either([row.json_name for row in rows], 'nor')}",
                     f"pass {either([row.json_fix for row in rows], 'or')}")
