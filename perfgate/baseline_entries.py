"""A baseline document's entries, one per launch or benchmark, built from a table's columns as they are encoded
(``perfgate.baseline.dumps_baseline``): a trace's hundreds of thousands of launches are never held as dicts."""

from __future__ import annotations

import math
from functools import cached_property
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from perfgate.collect.baseline_json import FORMAT_NAME, FORMAT_VERSION
from perfgate.columns import Columns, combined_key, first_rows, sort_ranks
from perfgate.table import Measurement, code_document
from perfgate.vocabulary import KIND_BENCHMARK, KIND_KERNEL

MAX_STORED_SAMPLES = 101  # raw benchmark timings are kept as this many quantiles: enough for a rank test


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


class BaselineEntries(Sequence[dict[str, Any]]):
    """A device's baseline entries, each built as a dict when it is reached (``dumps_baseline`` encodes them one at
    a time): 200,000 kernel launches held as dicts took about 480 MB before a byte was written. ``rows``: the
    table's rows of each entry's launch, in entry order; ``metric_rows``, grouped by ``metric_keys``: the kept rows
    of its metrics."""

    def __init__(self, measurement: Measurement, rows: npt.NDArray[np.intp], keys: npt.NDArray[np.int64],
                 metric_rows: npt.NDArray[np.intp], metric_keys: npt.NDArray[np.int64]) -> None:
        self.measurement = measurement
        self.rows, self.keys, self.metric_rows, self.metric_keys = rows, keys, metric_rows, metric_keys

    # Picked when the first entry is built, not before: ``perfgate baseline`` compares the baseline it replaces
    # first, and the columns picked (about 100 MB for 200,000 launches) would add to that comparison's peak.
    @cached_property
    def launch(self) -> dict[str, list[Any]]:
        return {name: self.measurement.table.picked(name, self.rows).tolist() for name in
                ("kind", "kernel", "demangled", "region", "ordinal", "grid", "block", "launch")}

    @cached_property
    def metric(self) -> dict[str, npt.NDArray[Any]]:
        return {name: self.measurement.table.picked(name, self.metric_rows) for name in ("metric", "unit", "value")}

    def holds_value_of(self, metrics: Iterable[str]) -> bool:
        """Whether some entry has a value (not null) for one of ``metrics``, read from the table's columns."""
        table, asked = self.measurement.table, set(metrics)
        codes, names = table.coded("metric")
        wanted = [at for at, name in enumerate(names.tolist()) if name in asked]
        picked = np.isin(codes[self.metric_rows], wanted)
        return bool((picked & ~np.isnan(table.picked("value", self.metric_rows))).any())

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[at] for at in range(len(self))[index]]
        return self._entry(range(len(self))[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self._entry(at) for at in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def _entry(self, at: int) -> dict[str, Any]:
        launch = {name: values[at] for name, values in self.launch.items()}
        lo, hi = np.searchsorted(self.metric_keys, self.keys[at], side="left"), np.searchsorted(
            self.metric_keys, self.keys[at], side="right")
        metrics: dict[str, dict[str, Any]] = {}
        for metric, unit, value in zip(*(column[lo:hi].tolist() for column in self.metric.values()), strict=True):
            metrics[metric] = {"unit": unit, "value": _json_number(value)}
        entry: dict[str, Any] = {
            "kind": launch["kind"], "name": launch["kernel"], "demangled": launch["demangled"],
            "region": launch["region"], "ordinal": int(launch["ordinal"]), "grid": launch["grid"],
            "block": launch["block"], "metrics": dict(sorted(metrics.items())),
        }
        measurement = self.measurement
        if measurement.findings is not None and launch["kind"] == KIND_KERNEL:
            entry["findings"] = list(measurement.findings.get(int(launch["launch"]), ()))
        code = (measurement.code or {}).get(int(launch["launch"]))
        if code is not None:  # read with --code-identity: the same-code rule can judge against it
            entry["code"] = code_document(code)
        if launch["kind"] == KIND_BENCHMARK and launch["kernel"] in measurement.samples:
            entry["samples"] = _compress_samples(measurement.samples[launch["kernel"]])
        return entry


def _ranks(table: Columns, name: str) -> npt.NDArray[np.int64]:
    """Per row, column ``name``'s value as an integer that sorts and compares as the value does (never made whole)."""
    codes, values = table.coded(name)
    ranks, _ = sort_ranks(values)
    return ranks[codes]


def baseline_documents(measurement: Measurement, metrics: Iterable[str] | None = None,
                       settings: dict[str, Any] | None = None, source: str = "") -> dict[tuple[str, str], dict[str, Any]]:
    """Build one baseline document per device in the measurement (keyed by (device name, cc)); ``settings``
    replaces the measurement's own. Its entries are a ``BaselineEntries``, sorted by kind, name, region, ordinal."""
    table = measurement.table
    if not len(table):
        return {}
    codes, names = table.coded("metric")
    keep = None if metrics is None else set(metrics)
    kept = np.ones(len(table), dtype=bool) if keep is None else np.isin(
        codes, [at for at, name in enumerate(names.tolist()) if name in keep])
    ranks = {name: _ranks(table, name) for name in ("device", "cc", "kind", "kernel", "region", "ordinal")}
    sizes = {name: int(rank.max()) + 1 for name, rank in ranks.items()}
    key = combined_key(*((ranks[name], sizes[name]) for name in ("kind", "kernel", "region", "ordinal")))
    device_key = combined_key((ranks["device"], sizes["device"]), (ranks["cc"], sizes["cc"]))
    # Launches whose metrics were all filtered away still get an entry (with no metrics).
    launches = first_rows(device_key, key)
    documents: dict[tuple[str, str], dict[str, Any]] = {}
    for code in np.unique(device_key[launches]).tolist():  # devices by name, then cc
        mine = launches[device_key[launches] == code]
        mine = mine[np.argsort(key[mine], kind="stable")]
        rows = np.flatnonzero(kept & (device_key == code))
        rows = rows[np.argsort(key[rows], kind="stable")]
        device, cc = str(table.picked("device", mine[:1])[0]), str(table.picked("cc", mine[:1])[0])
        documents[(device, cc)] = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "device": {"name": device, "cc": cc},
            "settings": dict(sorted((settings if settings is not None else measurement.settings).items())),
            "source": source,
            "entries": BaselineEntries(measurement, mine, key[mine], rows, key[rows]),
        }
    return documents
