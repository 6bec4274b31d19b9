"""``perfgate compare --code-identity`` on two saved traces: the kernels' codes come from the codes file beside each
trace (``<trace>.codes.json``, perfgate.collect.timeline.codes_file), so the same-code rule judges them as the
plugin's timeline source does.

The traces are our own H200 recordings of the CuPy vector add (tests/data/h200/timeline: ``a`` and ``b`` unchanged
reruns, ``regressed`` with uncoalesced loads). The codes are real and written by perfgate's own writer: vector_add's
code from our sm_90 cubins (tests/data/cubin, through nvdisasm's committed text): ``vector_add.sm_90.cubin``, whose
code_id is the one ncu's report of our H100 run gives, for the reruns, and the same source built without
-ftz=true, another real version of the kernel, standing for the regressed run's other code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.common import run_cli
from helpers.kernel_code import vector_add_code, write_codes_beside
from helpers.timeline import OURS

from perfgate.collect.timeline.codes_file import CODES_SUFFIX

A, B, REGRESSED = "vector_add.cupti.a.cupti.json.gz", "vector_add.cupti.b.cupti.json.gz", \
    "vector_add.regressed.cupti.cupti.json.gz"
STRICT = ("--threshold", "timeline.kernel_duration=0%")  # any move of a kernel's time is past its limit
SAME_CODE = "judged unchanged (same code)"


def _trace(folder: Path, name: str, cubin: str | None = "vector_add") -> Path:
    """A copy of our recorded trace ``name`` in ``folder``, with the codes file the child writes beside it
    (``cubin``: which build's vector_add code; None: no codes file)."""
    copy = folder / name
    shutil.copyfile(OURS / name, copy)
    if cubin is not None:
        write_codes_beside(copy, {"vector_add": vector_add_code(cubin)})
    return copy


def test_two_saved_traces_with_the_same_code_are_judged_unchanged_by_the_same_code_rule(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base, cur = _trace(tmp_path, A), _trace(tmp_path, B)
    status, out, err = run_cli(capsys, "compare", "--code-identity", *STRICT, base, cur)
    assert (status, err) == (0, "")
    assert "note: machine code: 1 kernel the same on both sides in the same launch configuration (time judged " \
           "unchanged), 0 the same in another configuration, 0 changed, 0 not known" in out
    assert f"vector_add: timeline.kernel_duration +0.5% {SAME_CODE}" in out
    assert out.rstrip().endswith("PASS: no regression in 3 compared (launches: 12 unchanged)")

    status, out, _ = run_cli(capsys, "compare", "--code-identity", *STRICT, base, cur, "--format", "json")
    launches = json.loads(out)["launches"]
    kernel_ids = {(code, before) for kind, code, before in zip(launches["kind"], launches["code_id"],
                                                              launches["baseline_code_id"], strict=True)
                  if kind == "kernel"}
    assert kernel_ids == {("d0771fb02e697a94", "d0771fb02e697a94")}  # ncu's code_id of vector_add on our H100


def test_without_code_identity_the_codes_file_is_not_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base, cur = _trace(tmp_path, A), _trace(tmp_path, B)
    status, out, _ = run_cli(capsys, "compare", *STRICT, base, cur)
    assert status == 0 and "machine code" not in out and SAME_CODE not in out
    assert "INCONCLUSIVE" in out  # the strict limit without the rule: a +0.4% that may be noise


def test_other_code_is_said_and_the_regression_stays(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base, cur = _trace(tmp_path, A), _trace(tmp_path, REGRESSED, "vector_add_noftz")
    status, out, err = run_cli(capsys, "compare", "--code-identity", base, cur)
    assert (status, err) == (1, "")
    assert "code: code changed (d0771fb02e69 → ce514a810873): 72 → 72 instructions in its code: " \
           "the same mix, other code" in out
    assert "0 the same in another configuration, 1 changed (vector_add), 0 not known" in out
    assert SAME_CODE not in out


def test_a_trace_without_a_codes_file_is_said_and_nothing_is_held(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base, cur = _trace(tmp_path, A, None), _trace(tmp_path, B)
    status, out, _ = run_cli(capsys, "compare", "--code-identity", *STRICT, base, cur)
    assert status == 0 and SAME_CODE not in out
    assert "note: machine code: the baseline carries none (only .ncu-rep files, and traces with a codes file " \
           "beside them, read with --code-identity do): the same-code rule was not applied" in out


def test_a_compressed_trace_finds_its_codes_under_either_name(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    base, cur = _trace(tmp_path, A), _trace(tmp_path, B)
    written = base.with_name(base.name + CODES_SUFFIX)  # trace.cupti.json.gz.codes.json, as the writer names it
    written.rename(base.with_name(base.stem + CODES_SUFFIX))  # trace.cupti.json.codes.json: saved before gzip
    status, out, _ = run_cli(capsys, "compare", "--code-identity", *STRICT, base, cur)
    assert status == 0 and SAME_CODE in out


def test_a_chrome_trace_gets_its_codes_by_the_demangled_name(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    # torch.profiler names kernels demangled; the codes file keeps CUPTI's (mangled) names.
    names = ("mlp.torch.a.pt.trace.json.gz", "mlp.torch.b.pt.trace.json.gz")
    kernel = "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_128x256_8x4_nt_align1EEvNT_6ParamsE"
    traces = [_trace(tmp_path, name, None) for name in names]
    for trace in traces:
        write_codes_beside(trace, {kernel: vector_add_code()})  # a real code given to the cutlass GEMM
    status, out, _ = run_cli(capsys, "compare", "--code-identity", *traces)
    assert status == 0
    assert "note: machine code: 1 kernel the same on both sides in the same launch configuration" in out


@pytest.mark.parametrize(("text", "problem"), [
    ("{not json", "the kernels' codes are not JSON"),
    ('{"codes": []}', 'not a codes file: expected {"codes": {kernel: code}, "problems": [...]}'),
    ('{"codes": {"vector_add": {"id": "D0771FB0", "opcodes": {}}}, "problems": []}',
     "the code of 'vector_add' must be {\"id\": 16 hex digits"),
    ('{"codes": {"vector_add": {"id": "d0771fb02e697a94", "opcodes": {"FADD": -1}}}, "problems": []}',
     "the code of 'vector_add' must be"),
])
def test_a_bad_codes_file_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 text: str, problem: str) -> None:
    base, cur = _trace(tmp_path, A), _trace(tmp_path, B)
    bad = cur.with_name(cur.name + CODES_SUFFIX)
    bad.write_text(text, encoding="utf-8")
    status, out, err = run_cli(capsys, "compare", "--code-identity", base, cur)
    assert status == 2 and out == ""
    assert err.startswith(f"perfgate: error: {bad}: {problem}") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and "remove it to compare without the kernels' code" in err


def test_a_compressed_nsight_systems_export_finds_its_codes_file_beside_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A ``.sqlite.xz`` is read from its expansion in a temporary folder: its codes are looked for beside the file
    given (they were looked for beside the expansion, so the compressed side carried none)."""
    import lzma

    from helpers.timeline import corpus_trace

    export = corpus_trace("nvfuser-h100/report1_8fa9ec2.sqlite")
    plain, packed = tmp_path / "run.sqlite", tmp_path / "packed.sqlite.xz"
    shutil.copyfile(export, plain)
    packed.write_bytes(lzma.compress(export.read_bytes(), preset=0))
    code = {"nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN": vector_add_code()}  # a real code, given to its GEMM
    write_codes_beside(plain, code)
    write_codes_beside(tmp_path / "packed.sqlite", code)  # the name without .xz: read too
    status, out, _ = run_cli(capsys, "compare", "--code-identity", packed, plain)
    assert status == 0 and "carries none" not in out
    assert "note: machine code: 1 kernel the same on both sides in the same launch configuration" in out


def test_what_the_codes_files_writer_could_not_read_is_said(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    """The problems a codes file lists (why some kernels carry no code) are notes of the compare, a few a side."""
    base, cur = _trace(tmp_path, A), tmp_path / B
    shutil.copyfile(OURS / B, cur)
    problems = [f"module {n} was loaded from PTX: its machine code is not in a cubin" for n in range(5)]
    write_codes_beside(cur, {"vector_add": vector_add_code()}, problems)
    status, out, _ = run_cli(capsys, "compare", "--code-identity", base, cur)
    assert status == 0
    assert "note: machine code of the current run's kernels: module 0 was loaded from PTX: its machine code is not " \
           "in a cubin" in out
    assert "module 3 was loaded" not in out
    assert "note: machine code of the current run's kernels: 2 more problems in its codes file" in out
    assert "baseline's kernels" not in out
    status, out, _ = run_cli(capsys, "compare", "--code-identity", base, cur, "--format", "json")
    assert "machine code of the current run's kernels: 2 more problems in its codes file" in json.loads(out)["notes"]
