"""A kernel's code identity (code_id) from the SASS of real .ncu-rep files, the same-code rule, the drift canary and
the instruction-mix diff: on our own H100 reruns (tests/data, always present) and on the corpus's reports of
consecutive versions of public projects (skipped where ../shared is absent)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfgate.collect import read_table
from perfgate.collect.sass import kernel_code, opcode, relative_addresses
from perfgate.compare import CompareOptions, compare_tables
from perfgate.compare.same_code import mix_change
from perfgate.metrics import Threshold
from perfgate.report import build_report
from perfgate.table import KernelCode, Measurement
from tests.helpers.common import REPO, corpus_file

H100 = REPO / "tests" / "data" / "h100"
TIME = "gpu__time_duration.sum"
INSTRUCTIONS = "smsp__inst_executed.sum"

# A real function's SASS (mlp-t4's matrix_addition2D, as ncu_report gives it), with its one branch target.
SASS = ["     MOV R1, c[0x0][0x28]", "     S2R R0, SR_CTAID.X", "@P0  EXIT", "     LDG.E.SYS R4, [R4]",
        "     FADD R9, R4, R3", "     STG.E.SYS [R6], R9", "     EXIT", "     BRA `(.L_x_0) {target}", "     NOP"]


def _sass_at(start: int) -> list[str]:
    return [line.format(target=hex(start + 0x70)) for line in SASS]


@cache
def _read(path: Path) -> Measurement:
    return read_table(path, code=True)


def test_the_same_code_loaded_elsewhere_hashes_the_same_and_other_code_does_not() -> None:
    here, there = 0x7D039303E6D0, 0x7F3A6F7AFE00
    assert relative_addresses(_sass_at(here)[7], here) == "BRA `(.L_x_0) .+0x70"
    assert kernel_code(_sass_at(here), here) == kernel_code(_sass_at(there), there)
    # An immediate is no address: LOP3's mask stays as it is.
    assert relative_addresses("LOP3.LUT R140, R140, 0xfbffffff, RZ, 0xc0, !PT", here) \
        == "LOP3.LUT R140, R140, 0xfbffffff, RZ, 0xc0, !PT"
    other = _sass_at(here)
    other[4] = "     FMUL R9, R4, R3"
    assert kernel_code(other, here).code_id != kernel_code(_sass_at(here), here).code_id
    jumps_elsewhere = [line.format(target=hex(here + 0x60)) for line in SASS]
    assert kernel_code(jumps_elsewhere, here).code_id != kernel_code(_sass_at(here), here).code_id
    assert kernel_code(_sass_at(here), here).opcodes == {"BRA": 1, "EXIT": 2, "FADD": 1, "LDG": 1, "MOV": 1,
                                                         "NOP": 1, "S2R": 1, "STG": 1}
    assert opcode("@!P0 LDG.E.SYS R4, [R4]") == "LDG"


def test_the_instruction_mix_names_the_largest_changes_first() -> None:
    assert mix_change({"LDG": 2, "FADD": 1, "NOP": 4}, {"LDG": 14, "FADD": 7, "NOP": 4}) \
        == "7 → 25 instructions in its code: LDG +12, FADD +6"
    assert mix_change({"A": 1}, {"A": 1}) == "1 → 1 instructions in its code: the same mix, other code"


def test_a_rerun_on_our_h100_is_same_code_and_its_counters_are_still_judged() -> None:
    base, cur = _read(H100 / "vector_add.ncu-rep"), _read(H100 / "vector_add.rerun.ncu-rep")
    assert base.code and cur.code and {c.code_id for c in base.code.values()} == {c.code_id for c in cur.code.values()}
    strict = CompareOptions(thresholds={TIME: Threshold(relative=0.0), INSTRUCTIONS: Threshold(relative=0.0)})
    report = build_report(compare_tables(base, cur, strict))
    launches = report["launches"]
    kernels = [i for i, kind in enumerate(launches["kind"]) if kind == "kernel"]
    assert kernels and all(launches["code_id"][i] == launches["baseline_code_id"][i] for i in kernels)
    assert all(str(launches["code_why"][i]).startswith("same code") for i in kernels)
    metrics = report["metrics"]["metric"]
    results = report["results"]
    time_rows = [r for r, m in enumerate(results["metric"]) if metrics[m] == TIME and results["launch"][r] in kernels]
    assert time_rows and all(results["status"][r] == "unchanged" for r in time_rows)
    # The time moved (a 0% limit), so the rule held it, and said so; the instruction count stayed judged.
    assert any("judged unchanged (same code)" in note for note in report["notes"])
    counted = [r for r, m in enumerate(results["metric"]) if metrics[m] == INSTRUCTIONS]
    assert counted and all(results["gated"][r] for r in counted)
    without = build_report(compare_tables(base._replace(code=None), cur._replace(code=None), strict))
    assert set(without["launches"]["status"]) - {"unchanged"}, "without code the 0% limit must see the time move"
    assert without["launches"]["code_id"] == [None] * len(without["launches"]["status"])


def test_without_code_identity_nothing_is_read() -> None:
    assert read_table(H100 / "vector_add.ncu-rep").code is None


def test_consecutive_esmm_commits_that_kept_their_kernels_are_same_code() -> None:
    base = _read(corpus_file("esmm-a10g/b644635.ncu-rep"))
    cur = _read(corpus_file("esmm-a10g/a62323b_output.ncu-rep"))
    report = build_report(compare_tables(base, cur))
    launches = report["launches"]
    assert launches["kernel"] and launches["code_id"] == launches["baseline_code_id"]
    assert set(launches["status"]) == {"unchanged"}
    assert any(note.startswith("machine code: 4 kernels the same") for note in report["notes"])


# An assert's failure path as ptxas emits it (ESMM-Research's two_blocktiling at 5c6231e): the assert's strings and
# __assertfail are reached through the module's constant bank 4, its source line is an immediate.
ASSERT_PATH = ["MOV R1, c[0x0][0x28]", "MOV R0, c[0x0][0x0]", "ISETP.NE.AND P0, PT, R0, 0x100, PT",
               "@!P0 BRA .+0x170", "MOV R0, {bank}", "MOV R4, c[0x4][0x38]", "LDC.64 R2, c[0x4][R0]",
               "MOV R5, c[0x4][0x3c]", "MOV R8, {line}", "MOV R12, 0x1", "CALL.ABS.NOINC R2",
               "S2R R60, SR_CTAID.Y", "SHF.L.U32 R60, R60, {shift}, RZ", "EXIT"]


def _assert_path(bank: str = "0x58", line: str = "0x1a", shift: str = "0x7") -> list[str]:
    return [text.format(bank=bank, line=line, shift=shift) for text in ASSERT_PATH]


def test_where_the_module_put_an_asserts_strings_and_its_line_are_not_the_kernels_code() -> None:
    same = kernel_code(_assert_path(), 0)
    assert kernel_code(_assert_path(bank="0x48", line="0x19"), 0) == same
    moved = _assert_path()
    moved[5] = "MOV R4, c[0x4][0x30]"
    assert kernel_code(moved, 0) == same
    # the kernel's own work still counts: an immediate outside the call's arguments, a parameter's offset
    assert kernel_code(_assert_path(shift="0x6"), 0).code_id != same.code_id
    other_parameter = _assert_path()
    other_parameter[0] = "MOV R1, c[0x0][0x2c]"
    assert kernel_code(other_parameter, 0).code_id != same.code_id
    other_call = _assert_path()
    other_call[9] = "MOV R13, 0x1"
    assert kernel_code(other_call, 0).code_id != same.code_id


def test_esmm_kernels_kept_across_a_commit_that_moved_their_asserts_are_same_code() -> None:
    """5c6231e -> b644635: one_blocktiling and two_blocktiling differ only in their asserts' arguments (bank-4
    offsets, source lines): the same code, as b644635 -> a62323b."""
    def codes(name: str) -> dict[str, str]:
        measurement = _read(corpus_file(f"esmm-a10g/{name}.ncu-rep"))
        assert measurement.code
        kernels = dict(zip(measurement.table["launch"].tolist(), measurement.table["kernel"].tolist()))
        return {kernels[launch]: code.code_id for launch, code in measurement.code.items()}

    before, after = codes("5c6231e"), codes("b644635")
    kept = sorted(set(before) & set(after))
    assert kept == ["one_blocktiling", "two_blocktiling"]
    assert all(before[kernel] == after[kernel] for kernel in kept)


def test_a_kernel_whose_code_changed_says_how_in_its_why() -> None:
    base = _read(corpus_file("mlp-t4/report_v3_loop_unroll.ncu-rep"))
    cur = _read(corpus_file("mlp-t4/report_v4_8_per_thread.ncu-rep"))
    report = build_report(compare_tables(base, cur))
    launches = report["launches"]
    assert launches["code_id"][0] != launches["baseline_code_id"][0]
    assert launches["status"] == ["regression"]
    assert "code changed" in str(launches["code_why"][0]) and "32 → 56 instructions in its code: LDG +12" in str(
        launches["code_why"][0])
    # v2 and v3 are the same work measured twice: the same code, though the source changed (loop unrolling).
    assert _read(corpus_file("mlp-t4/report_v2.ncu-rep")).code == base.code


def _slower(measurement: Measurement, factor: float) -> Measurement:
    table = measurement.table
    value = np.where(table["metric"] == TIME, table["value"] * factor, table["value"])
    return measurement.with_table(table.assign(value=value))


def test_same_code_kernels_moving_together_make_a_code_change_inconclusive() -> None:
    base = _read(corpus_file("esmm-a10g/b644635.ncu-rep"))
    cur = _slower(_read(corpus_file("esmm-a10g/a62323b_output.ncu-rep")), 1.2)
    assert cur.code
    # warptiling's code changed; the three others kept theirs and still took 20% longer: the runner drifted.
    launch_of = {k: int(a) for k, a in zip(cur.table["kernel"].tolist(), cur.table["launch"].tolist())}
    code = dict(cur.code)
    code[launch_of["warptiling"]] = KernelCode("0" * 16, {"FFMA": 1})
    report = build_report(compare_tables(base, cur._replace(code=code)))
    status = dict(zip(report["launches"]["kernel"], report["launches"]["status"]))
    assert status == {"warptiling": "inconclusive", "one_blocktiling": "unchanged", "two_blocktiling": "unchanged",
                      "vectorized_blocktiling": "unchanged"}
    assert report["verdict"] == "inconclusive"
    drift = [note for note in report["notes"] if note.startswith("runner drift: 3 of 3 same-code kernels")]
    assert drift and "warptiling (code changed) are inconclusive" in drift[0]
    # Without the same-code kernels' evidence the code change is blamed.
    alone = build_report(compare_tables(base, cur._replace(code={launch_of["warptiling"]: code[launch_of["warptiling"]]})))
    assert dict(zip(alone["launches"]["kernel"], alone["launches"]["status"]))["warptiling"] == "regression"


def test_every_format_shows_what_the_code_says() -> None:
    from perfgate.render import render

    base = _read(corpus_file("mlp-t4/report_v3_loop_unroll.ncu-rep"))
    cur = _read(corpus_file("mlp-t4/report_v4_8_per_thread.ncu-rep"))
    report = build_report(compare_tables(base, cur))
    for fmt in ("text", "md", "html", "json"):
        shown = render(report, fmt)
        assert "code changed (0825bea863d0 → 340cf3f494a8)" in shown, fmt
        assert "LDG +12" in shown, fmt
    same = build_report(compare_tables(_read(H100 / "vector_add.ncu-rep"), _read(H100 / "vector_add.rerun.ncu-rep"),
                                       CompareOptions(thresholds={TIME: Threshold(relative=0.0)})))
    for fmt in ("text", "md", "html", "json"):
        assert "judged unchanged (same code)" in render(same, fmt), fmt


def test_a_side_without_code_is_said_and_nothing_is_held() -> None:
    strict = CompareOptions(thresholds={TIME: Threshold(relative=0.0)})
    base = read_table(H100 / "vector_add.ncu-rep")  # as a stored baseline: no code
    report = build_report(compare_tables(base, _read(H100 / "vector_add.rerun.ncu-rep"), strict))
    assert "machine code: the baseline carries none (only .ncu-rep files, and traces with a codes file beside " \
           "them, read with --code-identity do): the " \
           "same-code rule was not applied" in report["notes"]
    assert "regression" in report["launches"]["status"]


def test_code_that_cannot_be_read_leaves_the_launch_without_code() -> None:
    from perfgate.collect.sass import CodeReader

    class Broken:
        """An action whose SASS the report cannot give (ncu_report raises), as a damaged record would."""

        def metric_by_name(self, name: str) -> Any:
            return _Pcs() if name == "launch__function_pcs" else None

        def name(self) -> str:
            return "k"

        def sass_by_pc(self, pc: int) -> str:
            raise RuntimeError("no SASS")

    class _Pcs:
        def num_instances(self) -> int:
            return 1

        def as_uint64(self, index: int = 0) -> int:
            return 0x7F0000000000

    reader = CodeReader()
    reader.read(Broken(), 0)
    assert reader.known() is None


def test_a_baseline_keeps_the_code_and_the_gate_judges_against_it(tmp_path: Path) -> None:
    import json

    import jsonschema  # type: ignore[import-untyped, unused-ignore]
    from importlib import resources

    from perfgate.baseline import baseline_documents, dumps_baseline
    from perfgate.errors import InputError

    base = _read(H100 / "vector_add.ncu-rep")
    [built] = baseline_documents(base).values()
    document = json.loads(dumps_baseline(built))  # its entries are built as they are written: the file's document
    schema = json.loads(resources.files("perfgate").joinpath("schemas/baseline-v1.schema.json").read_text())
    jsonschema.validate(document, schema)
    kernel = next(e for e in document["entries"] if e["kind"] == "kernel")
    assert kernel["code"]["id"] == next(iter(base.code.values())).code_id  # type: ignore[union-attr]
    path = tmp_path / "vector_add.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    stored = read_table(path)
    report = build_report(compare_tables(stored, _read(H100 / "vector_add.rerun.ncu-rep"),
                                         CompareOptions(thresholds={TIME: Threshold(relative=0.0)})))
    assert set(report["launches"]["status"]) == {"unchanged"}
    assert any("judged unchanged (same code)" in note for note in report["notes"])
    kernel["code"] = {"id": "not hex", "opcodes": {}}
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InputError, match=r"entries\[\d+\]\.code must be"):
        read_table(path)
