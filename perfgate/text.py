"""Text for a terminal: names from the code under test made visible and inert.

Kernel, benchmark, region and file names come from code perfgate does not control, and a terminal
acts on some characters instead of showing them: ESC starts control sequences (clear the screen, move
the cursor, OSC 8 hyperlinks, OSC 52 writes to the clipboard), CR returns to the line start and lets a
name overwrite the ``REGRESSION`` label before it, a newline forges a line of its own (``PASS: ...``),
BEL rings, backspace erases, and Unicode's bidirectional controls reorder what is shown. A CI log acts on
text too: GitHub Actions' runner runs a workflow command (``set-output``, ``stop-commands``, ``error``) from a
line holding ``##[command]`` anywhere, or starting with ``::command::`` after any whitespace. ``inert``
writes every such character (and that ``[`` and first ``:``) as a visible escape (``\\x1b``, ``\\r``,
``\\n``, ``\\u202e``, ``##\\x5b``), the way ``repr`` would, so the text shows exactly what the name holds
and does nothing else. Markdown and HTML escape names their own way (``perfgate.render``); this is for text
output: the terminal report, error lines, and the lines the CLI and the plugin print. JSON stays JSON:
``inert_json`` escapes only what a workflow command needs, in a way every JSON reader undoes.

Stdlib only.
"""

from __future__ import annotations

import re

# C0 controls (tab included: it can push text over a label), DEL, C1 controls (0x9b is a one-byte CSI on
# some terminals), the bidirectional formatting characters (Trojan Source), the line and paragraph
# separators, and zero-width characters that hide text.
_UNSAFE_CHARS = "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
# The '[' of a legacy workflow command, and a line's first ':' of one (with the whitespace before it).
_WORKFLOW_COMMAND = r"(?<=##)\[|^\s*:(?=:)"
_UNSAFE = re.compile(_UNSAFE_CHARS)
_ESCAPED = re.compile(rf"\\|{_UNSAFE_CHARS}|{_WORKFLOW_COMMAND}")

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}

ELLIPSIS = "…"


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if len(char) > 1:  # whitespace, then the ':' that would start a workflow command
        return _UNSAFE.sub(_escape, char[:-1]) + "\\x3a"
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert(text: object, max_chars: int | None = None) -> str:
    """``text`` with every character a terminal would act on written as a visible escape.

    Text without such characters comes back unchanged (backslashes too). ``max_chars``, when given, cuts
    what is shown to about that many characters (before escaping), ending with ``…`` and the count left out.
    """
    value = str(text)
    cut = ""
    if max_chars is not None and len(value) > max_chars:
        cut = f"{ELLIPSIS} ({len(value) - max_chars:,} more characters)"
        value = value[:max_chars]
    if not _UNSAFE.search(value) and "##[" not in value and not value.lstrip().startswith("::"):
        return value + cut
    # Backslashes are doubled only when something is escaped, so that "\x1b" typed in a name stays
    # distinguishable from an escaped ESC; plain names with backslashes read as they are.
    return _ESCAPED.sub(_escape, value) + cut


# In JSON text the '[' after '##' is written as its escape: the same string to every JSON reader, no command to the
# runner. A JSON line never starts with '::' (each starts with whitespace, a quote or a bracket: strings hold no raw
# line break), and '#' is never part of an escape or of JSON's own syntax, so a plain replacement is exact.
_JSON_COMMAND, _JSON_COMMAND_ESCAPED = "##[", "##\\u005b"


# Characters JSON may hold raw that a terminal or a CI log acts on (C0 controls JSON escapes itself): written as
# their \\u escapes, the same strings to every JSON reader.
_JSON_UNSAFE = re.compile(_UNSAFE_CHARS.replace("\x00-\x1f", ""))
_JSON_UNSAFE_UTF8 = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8b-\x8f\xa8-\xae]|\xe2\x81[\xa0-\xa9]|\xef\xbb\xbf")


def inert_json(text: str) -> str:
    """JSON text (a report, a baseline, ``history changes``) that starts no workflow command when a CI log shows it:
    ``##[`` inside its strings is written ``##\\u005b``, which any JSON reader reads back as ``##[``; and that shows
    what its strings hold: DEL, C1 controls, bidirectional and zero-width characters are written as ``\\u`` escapes."""
    if not text.isascii() or "\x7f" in text:  # isascii reads a flag of the string: no scan of plain text
        text = _JSON_UNSAFE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
    return text.replace(_JSON_COMMAND, _JSON_COMMAND_ESCAPED) if "#" in text else text


def inert_json_bytes(text: bytes) -> bytes:
    """``inert_json`` of UTF-8 JSON text."""
    if not text.isascii() or b"\x7f" in text:  # word-at-a-time scans: no regex over plain ASCII text
        text = _JSON_UNSAFE_UTF8.sub(lambda found: b"\\u%04x" % ord(found.group().decode()), text)
    if b"#" not in text:  # a one-byte search (memchr) is several times faster than the replacement's
        return text
    return text.replace(_JSON_COMMAND.encode(), _JSON_COMMAND_ESCAPED.encode())


def inert_html(text: str) -> str:
    """HTML text (``compare --format html`` printed to a CI log) that starts no workflow command: ``##[`` written
    ``##&#91;``, which a browser shows as ``##[`` in text and attribute values alike (the page has no script)."""
    return text.replace(_JSON_COMMAND, "##&#91;")


def inert_lines(text: str) -> str:
    """A multi-line text whose own newlines are kept but whose every line is made ``inert``."""
    return "\n".join(inert(line) for line in text.split("\n"))
