"""Write a report as JSON text: one top-level field, table column or comparison per line, values by orjson."""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Iterator

from perfgate.report.contract import Report
from perfgate.text import inert_json_bytes

_TABLES = ("launches", "metrics", "results", "groups")


def dumps(report: Report) -> str:
    """The report as JSON text: one top-level field, table column or comparison per line.

    Values are encoded by orjson, whose shortest round-trip floats (Ryu) cost a twentieth of the json module's
    ``repr`` of each float: the 400,000 results of 50k launches are 1.6M numbers. The line breaks are added
    around its output, so a diff or a pager stays usable.
    """
    return b"".join(dump_parts(report)).decode()


def dump_parts(report: Report) -> Iterator[bytes]:
    """The UTF-8 text of ``dumps`` in parts (at most a table column each), whose concatenation it is: written part
    by part, the text of a large report never exists at once; and as the bytes orjson makes, never decoded to a
    Python string only to be encoded again (the JSON of 500k launches is 400 MB). Names from the code under test
    start no workflow command where a CI log shows the text (``inert_json``; each value is whole in one part)."""
    raw = _encoder()

    def encode(value: Any) -> bytes:
        return inert_json_bytes(raw(value))

    yield b"{\n"
    for index, (key, value) in enumerate(report.items()):
        name = encode(key)
        if index:
            yield b",\n"
        if key in _TABLES and isinstance(value, dict):
            yield name + b": {\n"
            for number, (column, values) in enumerate(value.items()):
                # Parts yielded apart, not joined: a column's text is up to 100 MB, and ``+`` would copy it.
                yield (b",\n  " if number else b"  ") + encode(column) + b": "
                yield encode(values)
            yield b"\n}"
        elif key in ("comparisons", "notes") and isinstance(value, list) and value:
            yield name + b": [\n" + b",\n".join(b"  " + encode(item) for item in value) + b"\n]"
        else:
            yield name + b": " + encode(value)
    yield b"\n}\n"


def _encoder() -> Callable[[Any], bytes]:
    """The JSON text (UTF-8) of a value: a list, or a numpy array (``build_report(result_arrays=True)``) whose NaN
    and ±inf are null."""
    import orjson  # the writer's only: a text or Markdown report never loads it (tests/benchmarks/test_bench_ncu_rep.py)

    numpy_too = orjson.OPT_SERIALIZE_NUMPY
    # Values orjson refuses (an integer beyond 64 bits, in a report read back) take the json module's text.
    fallback = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode

    def encode(value: Any) -> bytes:
        if getattr(getattr(value, "dtype", None), "kind", "") == "O":  # strings or None: orjson takes a list
            value = value.tolist()
        try:
            return orjson.dumps(value, option=numpy_too)
        except orjson.JSONEncodeError:
            if hasattr(value, "dtype"):  # an array orjson does not take (not contiguous, or an unusual dtype)
                value = _nulls_for_non_finite(value.tolist()) if value.dtype.kind == "f" else value.tolist()
            return fallback(value).encode()

    return encode


def _nulls_for_non_finite(values: list[float]) -> list[float | None]:
    return [value if math.isfinite(value) else None for value in values]
