"""The one distribution function the history needs, Student's t (``scipy.special.stdtr``), from scipy, an extra.

scipy is 143 MB installed, the largest part of perfgate's footprint, for the change points' t-test alone
(``history changes``, the dashboard, ``publish --history``'s trend): ``pip install 'perfgate[history]'`` brings it,
and the commands that need it say so in one line when it is missing (docs/history.md).
"""

from __future__ import annotations

from perfgate.errors import PerfgateError

INSTALL_LINE = "pip install 'perfgate[history]'"


class MissingExtra(PerfgateError):
    """An optional dependency a command needs is not installed."""


def stdtr(df: int, t: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    try:
        from scipy.special import stdtr as scipy_stdtr
    except ImportError:
        raise MissingExtra(f"the history's change points need scipy (Student's t-test), an extra: {INSTALL_LINE}"
                           ) from None
    return float(scipy_stdtr(df, t))
