"""Kernel identity, unpaired kernels and floors, from the command line and the settings (docs/matching.md)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verdicts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.common import run_perfgate  # noqa: E402
from scenarios import GEMM, Launch, Scenario, kernel, rng_kernel_reads, triton_renames, write_run  # noqa: E402
from structures import cases as structure_cases  # noqa: E402

from perfgate.collect import read_table  # noqa: E402
from perfgate.compare import compare_tables  # noqa: E402
from perfgate.config import settings_from_table  # noqa: E402
from perfgate.errors import ConfigError  # noqa: E402
from perfgate.plugin.marker import parse_marker  # noqa: E402


def _write(scenario: Scenario, folder: Path, seed: int = 5) -> tuple[Path, Path]:
    rng = random.Random(seed)
    base, cur = folder / "base.csv", folder / "cur.csv"
    write_run(base, scenario.baseline, rng)
    write_run(cur, scenario.current, rng)
    return base, cur


def test_unpaired_kernels_are_not_measured_until_accepted_on_the_command_line_or_in_pyproject(tmp_path: Path) -> None:
    # Replaced outside every region of runs that hold different regions: no total holds them (docs/matching.md).
    [case] = [c for c in structure_cases() if c.name == "xmma -> nvjet, the runs hold different regions"]
    base, cur = _write(Scenario(case.family, case.name, "unpaired", case.baseline, case.current), tmp_path)
    refused = run_perfgate("compare", base, cur, cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout
    assert "launches outside any region: kernels no rule paired (perhaps one renamed), no total holds them" \
           in refused.stderr
    assert "(after review accept them with --accept-unpaired-kernels" in refused.stderr
    assert "; new nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT (after review" in refused.stdout
    assert "Traceback" not in refused.stderr
    accepted = run_perfgate("compare", base, cur, "--accept-unpaired-kernels", cwd=tmp_path)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.perfgate]\naccept_unpaired_kernels = true\n", encoding="utf-8")
    assert run_perfgate("compare", base, cur, cwd=tmp_path).returncode == 0


def test_kernels_renumbered_past_every_rule_over_a_regression_fail_on_the_whole_report(tmp_path: Path) -> None:
    base, cur = _write(triton_renames(True), tmp_path)
    done = run_perfgate("compare", base, cur, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "note: kernels replaced outside any region: triton_red_fused_sum_0, triton_red_fused_sum_1 → " \
           "triton_red_fused_sum_3, triton_red_fused_sum_4 (no rule pairs them); judged through the whole report's " \
           "total" in done.stdout
    # Accepting them accepts the pairing left undone, not the total's regression.
    assert run_perfgate("compare", base, cur, "--accept-unpaired-kernels", cwd=tmp_path).returncode == 1


def test_the_accepting_keys_are_checked() -> None:
    assert settings_from_table({"accept_unpaired_kernels": True}).accept_unpaired_kernels
    with pytest.raises(ConfigError):
        settings_from_table({"accept_unpaired_kernels": "yes"})
    assert parse_marker((), {"accept_unpaired_kernels": True}, "t").accept_unpaired_kernels
    with pytest.raises(ConfigError, match="accept_unpaired_kernels= must be True or False"):
        parse_marker((), {"accept_unpaired_kernels": 1}, "t")


def _compare(scenario: Scenario, folder: Path, seed: int = 5):  # type: ignore[no-untyped-def]
    base, cur = _write(scenario, folder, seed)
    return compare_tables(read_table(base), read_table(cur))


def test_a_few_kb_read_by_a_kernel_that_writes_241_mb_is_inside_its_traffic_floor(tmp_path: Path) -> None:
    comparison = _compare(rng_kernel_reads(), tmp_path)
    read = comparison.results[comparison.results["metric"] == "dram__bytes_read.sum"].row(0)
    assert read["change"] > 0.5 and read["status"] == "unchanged" and comparison.verdict == "pass"
    [note] = [n for n in comparison.notes if "traffic floor" in n]
    assert note.startswith("distribution_elementwise_grid_stride_kernel #0 in region 'init': DRAM read ")
    assert "is past its limit 2% + 4.1 KB but within 1% of the launch's DRAM traffic" in note


def test_reads_grown_past_their_limit_on_a_read_heavy_kernel_still_fail(tmp_path: Path) -> None:
    comparison = _compare(Scenario("floors", "reads +5%", "regression", [Launch(GEMM, "step")],
                                   [Launch(GEMM, "step", read=1.05)]), tmp_path)
    read = comparison.results[comparison.results["metric"] == "dram__bytes_read.sum"].row(0)
    assert read["status"] == "regression" and comparison.verdict == "fail"


def test_a_change_past_the_relative_limit_excused_by_the_floor_is_said(tmp_path: Path) -> None:
    tiny = kernel("void tiny_kernel(float *)", 8.0)  # 2 us over sqrt(4) launches: 12.5% of 8 us
    scenario = Scenario("floors", "8 us x4 +9%", "unchanged", [Launch(tiny, "step")] * 4,
                        [Launch(tiny, "step", time=1.09)] * 4)
    comparison = _compare(scenario, tmp_path)
    assert comparison.verdict == "pass"
    [note] = [n for n in comparison.notes if "excused by the floor" in n]
    assert note.startswith("tiny_kernel in region 'step' ×4: duration +")


def test_a_launch_configuration_change_is_paired_and_shown(tmp_path: Path) -> None:
    wide = GEMM._replace(grid="(32, 32, 1)")
    scenario = Scenario("config", "grid", "regression", [Launch(GEMM, "step")], [Launch(wide, "step", time=1.2)])
    comparison = _compare(scenario, tmp_path)
    [launch] = comparison.launches.rows()
    assert launch["status"] == "regression" and launch["matched_by"] == "config"
    assert launch["launch_change"] == "grid (64, 32, 1) → (32, 32, 1)"
    assert not comparison.unmeasured


def test_a_launch_inserted_among_launches_of_its_own_identity_is_the_one_labelled_new(tmp_path: Path) -> None:
    from scenarios import STEP

    add = STEP[1]
    base = [Launch(k) for _ in range(3) for k in STEP]  # gemm, add, gelu, mul; three times
    cur = [Launch(k) for i in range(3) for k in STEP[:2] + ([add] if i == 1 else []) + STEP[2:]]
    comparison = _compare(Scenario("insert", "add", "unchanged", base, cur), tmp_path)
    assert comparison.verdict == "pass"
    launches = comparison.launches
    [new] = launches[launches["status"] == "new"].rows()
    # The second step's elementwise launches are ordinals 3-5 (add, add, gelu): one of its two adds, not the last.
    assert new["kernel"] == "vectorized_elementwise_kernel" and new["ordinal"] in (3, 4)
    assert "AddFunctor" in new["demangled"]


def test_the_alignment_is_a_longest_common_subsequence() -> None:
    from perfgate.compare.identity import common_positions

    def longest(a: list[str], b: list[str]) -> int:
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(len(a) - 1, -1, -1):
            for j in range(len(b) - 1, -1, -1):
                table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
        return table[0][0]

    rng = random.Random(4)
    for _ in range(200):
        a = [rng.choice("abc") for _ in range(rng.randrange(15))]
        b = [rng.choice("abc") for _ in range(rng.randrange(15))]
        common = common_positions(a, b, 100)
        assert common is not None and len(common) == longest(a, b)
        assert all(a[i] == b[j] for i, j in common)
        assert all(p[0] < q[0] and p[1] < q[1] for p, q in zip(common, common[1:]))
    assert common_positions(list("ab"), list("cd"), 1) is None  # more apart than the limit: not aligned


def test_a_side_with_function_names_only_is_matched_on_function_names() -> None:
    from perfgate.table import Measurement, make_table

    def side(demangled: str, value: float) -> Measurement:
        row = {"kind": "kernel", "kernel": "gemm_tiled", "demangled": demangled, "region": "", "ordinal": 0,
               "launch": 0, "device": "NVIDIA H100", "cc": "9.0", "grid": "(8, 1, 1)", "block": "(128, 1, 1)",
               "metric": "gpu__time_duration.sum", "unit": "ns", "value": value}
        return Measurement(make_table([row]), source="t")

    comparison = compare_tables(side("gemm_tiled", 100_000.0), side("void gemm_tiled<64, 64, 8>(float *)", 130_000.0))
    [launch] = comparison.launches.rows()
    assert launch["matched_by"] == "name" and launch["status"] == "regression"
