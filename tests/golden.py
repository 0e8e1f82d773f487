"""Golden digests: the SHA-256 of ``jobs.csv`` and ``rounds.csv`` for every deterministic
policy on the bundled default workload and on reference workload-6 (measured profiles).

They guard refactors that must not change results. After a deliberate change of results,
regenerate them with ``python tests/golden.py`` and say why in the commit.

Each table is hashed with its decimal numbers written to 8 significant digits: the tables
print 6 decimals, and the last of them differs between machines whose libraries sum in a
different order (seen on one column of one run), while any change of behaviour moves far more
than the 8th digit."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sys
import tempfile
from pathlib import Path

from goodput_sim import api
from goodput_sim.spec import SimConfig

GOLDEN_FILE = Path(__file__).parent / "data" / "golden.json"
POLICIES = ("fifo", "tiresias", "optimus", "throughput", "goodput")
"""Every deterministic policy but ``goodput-ga``, which takes minutes per run."""
REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "pollux-osdi21"


VARIANTS = {
    "workload-6/optimus/placement-order=node": (
        "optimus",
        "workload-6",
        SimConfig(placement_order="node"),
    ),
}
"""Runs under a non-default engine option, by golden key: (policy, workload, config)."""


def cases(reference: Path = REFERENCE) -> dict[str, tuple[Path | None, Path | None]]:
    """Workload name -> (workload, profiles); workload-6 only where the reference exists."""
    out: dict[str, tuple[Path | None, Path | None]] = {"default": (None, None)}
    if (reference / "traces").is_dir():
        out["workload-6"] = (reference / "workloads" / "workload-6.csv", reference / "traces")
    return out


def canonical(table: str) -> bytes:
    """A CSV table with every decimal number written to 8 significant digits."""

    def field(text: str) -> str:
        if "." not in text and "e" not in text:
            return text  # integers, names and allocations stay as written
        try:
            return f"{float(text):.8g}"
        except ValueError:
            return text

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in csv.reader(io.StringIO(table)):
        writer.writerow([field(cell) for cell in row])
    return out.getvalue().encode()


def digests(
    policy: str, workload: Path | None, profiles: Path | None, config: SimConfig | None = None
) -> dict[str, str]:
    """SHA-256 of the two tables as a results folder holds them."""
    result = api.run(policy, workload, profiles, config=config)
    with tempfile.TemporaryDirectory() as tmp:
        folder = api.write_run(result, Path(tmp), {}, 0)
        return {
            name: hashlib.sha256(canonical((folder / name).read_text())).hexdigest()
            for name in ("jobs.csv", "rounds.csv")
        }


def main() -> None:
    found = cases()
    if "workload-6" not in found:
        sys.exit(f"the reference data is needed at {REFERENCE} to regenerate every digest")
    golden = {
        f"{name}/{policy}": digests(policy, *inputs)
        for name, inputs in found.items()
        for policy in POLICIES
    }
    for key, (policy, name, config) in VARIANTS.items():
        golden[key] = digests(policy, *found[name], config)
    GOLDEN_FILE.write_text(json.dumps(golden, indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(golden)} digests to {GOLDEN_FILE}")


if __name__ == "__main__":
    main()
