"""perfgate.units: ncu's unit spellings reduce to base units, and base values scale back for display."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from perfgate.render import format_value
from perfgate.units import (
    BYTE,
    NANOSECOND,
    SECOND,
    SI_PREFIXES,
    TIME_STEPS,
    TO_BASE,
    scale_si,
    scale_time,
    to_base,
)

H100 = Path(__file__).parents[1] / "data" / "h100"
BASES = {base for base, _ in TO_BASE.values()}


def _rows(name: str) -> list[list[str]]:
    with (H100 / name).open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _details_units(name: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(launch ID, metric) -> (unit, value) of a real details page."""
    header, *rows = _rows(name)
    at = {column: header.index(column) for column in ("ID", "Metric Name", "Metric Unit", "Metric Value")}
    return {(r[at["ID"]], r[at["Metric Name"]]): (r[at["Metric Unit"]], r[at["Metric Value"]]) for r in rows}


@pytest.mark.parametrize("spelling", sorted(TO_BASE))
def test_every_spelling_reduces_to_a_base_unit_by_a_power_of_1000(spelling: str) -> None:
    base, factor = to_base(spelling)
    assert base in BASES
    assert factor in (1.0, 1e3, 1e6, 1e9, 1e12)
    assert to_base(base) == (base, 1.0)  # a base unit is its own base


def test_units_not_known_here_are_kept() -> None:
    for unit in ("", "%", "sector", "inst", "register/thread", "warp", "byte/cycle"):
        assert to_base(unit) == (unit, 1.0)


@pytest.mark.parametrize("spelling", sorted(s for s, (base, _) in TO_BASE.items() if base == NANOSECOND))
def test_a_time_reduced_to_ns_displays_in_its_own_unit(spelling: str) -> None:
    """67.78 usecond -> 67780 ns -> "67.78 µs": reduction and display use the same scale."""
    _, factor = to_base(spelling)
    symbol = next((name for name, ns in TIME_STEPS if ns == factor), NANOSECOND)
    for value in (1.0, 67.78, 999.0):
        scaled, shown = scale_time(value * factor, NANOSECOND)
        assert (scaled, shown) == (pytest.approx(value), symbol)
        assert format_value(value * factor, NANOSECOND) == f"{value:.4g} {symbol}"


@pytest.mark.parametrize("spelling", sorted(s for s, (base, _) in TO_BASE.items()
                                             if base != NANOSECOND and not s.startswith("cycle/")))
def test_a_prefixed_unit_reduces_and_displays_with_its_own_prefix(spelling: str) -> None:
    """134.23 Mbyte (or MB) -> 134230000 byte -> "134 MB"; Kbyte/block, Gbyte/s and Ghz alike."""
    base, factor = to_base(spelling)
    prefix = dict(SI_PREFIXES).get(factor, "")
    assert spelling[:1] == prefix if factor != 1.0 else spelling[:1].lower() == base[:1]
    scaled, shown = scale_si(134.23 * factor)
    assert (scaled, shown) == (pytest.approx(134.23), prefix)
    if base == BYTE:
        assert format_value(134.23 * factor, BYTE) == (f"134 {prefix}B" if prefix else "134.2 B")


def test_seconds_scale_like_nanoseconds() -> None:
    """pytest-benchmark timings are in seconds; they show in the same steps, and below 1 µs in ns."""
    assert scale_time(2.5, SECOND) == (2.5, "s")
    assert scale_time(0.0015, SECOND) == (pytest.approx(1.5), "ms")
    assert scale_time(4.2e-5, SECOND) == (pytest.approx(42.0), "µs")
    assert scale_time(2.5e-7, SECOND) == (pytest.approx(250.0), "ns")
    assert scale_time(-3e6, NANOSECOND) == (-3.0, "ms")
    with pytest.raises(KeyError):
        scale_time(1.0, BYTE)


def test_si_prefixes_below_1000_are_none() -> None:
    assert scale_si(999.0) == (999.0, "")
    assert scale_si(-2.5e9) == (-2.5, "G")
    assert scale_si(1e15) == (1000.0, "T")


def test_units_of_real_exports_are_known_or_already_base() -> None:
    """ncu 2025.3.1 on an H100, the same report exported with its default units and with
    ``--print-units base``: each default unit is a known spelling or a unit ncu never scales."""
    auto = {unit for unit, _ in _details_units("mlp.rerun.details.csv").values()}
    base = {unit for unit, _ in _details_units("mlp.rerun.details-base.csv").values()}
    raw_auto, raw_base = set(_rows("mlp.rerun.raw.csv")[1]), set(_rows("mlp.rerun.raw-base.csv")[1])
    for unit in base | raw_base:
        assert to_base(unit) == (unit, 1.0), unit
    for unit in auto | raw_auto:
        assert unit in TO_BASE or unit in base | raw_base, unit
    assert {"us", "Mbyte", "Kbyte", "Kbyte/block"} <= auto  # the spellings this export needs reduced


@pytest.mark.parametrize("test", ["vector_add", "mlp"])
def test_real_default_units_reduce_to_the_base_export(test: str) -> None:
    """Every value of the default export, reduced, equals the ``--print-units base`` export's to the
    3-4 digits ncu prints (the base export prints integers: 79,392 ns for 79.39 us)."""
    auto, base = _details_units(f"{test}.rerun.details.csv"), _details_units(f"{test}.rerun.details-base.csv")
    assert auto.keys() == base.keys()
    compared = 0
    for key, (unit, text) in auto.items():
        base_unit, base_text = base[key]
        if not text.replace(",", "").replace(".", "").isdigit():
            continue  # the device name
        reduced_unit, factor = to_base(unit)
        assert reduced_unit == base_unit, key
        value, expected = float(text.replace(",", "")) * factor, float(base_text.replace(",", ""))
        assert value == pytest.approx(expected, rel=5e-3, abs=0.5), key
        compared += 1
    assert compared >= len(auto) * 0.9
