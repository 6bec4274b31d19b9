"""A row per kernel as compare judges it: two kernels of one name (template instances, or one name under two launch
configurations judged apart) get two rows, told apart by what differs, and each row's figures are its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.common import REPO, run_cli

from perfgate.render.kernel_names import template_arguments, variant_labels
from perfgate.report import kernel_summary, load_report
from perfgate.render.kernels import KernelRows

MLP = REPO / "tests" / "data" / "h100" / "default-metrics"
REDUCE_512 = ("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::func_wrapper_t"
              "<float, at::native::sum_functor<float, float, float>::operator ()(at::TensorIterator &)::[lambda(float, "
              "float) (instance 1)]>, unsigned int, float, (int)4, (int)4>>(T3)")
REDUCE_128 = REDUCE_512.replace("(int)512, (int)1", "(int)128, (int)4")


def test_template_arguments_are_split_at_the_top_level_with_literal_casts_dropped() -> None:
    assert template_arguments(REDUCE_512, "reduce_kernel") == [
        "512", "1", "at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, "
        "float, float>::operator ()(at::TensorIterator &)::[lambda(float, float) (instance 1)]>, unsigned int, "
        "float, 4, 4>"]
    assert template_arguments("gemm_kernel(float *, int)", "gemm_kernel") is None
    assert template_arguments("gemm<128, 64", "gemm") is None  # a name cut short


@pytest.mark.parametrize(("names", "kernel", "labels"), [
    ([REDUCE_512, REDUCE_128], "reduce_kernel", ["<512, 1, …>", "<128, 4, …>"]),
    (["void k<4, Fill<float>, 1>(int)", "void k<4, Gelu<float>, 3>(int)"], "k", ["<…, Fill<float>, 1>",
                                                                               "<…, Gelu<float>, 3>"]),
    (["void k<1, 2, 3, 4>()", "void k<1, 2, 3, 5>()"], "k", ["<…, 4>", "<…, 5>"]),
    (["void k<1, 2, 3>()", "void k<9, 2, 7>()"], "k", ["<1, …, 3>", "<9, …, 7>"]),
    (["void k<1>()", "void k<1>()"], "k", [" (1)", " (2)"]),  # one name, two launch configurations
    (["_ZN2at6native13reduce_kernelILi128E", "_ZN2at6native13reduce_kernelILi512E"], "reduce_kernel",
     [" (1)", " (2)"]),  # mangled names (a CUPTI trace): told apart by their order
])
def test_variant_labels_show_what_differs(names: list[str], kernel: str, labels: list[str]) -> None:
    assert variant_labels(names, kernel) == labels


def test_the_mlp_comment_has_a_row_per_kernel_it_judged(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The MLP's backward pass runs two instances of ``reduce_kernel`` and of ``vectorized_elementwise_kernel``:
    21 compared, 21 rows, and each instance's launches and figures are its own (a Fill kernel launched once is not
    summarized with the GELU backward kernel launched three times)."""
    target = tmp_path / "report.json"
    assert run_cli(capsys, "compare", MLP / "mlp.ncu-rep.xz", MLP / "mlp.rerun.ncu-rep.xz", "-o", target)[0] == 0
    report = load_report(target)
    rows = KernelRows(report)
    shown = {rows.row(k).name: rows.row(k) for k in rows.kernels if report["launches"]["region"][k[0]] == "backward"}
    assert {name: len(row.launches) for name, row in shown.items() if "reduce" in name} == {
        "reduce_kernel<512, 1, …>": 1, "reduce_kernel<128, 4, …>": 4}
    elementwise = {name: row for name, row in shown.items() if name.startswith("vectorized_elementwise_kernel")}
    assert sorted(len(row.launches) for row in elementwise.values()) == [1, 3]
    assert all(len({report["launches"]["demangled"][i] for i in row.launches}) == 1 for row in shown.values())
    assert len(rows.kernels) == sum(kernel_summary(report).values()) == 21
    markdown = run_cli(capsys, "compare", MLP / "mlp.ncu-rep.xz", MLP / "mlp.rerun.ncu-rep.xz", "--format", "md")[1]
    assert "21 other kernels (unchanged)" in markdown and "reduce\\_kernel&lt;512, 1, …&gt;" in markdown
