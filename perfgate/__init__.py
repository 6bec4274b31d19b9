"""perfgate: a CI performance-regression gate for GPU kernels.

The package root stays import-light (no pandas, no ncu_report) so that ``pytest`` without
``--perfgate`` pays nothing for having the plugin installed.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
