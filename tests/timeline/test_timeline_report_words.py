"""Timeline reports say which part of a region moved, in every human format (docs/timeline.md, "The report says
what moved"): a share in percentage points, durations in the unit a reader expects, a region in at most three
lines of text, and a Why that names the part (host lead, idle gaps, GPU busy) in the Markdown and the HTML.

Real pair: the corpus' T4 training script under FP32 and under AMP (../shared/corpus/timeline/amp-lab-t4). Expected
before the first run: `Optimizer.step#Adam.step` idle 0.8% → about 60% of its wall time, told in points; the step's
kernel time -52%.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.common import run_cli
from helpers.timeline import corpus_trace

FP32, AMP = "amp-lab-t4/fp32.pt.trace.json", "amp-lab-t4/amp.pt.trace.json"


def _region_blocks(out: str) -> dict[str, list[str]]:
    """Each listed region's lines under its heading (``REGRESSION  step``): the blocks of a wall time or GPU idle."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in out.splitlines():
        heading = re.match(r"^[A-Z ]{11} (\S.*)$", line)
        if heading:
            current = blocks.setdefault(heading.group(1), [])
        elif line.startswith("    ") and current is not None:
            current.append(line)
        else:
            current = None
    return {name: lines for name, lines in blocks.items()
            if any(" wall time " in line or " GPU idle " in line for line in lines)}


def test_the_amp_pair_explains_itself_in_points(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "compare", corpus_trace(FP32), corpus_trace(AMP), "--accept-unpaired-kernels")
    blocks = _region_blocks(out)
    assert set(blocks) == {"step", "Optimizer.step#Adam.step"}
    assert all(len(lines) <= 4 for lines in blocks.values()), blocks
    # The starved step lists its host lead as a metric of its own, as the Markdown and HTML rows do:
    assert any(line.lstrip().startswith("regression  host lead ") for line in blocks["step"]), blocks["step"]
    optimizer = blocks["Optimizer.step#Adam.step"][-1]
    found = re.search(r"GPU idle 0\.8% → (\d+\.\d)% \(\+(\d+\.\d) pp\)", optimizer)
    assert found and float(found.group(2)) > 50, optimizer
    assert blocks["step"][-1].endswith("kernel time -52%")
    assert "why: host lead +" in blocks["step"][-1]  # the step waited on the host before its first kernel
    assert not re.search(r"\b0\.0\d+ [mµ]s", out)  # a duration in its own unit, never 0.009184 ms
    assert not re.search(r"GPU idle % .*\(\+\d+\.\d%\)", out)  # a share never moves in per cent of itself


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_why_names_the_part_that_moved(capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str) -> None:
    out_file = tmp_path / f"report.{fmt}"
    run_cli(capsys, "compare", corpus_trace(FP32), corpus_trace(AMP), "--accept-unpaired-kernels",
            "--format", fmt, "-o", out_file)
    text = out_file.read_text(encoding="utf-8")
    if fmt == "md":
        rows = [line for line in text.splitlines() if line.startswith("| ❌ | Optimizer.step\\#Adam.step")]
        assert rows and rows[0].rstrip(" |").endswith("kernel time +1%"), rows
        assert "idle gaps +1.75 ms" in rows[0] and "pp)" in rows[0]
    else:
        cells = re.findall(r'class="why">(.*?)</td>', text, flags=re.S)
        assert any("idle gaps +1.75 ms" in cell and "(+63.7 pp)" in cell for cell in cells), cells[:5]
        assert '<td class="num">+63.7 pp</td>' in text  # the share's row in the kernel's section
        assert "baseline 9.184 µs · current 2.078 ms" in text  # its GPU idle drawn on an axis
    assert not re.search(r"\b0\.0\d+ [mµ]s", text) and "7891" not in text
