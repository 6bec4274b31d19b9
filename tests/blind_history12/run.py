"""perfgate beside Apache Otava on the twelfth blind change-point set, its noise resampled from measurements
(issue 35; README.md: the protocol)::

    PYTHONPATH=. python tests/blind_history12/run.py --otava-python /tmp/otava3-venv/bin/python [--json]

The mechanics are the shared harness's (``tests/blind_history_harness``); this file says how the set is made and
filed.
"""

from __future__ import annotations

import sys

from tests.blind_history12.generate import TRUTH, generate, truth_document
from tests.blind_history12.model import COMMITS, UNITS
from tests.blind_history_harness.run import BlindSet, main

SET = BlindSet(number=12, truth=TRUTH, generate=generate, truth_document=truth_document, commits=COMMITS,
               series_row=lambda s: (s.gpu, s.test, s.kind, s.name, s.metric, UNITS[s.metric]))

if __name__ == "__main__":
    sys.exit(main(SET, __doc__))
