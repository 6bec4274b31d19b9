"""The JSON Schema of the report, made from the contract's declarations (``perfgate.report.contract``).

``perfgate/schemas/report-v2.schema.json`` is :func:`schema_text`'s output, shipped in the wheel for other
tools; ``tests/engine/test_report_schema.py`` asserts that the file and the declarations agree (and writes the file
again with ``PERFGATE_RECORD_SCHEMA=1``). What a schema cannot say (columns of one table are equally long,
``results.launch`` names an existing launch, results are grouped by launch) is in the descriptions, and the
reader (``perfgate.report.validate``) checks it.
"""

from __future__ import annotations

import json
from typing import Any

from perfgate.limits import MAX_FINDING_CHARS, MAX_FINDINGS
from perfgate.report.contract import (
    FORMAT_NAME,
    FORMAT_VERSION,
    LAUNCH_STATUSES,
    MAX_REPORT_BYTES,
    MAX_ROWS,
    OPTIONAL_LAUNCHES,
    OPTIONAL_REPORT_FIELDS,
    REPORT_FIELDS,
    TABLES,
    UNMEASURED_FIELDS,
    UNMEASURED_LIMIT,
    VERDICTS,
    Column,
)

SCHEMA_PATH = f"schemas/report-v{FORMAT_VERSION}.schema.json"  # in the perfgate package

_TABLE_ABOUT = {
    "launches": "One row per launch compared (a kernel launch, a region total or a benchmark), worst status first.",
    "metrics": "One row per distinct (metric, label, unit, threshold, direction): metric facts stored once.",
    "results": "One row per (launch, metric) compared, grouped by launch in launch order ('launch' never "
               "decreases).",
    "groups": "One row per (repeated-launch group, time-like metric) judged as one sample; added within version 2 "
              "(absent: empty).",
}

_FIELD_ABOUT = {
    "format": "Names the format.",
    "version": "The format's version; perfgate also reads version 1 (row lists) and upgrades it.",
    "generator": "The program that wrote the report ('perfgate 0.1.0').",
    "verdict": "What the report comes to: 'fail' (a regression, or a gate that failed), 'not measured' (nothing "
               "compared, or perf tests not measured), 'inconclusive', or 'pass'. The reader never lets it be better "
               "than the contents allow.",
    "summary": "Launches counted by status (the reader counts them again).",
    "comparisons": "The comparisons the report holds: one, or several in a merged report.",
    "notes": "Notes of the comparisons and of the gate, for people.",
    "unmeasured": "Perf tests (or launches of them) that could not be measured, and why; added within version 2 "
                  "(absent: none).",
}


def _items(column: Column) -> dict[str, Any]:
    """The schema of one value of a column."""
    nullable = column.kind.endswith("?")
    if column.values:
        return {"enum": [*column.values, *([None] if nullable else [])]}
    if column.kind == "strs?":
        return {"type": ["array", "null"], "maxItems": MAX_FINDINGS,
                "items": {"type": "string", "maxLength": MAX_FINDING_CHARS}}
    if column.kind == "row":
        return {"type": "integer", "minimum": 0}
    json_type = {"str": "string", "int": "integer", "number": "number", "bool": "boolean"}[column.kind.rstrip("?")]
    return {"type": [json_type, "null"] if nullable else json_type}


def _table(name: str, columns: dict[str, Column], optional: dict[str, Column] | None = None) -> dict[str, Any]:
    every = {**columns, **(optional or {})}
    return {
        "description": f"{_TABLE_ABOUT[name]} An object of columns, each a list of the same length (at most "
                       f"{MAX_ROWS:,} rows).",
        "type": "object",
        "required": list(columns),
        "additionalProperties": False,
        "properties": {column_name: {"description": column.about
                                     + (" Added within version 2 (absent: all null)." if column_name in (optional or {})
                                        else ""),
                                     "type": "array", "maxItems": MAX_ROWS, "items": _items(column)}
                       for column_name, column in every.items()},
    }


def _comparison() -> dict[str, Any]:
    maybe_text = {"type": ["string", "null"]}
    texts = {"type": "array", "items": {"type": "string"}}
    return {
        "type": "object",
        "required": ["baseline", "current", "baseline_devices", "current_devices", "settings", "test"],
        "additionalProperties": False,
        "properties": {
            "baseline": {"description": "The baseline compared with (a file, or the history's runs).", **maybe_text},
            "current": {"description": "The measurement compared.", **maybe_text},
            "baseline_devices": {"description": "The GPUs (or machines) of the baseline.", **texts},
            "current_devices": {"description": "The GPUs (or machines) of the measurement.", **texts},
            "settings": {"description": "How the numbers were measured (ncu's clock and cache control...).",
                         "type": "object"},
            "test": {"description": "The pytest node id compared; null for a report compared by hand.", **maybe_text},
        },
    }


def report_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a report of this format version."""
    properties: dict[str, Any] = {
        "format": {"description": _FIELD_ABOUT["format"], "const": FORMAT_NAME},
        "version": {"description": _FIELD_ABOUT["version"], "const": FORMAT_VERSION},
        "generator": {"description": _FIELD_ABOUT["generator"], "type": ["string", "null"]},
        "verdict": {"description": _FIELD_ABOUT["verdict"], "enum": list(VERDICTS)},
        "summary": {"description": _FIELD_ABOUT["summary"], "type": "object", "required": list(LAUNCH_STATUSES),
                    "additionalProperties": False,
                    "properties": {status: {"type": "integer", "minimum": 0} for status in LAUNCH_STATUSES}},
        "comparisons": {"description": _FIELD_ABOUT["comparisons"], "type": "array",
                        "items": {"$ref": "#/$defs/comparison"}},
        "launches": {"$ref": "#/$defs/launches"},
        "metrics": {"$ref": "#/$defs/metrics"},
        "results": {"$ref": "#/$defs/results"},
        "notes": {"description": _FIELD_ABOUT["notes"], "type": "array", "items": {"type": "string"}},
        "unmeasured": {"description": _FIELD_ABOUT["unmeasured"], "type": "array", "maxItems": UNMEASURED_LIMIT,
                       "items": {"$ref": "#/$defs/unmeasured"}},
        "groups": {"$ref": "#/$defs/groups"},
    }
    definitions: dict[str, Any] = {
        name: _table(name, columns, OPTIONAL_LAUNCHES if name == "launches" else None)
        for name, columns in TABLES.items()
    }
    definitions["comparison"] = _comparison()
    definitions["unmeasured"] = {
        "type": "object", "required": ["test", "cause"], "additionalProperties": False,
        "properties": {name: {"description": about, "type": "string"} for name, about in UNMEASURED_FIELDS.items()},
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"perfgate/{SCHEMA_PATH}",
        "title": f"perfgate report, format version {FORMAT_VERSION}",
        "description": "The JSON report: what 'perfgate compare --format json' and 'pytest --perfgate' write, what "
                       "'perfgate merge' makes, and what 'perfgate publish' reads. Tables are column-oriented. "
                       "Beyond this schema the reader checks that the columns of a table are equally long, that "
                       "'results.launch', 'results.metric' and 'groups.metric' name existing rows, that results are "
                       f"grouped by launch, and that the file holds at most {MAX_REPORT_BYTES // 2**20} MiB.",
        "type": "object",
        "required": [name for name in REPORT_FIELDS if name not in OPTIONAL_REPORT_FIELDS],
        "additionalProperties": False,
        "properties": {name: properties[name] for name in REPORT_FIELDS},
        "$defs": definitions,
    }


def schema_text() -> str:
    """The schema file's text."""
    return json.dumps(report_schema(), indent=2, ensure_ascii=False) + "\n"
