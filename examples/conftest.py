"""Examples of perf tests for a GPU machine. They are documentation first: the default test run
(``testpaths = ["tests"]``) never collects them, and each one skips where its library or a CUDA
GPU is missing.

    pytest examples                                  # plain correctness tests
    pytest examples --perfgate --perfgate-update     # first run on a GPU: write baselines
    pytest examples --perfgate                       # later runs: gate against them
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.gpu)
