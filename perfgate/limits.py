"""The limits perfgate puts on its inputs, stated once (README, "Input limits").

Every input is untrusted: a report downloaded from a fork's artifact, a pipe, a file a test wrote.
Each limit is far above what a real input reaches and low enough that a hostile or broken one
ends in one line (exit 2) within seconds, instead of filling the disk or the memory:

* ``MAX_INPUT_BYTES``: a file, what a pipe delivers, or what a compressed file expands to (4 GiB;
  ``PERFGATE_MAX_INPUT_BYTES`` overrides it). perfgate's own 26-launch H100 MLP report is 30 MB.
* ``MAX_NAME_CHARS``: a kernel, benchmark or NVTX region name (64 Ki characters). The longest
  templated names seen in real reports are a few thousand characters; a 50 MB name took 45 s.
* ``MAX_JSON_DEPTH``: nesting of a JSON input (64 levels; perfgate's own files use 5, pytest-benchmark's
  about 6). Deeper documents would exhaust Python's recursion limit later, anywhere.
* ``MAX_OPEN_RANGES``: host ranges (NVTX, ``record_function``, ``perfgate.region``) of a trace open at one moment,
  nested on one thread (256; the deepest nesting in the shared corpus of real traces is 19). Deeper nesting made
  region paths grow with the square of the depth: 100,000 nested NVTX ranges took 4 GB.
* ``MAX_REGION_PATHS_CHARS``: the distinct region paths of one trace together (64 Mi characters); a path itself
  is a name, at most ``MAX_NAME_CHARS``.
* ``MAX_LAUNCH_TEXT_CHARS``: the kernel names and region paths of a trace's kernel launches together, each counted
  once a launch as every output writes it (1 Gi characters; 200,000 launches of the 5,123-character demangled name,
  the longest in the shared corpus, come near it). A region path of 64 Ki characters over 200,000 launches would make a
  13 GB baseline.
* ``HISTORY_WAIT_SECONDS``: how long a command or the pytest plugin waits on the history database by default:
  connecting, another writer's lock, one statement (60 s; ``--max-time``, ``--perfgate-history-max-time``,
  ``[tool.perfgate] history_max_time``).
* ``FIFO_WAIT_SECONDS``: how long a named pipe (``mkfifo``) may have no writer before perfgate gives up
  (30 s; ``PERFGATE_FIFO_WAIT`` overrides it). An anonymous pipe (``<(cmd)``, ``cmd |``) always has its
  writer, and is read until it ends, like ``cat`` would, up to ``MAX_INPUT_BYTES``.

Stdlib only.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfgate.errors import InputError

XZ_MAGIC = b"\xfd7zXZ\x00"  # a file's first bytes when compressed with xz
GZIP_MAGIC = b"\x1f\x8b"  # ... with gzip

MAX_INPUT_BYTES = 4 << 30
MAX_NAME_CHARS = 1 << 16
MAX_JSON_DEPTH = 64
MAX_OPEN_RANGES = 256
MAX_REGION_PATHS_CHARS = 1 << 26
MAX_LAUNCH_TEXT_CHARS = 1 << 30
MAX_FINDINGS, MAX_FINDING_CHARS = 200, 500  # ncu rule findings of one launch, in reports and baselines
FIFO_WAIT_SECONDS = 30.0
HISTORY_WAIT_SECONDS = 60.0

ENV_MAX_INPUT_BYTES = "PERFGATE_MAX_INPUT_BYTES"
ENV_FIFO_WAIT = "PERFGATE_FIFO_WAIT"


def _from_env(name: str, default: float) -> float:
    """A positive finite number from the environment, else ``default`` (a bad value is ignored, never fatal)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        return default
    return value if math.isfinite(value) and value > 0 else default


def max_input_bytes() -> int:
    """Bytes one input may hold (after decompression): ``PERFGATE_MAX_INPUT_BYTES``, else 4 GiB."""
    return int(_from_env(ENV_MAX_INPUT_BYTES, MAX_INPUT_BYTES))


def fifo_wait_seconds() -> float:
    """Seconds a named pipe may stay without a writer: ``PERFGATE_FIFO_WAIT``, else 30."""
    return _from_env(ENV_FIFO_WAIT, FIFO_WAIT_SECONDS)


def size_text(count: float) -> str:
    """``4 GiB``, ``100,000 bytes``: how a limit is named in an error line."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{int(count // size):,} {unit}"
    return f"{int(count):,} bytes"


FIX_SIZE = f"perfgate reads inputs up to this size; raise it with {ENV_MAX_INPUT_BYTES}=BYTES if the input is genuine"


def check_name_length(names: Iterable[object], source: object, what: str = "kernel name") -> None:
    """Raise InputError when one of ``names`` is a str longer than ``MAX_NAME_CHARS``."""
    for name in names:
        if isinstance(name, str) and len(name) > MAX_NAME_CHARS:
            raise InputError(source, f"a {what} of {len(name):,} characters (perfgate reads names up to "
                                     f"{MAX_NAME_CHARS:,})",
                             "this is not a name a compiler writes; regenerate the input, or export ncu's CSV with "
                             "--print-kernel-base function")


def json_depth_exceeds(document: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``document`` (parsed JSON) nests deeper than ``limit`` containers; iterative, never recursive.

    Level by level, testing each value's exact type (parsed JSON holds plain dicts and lists only): on a 35 MB
    profiler trace this takes 0.15 s where a stack of (node, depth) pairs and ``isinstance`` took 0.7 s."""
    level: list[Any] = [document] if isinstance(document, (dict, list)) else []
    depth = 1
    while level:
        if depth > limit:
            return True
        deeper: list[Any] = []
        for node in level:
            for child in node.values() if type(node) is dict else node:
                if type(child) is dict or type(child) is list:
                    deeper.append(child)
        level = deeper
        depth += 1
    return False


LONE_SURROGATE = ("a string holds a lone UTF-16 surrogate (an escape such as \\ud800 without its other half), which is "
                  "no character and cannot be written to any report")


def lone_surrogate(document: object, text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether parsed JSON (``document``, decoded from ``text[start:end]``) holds a string with a lone UTF-16
    surrogate: JSON's ``\\ud800`` escape decodes to one, and no UTF-8 output (a report, a baseline, a terminal line)
    can hold it. Looked for only where the text holds such an escape (an emoji written ASCII-only is a pair of them),
    so other documents cost two searches of their text."""
    stop = len(text) if end is None else end
    if text.find("\\ud", start, stop) < 0 and text.find("\\uD", start, stop) < 0:
        return False
    nodes: list[Any] = [document]
    while nodes:
        node = nodes.pop()
        if type(node) is dict:
            nodes.extend(node)
            nodes.extend(node.values())
        elif type(node) is list:
            nodes.extend(node)
        elif type(node) is str and not node.isascii():
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return True
    return False


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


def number_too_long(source: object, fix: str) -> InputError:
    """The error for a JSON integer of more digits than Python converts (4,300 by default): no measurement has one."""
    return InputError(source, "a number with more digits than Python reads (4,300 unless set otherwise): no "
                              "measurement has one", fix)


def parse_json(text: str, source: object, fix: str) -> Any:
    """Plain, finite, shallow JSON, or one-line InputError naming ``source`` (``fix`` says how to get a good one).

    Nesting deeper than ``MAX_JSON_DEPTH`` is refused here, once, so that no later step (validation,
    rendering, ``str()``) can run out of recursion on an untrusted document.
    """
    too_deep = InputError(source, f"JSON nested more than {MAX_JSON_DEPTH} levels deep", fix)
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except _NonFinite as exc:
        raise InputError(source, f"{exc} is not valid JSON (numbers must be finite)", fix) from None
    except json.JSONDecodeError as exc:
        raise InputError(source, f"broken JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
                         f"it may have been truncated; {fix}") from None
    except RecursionError:
        raise too_deep from None
    except ValueError:  # past the JSONDecodeError above: Python's own limit on an integer's digits
        raise number_too_long(source, fix) from None
    if json_depth_exceeds(document):
        raise too_deep
    if lone_surrogate(document, text):
        raise InputError(source, LONE_SURROGATE, fix)
    return document


def parse_json_or_none(text: str | bytes) -> Any:
    """``parse_json`` for JSON perfgate reads only where it can (a setting holding JSON, a file beside an input):
    None where it is not plain, finite, shallow JSON."""
    try:
        return parse_json(text.decode("utf-8") if isinstance(text, bytes) else text, "", "")
    except (InputError, UnicodeDecodeError):
        return None


def check_regular_file(path: Path, what: str, fix: str, limit: int | None = None) -> None:
    """InputError unless ``path`` is a regular file of at most ``limit`` bytes (perfgate's input limit by
    default): a device such as /dev/zero or a FIFO nobody writes never ends. ``what``: the file's role, as the
    error names it. OSError where it cannot be read, for the caller to say."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise InputError(path, f"{what} is not a regular file", fix)
    most = max_input_bytes() if limit is None else limit
    if info.st_size > most:
        raise InputError(path, f"{what} is larger than {size_text(most)}, the input limit", fix)


def read_json_file(path: Path, what: str, fix: str) -> Any:
    """``parse_json`` of a UTF-8 file; one-line InputError when it cannot be read (``what`` it should hold)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text; expected {what}") from exc
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from exc
    return parse_json(text, path, fix)
