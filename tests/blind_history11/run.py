"""perfgate beside Apache Otava on the eleventh blind change-point set (issue 35; README.md: the protocol)::

    PYTHONPATH=. python tests/blind_history11/run.py --otava-python /tmp/otava3-venv/bin/python [--json]

The mechanics are the shared harness's (``tests/blind_history_harness``); this file says how the set is made and
filed: every series is a kernel's series (ncu's or CUDA events' time, or ncu's DRAM bytes read).
"""

from __future__ import annotations

import sys

from tests.blind_history11.generate import TRUTH, generate, truth_document
from tests.blind_history11.model import COMMITS, UNITS
from tests.blind_history_harness.run import BlindSet, main

SET = BlindSet(number=11, truth=TRUTH, generate=generate, truth_document=truth_document, commits=COMMITS,
               series_row=lambda s: (s.gpu, s.test, s.kind, s.name, s.metric, UNITS[s.metric]))

if __name__ == "__main__":
    sys.exit(main(SET, __doc__))
