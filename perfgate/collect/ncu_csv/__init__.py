"""Read Nsight Compute CSV output (``ncu --csv --page details`` or ``--page raw``) into the table.

Layouts followed, as found in public material and checked on real ncu 2025.3.1 output captured on an
H100 (``tests/data/h100/*.csv``). The reader is a few modules, each with the sources it follows:

* ``framing``: where the table sits in ncu's stdout (``==PROF==``/``==WARNING==``/``==ERROR==``
  lines and application output around it) and the errors for files without one;
* ``parsing``: the columns, the header and both pages' parse by pandas' C parser (imported there, only
  when a page is read);
* ``details``: the details page (one row per launch x metric), and ``labels``: the section
  labels it prints instead of metric names by default;
* ``raw``: the raw page (one row per launch, a units row);
* ``launches``: per-launch attributes (kernel, NVTX region, device, CC, grid, block) and the table
  built from them (kernel function names by ``perfgate.demangled``), with ``names`` for NVTX push/pop stacks;
* ``values``: cells to numbers and units to base units (``perfgate.units``);
* ``reader``: ``read_ncu_csv``, the fast path and the careful one.
"""

from __future__ import annotations

from perfgate.collect.ncu_csv.framing import looks_like_ncu_csv
from perfgate.collect.ncu_csv.labels import SECTION_LABELS as _SECTION_LABELS  # noqa: F401 (tests use this name)
from perfgate.collect.ncu_csv.names import nvtx_region
from perfgate.collect.ncu_csv.reader import read_ncu_csv
from perfgate.collect.ncu_csv.values import numbers as _numbers  # noqa: F401 (tests use this name)

__all__ = ["looks_like_ncu_csv", "nvtx_region", "read_ncu_csv"]
