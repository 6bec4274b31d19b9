"""Names for the numpy array types that compare's stages pass each other (one row per launch, or per row)."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

Floats: TypeAlias = npt.NDArray[np.float64]
Ints: TypeAlias = npt.NDArray[np.int64]
Bools: TypeAlias = npt.NDArray[np.bool_]
Objects: TypeAlias = npt.NDArray[np.object_]  # strings: metric names, units...
StatusCodes: TypeAlias = npt.NDArray[np.int8]  # statuses as their places in STATUS_ORDER (``codes.STATUS_CODE``)
