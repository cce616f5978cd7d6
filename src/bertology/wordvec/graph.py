"""A graph read from edge lists, held as compressed sparse rows (CSR) for the random walks.

One edge a line: source, target and an optional positive weight, separated by tabs (then a name
may hold spaces) or by whitespace; blank lines and lines starting with "#" are skipped. Rules:

* a line with fewer than 2 or more than 3 fields, or a weight that is not a finite number > 0,
  raises CorpusError naming the file and the line;
* a self-loop (source == target) is dropped and counted: a walk that stays put teaches nothing
  (its node keeps its other edges; a node with only self-loops has no edges and no vector);
* a duplicate edge (undirected: the same pair either way round) is merged into one and counted;
  the last weight read wins, as networkx and pecanpy read edge lists;
* without a weight column an edge weighs 1, and a graph whose weights are all 1 is unweighted.

    >>> g = Graph.from_edges([("a", "b"), ("b", "c"), ("c", "c")])
    >>> g.nodes, g.neighbors("b"), g.self_loops, g.isolated()
    (['a', 'b', 'c'], ['a', 'c'], 1, [])

Shapes: n nodes, E stored edges (an undirected edge is stored both ways). indptr (n + 1,) int64,
indices (E,) int32 sorted within each row, weights (E,) float64 or None when unweighted.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..io import CorpusError
from .corpus import check_files, read_lines


@dataclass
class Graph:
    nodes: list[str]  # index → name, in order of first appearance
    indptr: np.ndarray  # (n + 1,) int64: node v's neighbours are indices[indptr[v]:indptr[v + 1]]
    indices: np.ndarray  # (E,) int32, sorted within each row (walks test adjacency by binary search)
    weights: np.ndarray | None  # (E,) float64, or None: every edge weighs 1
    directed: bool = False
    self_loops: int = 0  # dropped
    duplicates: int = 0  # merged

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def edges(self) -> int:
        """Edges as given: stored ones, an undirected edge counted once."""
        return len(self.indices) if self.directed else len(self.indices) // 2

    @property
    def degree(self) -> np.ndarray:
        """(n,) out-degree (undirected: degree)."""
        return np.diff(self.indptr)

    def neighbors(self, node: str) -> list[str]:
        v = self.nodes.index(node)
        return [self.nodes[u] for u in self.indices[self.indptr[v] : self.indptr[v + 1]]]

    def isolated(self) -> list[str]:
        """Nodes with no edge at all (only self-loops): they get no vector."""
        incoming = np.zeros(len(self.nodes), dtype=bool)
        incoming[self.indices] = True
        return [self.nodes[v] for v in np.flatnonzero((self.degree == 0) & ~incoming)]

    @classmethod
    def from_edges(cls, edges: Iterable[tuple], directed: bool = False) -> "Graph":
        """A graph of (source, target) or (source, target, weight) tuples, by the rules above."""
        index: dict[str, int] = {}
        src, dst, wts = [], [], []
        loops = 0
        for edge in edges:
            a, b = index.setdefault(edge[0], len(index)), index.setdefault(edge[1], len(index))
            if a == b:
                loops += 1
                continue
            src.append(a)
            dst.append(b)
            wts.append(float(edge[2]) if len(edge) > 2 else 1.0)
        return cls.from_arrays(
            list(index), np.array(src, np.int64), np.array(dst, np.int64), np.array(wts, np.float64), directed, loops
        )

    @classmethod
    def from_arrays(
        cls,
        nodes: list[str],
        src: np.ndarray,
        dst: np.ndarray,
        weights: np.ndarray,
        directed: bool,
        self_loops: int = 0,
    ) -> "Graph":
        """CSR of edges src[i] → dst[i] (no self-loops), in reading order: duplicates keep the last weight."""
        n, read = len(nodes), len(src)
        if not directed:  # each edge both ways; the pair's key is the same either way round
            lo, hi = np.minimum(src, dst), np.maximum(src, dst)
            _, first = np.unique((lo * n + hi)[::-1], return_index=True)
            duplicates = read - len(first)
            # both ways, interleaved so that reading order survives: line i is stored at 2i and 2i + 1
            src, dst = np.stack([src, dst], 1).ravel(), np.stack([dst, src], 1).ravel()
            weights = np.repeat(weights, 2)
        key = src * n + dst
        _, last = np.unique(key[::-1], return_index=True)  # first in reverse = last read
        keep = len(key) - 1 - last  # sorted by key: by source, then target
        if directed:
            duplicates = read - len(keep)
        src, dst, weights = src[keep], dst[keep], weights[keep]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        unweighted = bool(np.all(weights == 1.0))
        return cls(
            list(nodes),
            indptr,
            dst.astype(np.int32),
            None if unweighted else weights,
            directed,
            self_loops,
            int(duplicates),
        )

    @classmethod
    def read(cls, paths: Iterable[str | os.PathLike], directed: bool = False) -> "Graph":
        """The graph of edge-list files (.gz, .xz, .bz2 read as such), by the rules above."""
        paths = [os.fspath(p) for p in paths]
        check_files(paths)
        edges = []
        for path in paths:
            for line_no, line in enumerate(read_lines([path]), 1):
                text = line.rstrip("\r\n")
                if not text.strip() or text.lstrip().startswith("#"):
                    continue
                fields = [f.strip() for f in text.split("\t")] if "\t" in text else text.split()
                if len(fields) not in (2, 3) or not all(fields):
                    raise CorpusError(
                        f"{path}: line {line_no}: {text!r} is not 'source<TAB>target[<TAB>weight]' "
                        f"({len(fields)} fields)"
                    )
                if len(fields) == 3:
                    try:
                        w = float(fields[2])
                    except ValueError:
                        w = math.nan
                    if not (math.isfinite(w) and w > 0):
                        raise CorpusError(f"{path}: line {line_no}: weight {fields[2]!r} is not a finite number > 0")
                    edges.append((fields[0], fields[1], w))
                else:
                    edges.append((fields[0], fields[1]))
        graph = cls.from_edges(edges, directed)
        if graph.edges == 0:
            raise CorpusError(
                f"{', '.join(paths)}: the graph has no edges"
                + (f" ({graph.self_loops} self-loops, dropped)" if graph.self_loops else "")
            )
        return graph
