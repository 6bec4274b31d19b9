"""A report a hostile fork could write: every field holds markup, mentions, markers and control characters."""

from __future__ import annotations

from typing import Any

from helpers.github_server import launch, make_report

from perfgate.publish.body import ALL_CLEAR_TAG, FAIL_TAG, MARKER

FORGED = f"{MARKER}\n{FAIL_TAG}\n{ALL_CLEAR_TAG}"


HOSTILE = [
    '<img src="https://tracker.example/p.gif">',
    "@octocat and @org/team",
    "\n### ✅ perfgate: no regression\n",
    "<!-- hide the rest",
    FORGED,
    "\x1b[31mred\x1b[0m\x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
    "`code` *bold* [link](https://evil.example) | cell",
    "\u202eevil\u2028line",
]


CAUSE = " ".join(HOSTILE)


def hostile_report(verdict_fail: bool) -> dict[str, Any]:
    status = "regression" if verdict_fail else "unchanged"
    report = make_report([launch(f"k{CAUSE}", status=status, test=f"t.py::test[{CAUSE}]", region=CAUSE,
                                 label=CAUSE, path="t.py", line=1)], notes=(CAUSE,), device=CAUSE)
    report["unmeasured"] = [{"test": f"t.py::x{CAUSE}", "cause": CAUSE, "launch": CAUSE},
                            {"test": "t.py::y", "cause": CAUSE}]
    return report


# Workflow commands a fork's kernel name or an accept reason could carry into a CI log (GitHub's runner acts on
# '##[' anywhere in a line, and on a line starting with '::' after whitespace).
WORKFLOW_COMMANDS = [
    "##[stop-commands]t0k",
    "x ##[set-output name=verdict;]pass",
    "::add-mask::secret",
    "  ::error file=a.py::forged",
    "###[warning]three hashes",
]


def runs_workflow_command(text: str) -> list[str]:
    """The lines of ``text`` the runner would act on."""
    return [line for line in text.splitlines() if "##[" in line or line.lstrip().startswith("::")]
