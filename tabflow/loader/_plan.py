"""Epoch plans: which partitions each rank reads, grouped into chunks, and how rows are cut.

An epoch's *global row order* is the partitions in (possibly shuffled) order, each partition's
rows in file order. It is split into ``global_size`` contiguous shares of ``N // global_size``
rows; rank ``r`` owns positions ``[r * share, (r + 1) * share)`` and the last
``N % global_size`` rows are not used that epoch. A rank reads only the partitions that
overlap its share, ``parts_per_chunk`` at a time; each chunk is trimmed to the share and, when
shuffling, its rows are permuted with a generator seeded from (epoch seed, rank, chunk).
The epoch seed is :func:`default_epoch_seed` of the epoch, or :func:`epoch_seed` of the
user's seed and the epoch.

Examples
--------
>>> from tabflow.loader._plan import plan_epoch
>>> [(c.partitions, c.start, c.stop) for c in plan_epoch([4, 4, 4], 0, False, 1, 2, 2)]
[((1, 2), 2, 8)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["ChunkSpec", "plan_epoch", "skip_rows", "chunk_permutation", "default_epoch_seed", "epoch_seed", "rank_share"]

# Base of the internal seed sequence: fixed so that ranks in separate processes agree on the
# partition order without communicating.
_BASE_SEED = 0x7AB


@dataclass(frozen=True)
class ChunkSpec:
    """One chunk: partitions to read and concatenate, then rows ``start:stop`` of the result.

    ``skip`` rows are dropped from the head after the row shuffle (mid-epoch resume).
    """

    index: int
    partitions: tuple[int, ...]
    start: int
    stop: int
    skip: int = 0

    @property
    def num_rows(self) -> int:
        return self.stop - self.start - self.skip


def rank_share(num_rows: int, global_size: int) -> int:
    """Rows each rank receives per epoch.

    Examples
    --------
    >>> from tabflow.loader._plan import rank_share
    >>> rank_share(10, 3)
    3
    """
    return num_rows // global_size


def default_epoch_seed(epoch: int) -> int:
    """Seed of ``epoch`` when no ``seed_fn`` is given (reproducible, identical on all ranks).

    Examples
    --------
    >>> from tabflow.loader._plan import default_epoch_seed
    >>> default_epoch_seed(3) == default_epoch_seed(3) != default_epoch_seed(4)
    True
    """
    return int(np.random.SeedSequence([_BASE_SEED, int(epoch)]).generate_state(1)[0])


def epoch_seed(seed: int, epoch: int) -> int:
    """Seed of ``epoch`` from a user's ``seed`` (what ``seed_fn`` returned).

    The two are mixed by NumPy's ``SeedSequence(seed, spawn_key=(epoch,))``, the child
    ``epoch`` of ``seed`` (``SeedSequence(seed).spawn(n)[epoch]``): a constant seed gives a
    new order every epoch, and neighbouring seeds or epochs give unrelated values. The epoch
    is kept apart from the seed rather than appended to it: ``SeedSequence([seed, epoch])``
    reads both as one run of 32-bit words, so ``(5 + 7 * 2**32, 0)`` and ``(5, 7)`` collide.

    Parameters
    ----------
    seed : int
        A non-negative integer (a 0-d integer tensor or NumPy scalar is accepted).
    epoch : int

    Returns
    -------
    int
        A 64-bit seed, the same in every process given the same arguments.

    Examples
    --------
    >>> from tabflow.loader._plan import epoch_seed
    >>> epoch_seed(1234, 0) == epoch_seed(1234, 0)
    True
    >>> len({epoch_seed(1234, 0), epoch_seed(1234, 1), epoch_seed(1235, 0), epoch_seed(1235, 1)})
    4
    """
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"seed_fn must return a non-negative integer, got {seed}")
    state = np.random.SeedSequence(seed, spawn_key=(int(epoch),)).generate_state(1, np.uint64)
    return int(state[0])


def plan_epoch(
    lengths: Sequence[int],
    seed: int,
    shuffle: bool,
    global_rank: int,
    global_size: int,
    parts_per_chunk: int,
) -> list[ChunkSpec]:
    """The chunks rank ``global_rank`` reads in one epoch (see the module docstring)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.random.default_rng(seed).permutation(len(lengths)) if shuffle else np.arange(len(lengths))
    share = rank_share(int(lengths.sum()), global_size)
    lo, hi = global_rank * share, (global_rank + 1) * share
    ordered = lengths[order]
    ends = np.cumsum(ordered)
    starts = ends - ordered
    overlapping = [k for k in range(len(order)) if ordered[k] and starts[k] < hi and ends[k] > lo]
    chunks = []
    for index, first in enumerate(range(0, len(overlapping), parts_per_chunk)):
        group = overlapping[first : first + parts_per_chunk]
        base = int(starts[group[0]])
        start = max(lo, base) - base
        stop = min(hi, int(ends[group[-1]])) - base
        chunks.append(ChunkSpec(index, tuple(int(order[k]) for k in group), start, stop))
    return chunks


def skip_rows(chunks: Sequence[ChunkSpec], rows: int) -> list[ChunkSpec]:
    """The plan without its first ``rows`` rows; whole chunks are dropped unread."""
    kept = []
    for chunk in chunks:
        if rows >= chunk.num_rows:
            rows -= chunk.num_rows
            continue
        kept.append(ChunkSpec(chunk.index, chunk.partitions, chunk.start, chunk.stop, chunk.skip + rows))
        rows = 0
    return kept


def chunk_permutation(seed: int, global_rank: int, chunk: ChunkSpec) -> np.ndarray:
    """Row order of a trimmed chunk; it depends on the chunk alone, so resuming can skip chunks."""
    rng = np.random.default_rng([int(seed), int(global_rank), int(chunk.index)])
    return rng.permutation(chunk.stop - chunk.start)
