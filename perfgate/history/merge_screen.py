"""Which series' candidates ``changes.merge`` would surely drop every one of, many series at once.

Judging the candidates again after each commit (``merge``) was the largest part of an update at 100,000 series;
most of the series it judges have one or two candidates, and most of those drop them all. Whichever order the
weakest go in, one or two candidates are judged only against the segments between 0, each other and the end, so
where every such t-test fails the result is no change point, in any order. The t-tests here are many series' at
once from prefix sums, with a bound on their rounding: a p-value is taken as failing only where even the most
favourable rounding leaves it above ``p_value`` (a series it cannot decide goes to ``merge``, which gives the
same answer as before either way).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from perfgate.history.stats import stdtr

MOST = 2  # candidates a series may have to be screened
_SLACK = 1e-13  # rounding bound, relative to the sums involved (a sum of n values: about n x 2.2e-16)


def _triples(candidates: Sequence[int], n: int) -> list[tuple[int, int, int]]:
    """Every (left end, candidate, right end) ``merge`` may judge, in the candidates' order as it reads them."""
    if len(candidates) == 1:
        return [(0, candidates[0], n)]
    a, b = candidates
    return [(0, a, b), (a, b, n), (0, a, n), (0, b, n)]


def surely_dropped(series: Sequence[tuple[np.ndarray, Sequence[int]]], p_value: float) -> np.ndarray:
    """Per (values, candidates): True where ``merge`` surely drops every candidate (it then finds no change
    point); False where it may not, or where this cannot tell (more than ``MOST`` candidates)."""
    result = np.zeros(len(series), dtype=bool)
    rows = [row for row, (values, candidates) in enumerate(series) if 0 < len(candidates) <= MOST and len(values)]
    if not rows or not 0.0 < p_value < 1.0:
        return result
    width = max(len(series[row][0]) for row in rows)
    # a column per series, from its first value (the sums keep their precision), a 0 first: prefix sums down the
    # columns (numpy's cumulative sums along rows are several times slower)
    matrix = np.zeros((width + 1, len(rows)))
    triples = []
    for at, row in enumerate(rows):
        values, candidates = series[row]
        matrix[1:len(values) + 1, at] = values - values[0]
        triples += [(at, low, mid, high) for low, mid, high in _triples(candidates, len(values))]
    owner, low, mid, high = np.array(triples, dtype=np.int64).T
    sums, squares, magnitudes = (np.cumsum(x, axis=0) for x in (matrix, matrix * matrix, np.abs(matrix)))
    n = np.array([len(series[row][0]) for row in rows], dtype=float)[owner]
    n1, n2 = np.maximum(mid - low, 0).astype(float), np.maximum(high - mid, 0).astype(float)
    too_short = (n1 < 1) | (n2 < 1) | (n1 + n2 < 3)  # t_test's 1.0: a slice out of order is empty
    low, mid, high = (np.clip(x, 0, width) for x in (low, mid, high))
    total, whole = magnitudes[-1, owner], squares[-1, owner]  # the series' sums of |x| and x*x bound the rounding
    s1, s2 = sums[mid, owner] - sums[low, owner], sums[high, owner] - sums[mid, owner]
    q1, q2 = squares[mid, owner] - squares[low, owner], squares[high, owner] - squares[mid, owner]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m1, m2 = s1 / n1, s2 / n2
        deviations = (q1 - s1 * m1) + (q2 - s2 * m2)
        difference = np.abs(m1 - m2) + _SLACK * (n * 2 * total * (1 / n1 + 1 / n2) + np.abs(m1) + np.abs(m2))
        smallest = deviations - _SLACK * n * (4 * whole + 8 * total * total * (1 / n1 + 1 / n2))
        t_value = difference / np.sqrt(smallest / (n1 + n2 - 2) * (1 / n1 + 1 / n2))
        p_low = 2.0 * stdtr(n1 + n2 - 2, -t_value)
    fails = too_short | (np.isfinite(t_value) & (smallest > 0) & (p_low > p_value * (1 + 1e-6)))
    undecided = np.bincount(owner[~fails], minlength=len(rows))
    result[np.array(rows)[undecided == 0]] = True
    return result
