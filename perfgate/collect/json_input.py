"""A JSON input read once, under perfgate's input limits, for every reader of a JSON format.

A trace's event array (under a key, or a bare top-level list of events) is read one event at a time
(``open_json``), from a file or from a compressed file's expansion as it is made, so that memory follows what the
reader keeps of each event rather than the whole document: a 453 MB profiler trace parsed whole took 4 GB, and a gzip of
2 MB expanding to 2 GiB ran out of memory. Hand-written over the stdlib's own decoder (``raw_decode`` of one
value at a time): the stdlib has no incremental parser, and one array does not warrant a new dependency.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from perfgate.errors import InputError
from perfgate.limits import (LONE_SURROGATE, MAX_JSON_DEPTH, json_depth_exceeds, lone_surrogate, number_too_long,
                             parse_json, read_json_file)

FIX = "regenerate the file (perfgate or pytest-benchmark)"
TRACE_FIX = "export the trace again"  # once a list is streamed, the input is a trace
MAX_VALUE_CHARS = 16 << 20  # one event of a streamed array, or one top-level value of a streamed document
_CHUNK = 1 << 20
_LONGEST_ESCAPE = len("\\uXXXX")
_WHITESPACE = re.compile(r"[ \t\n\r]*")


def load_json(path: Path) -> Any:
    """Parse a JSON input; one-line InputError for anything that is not plain, finite, shallow JSON.

    Nesting deeper than ``MAX_JSON_DEPTH`` is refused here, once, so that no later step (validation,
    rendering, ``str()``) can run out of recursion on an untrusted document.
    """
    return read_json_file(path, "JSON", FIX)


class Stream(Protocol):
    """What the reader needs of a file: a binary file, or a compressed file's expansion read as it is made
    (``perfgate.collect``, which bounds it by the input limit)."""

    def read(self, size: int, /) -> bytes: ...

    def close(self) -> None: ...


def _opened(path: Path) -> Stream:
    return path.open("rb")


def _whole(path: Path, opener: Callable[[Path], Stream]) -> Any:
    """``load_json`` of what ``opener`` reads (a compressed file's expansion: read a chunk at a time, so that its
    limit stops it before the text is all in memory)."""
    if opener is _opened:
        return load_json(path)
    handle = opener(path)
    try:
        parts = []
        while chunk := handle.read(_CHUNK):
            parts.append(chunk)
    finally:
        handle.close()
    try:
        text = b"".join(parts).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text; expected JSON") from None
    del parts
    return parse_json(text, path, FIX)


class _TooLarge(Exception):
    """A top-level value too large to read as one piece: the document is read whole instead."""


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


class _Reader:
    """JSON text from a binary file, decoded a chunk at a time, read one value at a time."""

    def __init__(self, handle: Stream, path: Path) -> None:
        self.handle, self.path = handle, path
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.decoder = json.JSONDecoder(parse_constant=_reject_constant)
        self.text, self.at, self.ended = "", 0, False
        self.line, self.column = 1, 1  # where self.text starts in the file
        self.fix = FIX

    def _more(self) -> bool:
        """Read the next chunk (dropping what was read); False at the end of the file."""
        if self.ended:
            return False
        done = self.text[:self.at]
        newlines = done.count("\n")
        self.line += newlines
        self.column = len(done) - done.rfind("\n") if newlines else self.column + len(done)
        self.text, self.at = self.text[self.at:], 0
        chunk = self.handle.read(_CHUNK)
        try:
            self.text += self.utf8.decode(chunk, final=not chunk)
        except UnicodeDecodeError:
            raise InputError(self.path, "not UTF-8 text; expected JSON") from None
        self.ended = not chunk
        return True

    def where(self, at: int) -> str:
        before = self.text[:at]
        newlines = before.count("\n")
        column = at - before.rfind("\n") if newlines else self.column + at
        return f"line {self.line + newlines} column {column}"

    def broken(self, at: int, message: str) -> InputError:
        return InputError(self.path, f"broken JSON at {self.where(at)}: {message}", f"it may have been truncated; {self.fix}")

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end), not consumed."""
        while True:
            match = _WHITESPACE.match(self.text, self.at)
            self.at = match.end() if match else self.at
            if self.at < len(self.text):
                return self.text[self.at]
            if not self._more():
                return ""

    def take(self, expected: str) -> str:
        char = self.peek()
        if not char or char not in expected:  # "" (the end of the file) is in every string
            raise self.broken(self.at, f"expecting one of {expected!r}" if len(expected) > 1 else f"expecting {expected!r}")
        self.at += 1
        return char

    def value(self) -> Any:
        """The next JSON value; ``_TooLarge`` past ``MAX_VALUE_CHARS``."""
        self.peek()
        while True:
            try:
                found, end = self.decoder.raw_decode(self.text, self.at)
            except _NonFinite as exc:
                raise InputError(self.path, f"{exc} is not valid JSON (numbers must be finite)", self.fix) from None
            except RecursionError:
                raise InputError(self.path, f"JSON nested more than {MAX_JSON_DEPTH} levels deep", self.fix) from None
            except json.JSONDecodeError as exc:
                # Where the text read so far ends inside the value, decoding fails at that end (or, for a string,
                # at its opening quote): read on. Anywhere else the JSON is broken whatever follows.
                cut = exc.pos >= len(self.text) - _LONGEST_ESCAPE or exc.msg.startswith("Unterminated string")
                if self.ended or not cut:
                    raise self.broken(exc.pos, exc.msg) from None
                if len(self.text) - self.at > MAX_VALUE_CHARS:
                    raise _TooLarge from None
                self._grow()
                continue
            except ValueError:  # past the JSONDecodeError above: Python's own limit on an integer's digits
                raise number_too_long(self.path, self.fix) from None
            if end - self.at > MAX_VALUE_CHARS:
                raise _TooLarge
            if end < len(self.text) or self.ended:  # a number at the end of the text may go on in the next chunk
                if lone_surrogate(found, self.text, self.at, end):
                    raise InputError(self.path, LONE_SURROGATE, self.fix)
                self.at = end
                return found
            self._grow()

    def _grow(self) -> None:
        """Read until the unread text has doubled (so a large value is decoded a few times, not once a chunk)."""
        wanted = 2 * (len(self.text) - self.at) + _CHUNK
        while len(self.text) - self.at < wanted and self._more():
            pass


def _trace_fix(key: str, document: dict[str, Any]) -> str:
    return TRACE_FIX


def open_json(path: Path, streams: Callable[[str, dict[str, Any]], bool],
              streams_list: Callable[[Any], bool] = lambda first: False,
              opener: Callable[[Path], Stream] = _opened,
              stream_fix: Callable[[str, dict[str, Any]], str] = _trace_fix) -> tuple[Any, str, Iterator[Any] | None]:
    """A JSON input whose top-level object holds a list that ``streams(key, document so far)`` picks (a trace's
    events), with that list's elements read one at a time: the document without them (the key maps to an empty
    list), the key, and the elements. The document's keys after the list are added to it as the elements run
    out. A top-level list whose first element ``streams_list`` picks (a Chrome trace's bare list of events) is
    read one element at a time too: an empty list, no key (""), and the elements. Any other document is read
    whole (``load_json``), with no key ("") and no elements (None). ``opener``: how the file is read (a compressed
    file's expansion, as it is made); ``stream_fix(key, document so far)``: the fix a broken streamed list's error
    gives (a trace's by default; a baseline's entries are streamed too)."""
    try:
        handle = opener(path)
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from exc
    try:
        reader = _Reader(handle, path)
        first_char = reader.peek()
        if first_char == "[":
            return _open_list(reader, handle, streams_list, opener)
        if first_char != "{":
            handle.close()
            return _whole(path, opener), "", None
        reader.take("{")
        document: dict[str, Any] = {}
        if reader.peek() != "}":
            while True:
                key = reader.value()
                if not isinstance(key, str):
                    raise reader.broken(reader.at, "expecting a property name in double quotes")
                reader.take(":")
                if reader.peek() == "[" and streams(key, document):
                    reader.take("[")
                    reader.fix = stream_fix(key, document)
                    document[key] = []
                    return document, key, _elements(reader, document, handle)
                document[key] = reader.value()
                if reader.take(",}") == "}":
                    break
        _end(reader, document)
        handle.close()
        return document, "", None
    except _TooLarge:
        handle.close()
        return _whole(path, opener), "", None
    except BaseException:
        handle.close()
        raise


def _open_list(reader: _Reader, handle: Stream, streams_list: Callable[[Any], bool],
               opener: Callable[[Path], Stream]) -> tuple[Any, str, Iterator[Any] | None]:
    """``open_json`` of a top-level list: streamed when its first element is picked, else read whole."""
    reader.take("[")
    if reader.peek() != "]":
        first = reader.value()
        if streams_list(first):
            reader.fix = TRACE_FIX
            return [], "", _list_elements(reader, first, handle)
    handle.close()
    return _whole(reader.path, opener), "", None


def _list_elements(reader: _Reader, first: Any, handle: Stream) -> Iterator[Any]:
    """A top-level list's elements (``first`` read already), then nothing but whitespace."""
    too_large = InputError(reader.path, f"a JSON value of more than {MAX_VALUE_CHARS:,} characters", TRACE_FIX)
    try:
        yield first
        # The Trace Event Format lets the array format leave out its closing "]" (the trace of a process that
        # crashed): there the end of the file ends the list.
        while reader.peek() and reader.take(",]") == ",":
            yield reader.value()
        _end(reader, [])
    except _TooLarge:
        raise too_large from None
    finally:
        handle.close()


def _elements(reader: _Reader, document: dict[str, Any], handle: Stream) -> Iterator[Any]:
    """The list's elements, then the rest of the top-level object into ``document``."""
    too_large = InputError(reader.path, f"a JSON value of more than {MAX_VALUE_CHARS:,} characters", reader.fix)
    try:
        if reader.peek() != "]":
            while True:
                yield reader.value()
                if reader.take(",]") == "]":
                    break
        else:
            reader.take("]")
        while reader.take(",}") == ",":
            key = reader.value()
            if not isinstance(key, str):
                raise reader.broken(reader.at, "expecting a property name in double quotes")
            reader.take(":")
            document[key] = reader.value()
        _end(reader, document)
    except _TooLarge:
        raise too_large from None
    finally:
        handle.close()


def _end(reader: _Reader, document: dict[str, Any] | list[Any]) -> None:
    """Nothing but whitespace after the document, which nests no deeper than the limit."""
    if reader.peek():
        raise reader.broken(reader.at, "extra data")
    if json_depth_exceeds(document):
        raise InputError(reader.path, f"JSON nested more than {MAX_JSON_DEPTH} levels deep", reader.fix)
