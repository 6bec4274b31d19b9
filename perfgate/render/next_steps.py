"""What to do about the regressions of a report: the exact commands, for the end of the Markdown comment.

Per regressed test (a ``perfgate compare`` report has none: its kernels), the command that records why the change
is accepted (``perfgate accept``, docs/history.md) and the one that makes it the baseline the next run is judged
against. The names come from the code under test: a name of plain characters is quoted for the shell
(``shlex.quote``), any other is a placeholder (TEST, KERNEL) whose exact value the JSON report holds, and the
commands are escaped as every name of the comment is (``md_inline``), so nothing in them renders as Markdown or
mentions anyone.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Mapping

from perfgate.render.kernels import KernelRow, KernelRows
from perfgate.render.untrusted import md_inline
from perfgate.vocabulary import Status

SHOWN = 5  # regressed tests given their commands; the rest are counted


# What a name in a command may hold: pytest's node ids and parameters, kernel and metric names. Anything else
# (markup, '@', a comment marker a fork planted) gives a placeholder: the JSON report holds the exact name.
_PLAIN = re.compile(r"[A-Za-z0-9_.:/\[\]()+=,#* -]{1,200}")


def _arg(text: str, placeholder: str = "NAME") -> str:
    return shlex.quote(text) if _PLAIN.fullmatch(text) else placeholder


def _current(report: Mapping[str, Any]) -> str:
    """The measurement a ``perfgate compare`` report compared, to write as the baseline; a placeholder when
    there were several."""
    sources = {c.get("current") for c in report.get("comparisons", []) if not c.get("test")}
    return _arg(str(sources.pop()), "CURRENT_REPORT") if len(sources) == 1 and None not in sources else "CURRENT_REPORT"


def _commands(test: str | None, rows: list[KernelRow], current: str) -> list[str]:
    kernels = sorted({row.kernel for row in rows})
    metrics = sorted({m.metric for row in rows for m in row.metrics if m.status == Status.REGRESSION.value})
    accept = ["perfgate", "accept"]
    if test:
        accept += ["--test", _arg(test, "TEST")]
    if len(kernels) == 1:
        accept += ["--kernel", _arg(kernels[0], "KERNEL")]
    if len(metrics) == 1:
        accept += ["--metric", _arg(metrics[0], "METRIC")]
    accept += ["--reason", "'why this change is intended'"]
    update = (f"pytest --perfgate --perfgate-update {_arg(test, 'TEST')}" if test
              else f"perfgate baseline {current} -d baselines")
    return [" ".join(accept), f"{update}   # then commit baselines/"]


def next_steps_block(report: Mapping[str, Any], kernels: KernelRows) -> str:
    """The Markdown block that ends the comment of a report with regressions; "" without any."""
    regressed = [kernels.row(k) for k in kernels.with_status([Status.REGRESSION.value])]
    if not regressed:
        return ""
    by_test: dict[str | None, list[KernelRow]] = {}
    for row in regressed:
        by_test.setdefault(row.test, []).append(row)
    lines: list[str] = []
    for test, rows in list(by_test.items())[:SHOWN]:
        lines += _commands(test, rows, _current(report))
    more = len(by_test) - SHOWN
    if more > 0:
        lines.append(f"# and {more} more regressed test{'s' if more > 1 else ''}: the JSON report lists them")
    # A list of escaped lines, not a code block: the comment holds no code at all (names elsewhere in it are
    # escaped, backticks to &#96;), and the escapes render back to the exact command.
    body = "\n".join(f"- {md_inline(line, None)}" for line in lines)
    return ("**To accept a regression** (at the pull request's head; perfgate accept records who and why in the "
            "history, add --db URL where that is not the configured one), then make this run the baseline it is "
            f"judged against:\n\n{body}")
