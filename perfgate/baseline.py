"""Baseline files: load, validate, build from a table, and write atomically.

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
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from perfgate.limits import MAX_FINDING_CHARS, MAX_FINDINGS, check_name_length
from perfgate.collect.screen import shown, value_problem
from perfgate.errors import ConfigError, InputError
from perfgate.files import (
    _fill,
    _locked_temp,
    _sync_folder,
    remove_leftovers,
    write_atomically,
)
from perfgate.columns import first_rows
from perfgate.table import Measurement, make_table
from perfgate.vocabulary import KIND_BENCHMARK, KIND_KERNEL, KINDS

FORMAT_NAME = "perfgate-baseline"
FORMAT_VERSION = 1
# "regressions": what an update carried (perfgate.carried), for the reader of its diff; not read back.
_TOP_KEYS = {"format", "version", "device", "settings", "source", "entries", "regressions"}
_ENTRY_KEYS = {"kind", "name", "demangled", "region", "ordinal", "grid", "block", "metrics", "samples", "findings"}
MAX_STORED_SAMPLES = 101  # raw benchmark timings are kept as this many quantiles: enough for a rank test


def device_slug(name: str, cc: str) -> str:
    """Folder name for a device: ``Tesla T4``, ``7.5`` -> ``tesla-t4-sm75``. One folder level, whatever the input
    says (a compute capability ``9.0/x`` is ``sm90x``)."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown-device"
    cc_part = re.sub(r"[^a-z0-9]+", "", cc.lower())
    if cc_part:
        slug += "-sm" + cc_part
    return slug


MAX_STEM = 200  # bytes of a file name's stem: under every filesystem's 255, with room for ".json" and temp names


def file_stem(name: str) -> str:
    """The file name (without ``.json``) that holds the baseline called ``name``: one path component, and a
    different one for every different name (percent-encoding: ``my test`` -> ``my%20test``, ``../x`` ->
    ``%2E.%2Fx``), so a name can neither leave the baselines folder nor share another name's file. Letters,
    digits, ``-``, ``_`` and inner dots are kept, so the names perf tests get (``gate.baseline_name``) are
    their own file names. A stem over ``MAX_STEM`` bytes is cut and given a hash of the whole name."""
    from urllib.parse import quote

    if not name:
        raise ConfigError("a baseline name must not be empty (--name)")
    stem = quote(name, safe="-_.")
    if stem.startswith("."):  # ".", "..", and names that would be hidden (or look like a temporary file)
        stem = "%2E" + stem[1:]
    if len(stem) > MAX_STEM:
        import hashlib

        stem = stem[:MAX_STEM - 17].rstrip("%") + "-" + hashlib.sha1(name.encode()).hexdigest()[:16]
    return stem


def looks_like_baseline(document: Any) -> bool:
    return isinstance(document, dict) and document.get("format") == FORMAT_NAME


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond float range
        return False


def _fail(path: Path, problem: str) -> InputError:
    return InputError(path, f"not a valid perfgate baseline: {problem}",
                      "regenerate it with 'perfgate baseline REPORT' or fix it by hand")


def table_from_baseline(document: Any, path: Path) -> Measurement:
    """Validate a parsed baseline document and turn it into the normalized table and its facts."""
    device, entries, settings = _checked_document(document, path)
    rows: list[dict[str, Any]] = []
    samples: dict[str, list[float]] = {}
    findings: dict[int, tuple[str, ...]] = {}
    for index, entry in enumerate(entries):
        rows.extend(_entry_rows(entry, index, device, path))
        if "findings" in entry:
            findings[index] = _entry_findings(entry["findings"], index, path)
        raw = entry.get("samples")
        if raw is not None:
            if not isinstance(raw, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                    and _finite(v) and v > 0 for v in raw):
                raise _fail(path, f"entries[{index}].samples must be a list of raw timings (positive numbers of "
                                  "seconds)")
            samples[entry["name"]] = [float(v) for v in raw]
    # Written for every kernel entry when the run collected ncu sections, else for none: "not known".
    return Measurement(make_table(rows), source=str(path), settings=dict(settings), samples=samples,
                       findings=findings or None)


def _entry_findings(value: Any, index: int, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_FINDINGS or not all(
            isinstance(v, str) and 0 < len(v) <= MAX_FINDING_CHARS for v in value):
        raise _fail(path, f"entries[{index}].findings must be a list of at most {MAX_FINDINGS} ncu rule findings "
                          f"(non-empty strings of at most {MAX_FINDING_CHARS} characters)")
    return tuple(value)


def _checked_document(document: Any, path: Path) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """The document's top level checked: its device, entries and settings."""
    if not looks_like_baseline(document):
        raise _fail(path, f'"format" must be "{FORMAT_NAME}"')
    version = document.get("version")
    if version != FORMAT_VERSION:
        raise InputError(path, f"baseline format version {version!r} is not supported (this perfgate reads "
                               f"version {FORMAT_VERSION})", "upgrade perfgate or regenerate the baseline")
    unknown = sorted(set(document) - _TOP_KEYS)
    if unknown:
        raise _fail(path, f"unknown key(s) {', '.join(unknown)}")
    device = document.get("device")
    if not isinstance(device, dict) or not isinstance(device.get("name"), str) or not device["name"] or \
            not isinstance(device.get("cc"), str):
        raise _fail(path, '"device" must be an object with string "name" and "cc"')
    entries = document.get("entries")
    if not isinstance(entries, list):
        raise _fail(path, '"entries" must be a list')
    if not entries:
        raise InputError(path, "not a valid perfgate baseline: it has no entries, so it would gate nothing",
                         "regenerate it with 'perfgate baseline REPORT' from a report with launches or benchmarks")
    settings = document.get("settings", {})
    if not isinstance(settings, dict) or not all(isinstance(v, (str, int, float, bool)) or v is None
                                                 for v in settings.values()):
        raise _fail(path, '"settings" must be an object of plain values (strings, numbers, booleans)')
    if not isinstance(document.get("source", ""), str):
        raise _fail(path, '"source" must be a string')
    if not isinstance(document.get("regressions", []), list):
        raise _fail(path, '"regressions" must be a list')
    check_name_length((device["name"],), path, "device name")
    return device, entries, settings


# A region "signature" that is its entry count (as the H200 timeline fixtures hold): read as none.
_REGION_ENTRY_COUNT = re.compile(r"one entry|median of \d+ entries")


def _signature(kind: str, demangled: str) -> str:
    """An entry's ``demangled`` as read: a kernel's mangled name (CUPTI's, as a timeline baseline keeps it)
    demangled, so it matches the traces read today; no signature for a region that stored its entry count."""
    from perfgate.collect.timeline.names import demangled_name

    if kind == KIND_KERNEL:
        return demangled_name(demangled)
    return "" if _REGION_ENTRY_COUNT.fullmatch(demangled) else demangled


def _entry_rows(entry: Any, index: int, device: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """One entry checked, as table rows: one per metric (a NaN duration when it has none)."""
    where = f"entries[{index}]"
    if not isinstance(entry, dict):
        raise _fail(path, f"{where} must be an object")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise _fail(path, f"{where} has unknown key(s) {', '.join(unknown)}")
    kind = entry.get("kind")
    if kind not in KINDS:
        raise _fail(path, f'{where}.kind must be one of {", ".join(KINDS)}')
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(path, f"{where}.name must be a non-empty string")
    ordinal = entry.get("ordinal", 0)
    if not isinstance(ordinal, int) or isinstance(ordinal, bool) or ordinal < 0:
        raise _fail(path, f"{where}.ordinal must be a non-negative integer")
    metrics = entry.get("metrics")
    if not isinstance(metrics, dict):
        raise _fail(path, f"{where}.metrics must be an object")
    for key in ("demangled", "region", "grid", "block"):
        if not isinstance(entry.get(key, ""), str):
            raise _fail(path, f"{where}.{key} must be a string")
    check_name_length((name, entry.get("demangled", ""), entry.get("region", "")), path)
    base = {
        "kind": kind, "kernel": name, "demangled": _signature(kind, entry.get("demangled", name)),
        "region": entry.get("region", ""),
        "ordinal": ordinal, "launch": index, "device": device["name"], "cc": device.get("cc", ""),
        "grid": entry.get("grid", ""), "block": entry.get("block", ""),
    }
    rows = [{**base, "metric": metric, "unit": unit, "value": value}
            for metric, unit, value in (_metric_value(metric, measured, where, path)
                                        for metric, measured in metrics.items())]
    if not metrics:
        rows.append({**base, "metric": "gpu__time_duration.sum", "unit": "ns", "value": math.nan})
    return rows


def _metric_value(metric: str, measured: Any, where: str, path: Path) -> tuple[str, str, float]:
    """One ``"metric": {"value", "unit"}`` of an entry checked: (metric, unit, value; NaN for null)."""
    at = f"{where}.metrics[{shown(metric)}]"
    if not isinstance(measured, dict) or "value" not in measured or set(measured) - {"value", "unit"}:
        raise _fail(path, f'{at} must be an object with "value" and "unit"')
    value, unit = measured["value"], measured.get("unit", "")
    if not isinstance(unit, str):
        raise _fail(path, f"{at}.unit must be a string")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not _finite(value)):
        raise _fail(path, f"{at}.value must be a finite number or null")
    problem = None if value is None else value_problem(metric, unit, float(value))
    if problem is not None:
        raise _fail(path, f"{at}.value {problem}")
    return metric, unit, math.nan if value is None else float(value)


def read_baseline(path: str | os.PathLike[str]) -> Measurement:
    """Read and validate one baseline file (as big and as deeply nested as any input may be, no more)."""
    from perfgate.collect import load_json
    from perfgate.limits import FIX_SIZE, max_input_bytes, size_text

    file_path = Path(path)
    try:
        size = file_path.stat().st_size
    except OSError as exc:
        raise InputError(file_path, f"cannot read baseline ({exc.strerror or exc})") from exc
    if size > max_input_bytes():
        raise InputError(file_path, f"{size:,} bytes, more than perfgate's input limit of "
                                    f"{size_text(max_input_bytes())}", FIX_SIZE)
    return table_from_baseline(load_json(file_path), file_path)


def _compress_samples(values: Iterable[float]) -> list[float]:
    data = np.sort(np.asarray(list(values), dtype=float))
    if data.size > MAX_STORED_SAMPLES:
        data = np.quantile(data, np.linspace(0.0, 1.0, MAX_STORED_SAMPLES))
    return [float(f"{v:.6g}") for v in data]


def _json_number(value: float) -> float | int | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    as_float = float(value)
    return int(as_float) if as_float.is_integer() and abs(as_float) < 2**53 else as_float


def baseline_documents(measurement: Measurement, metrics: Iterable[str] | None = None,
                       settings: dict[str, Any] | None = None, source: str = "") -> dict[tuple[str, str], dict[str, Any]]:
    """Build one baseline document per device in the measurement (keyed by (device name, cc)); ``settings``
    replaces the measurement's own."""
    table = measurement.table
    keep = None if metrics is None else set(metrics)
    frame = table if keep is None else table[
        np.fromiter((m in keep for m in table["metric"].tolist()), dtype=bool, count=len(table))]
    all_samples = measurement.samples
    documents: dict[tuple[str, str], dict[str, Any]] = {}
    launch_cols = ["kind", "kernel", "demangled", "region", "ordinal", "grid", "block", "launch"]
    findings = measurement.findings  # None: the run collected no ncu sections, so no rule ran
    # Launches whose metrics were all filtered away still get an entry (with no metrics).
    launches = table[first_rows(*(table[name] for name in ("device", "cc", "kind", "kernel", "region", "ordinal")))]
    for device, cc in sorted(set(zip(launches["device"].tolist(), launches["cc"].tolist(), strict=True))):
        device_launches = launches[(launches["device"] == device) & (launches["cc"] == cc)]
        device_rows = frame[(frame["device"] == device) & (frame["cc"] == cc)]
        metrics_by_launch: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
        for row in device_rows.select(["kind", "kernel", "region", "ordinal", "metric", "unit", "value"]).rows():
            key = (row["kind"], row["kernel"], row["region"], row["ordinal"])
            metrics_by_launch.setdefault(key, {})[row["metric"]] = {"unit": row["unit"],
                                                                   "value": _json_number(row["value"])}
        entries = []
        ordered = sorted(device_launches.select(launch_cols).rows(),
                         key=lambda r: (r["kind"], r["kernel"], r["region"], r["ordinal"]))
        for launch in ordered:
            key = (launch["kind"], launch["kernel"], launch["region"], launch["ordinal"])
            entry: dict[str, Any] = {
                "kind": launch["kind"], "name": launch["kernel"], "demangled": launch["demangled"],
                "region": launch["region"], "ordinal": int(launch["ordinal"]), "grid": launch["grid"],
                "block": launch["block"], "metrics": dict(sorted(metrics_by_launch.get(key, {}).items())),
            }
            if findings is not None and launch["kind"] == KIND_KERNEL:
                entry["findings"] = list(findings.get(int(launch["launch"]), ()))
            if launch["kind"] == KIND_BENCHMARK and launch["kernel"] in all_samples:
                entry["samples"] = _compress_samples(all_samples[launch["kernel"]])
            entries.append(entry)
        documents[(str(device), str(cc))] = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "device": {"name": str(device), "cc": str(cc)},
            "settings": dict(sorted((settings if settings is not None else measurement.settings).items())),
            "source": source,
            "entries": entries,
        }
    return documents


def dumps_baseline(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


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

    All or nothing, as far as a filesystem allows: every document is serialized, then every changed file is
    written to a temporary file beside it and flushed to disk, and only then are they renamed over the old
    ones, one rename each. A failure before the renames (a full disk, a bad folder) leaves every baseline as
    it was; a rename that fails puts back the files already renamed. A kill can leave temporary files
    (removed by the next run here, ``remove_leftovers``) and, only if it lands between two renames (a few
    microseconds), some devices' files new and others old (see the README, "Baselines"). A file whose
    content would not change is not rewritten.
    """
    out_dir = Path(directory)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(out_dir, "baseline directory is a file", "pass a directory with -d")
    planned = [(baseline_file(out_dir, key, name), dumps_baseline(doc))
               for key, doc in sorted(documents.items())]
    for folder in {out_dir, *(path.parent for path, _ in planned)}:
        remove_leftovers(folder)
    current = {path: _current_bytes(path) for path, _ in planned}
    changed = [(path, text) for path, text in planned if current[path] != text.encode("utf-8")]
    temps: list[tuple[int, str]] = []
    renamed: list[Path] = []
    at = out_dir
    try:
        for path, text in changed:
            at = path
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = _locked_temp(path)
            temps.append((fd, tmp_name))
            _fill(fd, tmp_name, text)
        for (path, _), (_, tmp_name) in zip(changed, temps, strict=True):
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
