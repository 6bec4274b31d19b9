"""Compile small Triton kernels for sm_90 (one for sm_80 too) into a fresh Triton compile cache, with no GPU: the fixture
tests/data/triton-cache (its README says the versions), read by perfgate.collect.triton_cache in
tests/engine/test_triton_cache.py.

    python3 -m venv /tmp/tritonvenv && /tmp/tritonvenv/bin/pip install triton
    /tmp/tritonvenv/bin/python tests/gpu/make_triton_cache.py tests/data/triton-cache

Triton writes each compilation into ``$TRITON_CACHE_DIR/<hash>/`` (its ``.cubin`` beside its metadata ``.json``,
the intermediate forms and the ``__grp__`` index of them); ptxas comes with Triton's wheel. ``add_kernel`` is
compiled with BLOCK 1024 and 512 (two versions of one name in one cache, as a test that changed a constant leaves
them), and with BLOCK 1024 for sm_80 too (an A100's: a cache shared by two GPU models).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    cache = Path(sys.argv[1]).resolve()
    if cache.exists() and any(cache.iterdir()):
        sys.exit(f"{cache} is not empty: give a new folder (Triton would answer from the cache, not compile)")
    os.environ["TRITON_CACHE_DIR"] = str(cache)  # read by Triton when it compiles: set before the import
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, said so to silence its warning

    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, factor, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)

    add = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    scale = {"x_ptr": "*fp32", "out_ptr": "*fp32", "factor": "fp32", "n": "i32", "BLOCK": "constexpr"}
    builds = [(add_kernel, add, 1024, 90), (add_kernel, add, 512, 90), (scale_kernel, scale, 1024, 90),
              (add_kernel, add, 1024, 80)]  # the last for an A100: a cache shared by two GPU models
    print(f"triton {triton.__version__}, cache {cache}")
    for fn, signature, block, arch in builds:
        source = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs={"BLOCK": block})
        kernel = triton.compile(source, target=GPUTarget("cuda", arch, 32))
        folder = next(path.parent for path in cache.glob(f"*/{kernel.name}.json")
                      if kernel.hash in path.read_text(encoding="utf-8"))
        print(f"{kernel.name} BLOCK={block} sm_{arch}: {folder.name}/")


if __name__ == "__main__":
    main()
