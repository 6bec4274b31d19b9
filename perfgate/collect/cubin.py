"""A kernel's code identity from a cubin: the same ``code_id`` as ``perfgate.collect.sass`` gives from ncu's report.

A cubin (the ELF image a CUDA module is loaded from: what CUPTI's module-loaded callback hands over, what Triton
keeps in its compile cache) holds each kernel's machine code in its section ``.text.<name>``. NVIDIA's ``nvdisasm``
turns it into SASS text. ncu's report shows that text for the function as loaded: one instruction a line,
absolute addresses, no ``.reuse`` operand flags, no trailing ``;``, and the function's final self-branch written
``BRA `(.L_x_0) <address>``. nvdisasm's raw mode (``-b SM90 -base ADDRESS``: the code bytes alone, at an address)
prints the same form but for those three; ``ncu_form`` maps them. Then ``sass.kernel_code`` hashes it exactly as
it hashes ncu's, so the two ids agree when nvdisasm and ncu's disassembler write the same syntax (the same CUDA
release: ncu 2025.3 and nvdisasm 13.5 do; older ncu wrote ``WARPSYNC 0xffffffff`` for ``WARPSYNC.ALL``).

All of a cubin's wanted kernels are disassembled in one nvdisasm run, their code bytes one after the other; each
kernel's lines are then the addresses of its own bytes. pyelftools reads the ELF (in the extra ``perfgate[timeline]``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Collection
from io import BytesIO
from pathlib import Path
from typing import Any

from perfgate.collect.sass import INSTRUCTION_BYTES, kernel_code
from perfgate.table import KernelCode

ENV_NVDISASM = "PERFGATE_NVDISASM"  # the nvdisasm to run, before any found on PATH or in a CUDA toolkit
ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190
BASE_ADDRESS = 0x7F0000000000  # where the disassembled bytes are said to lie: any address far from 0 will do
NVDISASM_SECONDS = 120.0
_LINE = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s*(.*?)\s*;?\s*$")
_REUSE = re.compile(r"\.reuse\b")
_SELF_BRANCH = re.compile(r"^(\S*\s*)BRA (0x[0-9a-fA-F]+)$")


class CubinError(Exception):
    """A cubin that cannot be read or disassembled; the message says which and why."""


def find_nvdisasm(environ: dict[str, str] | None = None) -> str | None:
    """nvdisasm: ``PERFGATE_NVDISASM``, then PATH, the CUDA toolkit (``CUDA_HOME``, ``CUDA_PATH``,
    ``/usr/local/cuda``), the ``nvidia-cuda-nvdisasm`` wheel, and the copy Triton's wheel bundles."""
    env = os.environ if environ is None else environ
    if env.get(ENV_NVDISASM):
        return env[ENV_NVDISASM]
    found = shutil.which("nvdisasm", path=env.get("PATH"))
    if found:
        return found
    folders = [Path(env[name]) / "bin" for name in ("CUDA_HOME", "CUDA_PATH") if env.get(name)]
    folders.append(Path("/usr/local/cuda/bin"))
    folders += _package_folders("nvidia", ("cu13/bin", "cu12/bin", "cuda_nvdisasm/bin"))
    folders += _package_folders("triton", ("backends/nvidia/bin",))
    for folder in folders:
        candidate = folder / "nvdisasm"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _package_folders(package: str, below: tuple[str, ...]) -> list[Path]:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    return [Path(root) / sub for root in roots for sub in below]


ELF_READER_MISSING = "reading a cubin needs pyelftools (pip install pyelftools, or perfgate[timeline])"


def elf_reader_missing() -> str | None:
    """The problem of a process without pyelftools, said before reading cubins whose every failure is swallowed."""
    try:
        found = importlib.util.find_spec("elftools") is not None
    except (ImportError, ValueError):
        found = False
    return None if found else ELF_READER_MISSING


def _elf(data: bytes) -> Any:
    if not data.startswith(ELF_MAGIC):
        raise CubinError("not a cubin: no ELF header (a fatbin or PTX is not disassembled)")
    try:
        from elftools.elf.elffile import ELFFile
    except ImportError:
        raise CubinError(ELF_READER_MISSING) from None
    try:
        image = ELFFile(BytesIO(data))
        machine = image.header["e_machine"]
    except Exception as exc:  # pyelftools raises its own errors on a damaged image
        raise CubinError(f"not a readable ELF image ({type(exc).__name__}: {exc})") from None
    if machine not in ("EM_CUDA", EM_CUDA):
        raise CubinError(f"an ELF image for {machine}, not a cubin (EM_CUDA)")
    return image


def cubin_arch(image: Any) -> str:
    """nvdisasm's name of the cubin's architecture (``SM90``, ``SM90a``): ABI version 8 (CUDA 13) keeps the SM in
    bits 8-15 of ``e_flags`` and the ``a`` flag in bit 3; earlier ones in bits 0-7 and bit 11."""
    flags = int(image.header["e_flags"])
    if int(image.header["e_ident"]["EI_ABIVERSION"]) >= 8:
        sm, accelerated = (flags >> 8) & 0xFF, bool(flags & 0x8)
    else:
        sm, accelerated = flags & 0xFF, bool(flags & 0x800)
    return f"SM{sm}{'a' if accelerated else ''}"


def cubin_functions(data: bytes) -> tuple[str, dict[str, bytes]]:
    """The cubin's architecture and each function's code, by symbol name (mangled, as CUPTI names kernels): a
    function symbol at the start of its own section ``.text.<name>``; the section holds its callees and padding
    too, as the function ncu reads does."""
    image = _elf(data)
    try:
        return cubin_arch(image), _functions(image)
    except Exception as exc:  # pyelftools reads sections lazily: a damaged or cut one raises here, in its own errors
        raise CubinError(f"not a readable ELF image ({type(exc).__name__}: {exc})") from None


def _functions(image: Any) -> dict[str, bytes]:
    symbols = image.get_section_by_name(".symtab")
    functions: dict[str, bytes] = {}
    for symbol in symbols.iter_symbols() if symbols is not None else ():
        index = symbol["st_shndx"]
        if symbol["st_info"]["type"] != "STT_FUNC" or not isinstance(index, int) or symbol["st_value"] != 0:
            continue
        section = image.get_section(index)
        if section.name == f".text.{symbol.name}" and section["sh_type"] == "SHT_PROGBITS":
            functions[symbol.name] = section.data()
    return functions


def ncu_form(text: str, address: int, self_branches: int) -> str:
    """One nvdisasm raw-mode instruction (without its ``/*address*/``) as ncu's report writes it."""
    text = _REUSE.sub("", text)
    loop = _SELF_BRANCH.match(text)
    if loop and int(loop.group(2), 16) == address:
        return f"{loop.group(1)}BRA `(.L_x_{self_branches}) {loop.group(2)}"
    return text


def disassembly_codes(disassembly: str, starts: dict[str, tuple[int, int]]) -> dict[str, KernelCode]:
    """Each function's code from nvdisasm's raw-mode text; ``starts``: name -> (address, size in bytes). CubinError
    where the text lacks one of their instructions."""
    by_address: dict[int, str] = {}
    for line in disassembly.splitlines():
        found = _LINE.match(line)
        if found:
            by_address[int(found.group(1), 16)] = found.group(2)
    codes: dict[str, KernelCode] = {}
    for name, (start, size) in starts.items():
        lines: list[str] = []
        loops = 0  # ncu labels each self-branch of the function, from .L_x_0 on
        for address in range(start, start + size, INSTRUCTION_BYTES):
            if address not in by_address:  # a line nvdisasm wrote in another form: no hash rather than a wrong one
                raise CubinError(f"nvdisasm wrote no instruction of {name} at +{address - start:#x}")
            lines.append(ncu_form(by_address[address], address, loops))
            loops += "`(.L_x_" in lines[-1]
        codes[name] = kernel_code(lines, start)
    return codes


def cubin_codes(data: bytes, names: Collection[str] | None = None, nvdisasm: str | None = None) -> dict[str, KernelCode]:
    """Each function's code identity in the cubin ``data`` (only ``names``, when given), by symbol name."""
    arch, functions = cubin_functions(data)
    wanted = {name: code for name, code in functions.items() if names is None or name in names}
    if not wanted:
        return {}
    tool = nvdisasm or find_nvdisasm()
    if tool is None:
        raise CubinError("no nvdisasm found: install the CUDA toolkit or nvidia-cuda-nvdisasm, or name it in "
                         f"{ENV_NVDISASM}")
    starts: dict[str, tuple[int, int]] = {}
    address = BASE_ADDRESS
    for name, code in wanted.items():
        starts[name] = (address, len(code))
        address += len(code)
    return disassembly_codes(_run(tool, arch, b"".join(wanted.values())), starts)


def _run(tool: str, arch: str, code: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".bin") as raw:
        raw.write(code)
        raw.flush()
        try:
            done = subprocess.run([tool, "-b", arch, "-base", hex(BASE_ADDRESS), raw.name], capture_output=True,
                                  text=True, timeout=NVDISASM_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CubinError(f"{tool} did not run: {exc}") from None
    if done.returncode != 0:
        raise CubinError(f"{tool} -b {arch} failed (exit status {done.returncode}): "
                         f"{done.stderr.strip() or done.stdout.strip()}")
    return done.stdout
