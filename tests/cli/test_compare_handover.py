"""`perfgate compare` lets each side's table as read go once its derived table is made (issue 37): from the join
on, a comparison with derived metrics holds the tables it judges, not both forms of each side (at 500k launches of
a raw page with ``+roofline``, 240 MB a side as read)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
from helpers.csvgen import write_raw_csv

import perfgate.compare.flow as flow
import perfgate.prepare as prepare
from perfgate.cli import main


def test_the_tables_as_read_are_freed_before_the_join(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, cur = tmp_path / "base.csv", tmp_path / "cur.csv"
    write_raw_csv(base, 300, 20, seed=1, run=1, roofline=True)
    write_raw_csv(cur, 300, 20, seed=2, scale=1.01, roofline=True)
    read: list[weakref.ref[Any]] = []  # each side's values as read
    alive: list[list[bool]] = []  # at each join, which of them are still held
    read_prepared, join_metrics = prepare.read_prepared, flow.join_metrics

    def reading(*args: Any, **kwargs: Any) -> Any:
        measurement = read_prepared(*args, **kwargs)
        read.append(weakref.ref(measurement.table["value"]))
        return measurement

    def joining(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        alive.append([ref() is not None for ref in read])
        return join_metrics(*args, **kwargs)

    monkeypatch.setattr(prepare, "read_prepared", reading)
    monkeypatch.setattr(flow, "join_metrics", joining)
    out = tmp_path / "report.json"
    assert main(["compare", str(base), str(cur), "--metrics", "+roofline", "--format", "json", "-o", str(out)]) in (0, 1)
    assert alive == [[False, False]]
    assert out.stat().st_size > 0
