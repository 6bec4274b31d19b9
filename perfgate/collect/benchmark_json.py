"""Read pytest-benchmark results (``--benchmark-json`` output and saved runs under ``.benchmarks/``).

Each benchmark becomes one "launch" of kind ``benchmark`` with metrics ``time.<stat>`` in
seconds (plus ``rounds`` and ``ops``); raw timings (``--benchmark-save-data``) go to
the measurement's ``samples`` for the significance test.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


from perfgate.limits import check_name_length
from perfgate.collect.screen import not_a_number_reason, screen_values
from perfgate.errors import InputError
from perfgate.table import Measurement, Unusable, make_table, no_data_row
from perfgate.units import SECOND
from perfgate.vocabulary import KIND_BENCHMARK

_TIME_STATS = ("min", "max", "mean", "stddev", "median", "iqr", "q1", "q3")


def looks_like_benchmark_json(document: Any) -> bool:
    return isinstance(document, dict) and isinstance(document.get("benchmarks"), list) and (
        "machine_info" in document or "version" in document)


def machine_name(document: dict[str, Any]) -> str:
    """The CPU that ran the benchmarks: host timings are only comparable on the same model.

    pytest-benchmark writes ``machine_info`` and its ``cpu`` as objects; anything else (a hand-edited
    or hostile file) names no CPU rather than failing.
    """
    machine = document.get("machine_info")
    machine = machine if isinstance(machine, dict) else {}
    cpu = machine.get("cpu")
    cpu = cpu if isinstance(cpu, dict) else {}
    for brand in (cpu.get("brand_raw"), cpu.get("brand"), machine.get("processor"), machine.get("machine")):
        if isinstance(brand, str) and brand.strip():
            return f"CPU: {brand.strip()}"
    return "CPU: unknown"


def _text(value: object) -> str:
    """A name-like field as text; pytest-benchmark writes strings (or null), anything else names nothing."""
    return value if isinstance(value, str) else ""


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _samples(data: object, path: Path, index: int) -> list[float] | None:
    """Raw timings (``--benchmark-save-data``): positive finite seconds, or the file is refused."""
    if data is None:
        return None
    if not isinstance(data, list) or not all(_number(v) and 0 < float(v) < math.inf for v in data):
        raise InputError(path, f"benchmarks[{index}].stats.data must be a list of raw timings (positive numbers of "
                               "seconds)", "pass an unmodified pytest-benchmark JSON file")
    return [float(v) for v in data] or None


def table_from_benchmark_json(document: Any, path: Path) -> Measurement:
    """The table of a pytest-benchmark document: one launch per benchmark, a row per statistic.

    A statistic that is there but no number (text, a boolean) is kept as NaN with the reason, and
    ``screen_values`` turns infinite, negative and zero times into the same; raw timings that are no
    positive number refuse the file (they would decide the significance test).
    """
    if not looks_like_benchmark_json(document):
        raise InputError(path, "not a pytest-benchmark JSON file (no \"benchmarks\" list)",
                         "pass the file written by --benchmark-json or saved under .benchmarks/")
    if not isinstance(document.get("machine_info", {}), dict):
        raise InputError(path, '"machine_info" is not an object, so the CPU the timings belong to is unknown',
                         "pass an unmodified pytest-benchmark JSON file")
    device = machine_name(document)
    rows: list[dict[str, object]] = []
    unusable: list[Unusable] = []
    samples: dict[str, list[float]] = {}
    for index, bench in enumerate(document["benchmarks"]):
        if not isinstance(bench, dict) or not isinstance(bench.get("stats"), dict):
            raise InputError(path, f"benchmarks[{index}] has no \"stats\" object",
                             "pass an unmodified pytest-benchmark JSON file")
        for key in ("fullname", "name", "group"):
            if bench.get(key) is not None and not isinstance(bench[key], str):
                raise InputError(path, f'benchmarks[{index}].{key} is not a string',
                                 "pass an unmodified pytest-benchmark JSON file")
        name = _text(bench.get("fullname")).strip() or _text(bench.get("name")).strip()
        if not name:  # a made-up name would match another file's nameless benchmark
            raise InputError(path, f"benchmarks[{index}] has no name (\"fullname\" and \"name\" are empty)",
                             "pass an unmodified pytest-benchmark JSON file")
        group = _text(bench.get("group"))
        check_name_length((name, _text(bench.get("name")), group), path, "benchmark name")
        stats = bench["stats"]
        base: dict[str, object] = {
            "kind": KIND_BENCHMARK, "kernel": name, "demangled": _text(bench.get("name")) or name,
            "region": group, "ordinal": 0, "launch": index,
            "device": device, "cc": "", "grid": "", "block": "",
        }
        first = len(rows)
        for metric, key, unit in [*((f"time.{stat}", stat, SECOND) for stat in _TIME_STATS),
                                  ("rounds", "rounds", ""), ("ops", "ops", "1/s")]:
            value = stats.get(key)
            if value is None:
                continue  # not measured (an interrupted run writes null)
            if _number(value):
                rows.append({**base, "metric": metric, "unit": unit, "value": float(value)})
            else:
                rows.append({**base, "metric": metric, "unit": unit, "value": math.nan})
                unusable.append({"launch": index, "metric": metric, "reason": not_a_number_reason(value)})
        if len(rows) == first:  # no statistic: the benchmark stays visible as "no data"
            rows.append(no_data_row(base))
        data = _samples(stats.get("data"), path, index)
        if data is not None:
            samples[name] = data
    return screen_values(Measurement(make_table(rows), source=str(path), samples=samples), unusable)
