"""A kernel's code identity from a compile cache Triton itself wrote (tests/data/triton-cache: Triton 3.9.0, sm_90,
its README says how): the code_id the cache gives a kernel is the one perfgate.collect.cubin gives its cubin, another
BLOCK gives another, a name the cache holds in two versions gets none, and an entry for another GPU is left out
where the traced GPU is known. nvdisasm runs where one is found (the CUDA
toolkit, PyPI's nvidia-cuda-nvdisasm, Triton's wheel), else these tests skip."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.common import REPO

from perfgate.collect.cubin import cubin_codes, find_nvdisasm
from perfgate.collect.triton_cache import triton_codes
from perfgate.collect.module_codes import kernel_codes

CACHE = REPO / "tests" / "data" / "triton-cache"
ADD_1024 = CACHE / "JA5RNINGGJAG7FQQ7NDMQQN4YITXS3C262MBJ7UW2YFK6BPL23NQ"
ADD_512 = CACHE / "X37743MYUMDXW5QPGOI4PWPLQOLKHUAGWC3CPIFW4B5ZSLUBNVGQ"
SCALE = CACHE / "DRRFIQ46VZXZHTATXGNZUFXAVIZSNUQCUQGRU6VCE4FZG3ZLULYQ"
ADD_1024_SM80 = CACHE / "SN7TECGIGJ2IE3EMULQIO62PVAAG55ATIDUMBJIIDRZCNNBA63QA"

pytestmark = [
    pytest.mark.skipif(find_nvdisasm() is None, reason="no nvdisasm here (it comes with the CUDA toolkit, PyPI's "
                                                      "nvidia-cuda-nvdisasm or Triton's wheel; CI has none)"),
]


@pytest.fixture(autouse=True)
def _elf_reader() -> None:
    pytest.importorskip("elftools", reason="reading a cubin needs pyelftools (perfgate[timeline])")


def _cubin_id(folder: Path, name: str) -> str:
    return cubin_codes((folder / f"{name}.cubin").read_bytes())[name].code_id


def _cache_of(tmp_path: Path, *folders: Path) -> Path:
    """A cache holding only ``folders`` of ours, copied as they are."""
    for folder in folders:
        shutil.copytree(folder, tmp_path / folder.name)
    return tmp_path


def test_the_cache_gives_a_kernel_the_code_id_of_its_cubin() -> None:
    found = triton_codes({"scale_kernel", "not_compiled"}, CACHE)
    assert set(found) == {"scale_kernel"}
    assert found["scale_kernel"].code_id == _cubin_id(SCALE, "scale_kernel") == "baa37a8bd723c344"
    assert found["scale_kernel"].opcodes["FMUL"] > 0  # x * factor


def test_another_block_is_another_code_and_two_versions_of_one_name_give_none(tmp_path: Path) -> None:
    assert (_cubin_id(ADD_1024, "add_kernel"), _cubin_id(ADD_512, "add_kernel")) == \
        ("1afdefb251c48738", "f1a9ad9a624cdedd")
    assert triton_codes({"add_kernel", "scale_kernel"}, CACHE).keys() == {"scale_kernel"}  # which one ran: unknown
    one = triton_codes({"add_kernel"}, _cache_of(tmp_path / "1024", ADD_1024))
    other = triton_codes({"add_kernel"}, _cache_of(tmp_path / "512", ADD_512))
    assert (one["add_kernel"].code_id, other["add_kernel"].code_id) == ("1afdefb251c48738", "f1a9ad9a624cdedd")


def test_entries_for_another_gpu_are_left_out_where_the_traced_gpu_is_known(tmp_path: Path) -> None:
    # The same source built for the H100 (sm_90) and an A100 (sm_80): a cache shared by two GPU models.
    cache = _cache_of(tmp_path, ADD_1024, ADD_1024_SM80)
    assert json.loads((ADD_1024_SM80 / "add_kernel.json").read_text(encoding="utf-8"))["target"] == \
        {"backend": "cuda", "arch": 80, "warp_size": 32}  # as Triton 3.9 writes it
    assert _cubin_id(ADD_1024_SM80, "add_kernel") == "7fe370fa5c792f50"
    assert triton_codes({"add_kernel"}, cache) == {}  # no GPU said: both versions count
    assert triton_codes({"add_kernel"}, cache, ccs={"9.0"})["add_kernel"].code_id == "1afdefb251c48738"
    assert triton_codes({"add_kernel"}, cache, ccs={"8.0"})["add_kernel"].code_id == "7fe370fa5c792f50"
    assert triton_codes({"add_kernel"}, cache, ccs={"8.6"}) == {}  # neither: none
    # The traced child's lookup for kernels whose module loaded before the trace, given the traced GPU's CC.
    codes, problems = kernel_codes({"add_kernel"}, [], triton_cache=cache, ccs={"9.0"})
    assert (codes["add_kernel"].code_id, problems) == ("1afdefb251c48738", [])


def test_a_version_whose_cubin_cannot_be_read_leaves_the_name_without_code(tmp_path: Path) -> None:
    cache = _cache_of(tmp_path, ADD_1024, ADD_512)
    (cache / ADD_512.name / "add_kernel.cubin").write_bytes(b"\x50\xed\x55\xba a fatbin, not a cubin")
    assert triton_codes({"add_kernel"}, cache) == {}  # the unreadable version may be the one that ran
