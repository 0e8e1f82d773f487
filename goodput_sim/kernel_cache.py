"""The compiled kernels' cache: where numba keeps it, and compiling it once.

The elastic policies' kernels (:mod:`goodput_sim.policies.kernels`), sia's feasible answer's
(:mod:`goodput_sim.policies.sia_kernels`), the throughput fits'
(:mod:`goodput_sim.models.fit_kernels`, :mod:`goodput_sim.models.artifact_kernels`) and the batch
choice's (:mod:`goodput_sim.models.batch_kernels`) are compiled by numba and cached on disk
(``njit(cache=True)``): about 15 s of CPU the first time, a third of a second to load after.
:func:`warm` compiles every signature the simulator calls them with, once; ``make install``
runs it (``python -m goodput_sim.kernel_cache``), and commands that start worker processes run
it in the parent first, so the workers load the kernels instead of each compiling them.

The cache lives beside the package (its ``__pycache__`` folders) when that folder is writable,
else in ``NUMBA_CACHE_DIR`` when set, else in a per-user cache folder
(:func:`user_cache_folder`): a read-only installation still runs the elastic policies.
"""

from __future__ import annotations

import sys

from goodput_sim.numba_cache import PACKAGE

COMPILING_NOTE = "compiling kernels once, about 15 s"
_warmed = False


def signatures() -> dict:
    """Each kernel's argument types, as the simulator calls it, by dispatcher."""
    from numba import types as t

    from goodput_sim.models import artifact_kernels as artifact
    from goodput_sim.models import batch_kernels as batch
    from goodput_sim.models import fit_kernels as fit
    from goodput_sim.models import libm
    from goodput_sim.policies import kernels
    from goodput_sim.policies import sia_kernels as sia

    f8, i8, b1 = t.float64, t.int64, t.boolean
    f1, f2, f3 = f8[::1], f8[:, ::1], f8[:, :, ::1]
    i1, i2, b1d, b2 = i8[::1], i8[:, ::1], b1[::1], b1[:, ::1]
    grid1, grid2 = t.Array(f8, 1, "C", readonly=True), t.Array(f8, 2, "C", readonly=True)
    mask = t.Array(b1, 2, "C", readonly=True)  # a grid's arrays are read-only (ConfigGrid)
    fit_inputs = (f1, i1, f1, b1d, b1d, f1, f1, f8, f8)  # the data of one fit
    moves = (i2, i2, i1, i1, i1, i1, b1, f3, i1, f1, i8)  # a local search's moves
    return {
        kernels.greedy_counts_kernel: [(f2, i8, i1, b2, b1)],
        kernels.place_kernel: [(i2, i1, b1d, i1, i1, i8, b1)],
        kernels.restoration_counts: [(i2, i2, i1, i1, i1, i1, b1)],
        kernels.transfer_moves: [moves],
        kernels.best_harmonic_transfer: [(*moves, f1, f8)],
        sia.fill_greedily: [(i1, f1, i1, i1, i1, i1, f1)],
        sia.move_one_at_a_time: [(f1, i1, i1, i1, b1d, i1, f1, i8)],
        sia.knapsack_on_type: [(i1, b1d, i1, b1d, i1, i1, f1, i8, i8, i1)],
        batch.best_batches: [(grid2, grid2, mask, f1, f1, grid1, grid2, grid2, f8, f8, b1, i8)],
        fit.levenberg_marquardt: [(f1, f1, f1, *fit_inputs, f8, i8)],
        fit.objective: [(f1, *fit_inputs)],
        fit.jacobian: [(t.UniTuple(f1, 9), i1, f1, b1d, b1d, f1, f8, f8)],
        fit.damped_solve: [(f2, f8, f1, f1)],
        fit.log_errors: [(f1, f1, f8, f8, f1)],
        fit.normal_equations: [(f2, f1)],
        fit.sync_terms: [(f1, f1, b1d, b1d, f1, f8)],
        artifact.step_pieces: [(f1, f1, b1d, b1d, f1)],
        artifact.powers_and_logs: [(f1, f1, f8)],
        libm._power_each: [(f1, f1)],
        libm._power_by: [(f1, f8)],
        libm._logs: [(f1, b1), (t.float32[::1], b1)],
        artifact.log_errors: [(f1, f1, f1, f1, f8)],
        artifact.gradient: [(f1, f1, f8, f8, f8, f8, *(f1,) * 11, i1, i1, f1)],
        artifact.objective: [(f1, f1, b1d, b1d, f1, f1, f1, i1, i1, f8, f8)],
    }


def _cached(dispatcher, sig: tuple) -> bool:
    """Whether numba's cache holds ``dispatcher`` compiled for ``sig`` (its index, read as numba
    reads it)."""
    try:
        cache = dispatcher._cache
        key = cache._index_key(sig, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # noqa: BLE001 - numba internals: assume cached rather than say wrongly
        return True


def warm(quiet: bool = False, load: bool = True) -> bool:
    """Compile (or load) every kernel signature; True when something had to be compiled, which
    is said in one line on stderr first unless ``quiet``. Once per process. Without ``load``,
    kernels already cached are left to load when first called (a run that uses few of them)."""
    global _warmed
    if _warmed:
        return False
    _warmed = True
    table = signatures()
    missing = [(d, sig) for d, sigs in table.items() for sig in sigs if not _cached(d, sig)]
    if not missing and not load:
        return False
    if missing and not quiet:
        print(COMPILING_NOTE, file=sys.stderr, flush=True)
    for dispatcher, sigs in table.items():
        for sig in sigs:
            dispatcher.compile(sig)
    return bool(missing)


def warm_for(policies) -> None:
    """:func:`warm` when any of the named policies is elastic (uses the kernels): called before
    worker processes start, so they load the kernels rather than each compile them."""
    from goodput_sim.policies import policy_class

    if any(policy_class(name).elastic for name in set(policies)):
        warm()


def main() -> None:
    """``python -m goodput_sim.kernel_cache``: the install step; the package's byte code and
    the kernels, compiled once."""
    import compileall

    compileall.compile_dir(str(PACKAGE), quiet=1)
    warm()


if __name__ == "__main__":
    main()
