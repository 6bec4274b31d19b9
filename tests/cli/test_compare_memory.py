"""`perfgate compare` keeps no more than it needs alive: each side's table as read is freed once the comparison
holds it with its derived rows (``--metrics +roofline``: at 500k launches, 216 MB a side)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
from helpers.csvgen import write_raw_csv

import perfgate.compare.flow as flow
from perfgate.cli import main


def test_the_tables_as_read_are_freed_once_their_derived_rows_are_added(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    base, cur, out = tmp_path / "base.csv", tmp_path / "cur.csv", tmp_path / "out.json"
    write_raw_csv(base, 40, 20, seed=1, run=1, roofline=True)
    write_raw_csv(cur, 40, 20, seed=2, scale=1.01, roofline=True)
    read: list[weakref.ref[Any]] = []  # each side's values as read
    alive: list[list[bool]] = []  # whether each still was when the launches were matched and judged
    derive, judge = flow.with_derived, flow._judgement

    def deriving(side: Any, *args: Any, **kwargs: Any) -> Any:
        derived = derive(side, *args, **kwargs)
        if derived is not side:
            read.append(weakref.ref(side.table["value"]))
        return derived

    def judging(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        alive.append([ref() is not None for ref in read])
        return judge(*args, **kwargs)

    monkeypatch.setattr(flow, "with_derived", deriving)
    monkeypatch.setattr(flow, "_judgement", judging)
    assert main(["compare", str(base), str(cur), "--metrics", "+roofline", "--format", "json", "-o", str(out)]) in (0, 1)
    assert alive == [[False, False]]
