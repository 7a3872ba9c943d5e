"""The one pooling function of list columns, against a Python loop over the bags, in every
input form; and both embedding stacks pooling through it alike."""

from __future__ import annotations

import math

import pytest
import torch

from tabflow.framework_utils.torch import (
    EmbeddingFeature,
    EmbeddingTables,
    MultiHotEmbeddings,
)
from tabflow.framework_utils.torch.layers.pooling import POOLING_MODES, pool
from tabflow.loader.keys import PAD_INDEX

# Padding inside a bag, an empty bag, repeats, a bag of padding only.
BAGS = [[3, 1, 0, 4], [], [2, 2], [0, 0], [5]]


def _reference(weight, bags, mode):
    rows = []
    for bag in bags:
        kept = [v for v in bag if v != PAD_INDEX]
        if not kept:
            rows.append(torch.zeros(weight.shape[1]))
            continue
        vectors = weight[kept]
        rows.append({
            "sum": vectors.sum(0), "mean": vectors.mean(0), "max": vectors.max(0).values,
            "sqrtn": vectors.sum(0) / math.sqrt(len(kept)),
        }[mode])
    return torch.stack(rows)


def _forms(bags):
    values = torch.tensor([v for bag in bags for v in bag], dtype=torch.int64)
    lengths = torch.tensor([len(b) for b in bags])
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    width = max(map(len, bags))
    padded = torch.tensor([bag + [PAD_INDEX] * (width - len(bag)) for bag in bags])
    coords = [(i, j) for i, bag in enumerate(bags) for j in range(len(bag))]
    sparse = torch.sparse_coo_tensor(torch.tensor(coords).T, values, size=(len(bags), width), check_invariants=True)
    return {
        "values/offsets": (values, offsets),
        "nvtabular starts": (values.unsqueeze(1), offsets[:-1].unsqueeze(1)),
        "padded dense": padded,
        "sparse": sparse,
    }


@pytest.mark.parametrize("mode", POOLING_MODES)
def test_every_form_matches_the_reference(mode):
    weight = torch.arange(14.0).reshape(7, 2) + 1  # row 0 nonzero: padding must drop out
    expected = _reference(weight, BAGS, mode)
    for form, data in _forms(BAGS).items():
        torch.testing.assert_close(pool(weight, data, mode), expected, msg=lambda m, form=form: f"{form}: {m}")


def test_padding_gets_no_gradient_and_sparse_gradients_are_sparse():
    weight = torch.nn.Parameter(torch.ones(7, 2))
    pool(weight, _forms(BAGS)["values/offsets"], "sqrtn", sparse=True).sum().backward()
    assert weight.grad.is_sparse
    dense = weight.grad.to_dense()
    assert torch.count_nonzero(dense[PAD_INDEX]) == 0 and torch.count_nonzero(dense[3]) > 0


def test_errors_name_the_column():
    weight = torch.ones(5, 2)
    with pytest.raises(ValueError, match="mode"):
        pool(weight, torch.tensor([[1]]), "median")
    with pytest.raises(ValueError, match="'tags'.*offsets"):
        pool(weight, (torch.tensor([1, 2]), torch.zeros(2, 2, dtype=torch.int64)), name="tags")
    with pytest.raises(TypeError, match="'tags'"):
        pool(weight, 1, name="tags")


@pytest.mark.parametrize("mode", ["sum", "mean", "sqrtn"])
def test_both_embedding_stacks_pool_alike(mode):
    # EmbeddingTables (dict batches) and MultiHotEmbeddings (Model's layer) give the same
    # vectors for the same table and bags, in every form.
    tables = EmbeddingTables([EmbeddingFeature("l", "l", 7, 3, mode, multi_hot=True)])
    multi = MultiHotEmbeddings({"l": (7, 3)}, mode=mode)
    with torch.no_grad():
        multi.embedding_layers[0].weight.copy_(tables.tables["l"].weight)
    for form, data in _forms(BAGS).items():
        batch = {"l__values": data[0], "l__offsets": data[1]} if form == "values/offsets" else {"l": data}
        if form == "nvtabular starts":
            continue  # a layout of NVTabular's loaders, which only MultiHotEmbeddings is fed
        torch.testing.assert_close(tables(batch)["l"], multi({"l": data}), msg=lambda m, form=form: f"{form}: {m}")
