"""A kernel's code identity from a cubin (perfgate.collect.cubin) and from Triton's compile cache: the same code_id
as ncu's report gives for the same machine code. The cubins are our own (tests/data/cubin/README.md says how they
were made); nvdisasm runs where one is found (the CUDA toolkit, PyPI's nvidia-cuda-nvdisasm), else those tests
skip. Only a GPU run proves that a loaded module's cubin gives ncu's code_id (tests/gpu/code_id_check.py)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from perfgate.collect import read_table
from perfgate.collect.cubin import BASE_ADDRESS, CubinError, cubin_codes, disassembly_codes, find_nvdisasm, ncu_form
from perfgate.collect.triton_cache import triton_cache_dir, triton_codes
from perfgate.table import KernelCode
from tests.helpers.common import REPO

CUBINS = REPO / "tests" / "data" / "cubin"
VECTOR_ADD = CUBINS / "vector_add.sm_90.cubin"
NCU_VECTOR_ADD = REPO / "tests" / "data" / "h100" / "vector_add.ncu-rep"
NVDISASM = find_nvdisasm()
needs_nvdisasm = pytest.mark.skipif(NVDISASM is None, reason="no nvdisasm here (it comes with the CUDA toolkit or "
                                                             "PyPI's nvidia-cuda-nvdisasm; CI has no CUDA)")


def _elf_reader() -> None:
    pytest.importorskip("elftools", reason="reading a cubin needs pyelftools (perfgate[timeline])")


@cache
def _ncu_code() -> KernelCode:
    """vector_add's code as ncu's report of our H100 run gives it (CuPy compiled the same source there)."""
    measurement = read_table(NCU_VECTOR_ADD, code=True)
    assert measurement.code is not None
    (code,) = measurement.code.values()  # its one launch
    return code


def test_nvdisasm_raw_text_of_our_cubin_gives_the_code_id_of_ncus_report() -> None:
    # nvdisasm 13.5's raw-mode text of the cubin, committed: no nvdisasm needed to check the mapping onto ncu's form.
    text = (CUBINS / "vector_add.sm_90.nvdisasm.txt").read_text(encoding="utf-8")
    codes = disassembly_codes(text, {"vector_add": (BASE_ADDRESS, 72 * 16)})
    assert codes["vector_add"] == _ncu_code()
    assert codes["vector_add"].code_id == "d0771fb02e697a94"
    lacking = "\n".join(line for line in text.splitlines() if "/*7f0000000070*/" not in line)
    with pytest.raises(CubinError, match=r"no instruction of vector_add at \+0x70"):
        disassembly_codes(lacking, {"vector_add": (BASE_ADDRESS, 72 * 16)})


def test_ncu_form_drops_reuse_flags_and_labels_the_final_self_branch() -> None:
    assert ncu_form("ISETP.GT.U32.AND P0, PT, R7.reuse, R3, PT", 0x10, 0) == "ISETP.GT.U32.AND P0, PT, R7, R3, PT"
    assert ncu_form("BRA 0x7f00000003d0", 0x7F00000003D0, 0) == "BRA `(.L_x_0) 0x7f00000003d0"
    assert ncu_form("@!P0 BRA 0x7f0000000150", 0x7F0000000040, 0) == "@!P0 BRA 0x7f0000000150"  # not to itself


@needs_nvdisasm
def test_our_cubin_gives_ncus_code_id_and_a_rename_keeps_it() -> None:
    _elf_reader()
    codes = cubin_codes(VECTOR_ADD.read_bytes())
    assert codes == {"vector_add": _ncu_code()}
    renamed = cubin_codes((CUBINS / "vector_add_renamed.sm_90.cubin").read_bytes())
    assert renamed == {"vector_add_renamed": _ncu_code()}


@needs_nvdisasm
def test_other_code_gets_other_code_ids_and_names_limit_what_is_disassembled() -> None:
    _elf_reader()
    data = (CUBINS / "other_code.sm_90.cubin").read_bytes()
    codes = cubin_codes(data)
    assert set(codes) == {"checked_sum", "second"}
    ids = {code.code_id for code in codes.values()} | {_ncu_code().code_id}
    noftz = cubin_codes((CUBINS / "vector_add_noftz.sm_90.cubin").read_bytes())["vector_add"]
    assert len(ids | {noftz.code_id}) == 4
    assert noftz.opcodes == _ncu_code().opcodes  # one modifier apart (FADD.FTZ → FADD): the mix is the same
    assert codes["checked_sum"].opcodes["CALL"] == 2  # the assert's __assertfail and the helper, in its section
    assert cubin_codes(data, {"second"}) == {"second": codes["second"]}
    assert cubin_codes(data, {"absent"}) == {}


def test_what_is_not_a_cubin_says_so() -> None:
    with pytest.raises(CubinError, match="no ELF header"):
        cubin_codes(b"\x50\xed\x55\xba fatbin")
    _elf_reader()
    host_program = Path("/bin/true")  # an ELF image for the CPU
    if host_program.is_file():
        with pytest.raises(CubinError, match="not a cubin"):
            cubin_codes(host_program.read_bytes())


def test_no_nvdisasm_is_said_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _elf_reader()
    monkeypatch.setattr("perfgate.collect.cubin.find_nvdisasm", lambda: None)
    with pytest.raises(CubinError, match="no nvdisasm found"):
        cubin_codes(VECTOR_ADD.read_bytes())


def _cache_entry(cache: Path, key: str, name: str, cubin: Path) -> None:
    """One compiled kernel as Triton's cache keeps it: <hash>/<name>.cubin beside <name>.json."""
    folder = cache / key
    folder.mkdir(parents=True)
    (folder / f"{name}.cubin").write_bytes(cubin.read_bytes())
    (folder / f"{name}.json").write_text(json.dumps({"name": name, "target": {"backend": "cuda", "arch": 90}}))
    (folder / f"__grp__{name}.json").write_text(json.dumps({"child_paths": {}}))


@needs_nvdisasm
def test_triton_cache_gives_a_kernels_code_unless_it_holds_two_versions(tmp_path: Path) -> None:
    _elf_reader()
    _cache_entry(tmp_path, "AAAA", "vector_add", VECTOR_ADD)
    _cache_entry(tmp_path, "BBBB", "vector_add_renamed", CUBINS / "vector_add_renamed.sm_90.cubin")
    found = triton_codes({"vector_add", "vector_add_renamed", "not_cached"}, tmp_path)
    assert found == {"vector_add": _ncu_code(), "vector_add_renamed": _ncu_code()}
    # The same code cached twice (another Triton version, the same machine code): still known.
    _cache_entry(tmp_path, "CCCC", "vector_add", VECTOR_ADD)
    assert triton_codes({"vector_add"}, tmp_path) == {"vector_add": _ncu_code()}
    # Another version of vector_add (compiled without flushing denormals: FADD for FADD.FTZ): which one ran is
    # not known from the cache, so none.
    _cache_entry(tmp_path, "DDDD", "vector_add", CUBINS / "vector_add_noftz.sm_90.cubin")
    assert triton_codes({"vector_add", "vector_add_renamed"}, tmp_path) == {"vector_add_renamed": _ncu_code()}


def test_triton_cache_folder_follows_tritons_variables(tmp_path: Path) -> None:
    assert triton_cache_dir({"TRITON_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert triton_cache_dir({"TRITON_HOME": str(tmp_path)}) == tmp_path / ".triton" / "cache"
    assert triton_codes({"vector_add"}, tmp_path / "absent") == {}


@needs_nvdisasm
def test_loaded_modules_give_each_launched_kernel_its_code_unless_two_disagree(tmp_path: Path) -> None:
    _elf_reader()
    from perfgate.collect.module_codes import kernel_codes

    vector_add, renamed = VECTOR_ADD.read_bytes(), (CUBINS / "vector_add_renamed.sm_90.cubin").read_bytes()
    noftz = (CUBINS / "vector_add_noftz.sm_90.cubin").read_bytes()
    codes, problems = kernel_codes({"vector_add", "vector_add_renamed"}, [vector_add, b"//\n.version 8.0\n", renamed],
                                   triton_cache=tmp_path)
    assert codes == {"vector_add": _ncu_code(), "vector_add_renamed": _ncu_code()}
    assert problems == ["not a cubin: no ELF header (a fatbin or PTX is not disassembled)"]
    # Two loaded modules hold vector_add with other code: which one a launch ran is not known from its name.
    codes, _ = kernel_codes({"vector_add"}, [vector_add, noftz], triton_cache=tmp_path)
    assert codes == {}
