"""A baseline's ``entries`` are read one at a time into columns (``perfgate.collect.baseline_json``, issue 33): the same
table as the document parsed whole, and the same refusals. Its memory is held in tests/timeline/test_timeline_limits.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.common import corpus_file

from perfgate.cli import main
from perfgate.collect import json_input, read_table
from perfgate.collect.baseline_json import read_baseline, table_from_baseline
from perfgate.errors import InputError

V3 = "mlp-t4/report_v3_loop_unroll.ncu-rep"


def _written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The baseline perfgate writes of a real report, with findings and several metrics an entry."""
    assert main(["baseline", str(corpus_file(V3)), "-d", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    (path,) = (tmp_path / "b").glob("*/*.json")
    return path


def test_a_streamed_baseline_reads_as_the_parsed_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Read in chunks of 7 bytes (every value cut somewhere), with a regressions list after the entries."""
    path = _written(tmp_path, capsys)
    document = json.loads(path.read_text())
    document["entries"] = document["entries"] * 3
    document["regressions"] = [{"kernel": "matrix_addition2D"}]
    path.write_text(json.dumps(document, indent=2))
    monkeypatch.setattr(json_input, "_CHUNK", 7)
    parsed = table_from_baseline(json.loads(path.read_text()), path)
    for streamed in (read_baseline(path), read_table(path)):
        assert list(streamed.table.rows()) == list(parsed.table.rows())
        assert (streamed.settings, streamed.findings, streamed.samples) == (parsed.settings, parsed.findings,
                                                                           parsed.samples)
    assert len(parsed.table) > 3 and parsed.findings is not None


def test_settings_after_the_entries_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hand-edited baseline may order its keys otherwise: what follows the entries is read once they run out."""
    path = _written(tmp_path, capsys)
    document = json.loads(path.read_text())
    settings = document.pop("settings")
    path.write_text(json.dumps({**document, "settings": settings}, indent=2))
    assert settings and dict(read_baseline(path).settings) == settings


def _refusal(path: Path) -> str:
    with pytest.raises(InputError) as raised:
        read_baseline(path)
    return str(raised.value)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(extra=1), "unknown key(s) extra"),  # after the entries, once they are read
    (lambda d: d.update(entries=[]), "it has no entries"),
    (lambda d: d["entries"][0].update(kind="kernal"), "entries[0].kind must be one of"),
    (lambda d: d.update(regressions={}), '"regressions" must be a list'),
])
def test_a_streamed_baseline_is_refused_as_the_parsed_one(edit: Any, message: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = _written(tmp_path, capsys)
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document, indent=2))
    assert message in _refusal(path)


@pytest.mark.parametrize("depth", [61, 63])
def test_nesting_in_an_entry_is_refused_as_in_the_parsed_document(depth: int, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Inside an entry (two levels down) 63 levels make the document 65 deep: past the limit, said so."""
    path = _written(tmp_path, capsys)
    document = json.loads(path.read_text())
    nested: Any = 1
    for _ in range(depth - 2):  # the entry and its metrics are two of them
        nested = [nested]
    document["entries"][0]["metrics"] = {"m": nested}
    path.write_text(json.dumps(document))
    with pytest.raises(InputError) as whole:
        table_from_baseline(json_input.load_json(path), path)
    refusal = _refusal(path)
    assert ("nested more than 64 levels" in refusal) == (depth == 63) and refusal == str(whole.value)


def test_a_truncated_baseline_names_a_baseline_s_fix_not_a_trace_s(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _written(tmp_path, capsys)
    text = path.read_text()
    path.write_text(text[: text.index('"metrics"') + 5])  # cut inside the first entry
    refusal = _refusal(path)
    assert "broken JSON at line" in refusal and json_input.FIX in refusal and "trace" not in refusal
