"""The table of readers (``perfgate.collect.readers``): a new format is one row, read through ``read_table``."""

from __future__ import annotations

import gzip
import os
import threading
from pathlib import Path

import pytest

from perfgate.collect import read_table
from perfgate.collect.readers import READERS, Input, Reader, json_text, readable_inputs
from perfgate.errors import InputError
from perfgate.table import Measurement, make_table
from perfgate.vocabulary import KIND_KERNEL, READABLE_INPUTS

_TOY_MAGIC = b"TOYPERF1\n"


def _toy_read(given: Input) -> Measurement:
    """A toy text format: ``kernel value`` per line after its magic line."""
    lines = given.path.read_text().splitlines()[1:]
    rows = [{"kind": KIND_KERNEL, "kernel": name, "launch": launch, "metric": "gpu__time_duration.sum",
             "unit": "ns", "value": float(value)} for launch, (name, value) in enumerate(line.split() for line in lines)]
    return Measurement(make_table(rows), source=str(given.path))


_TOY = Reader("toy", "a toy profile", 6, lambda head, suffix: head.startswith(_TOY_MAGIC), _toy_read)
def _toy_json_read(given: Input) -> Measurement:
    document = given.json.document if given.json else {}
    return Measurement(make_table([{"kind": KIND_KERNEL, "kernel": name, "metric": "m", "value": value}
                                   for name, value in document["toy"].items()]))


_TOY_JSON = Reader("toy-json", "a toy JSON profile", 7, json_text, _toy_json_read,
                   document=lambda document: isinstance(document, dict) and "toy" in document,
                   json_name="a toy JSON profile", json_fix="a file with a 'toy' object")


def test_the_error_texts_and_the_help_name_what_the_table_reads() -> None:
    assert readable_inputs() == READABLE_INPUTS  # the help's copy, kept light for the CLI, is the table's phrase
    assert [row.listed for row in sorted(READERS, key=lambda row: row.listed)] == list(range(len(READERS)))


def test_a_new_format_is_one_row(tmp_path: Path) -> None:
    toy = tmp_path / "run.toy"
    toy.write_bytes(_TOY_MAGIC + b"gemm 12.5\nsoftmax 3\n")
    with pytest.raises(InputError, match="unrecognized file format"):
        read_table(toy)  # not a format perfgate reads...
    measurement = read_table(toy, readers=(*READERS, _TOY))  # ...until its row is in the table
    assert list(measurement.table["kernel"]) == ["gemm", "softmax"]
    assert list(measurement.table["value"]) == [12.5, 3.0]
    # Compressed, and through a pipe (sniffed from its first bytes before the rest is read), like every format.
    packed = tmp_path / "run.toy.gz"
    packed.write_bytes(gzip.compress(toy.read_bytes()))
    assert list(read_table(packed, readers=(*READERS, _TOY)).table["kernel"]) == ["gemm", "softmax"]
    assert list(_through_pipe(toy.read_bytes(), (*READERS, _TOY)).table["kernel"]) == ["gemm", "softmax"]


def test_the_new_format_is_named_where_nothing_is_recognized(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("nothing perfgate reads\n")
    with pytest.raises(InputError) as refused:
        read_table(other, readers=(*READERS, _TOY))
    everything = READABLE_INPUTS.replace(" or an Nsight", ", an Nsight") + " or a toy profile"
    assert str(refused.value).endswith(f"unrecognized file format (expected {everything})")


def test_a_new_json_format_is_one_row(tmp_path: Path) -> None:
    document = tmp_path / "toy.json"
    document.write_text('{"toy": {"gemm": 2.0}}')
    readers = (*READERS, _TOY_JSON)
    assert list(read_table(document, readers=readers).table["kernel"]) == ["gemm"]
    other = tmp_path / "other.json"
    other.write_text('{"something": 1}')
    with pytest.raises(InputError) as refused:
        read_table(other, readers=readers)
    assert ("JSON that is neither a perfgate baseline, pytest-benchmark output, a Chrome trace (no traceEvents) nor "
            "a toy JSON profile (pass a baseline written by 'perfgate baseline', a --benchmark-json file, a trace "
            "torch.profiler exported or a file with a 'toy' object)") in str(refused.value)


def test_a_streamed_trace_goes_only_to_a_row_that_streams(tmp_path: Path) -> None:
    # A document whose event list is read one event at a time is offered to no row that reads documents whole.
    trace = tmp_path / "t.json"
    trace.write_text('{"toy": {}, "traceEvents": []}')
    whole = Reader("toy-json", "a toy JSON profile", 7, json_text, _toy_json_read,
                   document=lambda document: "toy" in document)
    with pytest.raises(InputError, match="no kernel|no GPU kernel|holds no"):
        read_table(trace, readers=(whole, *READERS))


def _through_pipe(data: bytes, readers: tuple[Reader, ...]) -> Measurement:
    read_end, write_end = os.pipe()

    def write() -> None:
        with os.fdopen(write_end, "wb") as out:
            out.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        return read_table(f"/proc/self/fd/{read_end}", readers=readers)
    finally:
        os.close(read_end)
        writer.join()
