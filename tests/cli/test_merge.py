"""``perfgate merge``: a matrix of GPU jobs becomes one report, then one comment and one check run."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest
from helpers.github_server import (
    HEAD_SHA,
    PR,
    REPO,
    REPO_ROOT,
    FakeGitHub,
    actions_env,
    assert_clean,
    compare_corpus,
    github,
    launch,
    make_report,
    pull_request_event,
    run_publish,
    write_report,
)

from perfgate.cli import main
from perfgate.report import launch_rows, result_rows, summarize, validate_report

__all__ = ["github"]


def _merge(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["merge", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def matrix(tmp_path: Path) -> tuple[Path, Path]:
    """A T4 job that regressed and an A10G job that did not (real Nsight Compute reports)."""
    t4 = compare_corpus(tmp_path, "mlp-t4/report_v3_loop_unroll.ncu-rep", "mlp-t4/report_v4_8_per_thread.ncu-rep",
                        "t4.json")
    a10g = compare_corpus(tmp_path, "esmm-a10g/b644635.ncu-rep", "esmm-a10g/a62323b_output.ncu-rep", "a10g.json")
    return t4, a10g


def test_merge_of_a_gpu_matrix(matrix: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t4, a10g = matrix
    out = tmp_path / "merged.json"
    code, stdout, _ = _merge(capsys, str(t4), str(a10g), "-o", str(out))
    assert code == 1  # one job regressed: the merged report fails
    merged = json.loads(out.read_text())
    parts = [json.loads(p.read_text()) for p in (t4, a10g)]
    assert merged["verdict"] == "fail"
    assert merged["summary"] == {k: parts[0]["summary"][k] + parts[1]["summary"][k] for k in merged["summary"]}
    assert merged["summary"]["regression"] == 1 and merged["summary"]["unchanged"] == 4
    assert len(merged["comparisons"]) == 2
    assert len(merged["results"]["launch"]) == sum(len(p["results"]["launch"]) for p in parts)
    assert set(merged["launches"]["device"]) == {"Tesla T4", "NVIDIA A10G"}
    assert merged["launches"]["status"][0] == "regression"  # what needs attention first
    assert "FAIL: 1 regression in 5 compared" in stdout
    # Every launch keeps its own metric rows; equal metric facts are stored once.
    assert _rows(result_rows(merged)) == _rows([r for p in parts for r in result_rows(p)])
    assert len(merged["metrics"]["metric"]) == len({m for p in parts for m in zip(*p["metrics"].values())})


def _rows(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


def as_version_1(report: dict) -> dict:
    """The same report as perfgate 0.1 wrote it: row lists, launch facts repeated on every result."""
    return {**report, "version": 1, "launches": launch_rows(report), "results": result_rows(report)}


def test_merge_reads_version_1_and_version_2_reports(matrix: tuple[Path, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    t4, a10g = matrix
    old = tmp_path / "t4.v1.json"
    old.write_text(json.dumps(as_version_1(json.loads(t4.read_text()))))
    code, mixed, _ = _merge(capsys, str(old), str(a10g))
    assert code == 1
    # Version 1 had none of the optional launch columns (rename, group, rule findings, launch configuration):
    # without them, the same.
    stripped = tmp_path / "t4.v2-without-optional.json"
    document = json.loads(t4.read_text())
    for name in ("baseline_kernel", "group", "findings_appeared", "findings_gone", "grid", "block"):
        document["launches"].pop(name)
    stripped.write_text(json.dumps(document))
    _, both_new, _ = _merge(capsys, str(stripped), str(a10g))
    assert json.loads(mixed)["version"] == 2
    assert mixed == both_new  # a v1 report is upgraded without losing or changing a field


def test_perfgate_0_1_session_reports_upgrade_exactly() -> None:
    """Real version 1 reports (sessions of the H100 capture): every launch and result row survives."""
    sessions = sorted((REPO_ROOT / "tests" / "data" / "h100" / "sessions").glob("*.json.xz"))
    assert sessions
    for path in sessions:
        document = json.loads(lzma.decompress(path.read_bytes()))
        assert document["version"] == 1
        report = validate_report(json.loads(json.dumps(document)), path.name)
        assert report["version"] == 2 and report["summary"] == summarize(r["status"] for r in document["launches"])
        assert _rows(launch_rows(report)) == _rows(document["launches"])
        assert _rows(result_rows(report)) == _rows(document["results"])


def test_merge_of_passing_reports_passes_and_dedupes_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = write_report(tmp_path, make_report([launch("a", status="unchanged")], notes=("shared note",)), "1.json")
    two = write_report(tmp_path, make_report([launch("b", status="improvement")], notes=("shared note", "other")),
                       "2.json")
    code, stdout, _ = _merge(capsys, str(one), str(two))
    merged = json.loads(stdout)
    assert code == 0 and merged["verdict"] == "pass"
    assert merged["notes"] == ["shared note", "other"]
    assert merged["summary"]["unchanged"] == 1 and merged["summary"]["improvement"] == 1


def test_a_job_that_measured_nothing_makes_the_merge_not_measured(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # The H100 job compared its kernels; the A100 job found no ncu and skipped its perf tests.
    measured = write_report(tmp_path, make_report([launch("a", status="unchanged")]), "h100.json")
    skipped = make_report([])
    skipped["unmeasured"] = [{"test": "tests/test_gemm.py::test_gemm", "cause": "ncu not found"}]
    unmeasured = write_report(tmp_path, skipped, "a100.json")
    out = tmp_path / "merged.json"
    code, _, stderr = _merge(capsys, str(measured), str(unmeasured), "-o", str(out))
    merged = json.loads(out.read_text())  # written all the same
    assert code == 2 and merged["verdict"] == "not measured"
    assert merged["unmeasured"] == skipped["unmeasured"]
    assert stderr.count("\n") == 1 and "not measured: 1 perf test not measured: ncu not found" in stderr


def test_merge_refuses_a_bad_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_report(tmp_path, make_report([launch("a")]))
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    code, _, stderr = _merge(capsys, str(good), str(bad))
    assert code == 2 and stderr.count("\n") == 1 and "not a perfgate report" in stderr
    code, _, stderr = _merge(capsys, str(good), str(tmp_path / "missing.json"))
    assert code == 2 and "no such file" in stderr


def test_a_merged_matrix_gets_one_comment_and_one_check(matrix: tuple[Path, Path], github: FakeGitHub,
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t4, a10g = matrix
    merged = tmp_path / "merged.json"
    assert _merge(capsys, str(t4), str(a10g), "-o", str(merged))[0] == 1
    run = run_publish(merged, actions_env(github, tmp_path, event=pull_request_event(tmp_path)))
    assert run.returncode == 0, run.output
    assert_clean(run)
    (comment,) = github.comments_on(REPO, PR)
    assert "Tesla T4" in comment["body"] and "NVIDIA A10G" in comment["body"]
    assert "1 regression in 5 compared" in comment["body"]
    (check,) = github.check_runs.values()
    assert (check["head_sha"], check["conclusion"]) == (HEAD_SHA, "failure")


def test_merge_reads_reports_kept_compressed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """perfgate's own session reports are kept as .json.xz: merge (and publish, through the same reader) takes
    them as they are, xz or gzip, with the same result as the expanded file."""
    import gzip

    packed = Path(__file__).resolve().parents[1] / "data" / "h100" / "default-metrics" / "sessions" / "regression.json.xz"
    text = lzma.decompress(packed.read_bytes())
    plain, gz = tmp_path / "plain.json", tmp_path / "report.json.gz"
    plain.write_bytes(text)
    gz.write_bytes(gzip.compress(text))
    merged = []
    for source in (plain, packed, gz):
        out = tmp_path / f"merged-{source.name}.json"
        assert main(["merge", str(source), "-o", str(out)]) == 1  # the regression
        merged.append(json.loads(out.read_text())["launches"])
    capsys.readouterr()
    assert merged[0] == merged[1] == merged[2]
    broken = tmp_path / "cut.json.xz"
    broken.write_bytes(packed.read_bytes()[:200])
    assert main(["merge", str(broken), "-o", str(tmp_path / "never.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken compressed file" in err and not (tmp_path / "never.json").exists()
