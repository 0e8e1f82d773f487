"""Speedup tables of one job: its best goodput (or throughput) by node count and GPU count, on
nodes of at most a given size, and their memo. Shared by the elastic policies and the utility
autoscaler, so it sits with the models both build on.

The throughput model tells one node from several but not several from many (network time
depends on the node count only through nodes > 1), so a table has a row for one node and one
for several, whatever the cluster's size."""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from goodput_sim.models.goodput import ConfigGrid, GoodputModel, without_statistics


def _table_counts(cap: int, nodes_up: int, largest_node: int) -> tuple[NDArray, NDArray]:
    """GPU counts a speedup table values on one node, and on several."""
    r = np.arange(1, cap + 1)
    return r[r <= largest_node], r[(r >= 2) & (nodes_up >= 2)]


def table_pairs(cap: int, nodes_up: int, largest_node: int) -> tuple[NDArray, NDArray]:
    """The (nodes, replicas) float pairs a speedup table values, in :func:`fill_table`'s order:
    every count on one node, then every count from 2 on several nodes."""
    single, multi = _table_counts(cap, nodes_up, largest_node)
    nodes = np.concatenate([np.ones(len(single)), np.full(len(multi), 2.0)])
    return nodes, np.concatenate([single, multi]).astype(float)


def fill_table(values: NDArray, cap: int, nodes_up: int, largest_node: int) -> NDArray:
    """The [min(nodes, 2), replicas] table of ``values`` at :func:`table_pairs`."""
    single, multi = _table_counts(cap, nodes_up, largest_node)
    table = np.zeros((3, cap + 1))
    table[1, single] = values[: len(single)]
    table[2, multi] = values[len(single) :]
    return table


def best_goodputs(
    model: GoodputModel,
    statistical: bool,
    cap: int,
    nodes_up: int,
    largest_node: int,
    grid: ConfigGrid | None = None,
) -> NDArray:
    """A job's best goodput (or throughput) by [min(nodes, 2), GPUs] (read-only), on nodes of
    at most ``largest_node`` GPUs, several of them if ``nodes_up`` >= 2; ``grid``, if given,
    is :func:`table_grid` of the same model and shapes."""
    if grid is None:
        grid = table_grid(model, cap, nodes_up, largest_node)
    table = fill_table(model.choose(grid, statistical).goodput, cap, nodes_up, largest_node)
    table.flags.writeable = False
    return table


def table_grid(model: GoodputModel, cap: int, nodes_up: int, largest_node: int) -> ConfigGrid:
    """The candidate configurations of a speedup table's (nodes, GPUs) pairs."""
    return model.config_grid(*table_pairs(cap, nodes_up, largest_node))


class BestGoodputs:
    """:func:`best_goodputs` memoised by every argument, one memo per policy (so per
    simulation). Beneath it, the tables' configuration grids are memoised by the model without
    its gradient statistics: those change at every epoch, its fitted parameters far less often."""

    def __init__(self, tables: int = 4096, grids: int = 64):
        self._tables = functools.lru_cache(maxsize=tables)(self._table)
        self._grids = functools.lru_cache(maxsize=grids)(table_grid)

    def __call__(
        self, model: GoodputModel, statistical: bool, cap: int, nodes_up: int, largest_node: int
    ) -> NDArray:
        return self._tables(model, statistical, cap, nodes_up, largest_node)

    def _table(self, model, statistical, cap, nodes_up, largest_node) -> NDArray:
        grid = self._grids(without_statistics(model), cap, nodes_up, largest_node)
        return best_goodputs(model, statistical, cap, nodes_up, largest_node, grid)
