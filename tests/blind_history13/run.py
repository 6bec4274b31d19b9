"""perfgate beside Apache Otava on the thirteenth blind change-point set: measured noise, with the run effects
that the series of one GPU share (issue 35; README.md: the protocol)::

    PYTHONPATH=. python tests/blind_history13/run.py --otava-python /tmp/otava3-venv/bin/python [--json]

The mechanics are the shared harness's (``tests/blind_history_harness``): one run per commit, holding every series
of the set, so the series of one GPU and commit are one CI run's; this file says how the set is made and filed.
"""

from __future__ import annotations

import sys

from tests.blind_history13.generate import TRUTH, generate, truth_document
from tests.blind_history13.model import COMMITS, UNITS
from tests.blind_history_harness.run import BlindSet, main

SET = BlindSet(number=13, truth=TRUTH, generate=generate, truth_document=truth_document, commits=COMMITS,
               series_row=lambda s: (s.gpu, s.test, s.kind, s.name, s.metric, UNITS[s.metric]))

if __name__ == "__main__":
    sys.exit(main(SET, __doc__))
