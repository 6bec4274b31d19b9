"""Every ncu CSV input reads as recorded (``tests/helpers/ncu_csv_parity.py``): the real exports and their edits give the
same table, value for value, or the same error, whatever parses them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.ncu_csv_parity import DIGESTS, current


def test_every_input_reads_as_recorded(tmp_path: Path) -> None:
    recorded = json.loads(DIGESTS.read_text(encoding="utf-8"))
    now = current(tmp_path)
    absent = {name for name in recorded if name not in now}
    # Only ../shared/corpus may be missing (a clone without it); every input of this repository is there.
    assert all(name.startswith("corpus/") for name in absent), absent
    unrecorded = {name for name in now if name not in recorded}
    assert not unrecorded, "record new inputs: python tests/helpers/ncu_csv_parity.py --record"
    differ = {name: (recorded[name], now[name]) for name in now if recorded[name] != now[name]}
    assert not differ
    if absent:
        pytest.skip(f"{len(absent)} recorded inputs of ../shared/corpus not available")
