"""A JSON input read once, under perfgate's input limits, for every reader of a JSON format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate.limits import read_json_file


def load_json(path: Path) -> Any:
    """Parse a JSON input; one-line InputError for anything that is not plain, finite, shallow JSON.

    Nesting deeper than ``MAX_JSON_DEPTH`` is refused here, once, so that no later step (validation,
    rendering, ``str()``) can run out of recursion on an untrusted document.
    """
    return read_json_file(path, "JSON", "regenerate the file (perfgate or pytest-benchmark)")
