"""Read and validate a report that may be an untrusted artifact (a fork's code wrote it)."""

from __future__ import annotations

import gzip
import lzma
import math
import os
import zlib
from pathlib import Path
from typing import Any, cast

from perfgate.errors import InputError
from perfgate.limits import (
    GZIP_MAGIC,
    MAX_FINDING_CHARS,
    MAX_FINDINGS,
    XZ_MAGIC,
    max_input_bytes,
    parse_json,
    read_json_file,
    size_text,
)
from perfgate.report.contract import (
    COLUMN_KINDS,
    FORMAT_NAME,
    GROUP_COLUMNS,
    GROUPS,
    LAUNCHES,
    METRICS,
    OPTIONAL_LAUNCHES,
    RESULTS,
    Column,
    MAX_REPORT_BYTES,
    MAX_ROWS,
    READ_VERSIONS,
    REPORT_FIELDS,
    UNMEASURED_LIMIT,
    ComparisonInfo,
    Report,
    empty_columns,
    refuse,
    summarize,
    verdict_of,
)
from perfgate.report.upgrade import upgrade_v1
from perfgate.vocabulary import VERDICT_RANK, Verdict


def _check_column(source: str, table: str, name: str, values: list[Any], column: Column) -> None:
    """Check (and for numbers, clean) one column in place against its declaration."""
    kind = column.kind
    if kind == "str":
        bad = next((i for i, v in enumerate(values) if type(v) is not str), None)
    elif kind == "str?":
        bad = next((i for i, v in enumerate(values) if v is not None and type(v) is not str), None)
    elif kind in ("int", "row"):  # a row's existence is checked with its table's length
        bad = next((i for i, v in enumerate(values) if type(v) is not int), None)
    elif kind == "int?":
        bad = next((i for i, v in enumerate(values) if v is not None and type(v) is not int), None)
    elif kind == "strs?":
        bad = next((i for i, v in enumerate(values) if v is not None and not (
            type(v) is list and len(v) <= MAX_FINDINGS and all(type(x) is str and len(x) <= MAX_FINDING_CHARS for x in v))), None)
    elif kind == "bool?":
        bad = next((i for i, v in enumerate(values) if v is not None and type(v) is not bool), None)
    else:  # "number?": finite numbers; a non-finite one (1e999 parses as inf) becomes null
        bad = None
        for i, v in enumerate(values):
            kind_of = type(v)
            if kind_of is float:
                if not math.isfinite(v):
                    values[i] = None
            elif kind_of is not int and v is not None:
                bad = i
                break
    if bad is not None:
        raise refuse(source, f'"{table}.{name}" row {bad}: must be {COLUMN_KINDS[kind]}')
    if column.values:
        allowed = set(column.values)
        unknown = next((i for i, v in enumerate(values) if v is not None and v not in allowed), None)
        if unknown is not None:
            raise refuse(source, f'"{table}.{name}" row {unknown}: {name} {values[unknown]!r} is not one of '
                                 f'{", ".join(map(repr, column.values))}')


def _check_groups(source: str, document: dict[str, Any], metrics: int) -> None:
    """The optional ``groups`` table (absent in older reports: empty)."""
    if document.get("groups") is None:
        document["groups"] = empty_columns(GROUP_COLUMNS)
    _check_table(source, document, "groups", GROUPS)
    codes = document["groups"]["metric"]
    if codes and (min(codes) < 0 or max(codes) >= metrics):
        raise refuse(source, '"groups.metric" must name a row of "metrics"')


def _check_table(source: str, document: dict[str, Any], table: str, types: dict[str, Column],
                 optional: dict[str, Column] | None = None) -> int:
    columns = document.get(table)
    if not isinstance(columns, dict):
        raise refuse(source, f'report "{table}" must be an object of columns')
    length = None
    for name, column in (*types.items(), *(optional or {}).items()):
        values = columns.get(name)
        if values is None and optional and name in optional:
            values = columns[name] = [None] * (length or 0)  # an older report: not known
        if not isinstance(values, list):
            raise refuse(source, f'report "{table}.{name}" must be a list')
        if length is None:
            length = len(values)
        elif len(values) != length:
            raise refuse(source, f'report "{table}" columns differ in length')
        if length > MAX_ROWS:
            raise refuse(source, f'report "{table}" has more than {MAX_ROWS:,} rows; not a report perfgate wrote')
        _check_column(source, table, name, values, column)
    document[table] = {name: columns[name] for name in (*types, *(optional or {}))}  # unknown columns are dropped
    return length or 0


def validate_report(document: Any, source: str) -> Report:
    """Check a report read from disk (possibly an untrusted artifact) and return it as version 2.

    Every field a renderer or ``publish`` uses gets its type checked; statuses must be known ones;
    results must point at existing launches and metrics, grouped by launch; the summary is recounted
    and the verdict follows from it (a report cannot claim "pass" over a regression).
    """
    source = str(source)
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        raise refuse(source, f'not a perfgate report (no "format": "{FORMAT_NAME}")',
                      "pass the JSON written by 'perfgate compare --format json' or 'pytest --perfgate'")
    version = document.get("version")
    if version not in READ_VERSIONS or isinstance(version, bool):
        raise refuse(source, f"report version {version!r} is not supported",
                      f"this perfgate reads versions {', '.join(map(str, READ_VERSIONS))}")
    if not isinstance(document.get("verdict"), str) or document["verdict"] not in VERDICT_RANK:  # a list: unhashable
        raise refuse(source, f'report "verdict" must be one of {", ".join(repr(v.value) for v in Verdict)}')
    if version == 1:
        document = upgrade_v1(document, source)
    launches = _check_table(source, document, "launches", LAUNCHES, OPTIONAL_LAUNCHES)
    metrics = _check_table(source, document, "metrics", METRICS)
    results = _check_table(source, document, "results", RESULTS)
    pointers = document["results"]["launch"]
    if results and (min(pointers) < 0 or max(pointers) >= launches):
        raise refuse(source, '"results.launch" must name a row of "launches"')
    if any(a > b for a, b in zip(pointers, pointers[1:])):
        raise refuse(source, '"results" must be grouped by launch, in launch order')
    codes = document["results"]["metric"]
    if results and (min(codes) < 0 or max(codes) >= metrics):
        raise refuse(source, '"results.metric" must name a row of "metrics"')
    _check_groups(source, document, metrics)
    comparisons = document.get("comparisons", [])
    if not isinstance(comparisons, list):
        raise refuse(source, 'report "comparisons" must be a list')
    document["comparisons"] = [_check_comparison(source, i, c) for i, c in enumerate(comparisons)]
    notes = document.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise refuse(source, '"notes" must be a list of strings')
    document["notes"] = notes
    if not isinstance(document.get("generator"), str):
        document["generator"] = None
    document["unmeasured"] = _check_unmeasured(source, document.get("unmeasured", []))
    document["summary"] = summarize(document["launches"]["status"])
    document["verdict"] = verdict_of(cast(Report, document))
    return cast(Report, {key: document[key] for key in REPORT_FIELDS})


def _check_unmeasured(source: str, entries: Any) -> list[dict[str, str]]:
    if not isinstance(entries, list) or len(entries) > UNMEASURED_LIMIT or not all(
            isinstance(e, dict) and isinstance(e.get("test"), str) and isinstance(e.get("cause"), str)
            and isinstance(e.get("launch", ""), str) for e in entries):
        raise refuse(source, '"unmeasured" must be a list of {"test", "cause"[, "launch"]} strings')
    return [{"test": e["test"], "cause": e["cause"], **({"launch": e["launch"]} if e.get("launch") else {})}
            for e in entries]


def _check_comparison(source: str, index: int, comparison: Any) -> ComparisonInfo:
    if not isinstance(comparison, dict):
        raise refuse(source, f"comparison {index} must be an object")
    for field in ("baseline", "current", "test"):
        if comparison.get(field) is not None and not isinstance(comparison[field], str):
            raise refuse(source, f'comparison {index}: "{field}" must be a string or null')
    for field in ("baseline_devices", "current_devices"):
        devices = comparison.get(field) or []
        if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
            raise refuse(source, f'comparison {index}: "{field}" must be a list of strings')
    settings = comparison.get("settings")
    return {"baseline": comparison.get("baseline"), "current": comparison.get("current"),
            "baseline_devices": list(comparison.get("baseline_devices") or []),
            "current_devices": list(comparison.get("current_devices") or []),
            "settings": settings if isinstance(settings, dict) else {}, "test": comparison.get("test")}


def load_report(path: str | os.PathLike[str]) -> Report:
    """Read and validate a report file that may come from an untrusted artifact (v1 or v2), plain or compressed
    with xz or gzip."""
    file = Path(path)
    if not file.is_file():
        raise InputError(file, "no such file" if not file.exists() else "not a file", "check the path")
    if file.stat().st_size > MAX_REPORT_BYTES:
        raise InputError(file, f"larger than {MAX_REPORT_BYTES // 2**20} MiB; not a report perfgate wrote")
    # An untrusted artifact: refused here if it is not plain, finite, shallow JSON.
    packed = _compression(file)
    if packed is None:
        document = read_json_file(file, "a JSON report", "download or write the report again")
    else:
        document = parse_json(_expanded(file, packed), file, "download or write the report again")
    return validate_report(document, str(file))


def _compression(file: Path) -> Any:
    """``lzma.open`` or ``gzip.open`` for a report kept compressed (``report.json.xz``: how perfgate's own H100
    and H200 session reports are kept), else None."""
    try:
        with file.open("rb") as fh:
            head = fh.read(len(XZ_MAGIC))
    except OSError:
        return None  # read_json_file names the cause
    if head.startswith(XZ_MAGIC):
        return lzma.open
    return gzip.open if head.startswith(GZIP_MAGIC) else None


def _expanded(file: Path, opener: Any) -> str:
    """The report's text, expanded up to the report limit: a small file may expand without end."""
    limit = min(MAX_REPORT_BYTES, max_input_bytes())
    try:
        with opener(file, "rb") as packed:
            data = packed.read(limit + 1)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise InputError(file, f"broken compressed file ({exc})", "copy or download the report again") from None
    if len(data) > limit:
        raise InputError(file, f"expands to more than {size_text(limit)}; not a report perfgate wrote")
    try:
        return str(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(file, "not UTF-8 text once expanded; expected a JSON report") from None
