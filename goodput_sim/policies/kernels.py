"""Compiled inner loops of the elastic optimiser (:mod:`goodput_sim.policies.greedy` and
:mod:`goodput_sim.policies.local_search`).

Each is a loop of many small steps (one greedy move, one job placed, one candidate move) that
costs a few numpy calls per step in Python, so a round's time was the fixed cost of thousands
of calls rather than arithmetic. Compiled with numba, they make the same choices in the same
order: only comparisons, integer arithmetic and the same IEEE operations on the same operands
(no fast-math), so results are bit-identical (tests compare them with the numpy versions
they replaced). Compiled code is cached beside this file, so only the first run on a machine
pays the compilation (about 10 s of CPU)."""

from __future__ import annotations

import numba
import numpy as np

from goodput_sim.numba_cache import use_writable_cache

use_writable_cache()  # a read-only installation caches elsewhere
_jit = numba.njit(cache=True, nogil=True)


@_jit
def _best_move(cost, j, start, limit):
    """Job ``j``'s best move from ``start`` GPUs adding at most ``limit``: (found, -drop per
    GPU, target); not found when any drop is NaN, as numpy's argmax returns the first NaN."""
    width = cost.shape[1]
    stop = min(width, start + limit + 1)
    best, pick = -np.inf, 0
    for k in range(1, stop - start):
        drop = (cost[j, start] - cost[j, start + k]) / k
        if drop != drop:
            return False, 0.0, 0
        if k == 1 or drop > best:
            best, pick = drop, k
    if stop <= start + 1 or not best > -np.inf:
        return False, 0.0, 0
    return True, -best, start + pick


@_jit
def greedy_counts_kernel(cost, total_gpus, now, watch, watching):
    """:func:`goodput_sim.policies.greedy.greedy_counts` on ``now`` (updated in place). The
    heap of per-job best moves is a scan for the smallest (-drop, job): each job has one entry,
    so that is the heap's top. Returns (now, counts before the first watched move, whether
    there was one)."""
    jobs = cost.shape[0]
    free = total_gpus - now.sum()
    valid = np.zeros(jobs, dtype=np.bool_)
    negative = np.zeros(jobs)
    target = np.zeros(jobs, dtype=np.int64)
    for j in range(jobs):
        valid[j], negative[j], target[j] = _best_move(cost, j, now[j], cost.shape[1])
    diverged = now.copy()
    found = False
    while free > 0:
        top = -1
        for j in range(jobs):
            if valid[j] and (top < 0 or negative[j] < negative[top]):
                top = j
        if top < 0:
            break
        if target[top] - now[top] > free:
            valid[top], negative[top], target[top] = _best_move(cost, top, now[top], free)
            continue
        if not -negative[top] > 1e-12:
            break
        if watching and not found and watch[top, target[top]]:
            diverged[:] = now
            found = True
        free -= target[top] - now[top]
        now[top] = target[top]
        valid[top], negative[top], target[top] = _best_move(cost, top, now[top], cost.shape[1])
    return now, diverged, found


@_jit
def place_kernel(allocation, free, taken, order, wanted, largest_node, avoid):
    """The placement loop of :func:`goodput_sim.policies.greedy.place` (``allocation``,
    ``free`` and ``taken`` updated in place): each job of ``order`` takes the best-fit node,
    else the fullest open nodes (ties to the lowest id), shrinking to what fits."""
    nodes = free.shape[0]
    ranked = np.empty(nodes, dtype=np.int64)
    for j in order:
        open_gpus, most = 0, 0
        for n in range(nodes):
            if not taken[n]:
                open_gpus += free[n]
            most = max(most, free[n])
        replicas = min(wanted[j], max(open_gpus, min(largest_node, most)))
        if replicas <= 0:
            continue
        fit = -1
        if replicas <= largest_node:
            for n in range(nodes):
                if free[n] >= replicas and (fit < 0 or free[n] < free[fit]):
                    fit = n
        if fit >= 0:
            allocation[j, fit] = replicas
            free[fit] -= replicas
            continue
        count = 0
        for n in range(nodes):
            if free[n] > 0 and not taken[n]:
                ranked[count] = n
                count += 1
        keys = np.empty(count, dtype=np.int64)
        for i in range(count):
            keys[i] = -free[ranked[i]] * (nodes + 1) + ranked[i]
        chosen = ranked[:count][np.argsort(keys)]
        left, used = replicas, 0
        while left > 0:
            n = chosen[used]
            allocation[j, n] = min(free[n], left)
            left -= allocation[j, n]
            used += 1
        for i in range(used):
            n = chosen[i]
            free[n] -= allocation[j, n]
            taken[n] = taken[n] or (avoid and used > 1)
    return allocation


@_jit
def _value(table, caps, floors, penalties, largest_node, j, replicas, nodes, changed):
    """:meth:`goodput_sim.policies.problem.AllocationProblem.job_values` of one job."""
    rows, width = table.shape[1], table.shape[2]
    allowed = replicas <= caps[j] and (floors.shape[0] == 0 or replicas >= floors[j])
    value = table[j, min(nodes, rows - 1), min(replicas, width - 1)] if allowed else 0.0
    return value / largest_node * (penalties[j] if changed else 1.0)


@_jit
def transfer_moves(
    best, current, capacity, receivers, givers, caps, avoid, table, floors, penalties, largest
):
    """Every candidate move of :func:`goodput_sim.policies.local_search._best_transfer`, in
    its order, with both jobs' values after it.

    Moves: receivers take GPUs from the free pool on one node per (free GPUs, distributed
    jobs) class or on their own nodes, then from each giver's nodes (only the first it fills
    completely); first one GPU each, then, where more than one is available, all of them.
    Returns per move: giver (-1: the free pool), receiver, node, amount, whether it is
    feasible, and the receiver's and the giver's values after it (0 for an infeasible
    move; ``floors`` empty: none)."""
    jobs, nodes = best.shape
    # Per job and per node counts, in one pass over the allocation.
    used = np.empty((jobs, nodes), dtype=np.bool_)
    free = capacity.copy()
    count = np.zeros(jobs, dtype=np.int64)
    replicas = np.zeros(jobs, dtype=np.int64)
    differ = np.zeros(jobs, dtype=np.int64)
    home = np.zeros(jobs, dtype=np.int64)
    for j in range(jobs):
        first = -1
        for n in range(nodes):
            held = best[j, n]
            used[j, n] = held > 0
            free[n] -= held
            replicas[j] += held
            differ[j] += held != current[j, n]
            if held > 0:
                count[j] += 1
                if first < 0:
                    first = n
        home[j] = max(first, 0)
    distributed = count > 1
    crowd = np.zeros(nodes, dtype=np.int64)  # distributed jobs on each node
    for j in range(jobs):
        if distributed[j]:
            for n in range(nodes):
                crowd[n] += used[j, n]
    # Nodes with free GPUs, the first of each (free, distributed jobs) class, in node order.
    seen = np.zeros((max(free.max(), 0) + 1) * (jobs + 1), dtype=np.bool_)
    representatives = np.empty(nodes, dtype=np.int64)
    shown = 0
    for n in range(nodes):
        if free[n] > 0 and not seen[free[n] * (jobs + 1) + crowd[n]]:
            seen[free[n] * (jobs + 1) + crowd[n]] = True
            representatives[shown] = n
            shown += 1
    # Givers' cells: every node they use, but only the first they fill completely (a node
    # without GPUs counts as filled).
    cell_giver = np.empty(len(givers) * nodes, dtype=np.int64)
    cell_node = np.empty(len(givers) * nodes, dtype=np.int64)
    cells = 0
    for a in givers:
        filled = 0
        for n in range(nodes):
            full = best[a, n] == capacity[n]
            filled += full
            if used[a, n] and not (full and filled > 1):
                cell_giver[cells], cell_node[cells] = a, n
                cells += 1
    singles = len(receivers) * shown
    for b in receivers:
        for n in range(nodes):
            singles += used[b, n] and free[n] > 0
    for c in range(cells):
        for b in receivers:
            singles += b != cell_giver[c]
    giver = np.empty(singles, dtype=np.int64)
    receiver = np.empty(singles, dtype=np.int64)
    node = np.empty(singles, dtype=np.int64)
    k = 0
    for b in receivers:
        for i in range(shown):
            giver[k], receiver[k], node[k] = -1, b, representatives[i]
            k += 1
    for b in receivers:
        for n in range(nodes):
            if used[b, n] and free[n] > 0:
                giver[k], receiver[k], node[k] = -1, b, n
                k += 1
    for c in range(cells):
        for b in receivers:
            if b != cell_giver[c]:
                giver[k], receiver[k], node[k] = cell_giver[c], b, cell_node[c]
                k += 1
    available = np.empty(singles, dtype=np.int64)
    for m in range(singles):
        available[m] = best[giver[m], node[m]] if giver[m] >= 0 else free[node[m]]
    several = np.flatnonzero(available > 1)
    order = np.concatenate((np.arange(singles), several))
    total = len(order)
    amount = np.ones(total, dtype=np.int64)
    amount[singles:] = available[several]
    feasible = np.zeros(total, dtype=np.bool_)
    value_b = np.zeros(total)
    value_a = np.zeros(total)
    for m in range(total):
        move = order[m]
        b, n, gives = receiver[move], node[move], giver[move] >= 0
        a = max(giver[move], 0)
        step = amount[m]
        had = used[b, n]
        held_b = best[b, n]
        count_b = count[b] + (not had)
        dist_b = count_b > 1
        differ_b = differ[b] - (held_b != current[b, n]) + (held_b + step != current[b, n])
        held_a = best[a, n]
        leaves = gives and step == held_a
        count_a = count[a] - leaves
        dist_a = count_a > 1
        differ_a = differ[a] - (held_a != current[a, n]) + (held_a - step != current[a, n])
        on_node = crowd[n] - (distributed[b] and had) + dist_b
        if gives:
            on_node += (dist_a and not leaves) - (distributed[a] and used[a, n])
        newly = dist_b and not distributed[b]
        a_leaves_home = gives and used[a, home[b]] and distributed[a] and not dist_a
        on_home = crowd[home[b]] + 1 - a_leaves_home
        ok = (on_node <= 1 and (not newly or on_home <= 1)) or not avoid
        feasible[m] = ok and replicas[b] + step <= caps[b]
        if not feasible[m]:  # about half the moves; their values are never read
            continue
        value_b[m] = _value(
            table, caps, floors, penalties, largest, b, replicas[b] + step, count_b, differ_b > 0
        )
        left = replicas[a] - step if gives else replicas[a]
        value_a[m] = _value(table, caps, floors, penalties, largest, a, left, count_a, differ_a > 0)
    return giver[order], receiver[order], node[order], amount, feasible, value_b, value_a


@_jit
def best_harmonic_transfer(
    best,
    current,
    capacity,
    receivers,
    givers,
    caps,
    avoid,
    table,
    floors,
    penalties,
    largest,
    cost,
    epsilon,
):
    """The best of :func:`transfer_moves` under the harmonic mean (fairness p = -1, each job
    costing ``1 / (value + epsilon)``): (found, giver, receiver, node, amount, change of the
    cost sum), the change computed as :func:`goodput_sim.policies.local_search._best_transfer`
    computes it with numpy and the first of equal moves taken (a NaN first, as numpy's argmin
    does), without materialising the per-move changes. Not found when there is no move or the
    best change is not finite."""
    giver, receiver, node, amount, feasible, value_b, value_a = transfer_moves(
        best, current, capacity, receivers, givers, caps, avoid, table, floors, penalties, largest
    )
    top, low = -1, np.inf
    for m in range(amount.shape[0]):
        if feasible[m]:
            change = 1.0 / (value_b[m] + epsilon) - cost[receiver[m]]
            a = giver[m]
            change = change + ((1.0 / (value_a[m] + epsilon) - cost[a]) if a >= 0 else 0.0)
        else:
            change = np.inf
        if change != change:  # numpy's argmin stops at the first NaN
            return False, 0, 0, 0, 0, change
        if top < 0 or change < low:
            top, low = m, change
    if top < 0 or not np.isfinite(low):
        return False, 0, 0, 0, 0, low
    return True, giver[top], receiver[top], node[top], amount[top], low


@_jit
def restoration_counts(allocation, current, capacity, moved, donors, caps, avoid):
    """Per-job counts of each candidate of
    :func:`goodput_sim.policies.local_search._restorations`: job ``moved[c]`` back on its
    current row, taking the GPUs it lacks on each node from ``donors`` in their order.

    Returns (feasible per candidate; GPUs, nodes used and changed-row counts per candidate and
    job; the donations as rows of (candidate, donor, node, GPUs))."""
    jobs, nodes = allocation.shape
    kinds = len(moved)
    column = allocation.sum(axis=0)
    used = allocation > 0
    replicas = np.empty((kinds, jobs), dtype=np.int64)
    nodes_used = np.empty((kinds, jobs), dtype=np.int64)
    differ = np.empty((kinds, jobs), dtype=np.int64)
    for j in range(jobs):
        gpus, count, changed = 0, 0, 0
        for n in range(nodes):
            gpus += allocation[j, n]
            count += used[j, n]
            changed += allocation[j, n] != current[j, n]
        replicas[:, j], nodes_used[:, j], differ[:, j] = gpus, count, changed
    fits = np.ones(kinds, dtype=np.bool_)
    gifts = []  # (candidate, donor, node, GPUs)
    for c in range(kinds):
        job = moved[c]
        replicas[c, job] = current[job].sum()
        nodes_used[c, job] = (current[job] > 0).sum()
        differ[c, job] = 0
        for n in range(nodes):
            over = column[n] - allocation[job, n] + current[job, n] - capacity[n]
            if over <= 0:
                continue
            offered = 0
            for d in donors:
                held = allocation[d, n] if d != job else 0
                take = min(held, max(over - offered, 0))
                offered += held
                if take > 0:
                    gifts.append((c, d, n, take))
                    before = allocation[d, n]
                    replicas[c, d] -= take
                    nodes_used[c, d] -= take == before
                    differ[c, d] += int(before - take != current[d, n]) - int(
                        before != current[d, n]
                    )
            fits[c] = fits[c] and offered >= over
    gifts_array = np.empty((len(gifts), 4), dtype=np.int64)
    for i in range(len(gifts)):
        gifts_array[i, 0], gifts_array[i, 1], gifts_array[i, 2], gifts_array[i, 3] = gifts[i]
    ok = fits.copy()
    for c in range(kinds):
        for j in range(jobs):
            ok[c] = ok[c] and replicas[c, j] <= caps[j]
    if avoid:
        _interference_ok(allocation, current, moved, nodes_used, gifts_array, ok)
    return ok, replicas, nodes_used, differ, gifts_array


@_jit
def _interference_ok(allocation, current, moved, nodes_used, gifts, ok):
    """Clear ``ok`` of candidates that leave a node with two distributed jobs: the restored
    job's old row leaves and its current row arrives; a donor still distributed leaves the
    nodes it emptied, one no longer distributed leaves all its nodes."""
    jobs, nodes = allocation.shape
    used = allocation > 0
    was = np.zeros(jobs, dtype=np.bool_)
    for j in range(jobs):
        was[j] = used[j].sum() > 1
    crowd = np.zeros(nodes, dtype=np.int64)
    for j in range(jobs):
        for n in range(nodes):
            crowd[n] += was[j] and used[j, n]
    gone = np.zeros(jobs, dtype=np.bool_)  # per candidate: donors no longer distributed
    for c in range(len(moved)):
        job = moved[c]
        back = current[job] > 0
        spread = back.sum() > 1
        count = crowd.copy()
        for n in range(nodes):
            count[n] += int(back[n] and spread) - int(used[job, n] and was[job])
        gone[:] = False
        for g in range(gifts.shape[0]):
            if gifts[g, 0] != c:
                continue
            d, n = gifts[g, 1], gifts[g, 2]
            if was[d] and nodes_used[c, d] <= 1:
                if not gone[d]:
                    gone[d] = True
                    for m in range(nodes):
                        count[m] -= used[d, m]
            elif was[d] and allocation[d, n] == gifts[g, 3]:
                count[n] -= 1
        ok[c] = ok[c] and count.max() <= 1
