"""Compiled inner loops of the elastic optimiser (:mod:`goodput_sim.policies.greedy` and
:mod:`goodput_sim.policies.local_search`).

Each is a loop of many small steps (one greedy move, one job placed, one candidate move) that
costs a few numpy calls per step in Python, so a round's time was the fixed cost of thousands
of calls rather than arithmetic. Compiled with numba, they make the same choices in the same
order: only comparisons, integer arithmetic and the same IEEE operations on the same operands
(no fast-math), so results are bit-identical (tests compare them with the numpy versions
they replaced). Compiled code is cached beside this file, so only the first run on a machine
pays the compilation (a few seconds)."""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)


@_jit
def _best_move(cost, j, start, limit):
    """Job ``j``'s best move from ``start`` GPUs adding at most ``limit``: (found, -drop per
    GPU, target). None is found when any drop is NaN, as numpy's argmax returns the first
    NaN."""
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
def transfer_moves(best, current, capacity, receivers, givers, caps, avoid):
    """Every candidate move of :func:`goodput_sim.policies.local_search._best_transfer`, in
    its order, with what scoring it needs.

    Moves: receivers take GPUs from the free pool on one node per (free GPUs, distributed
    jobs) class or on their own nodes, then from each giver's nodes (only the first it fills
    completely); first one GPU each, then, where more than one is available, all of them.
    Returns per move (giver or -1, receiver, node, amount, feasible) and both jobs' GPUs,
    nodes used and changed-row flags after it, as an (11, moves) int64 array."""
    jobs, nodes = best.shape
    used = best > 0
    free = capacity - best.sum(axis=0)
    count = used.sum(axis=1)
    distributed = count > 1
    crowd = np.zeros(nodes, dtype=np.int64)
    home = np.zeros(jobs, dtype=np.int64)
    differ = np.zeros(jobs, dtype=np.int64)
    replicas = best.sum(axis=1)
    for j in range(jobs):
        first = -1
        for n in range(nodes):
            if used[j, n]:
                crowd[n] += distributed[j]
                if first < 0:
                    first = n
            differ[j] += best[j, n] != current[j, n]
        home[j] = max(first, 0)
    # Nodes with free GPUs, the first of each (free, distributed jobs) class, in node order.
    seen = set()
    representatives = []
    for n in range(nodes):
        if free[n] > 0:
            key = free[n] * (jobs + 1) + crowd[n]
            if key not in seen:
                seen.add(key)
                representatives.append(n)
    moves = []  # (giver, receiver, node)
    for b in receivers:
        for n in representatives:
            moves.append((-1, b, n))
    for b in receivers:
        for n in range(nodes):
            if used[b, n] and free[n] > 0:
                moves.append((-1, b, n))
    for a in givers:
        filled = 0  # nodes it fills completely so far (a node with no GPUs counts)
        for n in range(nodes):
            full = best[a, n] == capacity[n]
            filled += full
            if not used[a, n] or (full and filled > 1):
                continue
            for b in receivers:
                if b != a:
                    moves.append((a, b, n))
    several = 0
    for giver, _, n in moves:
        several += (best[giver, n] if giver >= 0 else free[n]) > 1
    out = np.empty((11, len(moves) + several), dtype=np.int64)
    k = 0
    for many in (False, True):
        for giver, b, n in moves:
            a = max(giver, 0)
            gives = giver >= 0
            available = best[a, n] if gives else free[n]
            if many and available <= 1:
                continue
            amount = available if many else 1
            had = used[b, n]
            held_b = best[b, n]
            count_b = count[b] + (not had)
            dist_b = count_b > 1
            differ_b = differ[b] - (held_b != current[b, n]) + (held_b + amount != current[b, n])
            held_a = best[a, n]
            leaves = gives and amount == held_a
            count_a = count[a] - leaves
            dist_a = count_a > 1
            differ_a = differ[a] - (held_a != current[a, n]) + (held_a - amount != current[a, n])
            on_node = crowd[n] - (distributed[b] and had) + dist_b
            if gives:
                on_node += (dist_a and not leaves) - (distributed[a] and used[a, n])
            newly = dist_b and not distributed[b]
            a_leaves_home = gives and used[a, home[b]] and distributed[a] and not dist_a
            on_home = crowd[home[b]] + 1 - a_leaves_home
            ok = (on_node <= 1 and (not newly or on_home <= 1)) or not avoid
            ok = ok and replicas[b] + amount <= caps[b]
            out[0, k], out[1, k], out[2, k], out[3, k], out[4, k] = giver, b, n, amount, ok
            out[5, k], out[6, k], out[7, k] = replicas[b] + amount, count_b, differ_b > 0
            out[8, k] = replicas[a] - amount if gives else replicas[a]
            out[9, k], out[10, k] = count_a, differ_a > 0
            k += 1
    return out
