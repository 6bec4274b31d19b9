"""What reading the kernels' machine code (``--code-identity``) adds to reading a ``.ncu-rep``: the largest corpus
report and our own H100 ``vector_add`` report, each read with and without the code; the ratio lands in
``extra_info``. No goal is asserted: docs/same-code.md quotes what was measured."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from helpers.common import REPO, corpus_file  # noqa: E402

REPORTS = ["corpus:esmm-a10g/a62323b_output.ncu-rep", "tests/data/h100/vector_add.ncu-rep"]


@pytest.mark.parametrize("name", REPORTS)
def test_bench_code_identity_read(benchmark, name: str) -> None:  # type: ignore[no-untyped-def]
    if benchmark.disabled:
        pytest.skip("run with --benchmark-enable")
    from perfgate.collect import read_table

    path = corpus_file(name.removeprefix("corpus:")) if name.startswith("corpus:") else REPO / name
    started = time.perf_counter()
    read_table(path)
    plain = time.perf_counter() - started
    measurement = benchmark.pedantic(read_table, args=(path,), kwargs={"code": True}, rounds=3, iterations=1)
    assert measurement.code
    benchmark.extra_info["plain_read_s"] = plain
    benchmark.extra_info["functions"] = len({code.code_id for code in measurement.code.values()})
