"""The array types the CSV reader passes between its modules (one entry per CSV row or per launch)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.integer[Any]]  # codes (metric, unit, launch); their width is the parser's
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
ObjectArray = npt.NDArray[np.object_]  # cells as the parser gave them: str, or float NaN when empty
