"""The order of an epoch's instances as a keyed bijection of [0, N), computed per position.

An epoch visits every instance once in an order drawn from (seed, epoch). Drawing it as a permutation
array costs 8 bytes an instance for as long as the epoch lasts: on a corpus of real size (tens of
millions of instances) that is most of the run's memory, and a batch reads 32 entries of it. Here
position i of the epoch maps to an instance by a Feistel network over the smallest even number of bits
that holds N, keyed by (seed, epoch), walked again while the result falls outside [0, N) ("cycle
walking"): a bijection of [0, N) whatever the keys, with no table, so a batch costs its own size.

    order = EpochOrder(n, seed=0, epoch=3)
    order(np.arange(32))        # the epoch's first 32 instances, distinct, each in [0, n)
"""

from __future__ import annotations

import numpy as np

from .pairs import mix64

ROUNDS = 6  # Luby-Rackoff: four rounds of a pseudo-random function already give a pseudo-random permutation


class EpochOrder:
    """Position -> instance of one epoch: a bijection of [0, n) keyed by (seed, epoch).

    >>> order = EpochOrder(10, seed=0, epoch=0)
    >>> sorted(order(np.arange(10)).tolist()) == list(range(10))
    True
    >>> bool((order(np.arange(10)) == EpochOrder(10, seed=0, epoch=1)(np.arange(10))).all())
    False
    """

    def __init__(self, n: int, seed: int, epoch: int):
        if n < 1:
            raise ValueError(f"an epoch needs at least one instance, got {n}")
        self.n = int(n)
        bits = max(2, (self.n - 1).bit_length())
        self.half = np.uint64((bits + 1) // 2)  # each half of the Feistel network's input
        self.low = np.uint64((1 << int(self.half)) - 1)
        state = np.random.SeedSequence([int(seed), int(epoch), 7]).generate_state(ROUNDS, dtype=np.uint64)
        self.keys = [np.uint64(k) for k in state]

    def _feistel(self, x: np.ndarray) -> np.ndarray:
        """One pass of the network: a bijection of [0, 4^half), which holds [0, n)."""
        left, right = x >> self.half, x & self.low
        for key in self.keys:
            left, right = right, left ^ (mix64(right ^ key) & self.low)
        return (left << self.half) | right

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        """(P,) int64 instances at epoch positions `positions` (each in [0, n))."""
        x = np.asarray(positions, dtype=np.int64)
        if len(x) and (x.min() < 0 or x.max() >= self.n):
            raise IndexError(f"epoch positions must be in [0, {self.n})")
        x = self._feistel(x.astype(np.uint64))
        outside = np.flatnonzero(x >= self.n)
        while len(outside):  # at most 4n values in the domain: a few walks on average
            x[outside] = self._feistel(x[outside])
            outside = outside[x[outside] >= self.n]
        return x.astype(np.int64)
