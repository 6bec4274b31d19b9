"""``pytest --perfgate-source=timeline|both|auto`` end to end with no GPU: real pytester runs whose traced child
runs the real test and, in place of tracing (``PERFGATE_TIMELINE_REPLAY``), writes a trace recorded on an H200
(tests/data/h200/timeline). Everything after the capture is the real code: the child's outcome, reading the
trace, the baselines written and read, the gate, the session report."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.plugin import preload_heavy_modules, read_json, stub_calls, use_stub_ncu

from helpers.timeline import MLP_REGIONS_TEST as PERF_TEST
from helpers.timeline import MLP_TIMELINE_BASELINE as BASELINE
from helpers.timeline import OURS

pytest_plugins = ("pytester",)
preload_heavy_modules()




class Env:
    def __init__(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pytester, self.monkeypatch = pytester, monkeypatch
        self.ncu, self.calls_file = use_stub_ncu(pytester, monkeypatch, also_clear=("PERFGATE_TIMELINE",))

    def replay(self, recorded: str) -> None:
        self.monkeypatch.setenv("PERFGATE_TIMELINE_REPLAY", str(OURS / recorded))

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest("--perfgate", f"--perfgate-ncu={self.ncu}", "-rsx", *args)

    def report(self) -> dict[str, Any]:
        return read_json(self.pytester.path / "perfgate-report.json")


@pytest.fixture
def env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Env:
    pytester.makepyfile(test_perf=PERF_TEST)
    return Env(pytester, monkeypatch)


def test_replayed_trace_writes_a_timeline_baseline(env: Env) -> None:
    env.replay("mlp.torch.a.pt.trace.json.gz")
    result = env.run("--perfgate-source=timeline", "--perfgate-update")
    result.assert_outcomes(passed=1)
    baseline = read_json(env.pytester.path / BASELINE)
    assert baseline["settings"]["source"] == "timeline"
    names = {(e["kind"], e["name"]) for e in baseline["entries"]}
    assert {("region", "step"), ("region", "layer1"), ("region", "backward")} <= names
    assert not stub_calls(env.calls_file)  # the timeline source never starts ncu


def test_replayed_rerun_passes_and_replayed_sync_fails_on_the_step(env: Env) -> None:
    env.replay("mlp.torch.a.pt.trace.json.gz")
    env.run("--perfgate-source=timeline", "--perfgate-update").assert_outcomes(passed=1)
    env.replay("mlp.torch.b.pt.trace.json.gz")
    env.run("--perfgate-source=timeline").assert_outcomes(passed=1)
    env.replay("mlp.sync.torch.pt.trace.json.gz")
    result = env.run("--perfgate-source=timeline")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "why: idle gaps +774 µs, host lead -58.8 µs, GPU idle 4.2% → 11.4% (+7.2 pp), kernel time unchanged" in text
    assert "wall time" in text
    assert env.report()["verdict"] == "fail"
    page = (env.pytester.path / "perfgate-report.html").read_text(encoding="utf-8")
    assert page.count('<svg class="timeline"') == 12  # each region, baseline above current


def test_source_from_pyproject(env: Env) -> None:
    env.pytester.makepyprojecttoml('[tool.perfgate]\nsource = "timeline"\n')
    env.replay("mlp.torch.a.pt.trace.json.gz")
    env.run("--perfgate-update").assert_outcomes(passed=1)
    assert (env.pytester.path / BASELINE).is_file()


def test_bad_source_in_pyproject_is_a_usage_error(env: Env) -> None:
    env.pytester.makepyprojecttoml('[tool.perfgate]\nsource = "nsys"\n')
    result = env.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "source must be one of ncu, timeline, both, auto" in result.stderr.str()


def test_auto_traces_where_counters_are_refused(env: Env) -> None:
    """ncu says ERR_NVGPUCTRPERM (the stub's noperm mode): auto measures the test with the timeline instead."""
    env.monkeypatch.setenv("PERFGATE_STUB_MODE", "noperm")
    env.monkeypatch.setenv("PERFGATE_STUB_REPORT", "/nonexistent")
    env.replay("mlp.torch.a.pt.trace.json.gz")
    result = env.run("--perfgate-source=auto", "--perfgate-update")
    result.assert_outcomes(passed=1)
    assert "measured by the timeline instead" in result.stdout.str()
    assert (env.pytester.path / BASELINE).is_file()


def test_ncu_source_with_counters_refused_still_skips(env: Env) -> None:
    env.monkeypatch.setenv("PERFGATE_STUB_MODE", "noperm")
    env.replay("mlp.torch.a.pt.trace.json.gz")
    env.run("--perfgate-source=ncu").assert_outcomes(skipped=1)
    assert not (env.pytester.path / BASELINE).exists()


def test_trace_without_kernels_in_regions_fails_with_one_reason(env: Env, tmp_path: Path) -> None:
    empty = tmp_path / "cpu.json"
    empty.write_text('{"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, '
                     '"dur": 1, "pid": 1, "tid": 1, "args": {"correlation": 3}}]}', encoding="utf-8")
    env.monkeypatch.setenv("PERFGATE_TIMELINE_REPLAY", str(empty))
    result = env.run("--perfgate-source=timeline")
    result.assert_outcomes(failed=1)
    assert "no kernels" in result.stdout.str()


def test_both_gates_ncu_and_the_replayed_trace_each_against_its_own_baseline(env: Env) -> None:
    from helpers.plugin import corpus_report

    env.monkeypatch.setenv("PERFGATE_STUB_REPORT", str(corpus_report("report_v3_loop_unroll")))
    env.replay("mlp.torch.a.pt.trace.json.gz")
    env.run("--perfgate-source=both", "--perfgate-update").assert_outcomes(passed=1)
    assert len(stub_calls(env.calls_file)) >= 1
    ncu_baselines = [p for p in (env.pytester.path / "baselines").rglob("*.json") if ".timeline." not in p.name]
    assert ncu_baselines and read_json(ncu_baselines[0])["settings"].get("source") != "timeline"
    assert read_json(env.pytester.path / BASELINE)["settings"]["source"] == "timeline"
    env.replay("mlp.sync.torch.pt.trace.json.gz")
    result = env.run("--perfgate-source=both")
    result.assert_outcomes(failed=1)
    assert "why: idle gaps +774 µs" in result.stdout.str()



def test_auto_traces_where_ncu_is_missing_and_says_so(env: Env) -> None:
    """No ncu on the machine: auto measures the test with the timeline, and the terminal and the report say
    why (the same note as where ncu's run is refused counters)."""
    env.replay("mlp.torch.a.pt.trace.json.gz")
    result = env.run("--perfgate-source=auto", "--perfgate-update", f"--perfgate-ncu={env.pytester.path}/no-ncu")
    result.assert_outcomes(passed=1)
    said = "test_perf.py::test_mlp: measured by the timeline instead of Nsight Compute: ncu not found"
    assert said in result.stdout.str()
    assert any(note.startswith(said) for note in env.report()["notes"])
    assert (env.pytester.path / BASELINE).is_file()
    assert not stub_calls(env.calls_file)


def test_auto_traces_where_ncu_does_not_answer_its_version(env: Env) -> None:
    """An ncu that is installed but broken (``ncu --version`` fails: a missing library, a wrong architecture):
    auto traces the test and says why, as where ncu is missing; ``--perfgate-source=ncu`` skips it."""
    broken = env.pytester.path / "broken-ncu"
    broken.write_text("#!/bin/sh\necho 'error while loading shared libraries: libnvperf_host.so' >&2\nexit 127\n",
                      encoding="utf-8")
    broken.chmod(0o755)
    env.replay("mlp.torch.a.pt.trace.json.gz")
    result = env.run("--perfgate-source=auto", "--perfgate-update", f"--perfgate-ncu={broken}")
    result.assert_outcomes(passed=1)
    said = (f"test_perf.py::test_mlp: measured by the timeline instead of Nsight Compute: ncu is not usable: "
            f"'{broken} --version' failed with status 127: error while loading shared libraries")
    assert said in result.stdout.str()
    assert (env.pytester.path / BASELINE).is_file() and not stub_calls(env.calls_file)
    env.run("--perfgate-source=ncu", f"--perfgate-ncu={broken}").assert_outcomes(skipped=1)


def test_dropped_records_fail_the_traced_test(env: Env, tmp_path: Path) -> None:
    """A CUPTI trace whose tracer dropped records is no measurement: the test fails, saying so."""
    document = json.loads(gzip.decompress((OURS / "mlp.cupti.a.cupti.json.gz").read_bytes()))
    document["dropped"] = 12
    dropped = tmp_path / "dropped.cupti.json"
    dropped.write_text(json.dumps(document), encoding="utf-8")
    env.monkeypatch.setenv("PERFGATE_TIMELINE_REPLAY", str(dropped))
    result = env.run("--perfgate-source=timeline", "--perfgate-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CUPTI dropped 12 activity records while tracing: the trace is incomplete*",
                                 "*(the trace, log and the test's output are kept in perfgate-artifacts*"])
    assert not (env.pytester.path / BASELINE).exists()
