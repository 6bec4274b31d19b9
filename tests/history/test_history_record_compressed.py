"""``perfgate history record`` reads reports compressed with xz or gzip, as perfgate keeps its own GPU session
reports (``tests/data/*/sessions/*.json.xz``): the same series and values as the expanded file, and one line for a
broken or oversized one, with nothing recorded."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import pytest
from helpers.history import record_reports

from perfgate.history.db import open_history

SESSIONS = Path(__file__).resolve().parents[1] / "data" / "h100" / "default-metrics" / "sessions"


def _points(url: str) -> list[tuple[object, ...]]:
    with open_history(url, create=False) as history:
        return sorted(history.query(
            "SELECT s.gpu, s.test, s.kernel, s.region, s.metric, p.n, p.value, p.samples FROM perfgate_points p "
            "JOIN perfgate_series s ON s.id = p.series_id"))


def _runs(url: str) -> int:
    with open_history(url) as history:
        return int(history.query("SELECT COUNT(*) FROM perfgate_runs")[0][0])


def test_an_xz_and_a_gzip_report_record_what_the_expanded_one_does(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    packed = SESSIONS / "regression.json.xz"  # the H100's deliberate regression, as committed
    plain = tmp_path / "regression.json"
    plain.write_bytes(lzma.decompress(packed.read_bytes()))
    gzipped = tmp_path / "regression.json.gz"
    gzipped.write_bytes(gzip.compress(plain.read_bytes()))
    urls = {name: f"sqlite:///{tmp_path / name}.sqlite" for name in ("xz", "gz", "plain")}
    for name, report in (("xz", packed), ("gz", gzipped), ("plain", plain)):
        assert record_reports(urls[name], report) == 0
    assert f"recorded: {packed.name} (" in capsys.readouterr().out
    expected = _points(urls["plain"])
    assert expected and _points(urls["xz"]) == expected and _points(urls["gz"]) == expected
    assert {row[2] for row in expected} == {"vector_add"}


def test_several_compressed_session_reports_in_one_call(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    reports = [SESSIONS / f"gate{n}.json.xz" for n in range(1, 6)]
    assert record_reports(url, reports) == 0
    assert _runs(url) == 5


@pytest.mark.parametrize(("name", "packed", "message"), [
    ("cut.json.xz", lambda data: lzma.compress(data)[:300], "broken compressed file"),
    ("cut.json.gz", lambda data: gzip.compress(data)[:300], "broken compressed file"),
    ("garbage.json.xz", lambda data: lzma.compress(b"\xff\xfe not a report"), "not UTF-8 text once expanded"),
    ("text.json.gz", lambda data: gzip.compress(b'{"format": "perfgate-report", "version": 2'), "broken JSON"),
    ("bomb.json.xz", lambda data: lzma.compress(data + b" " * 3_000_000), "expands to more than 1,000,000 bytes"),
])
def test_a_bad_compressed_report_is_one_line_and_records_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str,
        packed: object, message: str) -> None:
    monkeypatch.setenv("PERFGATE_MAX_INPUT_BYTES", "1000000")
    good = SESSIONS / "gate1.json.xz"
    bad = tmp_path / name
    bad.write_bytes(packed(lzma.decompress(good.read_bytes())))  # type: ignore[operator]
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert record_reports(url, [good, bad]) == 2  # the good report is not recorded either: all or nothing
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and name in err and message in err and "Traceback" not in err, err
    assert _runs(url) == 0
