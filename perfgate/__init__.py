"""perfgate: a CI performance-regression gate for GPU kernels.

The package root stays import-light (no pandas, no ncu_report) so that ``pytest`` without
``--perfgate`` pays nothing for having the plugin installed.

Start-up is budgeted (the README's Performance section), and a compare of a small report or the plugin's
set-up is mostly start-up. So the records those create are ``typing.NamedTuple``s, or classes with
``__slots__`` where a tuple's length or truth would mislead, not dataclasses: CPython 3.11 compiles a
dataclass's generated methods when the class is made, ~1 ms per frozen class against 0.15 ms for a
NamedTuple, and the twenty on those paths were a fifth of perfgate's import time. For the same reason a pattern used
on one path only is compiled when first used (``re`` caches it), and modules a run may not need are
imported where they are used.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
