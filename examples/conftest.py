"""Examples of perf tests. They are documentation first: the default test run (``testpaths =
["tests"]``) never collects them.

GPU examples (``examples/test_*.py``, marked ``gpu``) skip where their library or a CUDA GPU is missing:

    pytest examples --ignore=examples/cpu --perfgate --perfgate-update     # first run on a GPU: write baselines
    pytest examples --ignore=examples/cpu --perfgate                       # later runs: gate against them

(``--ignore=examples/cpu``: this repository's own test configuration turns pytest-benchmark off, which
leaves the CPU examples "not measured"; run them as the README's Quickstart does, with --benchmark-enable.)

CPU examples (``examples/cpu``) run anywhere: pytest-benchmark host timings, gated the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CPU = Path(__file__).parent / "cpu"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if CPU not in item.path.parents:
            item.add_marker(pytest.mark.gpu)
