"""``perfgate compare`` / ``baseline`` with traces: real CLI runs on perfgate's own H200 traces and the corpus."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from helpers.common import REPO, run_cli
from perfgate.collect import read_table
from helpers.timeline import OURS, corpus_trace

def regressions(document: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(kind, kernel, metric) of each regression in a JSON report (its tables are columns)."""
    launches, metrics, results = document["launches"], document["metrics"], document["results"]
    return {(launches["kind"][at], launches["kernel"][at], metrics["metric"][metric])
            for at, metric, status in zip(results["launch"], results["metric"], results["status"], strict=True)
            if status == "regression"}


UNCHANGED_GROUPS = [
    ["mlp.cupti.a.cupti.json.gz", "mlp.cupti.b.cupti.json.gz", "mlp.cupti.c.cupti.json.gz"],
    ["mlp.torch.a.pt.trace.json.gz", "mlp.torch.b.pt.trace.json.gz"],
    ["mlp.sync.cupti.cupti.json.gz", "mlp.sync.cupti.b.cupti.json.gz"],
    ["softmax.cupti.a.cupti.json.gz", "softmax.cupti.b.cupti.json.gz"],
    ["vector_add.cupti.a.cupti.json.gz", "vector_add.cupti.b.cupti.json.gz"],
]
UNCHANGED_PAIRS = [pair for group in UNCHANGED_GROUPS for pair in itertools.permutations(group, 2)]


@pytest.mark.parametrize(("base", "cur"), UNCHANGED_PAIRS)
def test_unchanged_reruns_pass(capsys: pytest.CaptureFixture[str], base: str, cur: str) -> None:
    """No false alarm between re-runs of the same code, in either direction."""
    status, out, err = run_cli(capsys, "compare", OURS / base, OURS / cur)
    assert status == 0, out + err
    assert "PASS" in out


@pytest.mark.parametrize(("base", "cur"), [
    ("mlp.cupti.a.cupti.json.gz", "mlp.sync.cupti.cupti.json.gz"),
    ("mlp.cupti.b.cupti.json.gz", "mlp.sync.cupti.b.cupti.json.gz"),
    ("mlp.torch.a.pt.trace.json.gz", "mlp.sync.torch.pt.trace.json.gz"),
])
def test_planted_sync_fails_on_wall_and_idle_blaming_no_kernel(capsys: pytest.CaptureFixture[str], base: str,
                                                               cur: str, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    status, out, err = run_cli(capsys, "compare", OURS / base, OURS / cur, "--format", "json", "-o", report)
    assert status == 1, out + err
    document = json.loads(report.read_text(encoding="utf-8"))
    failed = regressions(document)
    assert ("region", "step", "timeline.wall_time") in failed
    assert ("region", "step", "timeline.gpu_idle") in failed
    assert not [f for f in failed if f[0] == "kernel"]  # the kernels did not change: none is blamed
    assert any(n.startswith("region `step`: wall +") and n.endswith("kernels unchanged") for n in document["notes"])


def test_text_says_what_moved(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "compare", OURS / "mlp.torch.a.pt.trace.json.gz",
                             OURS / "mlp.sync.torch.pt.trace.json.gz")
    assert status == 1
    # which part moved (the idle gaps between kernels, not the host before them), the share in points; the listed
    # region's why says it once (its note is left out of the text), an unlisted region's note says it
    assert "    why: idle gaps +774 µs, host lead -58.8 µs, GPU idle 4.2% → 11.4% (+7.2 pp), kernel time unchanged" in out
    assert "note: region `step`" not in out
    assert ("note: region `layer1`: wall +13% (699 µs → 789 µs), host lead +69.9 µs, idle gaps +15.8 µs, "
            "GPU idle 0.3% → 11.2% (+10.8 pp), kernels unchanged") in out


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_region_rows_in_markdown_and_html(capsys: pytest.CaptureFixture[str], fmt: str, tmp_path: Path) -> None:
    out_file = tmp_path / f"report.{fmt}"
    status, _, err = run_cli(capsys, "compare", OURS / "mlp.cupti.a.cupti.json.gz",
                             OURS / "mlp.sync.cupti.cupti.json.gz", "--format", fmt, "-o", out_file)
    assert status == 1, err
    text = out_file.read_text(encoding="utf-8").replace("\u00a0", " ")
    assert "wall time" in text and "GPU idle" in text and "kernels unchanged" in text


def test_slower_kernel_fails_on_the_kernel(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    status, _, _ = run_cli(capsys, "compare", OURS / "vector_add.cupti.a.cupti.json.gz",
                           OURS / "vector_add.regressed.cupti.cupti.json.gz", "--format", "json", "-o", report)
    assert status == 1
    document = json.loads(report.read_text(encoding="utf-8"))
    assert ("kernel", "vector_add", "timeline.kernel_duration") in regressions(document)


def test_trace_and_ncu_report_are_never_compared(capsys: pytest.CaptureFixture[str]) -> None:
    report = REPO / "tests" / "data" / "h100" / "mlp.ncu-rep.xz"
    status, out, err = run_cli(capsys, "compare", report, OURS / "mlp.torch.a.pt.trace.json.gz")
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "a timeline trace cannot be compared with" in lines[0], err


def test_baseline_from_a_trace_gates_the_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, err = run_cli(capsys, "baseline", OURS / "mlp.torch.a.pt.trace.json.gz", "--dir", tmp_path,
                               "--name", "mlp")
    assert status == 0, out + err
    [written] = list(tmp_path.rglob("mlp.json"))
    document = json.loads(written.read_text(encoding="utf-8"))
    assert document["settings"]["source"] == "timeline"
    assert run_cli(capsys, "compare", written, OURS / "mlp.torch.b.pt.trace.json.gz")[0] == 0
    assert run_cli(capsys, "compare", written, OURS / "mlp.sync.torch.pt.trace.json.gz")[0] == 1
    status, _, err = run_cli(capsys, "compare", written, REPO / "tests" / "data" / "h100" / "mlp.ncu-rep.xz")
    assert status == 2 and "cannot be compared" in err


def test_corpus_pair_of_different_gpus_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "compare", corpus_trace("hta/trace_diff_control.json.gz"),
                             corpus_trace("hta/trace_diff_test.json.gz"))
    assert status == 2 and "not comparable" in err


def test_corpus_unchanged_h100_pair_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """The same nvFuser kernel profiled twice (README: nothing changed, the gate must pass it)."""
    status, out, err = run_cli(capsys, "compare", corpus_trace("nvfuser-h100/report1_8fa9ec2.sqlite"),
                               corpus_trace("nvfuser-h100/report2_df8f397.sqlite"))
    assert status == 0, out + err


def test_help_and_refusals_name_the_traces(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for command in ("compare", "baseline"):
        with pytest.raises(SystemExit):
            run_cli(capsys, command, "--help")
        said = " ".join(capsys.readouterr().out.split())
        assert "a PyTorch profiler trace (.json) or an Nsight Systems SQLite export" in said
    other = tmp_path / "other.json"
    other.write_text('{"events": []}', encoding="utf-8")
    status, _, err = run_cli(capsys, "compare", other, other)
    assert status == 2 and "nor a Chrome trace (no traceEvents)" in err and len(err.strip().splitlines()) == 1


def test_a_trace_without_device_records_is_said_so(capsys: pytest.CaptureFixture[str]) -> None:
    """perfgate's first CUPTI captures hold no device records: the note names a trace, not ncu's CSV alone."""
    status, out, _ = run_cli(capsys, "compare", OURS / "softmax.cupti.a.cupti.json.gz",
                             OURS / "softmax.cupti.b.cupti.json.gz")
    assert status == 0
    assert "note: a GPU is not named in an input (ncu's CSV details page gives the device index, not its name; " \
           "a trace may name no device)" in out


def _kernel_trace(path: Path, durations: list[int], offset: float) -> Path:
    """One step with a kernel launched once per duration (µs), at timestamps ``offset`` past whole µs."""
    events: list[dict[str, Any]] = [{"ph": "X", "cat": "user_annotation", "name": "step", "ts": offset, "dur": 1000,
                                     "pid": 1, "tid": 1, "args": {}}]
    for at, duration in enumerate(durations):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": offset + 10 * at + 1,
                       "dur": 1, "pid": 1, "tid": 1, "args": {"correlation": at + 1}})
        events.append({"ph": "X", "cat": "kernel", "name": "tiny_kernel", "ts": offset + 10 * at + 3, "dur": duration,
                       "pid": 0, "tid": 7, "args": {"correlation": at + 1, "device": 0, "stream": 7}})
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    return path


@pytest.mark.parametrize(("offset", "status"), [(0.0, "unchanged"), (0.5, "inconclusive")])
def test_whole_microsecond_traces_do_not_judge_a_rounding_step(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                              offset: float, status: str) -> None:
    """Older Kineto writes whole µs (the corpus' switchtransformers, sevit, param and hta traces): a 2 µs kernel
    read 3 µs in half of 10 launches is one step of rounding, which no launch count averages out; the group's
    floor (2 µs over √10 = 0.63 µs) stops at 1 µs there. A trace with ns fractions keeps the shrunk floor."""
    base = _kernel_trace(tmp_path / "base.json", [2] * 10, offset)
    cur = _kernel_trace(tmp_path / "cur.json", [2, 3] * 5, offset)
    assert read_table(base).settings.get("trace_resolution_ns") == (1000 if offset == 0 else None)
    report = tmp_path / "report.json"
    run_cli(capsys, "compare", base, cur, "--format", "json", "-o", report)
    document = json.loads(report.read_text(encoding="utf-8"))
    kernel = document["launches"]["kind"].index("kernel")
    assert {s for at, s in zip(document["results"]["launch"], document["results"]["status"]) if at == kernel} == {status}
