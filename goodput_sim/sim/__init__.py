"""The engine's parts, one concern each: the clock and its event order (``clock``)."""
