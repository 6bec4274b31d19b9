"""Units, known once: how ncu spells them, the base units a table holds, and how a base value is shown.

Readers reduce every spelling to the base unit ``ncu_report`` uses (``to_base``: ``"usecond"`` ->
``ns`` x 1e3, ``"Kbyte/block"`` -> ``byte/block`` x 1e3), so tables read from CSV and from
``.ncu-rep`` compare; renderers scale a base value back to a readable one (``scale_time``,
``scale_si``: 151328 ns -> 151.3 µs, 1.5e6 byte -> 1.5 MB). Stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

# Base units, as ncu_report reports them; "s" is pytest-benchmark's (its timings are in seconds).
NANOSECOND = "ns"
SECOND = "s"
BYTE = "byte"
HERTZ = "hz"
BYTE_PER_SECOND = "byte/s"
BYTE_PER_BLOCK = "byte/block"

# ncu's spellings of each base unit (old versions, ``--print-units auto``), by factor to the base unit.
_SPELLINGS: Mapping[str, tuple[tuple[float, tuple[str, ...]], ...]] = {
    NANOSECOND: (
        (1.0, ("ns", "nsecond", "nanosecond")),
        (1e3, ("us", "usecond", "microsecond")),
        (1e6, ("ms", "msecond", "millisecond")),
        (1e9, ("s", "second")),
    ),
    BYTE: (
        (1.0, ("byte",)),
        (1e3, ("Kbyte", "KB")),
        (1e6, ("Mbyte", "MB")),
        (1e9, ("Gbyte", "GB")),
        (1e12, ("Tbyte",)),
    ),
    HERTZ: (
        (1.0, ("hz", "Hz", "cycle/second")),
        (1e3, ("Khz", "cycle/msecond")),
        (1e6, ("Mhz", "cycle/usecond")),
        (1e9, ("Ghz", "cycle/nsecond")),
    ),
    BYTE_PER_SECOND: (
        (1.0, ("byte/s", "byte/second")),
        (1e3, ("Kbyte/s", "Kbyte/second")),
        (1e6, ("Mbyte/s", "Mbyte/second")),
        (1e9, ("Gbyte/s", "Gbyte/second")),
        (1e12, ("Tbyte/s", "Tbyte/second")),
    ),
    BYTE_PER_BLOCK: (
        (1.0, ("byte/block",)),
        (1e3, ("Kbyte/block", "KB/block")),
        (1e6, ("Mbyte/block", "MB/block")),
    ),
}

# Every known spelling -> (base unit, factor that turns a value in that spelling into the base unit).
TO_BASE: Mapping[str, tuple[str, float]] = {
    spelling: (base, factor)
    for base, steps in _SPELLINGS.items()
    for factor, spellings in steps
    for spelling in spellings
}


def to_base(unit: str) -> tuple[str, float]:
    """(base unit, factor) for a unit as ncu wrote it; a unit not known here is kept, with factor 1."""
    return TO_BASE.get(unit, (unit, 1.0))


# Display: a time is shown in the largest of these it reaches (symbol, nanoseconds), else in ns.
TIME_STEPS: tuple[tuple[str, float], ...] = (("s", 1e9), ("ms", 1e6), ("µs", 1e3))
_NS_PER_UNIT: Mapping[str, float] = {NANOSECOND: 1.0, SECOND: 1e9}
TIME_UNITS = frozenset(_NS_PER_UNIT)

# How a base unit is written after a value: 1.5e6 byte is "1.5 MB", as ncu's "MB" spells it.
BYTE_SYMBOL = "B"

# Decimal prefixes for other quantities (ncu's "Kbyte" is 1000 bytes), largest first.
SI_PREFIXES: tuple[tuple[float, str], ...] = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"))

# Units not printed after a value or a prefix: "16" reads better than "16 register/thread".
SILENT_UNITS = frozenset({"register/thread"})


@lru_cache(maxsize=None)
def time_scales(unit: str) -> tuple[float, ...]:
    """What a value in ``ns`` or ``s`` is divided by to be written in each of :data:`TIME_STEPS`, then in ns: 1e3
    for µs of ns (exact for these powers of ten: 1e6 / 1e9 == 1e-3). Raises KeyError for a unit that is not a
    time."""
    per_unit = _NS_PER_UNIT[unit]
    return tuple(nanoseconds / per_unit for _, nanoseconds in (*TIME_STEPS, (NANOSECOND, 1.0)))


def time_step(magnitude: float, unit: str) -> int:
    """The step of :data:`TIME_STEPS` that ``magnitude`` (in ``unit``) reaches, the largest first;
    ``len(TIME_STEPS)``: below a microsecond, ns."""
    for step, scale in enumerate(time_scales(unit)[:-1]):
        if magnitude >= scale:
            return step
    return len(TIME_STEPS)


def scale_time(value: float, unit: str, step: int | None = None) -> tuple[float, str]:
    """A value in ``ns`` or ``s`` in the largest time unit it reaches: (151.328, "µs") for 151328 ns; or in the
    time unit of ``step`` (:func:`time_step`), so that values shown side by side share one.

    Below a microsecond it is given in ns. Raises KeyError for a unit that is not a time.
    """
    step = time_step(abs(value), unit) if step is None else step
    if step < len(TIME_STEPS):
        return value / time_scales(unit)[step], TIME_STEPS[step][0]
    return value * _NS_PER_UNIT[unit], NANOSECOND


def si_step(magnitude: float) -> int:
    """The step of :data:`SI_PREFIXES` that ``magnitude`` reaches, the largest first; ``len(SI_PREFIXES)``: below
    1000, no prefix."""
    for step, (scale, _) in enumerate(SI_PREFIXES):
        if magnitude >= scale:
            return step
    return len(SI_PREFIXES)


def scale_si(value: float) -> tuple[float, str]:
    """(value / scale, prefix) for the largest decimal prefix the value reaches; (value, "") below 1000."""
    step = si_step(abs(value))
    if step < len(SI_PREFIXES):
        scale, prefix = SI_PREFIXES[step]
        return value / scale, prefix
    return value, ""
