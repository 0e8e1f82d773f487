"""Named experiments built on sweeps: each runs a grid, then reports with confidence intervals."""
