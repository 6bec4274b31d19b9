"""The session's terminal summary names each test that regressed once per source that measured it, not once per
regressed launch. Real pytester runs under ``--perfgate-source=both``: the stub ncu exports a launch of
``stub_kernel`` per region entered (``PERFGATE_STUB_NS`` ns), the traced child replays a trace recorded on an
H200 (``PERFGATE_TIMELINE_REPLAY``); the gated run is slower under both."""

from __future__ import annotations

import pytest
from helpers.plugin import preload_heavy_modules, use_stub_ncu

from helpers.timeline import MLP_REGIONS_TEST as PERF_TEST
from helpers.timeline import OURS

pytest_plugins = ("pytester",)
preload_heavy_modules()



def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ncu: object, nanoseconds: int, trace: str,
         *args: str) -> pytest.RunResult:
    monkeypatch.setenv("PERFGATE_STUB_NS", f"test_mlp={nanoseconds}")
    monkeypatch.setenv("PERFGATE_TIMELINE_REPLAY", str(OURS / trace))
    return pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", "--perfgate-source=both", *args)


def test_a_test_regressed_under_both_sources_is_listed_once_per_source(pytester: pytest.Pytester,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_perf=PERF_TEST)
    ncu, _ = use_stub_ncu(pytester, monkeypatch, also_clear=("PERFGATE_TIMELINE",))
    monkeypatch.setenv("PERFGATE_STUB_REPORT", "regions")
    _run(pytester, monkeypatch, ncu, 10_000, "mlp.torch.a.pt.trace.json.gz",
         "--perfgate-update").assert_outcomes(passed=1)
    result = _run(pytester, monkeypatch, ncu, 20_000, "mlp.sync.torch.pt.trace.json.gz")
    result.assert_outcomes(failed=1)
    summary = result.stdout.str().split("- perfgate -", 1)[1].splitlines()
    listed = [line for line in summary if line.startswith("  REGRESSION")]
    assert [line.split(": ", 1)[0] for line in listed] == [
        "  REGRESSION test_perf.py::test_mlp (ncu)", "  REGRESSION test_perf.py::test_mlp (timeline)"]
    assert "stub_kernel [layer0]" in listed[0] and "stub_kernel [backward]" in listed[0]
    head = next(line for line in summary if line.startswith("perfgate FAIL"))
    assert head.startswith("perfgate FAIL: ") and " regressions in 1 test" in head


def test_a_session_whose_perf_tests_all_skipped_says_nothing_compared_once(pytester: pytest.Pytester) -> None:
    """The examples on a machine without torch: every perf test skips at import, so nothing reaches the gate."""
    pytester.makepyfile(test_perf='import pytest\ntorch = pytest.importorskip("torch_not_installed")\n' + PERF_TEST)
    result = pytester.runpytest("--perfgate")
    result.assert_outcomes(skipped=1)
    summary = result.stdout.str().split("- perfgate -", 1)[1].splitlines()
    assert summary[1] == "perfgate NOT MEASURED: nothing compared"
    assert summary[2].startswith("report: "), summary
