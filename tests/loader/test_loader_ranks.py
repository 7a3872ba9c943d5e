"""Rank splitting: disjoint, covering, equal batch counts, and only overlapping partitions read."""

from __future__ import annotations

import pytest
import torch
from loader_data import CATS, CONTS, LABEL, NUM_ROWS

from tabflow.loader._plan import plan_epoch
from tabflow.loader._ranks import resolve_ranks
from tabflow.loader.torch import TorchAsyncItr


def _rank_itrs(dataset, size, **kwargs):
    return [
        TorchAsyncItr(dataset, cats=["row_id", *CATS], conts=CONTS, labels=[LABEL], global_rank=r, global_size=size, **kwargs)
        for r in range(size)
    ]


@pytest.mark.parametrize("size", [2, 4])
@pytest.mark.parametrize("parts_per_chunk", [1, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_ranks_get_disjoint_equal_shares(dataset, size, parts_per_chunk, shuffle):
    itrs = _rank_itrs(dataset, size, batch_size=16, shuffle=shuffle, parts_per_chunk=parts_per_chunk)
    share = NUM_ROWS // size
    dropped_per_epoch = []
    for _ in range(2):
        per_rank = []
        for itr in itrs:
            batches = list(itr)
            assert len(batches) == len(itr) == -(-share // 16)
            per_rank.append(torch.cat([b[0][:, 0] for b in batches]).tolist())
        assert all(len(ids) == share for ids in per_rank)
        union = set().union(*map(set, per_rank))
        assert len(union) == share * size
        dropped_per_epoch.append(set(range(NUM_ROWS)) - union)
        assert len(dropped_per_epoch[-1]) == NUM_ROWS % size
    if not shuffle:
        # Unshuffled, rank r holds rows [r * share, (r + 1) * share) in order.
        assert per_rank[1] == list(range(share, 2 * share))


def test_dropped_rows_vary_by_epoch_with_shuffle(dataset):
    itr = _rank_itrs(dataset, 2, batch_size=50, shuffle=True)[0]
    other = _rank_itrs(dataset, 2, batch_size=50, shuffle=True)[1]
    dropped = []
    for _ in range(4):
        seen = set(torch.cat([b[0][:, 0] for b in itr]).tolist()) | set(torch.cat([b[0][:, 0] for b in other]).tolist())
        dropped.append(frozenset(set(range(NUM_ROWS)) - seen))
    assert len(set(dropped)) > 1


@pytest.mark.parametrize("size", [2, 3])
def test_constant_seed_fn_ranks_agree_and_reshuffle_every_epoch(dataset, size):
    def run():
        """Per epoch: each rank's row ids and the seed it drew."""
        itrs = _rank_itrs(dataset, size, batch_size=16, shuffle=True, parts_per_chunk=2, seed_fn=lambda: 1234)
        epochs = []
        for _ in range(3):
            ids, seeds = [], []
            for itr in itrs:
                rank_ids = []
                for batch in itr:
                    if not rank_ids:
                        seeds.append(itr.state_dict()["seed"])
                    rank_ids += batch[0][:, 0].tolist()
                ids.append(rank_ids)
            epochs.append((ids, seeds))
        return epochs

    epochs = run()
    share = NUM_ROWS // size
    for ids, seeds in epochs:
        assert len(set(seeds)) == 1  # every rank drew the epoch's one seed
        assert all(len(rank_ids) == share for rank_ids in ids)
        assert len(set().union(*map(set, ids))) == share * size  # disjoint shares
    # The global order (the shares in rank order) is new every epoch ...
    assert len({tuple(sum(ids, [])) for ids, _ in epochs}) == 3
    # ... and the same in another run.
    assert run() == epochs


def test_each_rank_reads_only_overlapping_partitions(dataset, monkeypatch):
    requested = []
    original = type(dataset).to_iter

    def spy(self, columns=None, indices=None, **kwargs):
        requested.append(list(indices))
        return original(self, columns=columns, indices=indices, **kwargs)

    monkeypatch.setattr(type(dataset), "to_iter", spy)
    for itr in _rank_itrs(dataset, 4, batch_size=16):
        list(itr)
    lengths = dataset.partition_lengths()  # [37, 37, 26, 20, 20, 13, 45, 45]; shares of 60 rows
    assert requested == [[0, 1], [1, 2, 3], [4, 5, 6], [6, 7]]
    assert sum(lengths) == NUM_ROWS


def test_plan_trims_chunks_to_the_share():
    chunks = plan_epoch([10, 10, 10], seed=0, shuffle=False, global_rank=1, global_size=3, parts_per_chunk=1)
    assert [(c.partitions, c.start, c.stop) for c in chunks] == [((1,), 0, 10)]
    chunks = plan_epoch([7, 0, 8], seed=0, shuffle=False, global_rank=0, global_size=2, parts_per_chunk=2)
    assert [(c.partitions, c.start, c.stop) for c in chunks] == [((0,), 0, 7)]


def test_resolve_ranks_defaults_and_validation():
    assert resolve_ranks(None, None) == (0, 1)
    with pytest.raises(ValueError, match="global_rank"):
        resolve_ranks(2, 2)
