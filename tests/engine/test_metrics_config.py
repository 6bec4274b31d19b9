"""Threshold specs, metric directions, [tool.perfgate] settings, and which ncu_report is used."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.common import REPO, corpus_file

from perfgate.config import Settings, load_settings, settings_from_table
from perfgate.errors import ConfigError
from perfgate.metrics import (
    CATALOG,
    Direction,
    Threshold,
    direction_of,
    parse_threshold,
    parse_threshold_assignment,
)


@pytest.mark.parametrize(("spec", "expected"), [
    ("5%", Threshold(relative=0.05)),
    ("1000", Threshold(absolute=1000.0)),
    ("5%+1000", Threshold(relative=0.05, absolute=1000.0)),
    (" 2.5 % + 1e3 ", Threshold(relative=0.025, absolute=1000.0)),
    ("off", Threshold(gating=False)),
])
def test_parse_threshold(spec: str, expected: Threshold) -> None:
    assert parse_threshold(spec) == expected


@pytest.mark.parametrize("spec", ["", "fast", "5%+6%", "-3%", "5%%", "1+2"])
def test_bad_threshold_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError):
        parse_threshold(spec)


def test_threshold_spec_round_trips() -> None:
    for spec in ("5%", "1000", "5%+1000", "off"):
        assert parse_threshold(parse_threshold(spec).spec) == parse_threshold(spec)
    assert parse_threshold_assignment("dram__bytes_read.sum=3%") == ("dram__bytes_read.sum", Threshold(relative=0.03))


def test_directions() -> None:
    assert direction_of("gpu__time_duration.sum") is Direction.LOWER_IS_BETTER
    assert direction_of("lts__t_sectors.sum") is Direction.LOWER_IS_BETTER
    assert direction_of("l1tex__t_sector_hit_rate.pct") is Direction.HIGHER_IS_BETTER
    assert direction_of("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed") is Direction.HIGHER_IS_BETTER
    assert direction_of("launch__grid_size") is Direction.NEUTRAL


def test_catalog_documents_every_default() -> None:
    """Every default metric is in the configuration reference's table, with its default threshold."""
    reference = (REPO / "docs" / "configuration.md").read_text()
    for info in CATALOG:
        assert info.why
        (row,) = [line for line in reference.splitlines() if line.startswith(f"| `{info.name}`")]
        assert f"| {info.label} |" in row and f"`{info.threshold.spec}`" in row, row


def test_settings_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.perfgate]
        baselines = "perf/baselines"
        timeout = 120
        metrics = ["gpu__time_duration.sum"]
        [tool.perfgate.thresholds]
        "gpu__time_duration.sum" = "3%"
    """))
    settings = load_settings(tmp_path / "pyproject.toml")
    assert settings.baselines == "perf/baselines" and settings.timeout == 120.0
    assert settings.metrics == ("gpu__time_duration.sum",)
    assert settings.thresholds == {"gpu__time_duration.sum": Threshold(relative=0.03)}
    assert settings.replace(baselines=None, strict=True).baselines == "perf/baselines"


@pytest.mark.parametrize(("table", "fragment"), [
    ({"baseline": "x"}, "unknown key"),
    ({"timeout": "long"}, "timeout must be"),
    ({"thresholds": {"x": "fast"}}, "bad threshold"),
    ({"metrics": "gpu__time_duration.sum"}, "list"),
])
def test_bad_settings(table: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        settings_from_table(table)


def test_no_pyproject_means_defaults(tmp_path: Path) -> None:
    assert load_settings(None) is not None
    assert Settings().clock_control == "base" and Settings().cache_control == "all"


def test_prefers_ncu_report_from_the_nsight_compute_install(tmp_path: Path) -> None:
    """A copy in the install's extras/python wins over the PyPI wheel."""
    extras = tmp_path / "extras" / "python"
    extras.mkdir(parents=True)
    # Stand-in for the install's module: the wheel's reader, plus a mark that this copy was used.
    (extras / "ncu_report.py").write_text(textwrap.dedent("""
        import pathlib, sys
        INSTALL_COPY = True
        _me = sys.modules[__name__]
        _here = str(pathlib.Path(__file__).parent)
        sys.path.remove(_here); del sys.modules["ncu_report"]
        import ncu_report as _wheel
        sys.modules["ncu_report"] = _me
        sys.path.insert(0, _here)
        load_report = _wheel.load_report
    """))
    code = textwrap.dedent(f"""
        import sys
        from perfgate.collect import read_table
        table = read_table({str(corpus_file("mlp-t4/report.ncu-rep"))!r}).table
        import ncu_report
        print(getattr(sys.modules.get("ncu_report"), "INSTALL_COPY", False), len(table) > 0)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PERFGATE_NCU_PYTHON": str(extras)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
