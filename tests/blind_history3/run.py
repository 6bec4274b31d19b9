"""perfgate beside Apache Otava on the third blind change-point set (issue 35; README.md: the protocol)::

    PYTHONPATH=. python tests/blind_history3/run.py --otava-python /tmp/otava3-venv/bin/python [--json]

The mechanics are the shared harness's (``tests/blind_history_harness``); this file says how the set is made and
filed.
"""

from __future__ import annotations

import sys

from tests.blind_history3.generate import TRUTH, generate, truth_document
from tests.blind_history3.model import BYTES, COMMITS, EXACT, TIME
from tests.blind_history_harness.run import BlindSet, main

UNITS = {TIME: "ns", EXACT: "inst", BYTES: "byte"}


SET = BlindSet(number=3, truth=TRUTH, generate=generate, truth_document=truth_document, commits=COMMITS,
               series_row=lambda s: ("NVIDIA H100 80GB HBM3", f"tests/test_blind3.py::test_{s.family}", "kernel", s.name, s.metric,
                                    UNITS[s.metric]))

if __name__ == "__main__":
    sys.exit(main(SET, __doc__))
