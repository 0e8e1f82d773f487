"""JSON that every reader accepts: non-finite numbers (NaN, inf), which plain ``json`` writes as
bare ``NaN``/``Infinity`` tokens outside the standard, become ``null``."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float, at any depth, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return finite(value.item())
    return value


def dumps(value: Any, **options: Any) -> str:
    """Standard JSON text of ``value`` (non-finite numbers as null), indented, keys sorted."""
    options = {"indent": 2, "sort_keys": True, **options}
    return json.dumps(finite(value), allow_nan=False, **options)
