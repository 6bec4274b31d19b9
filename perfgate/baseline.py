"""The baselines folder, the one home of its files: a baseline built from a table, named, written atomically
(``perfgate.collect.baseline_json`` reads them), listed with how and when it was measured, and found stale when
no test uses it any more (``perfgate baselines list|stale``, in ``perfgate.cli.baselines``).

Format v1 (schema: ``perfgate/schemas/baseline-v1.schema.json``)::

    {
      "format": "perfgate-baseline",
      "version": 1,
      "device": {"name": "Tesla T4", "cc": "7.5"},
      "settings": {"clock_control": "base", "cache_control": "all"},
      "source": "report_v3_loop_unroll.ncu-rep",
      "entries": [
        {"kind": "kernel", "name": "matrix_addition2D", "demangled": "...", "region": "", "ordinal": 0,
         "grid": "(2016, 1, 1)", "block": "(256, 1, 1)",
         "metrics": {"dram__bytes_read.sum": {"unit": "byte", "value": 14243008.0}, ...},
         "findings": ["Uncoalesced Global Accesses"]},
        {"kind": "benchmark", "name": "tests/test_x.py::test_parse", ..., "samples": [0.0012, ...]}
      ]
    }

``findings`` (Nsight Compute's rule findings) is on every kernel entry when the run collected ncu
sections, and on none when it did not ("not known", never "none found").

One file holds one device; files live in ``DIR/<device-slug>/`` so an H100 result is never
compared with an A100 baseline. Entries are sorted and keys ordered so that a baseline update
reads well in a PR diff.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence
from urllib.parse import quote

from perfgate.baseline_entries import BaselineEntries
from perfgate.baseline_entries import baseline_documents as baseline_documents
from perfgate.errors import ConfigError, InputError
from perfgate.limits import check_regular_file, read_json_file
from perfgate.files import (
    _fill,
    _locked_temp,
    _sync_folder,
    remove_leftovers,
    write_atomically,
)
from perfgate.text import inert_json

MAX_STEM = 200  # bytes of a file name's stem: under every filesystem's 255, with room for ".json" and temp names


def device_slug(name: str, cc: str) -> str:
    """Folder name for a device: ``Tesla T4``, ``7.5`` -> ``tesla-t4-sm75``. One folder level, whatever the input
    says (a compute capability ``9.0/x`` is ``sm90x``); one over ``MAX_STEM`` bytes (a report can name its device
    anything) is cut and given a hash of the whole name."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown-device"
    cc_part = re.sub(r"[^a-z0-9]+", "", cc.lower())
    if cc_part:
        slug += "-sm" + cc_part
    if len(slug) > MAX_STEM:
        slug = slug[:MAX_STEM - 17] + "-" + hashlib.sha1(f"{name}\0{cc}".encode()).hexdigest()[:16]
    return slug


def file_stem(name: str) -> str:
    """The file name (without ``.json``) that holds the baseline called ``name``: one path component, and a
    different one for every different name (percent-encoding: ``my test`` -> ``my%20test``, ``../x`` ->
    ``%2E.%2Fx``), so a name can neither leave the baselines folder nor share another name's file. Letters,
    digits, ``-``, ``_`` and inner dots are kept, so the names perf tests get (``gate.baseline_name``) are
    their own file names. A stem over ``MAX_STEM`` bytes is cut and given a hash of the whole name."""
    if not name:
        raise ConfigError("a baseline name must not be empty (--name)")
    stem = quote(name, safe="-_.")
    if stem.startswith("."):  # ".", "..", and names that would be hidden (or look like a temporary file)
        stem = "%2E" + stem[1:]
    if len(stem) > MAX_STEM:
        stem = stem[:MAX_STEM - 17].rstrip("%") + "-" + hashlib.sha1(name.encode()).hexdigest()[:16]
    return stem


_ENTRIES_MARK = "\x00entries\x00"  # written "\u0000entries\u0000": no baseline string holds that


def dumps_baseline(document: dict[str, Any]) -> str:
    """The document as ``json.dumps(indent=2)`` writes it (``baseline_bytes``, decoded)."""
    return baseline_bytes(document).decode("utf-8")


def baseline_bytes(document: dict[str, Any]) -> bytearray:
    """The document as ``json.dumps(indent=2)`` writes it, UTF-8 (``baseline_pieces``, in one buffer)."""
    out = bytearray()
    for piece in baseline_pieces(document):
        out += piece
    return out


def baseline_pieces(document: dict[str, Any]) -> Iterator[bytes]:
    """The document as ``json.dumps(indent=2)`` writes it, UTF-8, a piece at a time: its entries are encoded one at
    a time (``save_baselines`` writes each to the file as it comes). With ``indent``, json encodes in Python, one
    small string per token, and a baseline of 200,000 kernel launches (139 MB of text) took 720 MB that way,
    whole; its pieces joined, then copied into a string and then bytes, took four copies of the text."""
    entries = document.get("entries")
    frame = json.dumps({**document, "entries": [_ENTRIES_MARK]}, indent=2, ensure_ascii=False, allow_nan=False)
    mark = json.dumps(_ENTRIES_MARK)
    if not isinstance(entries, Sequence) or not entries or frame.count(mark) != 1:
        whole = {**document, "entries": list(entries)} if isinstance(entries, BaselineEntries) else document
        yield inert_json(json.dumps(whole, indent=2, ensure_ascii=False, allow_nan=False)).encode() + b"\n"
        return
    before, after = frame.split(mark)
    yield inert_json(before).encode()
    # An entry's lines as they sit in the document: two levels deeper (JSON text holds no raw newline in a string).
    # ``##[`` is only ever inside a string, so each entry made inert alone is the whole made inert.
    for at, entry in enumerate(entries):
        text = json.dumps(entry, indent=2, ensure_ascii=False, allow_nan=False).replace("\n", "\n    ")
        yield (",\n    " if at else "").encode() + inert_json(text).encode()
    yield inert_json(after).encode() + b"\n"


class _Matching:
    """A file's new pieces as they are written, compared on the way with what it holds (``old``; None: no file)."""

    def __init__(self, pieces: Iterator[bytes], old: bytes | None) -> None:
        self.pieces, self.old = pieces, old
        self.same, self.size = old is not None, 0

    def __iter__(self) -> Iterator[bytes]:
        for piece in self.pieces:
            if self.same and self.old is not None:
                self.same = memoryview(self.old)[self.size:self.size + len(piece)] == piece
            self.size += len(piece)
            yield piece

    @property
    def unchanged(self) -> bool:
        return self.same and self.old is not None and self.size == len(self.old)


def _current_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def baseline_file(directory: Path, device: tuple[str, str], name: str) -> Path:
    """Where ``save_baselines`` keeps the baseline ``name`` of ``device`` (name, cc)."""
    return directory / device_slug(*device) / f"{file_stem(name)}.json"


def save_baselines(documents: dict[tuple[str, str], dict[str, Any]], directory: str | os.PathLike[str],
                   name: str) -> list[Path]:
    """Write each document to ``directory/<device-slug>/<name>.json``; returns the paths written.

    All or nothing, as far as a filesystem allows: every document is encoded into a temporary file beside its
    file and flushed to disk (one whose content would not change is let go), and only then are they renamed over the old
    ones, one rename each. A failure before the renames (a full disk, a bad folder) leaves every baseline as
    it was; a rename that fails puts back the files already renamed. A kill can leave temporary files
    (removed by the next run here, ``remove_leftovers``) and, only if it lands between two renames (a few
    microseconds), some devices' files new and others old (see the README, "Baselines"). A file whose
    content would not change is not rewritten.
    """
    out_dir = Path(directory)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(out_dir, "baseline directory is a file", "pass a directory with -d")
    planned = [(baseline_file(out_dir, key, name), doc) for key, doc in sorted(documents.items())]
    for folder in {out_dir, *(path.parent for path, _ in planned)}:
        remove_leftovers(folder)
    current = {path: _current_bytes(path) for path, _ in planned}
    changed: list[Path] = []
    temps: list[tuple[int, str]] = []  # of the changed files
    renamed: list[Path] = []
    at = out_dir
    try:
        for path, document in planned:  # each encoded as it is written: never whole in memory
            at = path
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = _locked_temp(path)
            temps.append((fd, tmp_name))
            written = _Matching(baseline_pieces(document), current[path])
            _fill(fd, tmp_name, written)
            if written.unchanged:  # not rewritten
                temps.pop()
                os.close(fd)
                os.unlink(tmp_name)
            else:
                changed.append(path)
        for path, (_, tmp_name) in zip(changed, temps, strict=True):
            at = path
            os.replace(tmp_name, path)
            renamed.append(path)
    except BaseException as exc:
        for path in reversed(renamed):
            _restore(path, current[path])
        for _, tmp_name in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
        if isinstance(exc, OSError):
            raise InputError(at, f"cannot write baseline ({exc.strerror or exc}); no baseline was changed",
                             "check the directory is writable and has space") from exc
        raise
    finally:
        for fd, _ in temps:
            os.close(fd)
    for folder in {path.parent for path in renamed}:
        _sync_folder(folder)
    return [path for path, _ in planned]


def _restore(path: Path, old: bytes | None) -> None:
    """Best effort: put back what ``path`` held before (remove it when it did not exist)."""
    try:
        if old is None:
            path.unlink(missing_ok=True)
        else:
            write_atomically(path, old)
    except OSError:
        pass


# ---------------------------------------------------------------- what a baselines folder holds

@dataclass(frozen=True)
class StoredBaseline:
    path: Path
    device: str  # the folder: a device slug
    name: str  # the file name without .json
    source: str  # what it was made from: a pytest node id (plugin) or a report file name (perfgate baseline)
    settings: dict[str, Any] = field(default_factory=dict)
    entries: int = 0
    metrics: int = 0
    committed: float | None = None  # last commit time (seconds since the epoch), else the file's mtime
    problem: str = ""  # why the file cannot be read as JSON (readers would refuse it); "" for a readable one

    @property
    def from_test(self) -> bool:
        return "::" in self.source


def _commit_times(directory: Path) -> dict[Path, float]:
    """Each file's last commit time, from one ``git log`` call; {} outside a git checkout."""
    try:
        done = subprocess.run(["git", "log", "--format=@%ct", "--name-only", "--", "."], cwd=directory,
                              capture_output=True, text=True, timeout=60, check=False)
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=directory, capture_output=True,
                             text=True, timeout=60, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0 or not top:
        return {}
    times: dict[Path, float] = {}
    when = 0.0
    for line in done.stdout.splitlines():
        if line.startswith("@"):
            when = float(line[1:])
        elif line.strip():
            times.setdefault((Path(top) / line.strip()).resolve(), when)  # newest first: keep the first seen
    return times


def list_baselines(directory: Path) -> list[StoredBaseline]:
    if not directory.is_dir():
        raise InputError(directory, "is not a baselines directory",
                         "pass the folder that holds one subfolder per GPU, e.g. baselines")
    times = _commit_times(directory)
    found: list[StoredBaseline] = []
    for path in sorted(directory.glob("*/*.json")):
        try:
            check_regular_file(path, "the file", "")  # a FIFO or device never ends
            document = read_json_file(path, "a perfgate baseline", "")
        except (InputError, OSError) as exc:
            problem = exc.problem if isinstance(exc, InputError) else f"cannot read ({exc.strerror})"
            found.append(StoredBaseline(path=path, device=path.parent.name, name=path.stem, source="",
                                        problem=problem))
            continue
        if not isinstance(document, dict) or document.get("format") != "perfgate-baseline":
            continue  # not a baseline: say nothing, as readers ignore it
        raw_entries, raw_settings = document.get("entries"), document.get("settings")
        entries: list[Any] = raw_entries if isinstance(raw_entries, list) else []
        metrics = {m for e in entries if isinstance(e, dict) and isinstance(e.get("metrics"), dict)
                   for m in e["metrics"]}
        settings: dict[str, Any] = raw_settings if isinstance(raw_settings, dict) else {}
        found.append(StoredBaseline(path=path, device=path.parent.name, name=path.stem,
                                    source=str(document.get("source", "")), settings=dict(settings),
                                    entries=len(entries), metrics=len(metrics),
                                    committed=times.get(path.resolve(), path.stat().st_mtime)))
    return found


def _collection_error(stdout: str, stderr: str) -> str:
    """The line of a failed ``pytest --collect-only -q`` that says why: pytest's usage error on stderr, else the
    exception of the last module that failed to import (``ERROR test_x.py`` and its ``E   SyntaxError: ...``)."""
    said = [line.strip() for line in stderr.splitlines() if "error" in line.lower()]
    if said:
        return said[-1]
    lines = stdout.splitlines()
    failed = [line[len("ERROR "):].strip() for line in lines if line.startswith("ERROR ")]
    raised = [line[1:].strip() for line in lines if line.startswith("E ")]
    if raised:
        return f"{failed[-1]}: {raised[-1]}" if failed else raised[-1]
    last = (stdout + stderr).strip().splitlines()[-1:]
    return last[0] if last else "(no output)"


def collect_test_ids(pytest_args: Sequence[str], cwd: Path | None = None) -> list[str]:
    """The node ids pytest collects with ``pytest_args`` (``--collect-only -q``), in a child process."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *pytest_args]
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False, timeout=600)
    if done.returncode not in (0, 5):  # 5: no tests collected
        raise InputError("pytest --collect-only",
                         f"failed with status {done.returncode}: {_collection_error(done.stdout, done.stderr)}",
                         "fix the collection error, or pass the test paths to collect after --")
    return [line.strip() for line in done.stdout.splitlines() if "::" in line and not line.startswith(" ")]


def stale_baselines(stored: Iterable[StoredBaseline], test_ids: Iterable[str],
                    root: Path | None = None) -> tuple[list[StoredBaseline], list[StoredBaseline]]:
    """(stale, unchecked): baselines written for a perf test (their source is a node id) whose test is gone.

    Stale: the test's file no longer exists, or pytest collected that file and not the test. Unchecked: the
    file exists but nothing of it was collected (a module skipped for want of torch or a GPU, a collection
    error, a path not passed): its baselines are kept, never called stale on this machine's say-so.
    """
    ids = list(test_ids)
    live = set(ids)  # by the test each baseline records: two tests' names can share a stem (gate.own_name)
    collected_files = {test_id.split("::", 1)[0] for test_id in ids}
    root = root or Path.cwd()
    stale: list[StoredBaseline] = []
    unchecked: list[StoredBaseline] = []
    for b in stored:
        if not b.from_test or b.source in live:
            continue
        test_file = b.source.split("::", 1)[0]
        if test_file in collected_files or not (root / test_file).exists():
            stale.append(b)
        else:
            unchecked.append(b)
    return stale, unchecked
