"""Reading the ``allocations`` column of rounds.csv back, for tests that check rounds."""

from __future__ import annotations


def allocation_entries(text: str) -> list[tuple[str, int, int]]:
    """(job, GPUs, total batch) of each entry of ``name=g1.g2@batch;...``."""
    entries = []
    for entry in filter(None, str(text).split(";")):
        name, rest = entry.split("=")
        placement, batch = rest.split("@")
        entries.append((name, sum(int(g) for g in placement.split(".")), int(batch)))
    return entries
