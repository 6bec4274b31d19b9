"""Student's t for the history: its distribution function (``scipy.special.stdtr``) from scipy, an extra, for the
change points' t-test; its upper quantile in closed form without scipy, for the learned thresholds.

scipy is 143 MB installed, the largest part of perfgate's footprint, for the change points' t-test alone
(``history changes``, the dashboard, ``publish --history``'s trend): ``pip install 'perfgate[history]'`` brings it,
and the commands that need it say so in one line when it is missing (docs/history.md).
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from perfgate.errors import PerfgateError

INSTALL_LINE = "pip install 'perfgate[history]'"


class MissingExtra(PerfgateError):
    """An optional dependency a command needs is not installed."""


def require_scipy() -> None:
    """MissingExtra unless scipy is installed: a command that may need the t-test says so before it starts, whether
    or not this run's search happens to reach it (the change-point cache spares most)."""
    try:
        import scipy.special  # noqa: F401
    except ImportError:
        raise MissingExtra(f"the history's change points need scipy (Student's t-test), an extra: {INSTALL_LINE}"
                           ) from None


@functools.cache
def _scipy_special() -> Any:
    """scipy's functions, imported once (an import statement per t-test was a tenth of judging candidates)."""
    try:
        import scipy.special
    except ImportError:
        raise MissingExtra(f"the history's change points need scipy (Student's t-test), an extra: {INSTALL_LINE}"
                           ) from None
    return scipy.special


@overload
def stdtr(df: int, t: float) -> float: ...
@overload
def stdtr(df: int | npt.NDArray[np.float64], t: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
def stdtr(df: int | npt.NDArray[np.float64], t: float | npt.NDArray[np.float64]) -> float | npt.NDArray[np.float64]:
    """P(T <= t) for Student's t with ``df`` degrees of freedom; element-wise over arrays (many series at once)."""
    scipy_stdtr = _scipy_special().stdtr
    if isinstance(t, np.ndarray):
        return np.asarray(scipy_stdtr(df, t), dtype=np.float64)
    return float(scipy_stdtr(df, t))


def stdtrit(df: int, p: float) -> float:
    """The t where P(T <= t) = ``p`` for Student's t with ``df`` degrees of freedom (``stdtr``'s inverse)."""
    return float(_scipy_special().stdtrit(df, p))


def _t_tail(t: float, df: int) -> float:
    """P(T > t), t >= 0, Student's t with integer ``df``: the closed form for integer degrees of freedom (Abramowitz &
    Stegun 26.7.3-4, a finite series in cos(theta), theta = atan(t / sqrt(df)))."""
    theta = math.atan(t / math.sqrt(df))
    c2, term, total = math.cos(theta) ** 2, 1.0, 1.0
    if df % 2:  # 1, 3, 5, ...: (2/pi) (theta + sin cos (1 + 2/3 c2 + 2.4/3.5 c2^2 + ...))
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        inside = 2.0 / math.pi * (theta + (math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0))
    else:  # 2, 4, 6, ...: sin (1 + 1/2 c2 + 1.3/2.4 c2^2 + ...)
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        inside = math.sin(theta) * total
    return (1.0 - inside) / 2.0


@functools.cache
def t_quantile_upper(tail: float, df: int) -> float:
    """The t with P(T > t) = ``tail`` (< 0.5) for Student's t with ``df`` degrees of freedom, without scipy: the
    learned thresholds of ``compare --history`` need it, and scipy is an extra only the change points need. The
    closed form bisected up to 1,000 degrees of freedom; beyond, the Cornish-Fisher expansion's first term (there
    within a thousandth of scipy's ``stdtrit``)."""
    z = NormalDist().inv_cdf(1.0 - tail)
    if df > 1000:
        return z + (z ** 3 + z) / (4.0 * df)
    low, high = z, 2.0 * z
    while _t_tail(high, df) > tail:
        low, high = high, 2.0 * high
    for _ in range(100):
        middle = (low + high) / 2.0
        low, high = (middle, high) if _t_tail(middle, df) > tail else (low, middle)
    return (low + high) / 2.0


def t_test(left: np.ndarray, right: np.ndarray) -> float:
    """Two-sided p-value of Student's t-test (pooled variance). Sides without spread: 0 if they differ, else 1."""
    n1, n2 = len(left), len(right)
    if n1 < 1 or n2 < 1 or n1 + n2 < 3:
        return 1.0
    m1, m2 = float(left.sum()) / n1, float(right.sum()) / n2
    d1, d2 = left - m1, right - m2  # squared deviations summed as np.var does, without its overhead
    pooled = (float(np.dot(d1, d1)) + float(np.dot(d2, d2))) / (n1 + n2 - 2)
    if pooled <= 0.0:
        return 0.0 if m1 != m2 else 1.0
    t = abs(m1 - m2) / math.sqrt(pooled * (1.0 / n1 + 1.0 / n2))
    return float(2.0 * stdtr(n1 + n2 - 2, -t))
