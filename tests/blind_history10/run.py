"""perfgate beside Apache Otava on the tenth blind change-point set (issue 35; README.md: the protocol)::

    PYTHONPATH=. python tests/blind_history10/run.py --otava-python /tmp/otava3-venv/bin/python [--json]

The mechanics are the shared harness's (``tests/blind_history_harness``); this file says how the set is made and
filed.
"""

from __future__ import annotations

import sys

from tests.blind_history10.generate import TRUTH, generate, truth_document
from tests.blind_history10.model import COMMITS, UNITS
from tests.blind_history_harness.run import BlindSet, main

KIND = {"ncu": "kernel", "event": "kernel", "counter": "kernel", "flicker": "kernel", "dram": "kernel",
        "host": "benchmark", "idle": "region"}

SET = BlindSet(number=10, truth=TRUTH, generate=generate, truth_document=truth_document, commits=COMMITS,
               series_row=lambda s: (s.gpu, s.test, KIND[s.kind], s.name, s.metric, UNITS[s.metric]))

if __name__ == "__main__":
    sys.exit(main(SET, __doc__))
