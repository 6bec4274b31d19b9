"""The pytest-benchmark side of ``pytest --perfgate``: a passed benchmark's statistics as the measurement its
gate compares with ``<baselines>/<cpu-slug>/...``, read exactly as ``perfgate baseline`` reads a
``--benchmark-json`` file of the same run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_benchmark

from perfgate.collect.benchmark_json import table_from_benchmark_json
from perfgate.table import Measurement


def ungated_reason(fixture: Any) -> str | None:
    """Why a ``benchmark`` fixture's result cannot be gated, or None when it can."""
    if getattr(fixture, "disabled", False):
        return ("benchmark not gated: pytest-benchmark is disabled (--benchmark-disable, or pytest-xdist is "
                "active; pass --benchmark-enable)")
    if getattr(fixture, "stats", None) is None or getattr(fixture, "has_error", False):
        return "benchmark not gated: the benchmark fixture measured nothing"
    return None


def machine_info(config: pytest.Config) -> dict[str, Any]:
    """pytest-benchmark's own machine info (through its public hooks), so the CPU name matches what
    ``--benchmark-json`` files and ``perfgate baseline`` on them would use."""
    info = config.hook.pytest_benchmark_generate_machine_info(config=config)
    config.hook.pytest_benchmark_update_machine_info(config=config, machine_info=info)
    return dict(info or {})


def benchmark_measurement(nodeid: str, fixture: Any, machine: dict[str, Any]) -> tuple[Measurement, dict[str, str]]:
    """(the benchmark's measurement, the settings it was measured with) from a fixture that ran."""
    bench = fixture.stats.as_dict(include_data=True)
    version = getattr(pytest_benchmark, "__version__", "")
    document = {"machine_info": machine, "benchmarks": [bench], "version": version}
    measured = table_from_benchmark_json(document, Path(nodeid))._replace(source=f"{nodeid} (pytest-benchmark)")
    settings = {"timer": str(bench.get("options", {}).get("timer", "")), "pytest_benchmark": version}
    return measured, settings
