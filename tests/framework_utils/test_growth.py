"""grow_embeddings: learned rows kept, new rows drawn as the model's own, optimizer state
grown as a parameter without gradients would have it, training going on afterwards."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from torch import nn

import tabflow as nvt
from tabflow import ops
from tabflow.framework_utils.torch import DLRM, EmbeddingFeature, EmbeddingTables, Model, grow_embeddings
from tabflow.ops import get_embedding_sizes


def _train_step(model, optimizer, indices, table="user"):
    optimizer.zero_grad()
    model[table](indices).pow(2).sum().backward()
    optimizer.step()


@pytest.mark.parametrize(
    "make, state_keys, fill",
    [
        (lambda p: torch.optim.Adam(p, lr=0.1), ["exp_avg", "exp_avg_sq"], 0.0),
        (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), ["momentum_buffer"], 0.0),
        (lambda p: torch.optim.Adagrad(p, lr=0.1, initial_accumulator_value=0.25), ["sum"], 0.25),
    ],
)
def test_plain_optimizers_keep_learned_rows_and_state(make, state_keys, fill):
    torch.manual_seed(0)
    model = nn.ModuleDict({"user": nn.Embedding(6, 3, padding_idx=0), "head": nn.Linear(3, 1)})
    optimizer = make(model.parameters())
    _train_step(model, optimizer, torch.tensor([1, 2, 5]))
    weight = model["user"].weight
    learned = weight.detach().clone()
    state = {k: optimizer.state[weight][k].clone() for k in state_keys}

    assert grow_embeddings(model, {"user": (10, 3)}, optimizer) == {"user": (6, 10)}

    assert model["user"].weight is weight and weight.shape == (10, 3) and model["user"].num_embeddings == 10
    assert torch.equal(weight[:6], learned) and torch.equal(weight[0], torch.zeros(3))
    for key in state_keys:
        grown = optimizer.state[weight][key]
        assert grown.shape == (10, 3) and torch.equal(grown[:6], state[key])
        assert torch.equal(grown[6:], torch.full((4, 3), fill))
    _train_step(model, optimizer, torch.tensor([2, 8, 9]))  # new rows train with the same optimizer
    assert not torch.equal(weight[8], learned[0]) and torch.equal(weight[3], learned[3])


def test_new_rows_follow_the_tables_own_initialisation():
    torch.manual_seed(0)
    model = nn.ModuleDict({"plain": nn.Embedding(4, 64), "bag": nn.EmbeddingBag(4, 64)})
    grow_embeddings(model, {"plain": 2004, "bag": 2004})
    for name in ("plain", "bag"):  # nn.Embedding / EmbeddingBag draw N(0, 1)
        added = model[name].weight[4:].detach()
        assert abs(added.mean().item()) < 0.02 and abs(added.std().item() - 1.0) < 0.02


def test_embedding_tables_and_dlrm_grow_to_a_workflow_after_partial_fit():
    torch.manual_seed(0)
    wf = nvt.Workflow((["user", "item"] >> ops.Categorify()) + ["y"])
    day1 = pd.DataFrame({"user": ["a", "b", "a"], "item": ["x", "y", "z"], "y": [0.0, 1.0, 1.0]})
    wf.partial_fit(day1)
    tables = EmbeddingTables.from_schema(wf.output_schema, dims=4)
    optimizer = torch.optim.Adam(tables.parameters(), lr=0.01)
    learned = {name: t.weight.detach().clone() for name, t in tables.tables.items()}

    wf.partial_fit(pd.DataFrame({"user": ["c", "d", "e", "a"], "item": ["x", "w", "w", "v"], "y": [1.0] * 4}))
    grown = grow_embeddings(tables, get_embedding_sizes(wf), optimizer)

    assert grown == {"user": (5, 8), "item": (6, 8)}
    for name, table in tables.tables.items():
        assert torch.equal(table.weight[: len(learned[name])], learned[name])
        bound = 1.0 / math.sqrt(8)  # EmbeddingTables' rule for an 8-row table
        assert bool((table.weight[len(learned[name]):].abs() <= bound).all())
    assert [f.cardinality for f in tables.features] == [8, 8]
    out = tables({"user": torch.tensor([7, 3]), "item": torch.tensor([7, 1])})
    assert out["user"].shape == (2, 4)


def test_dlrm_grows_through_its_tables():
    torch.manual_seed(0)
    tables = EmbeddingTables([EmbeddingFeature("a", "a", 5, 2), EmbeddingFeature("b", "b", 4, 2)])
    model = DLRM(tables, continuous=["x"], bottom_mlp=[2], top_mlp=[3])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    batch = {"a": torch.tensor([1, 4]), "b": torch.tensor([2, 3]), "x": torch.tensor([0.5, 1.0])}
    model(batch).sum().backward()
    optimizer.step()
    assert grow_embeddings(model, {"a": 9}, optimizer) == {"a": (5, 9)}
    model({"a": torch.tensor([8, 4]), "b": torch.tensor([2, 3]), "x": torch.tensor([0.5, 1.0])}).sum().backward()
    optimizer.step()


def test_model_layers_grow_by_column_name():
    torch.manual_seed(0)
    model = Model(({"u": (7, 3), "i": (5, 2)}, {"tags": (6, 4)}), num_continuous=1, emb_dropout=0.0,
                  layer_hidden_dims=[4], layer_dropout_rates=[0.0])
    before = model.mh_cat_layer.embedding_layers[0].weight.detach().clone()
    sizes = ({"u": (9, 3), "i": (5, 2)}, {"tags": (8, 4)})  # get_embedding_sizes' single/multi-hot pair
    assert grow_embeddings(model, sizes) == {"u": (7, 9), "tags": (6, 8)}
    assert torch.equal(model.mh_cat_layer.embedding_layers[0].weight[:6], before)
    x_cat = torch.tensor([[8, 4], [1, 1]])
    bags = {"tags": (torch.tensor([7, 1, 2]), torch.tensor([0, 2, 3]))}
    assert model((x_cat, bags), torch.ones(2, 1)).shape == (2,)


def test_fastai_learner_grows_its_model_and_optimizer():
    fastai = pytest.importorskip("fastai")
    from fastai.data.core import DataLoaders
    from fastai.learner import Learner
    from fastai.tabular.model import TabularModel
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)

    def loaders(cards):
        x_cat = torch.stack([torch.randint(1, c, (64,)) for c in cards], dim=1)
        data = TensorDataset(x_cat, torch.randn(64, 1), torch.randn(64, 1))
        return DataLoaders(DataLoader(data, batch_size=16), DataLoader(data, batch_size=16))

    model = TabularModel(emb_szs=[(5, 3), (4, 2)], n_cont=1, out_sz=1, layers=[4])
    learn = Learner(loaders([5, 4]), model, loss_func=nn.MSELoss())
    with learn.no_logging():
        learn.fit(1, lr=0.01)
    first = model.embeds[0].weight
    learned = first.detach().clone()
    assert grow_embeddings(model, [9, 4], learn) == {"embeds.0": (5, 9)}
    assert model.embeds[0].weight is first and torch.equal(first[:5], learned)
    assert all(v.shape[0] == 9 for v in learn.opt.state[first].values() if isinstance(v, torch.Tensor) and v.dim() == 2)
    added = first[5:].detach()
    assert added.abs().max().item() < 0.05  # fastai's Embedding: truncated normal, std 0.01
    learn.dls = loaders([9, 4])
    with learn.no_logging():
        learn.fit(1, lr=0.01)
    assert fastai.__version__


def test_bad_sizes_are_errors_naming_the_table():
    model = nn.ModuleDict({"user": nn.Embedding(6, 3)})
    with pytest.raises(ValueError, match="'user' has 6 rows, more than the 4"):
        grow_embeddings(model, {"user": 4})
    with pytest.raises(KeyError, match="no embedding table 'item'.*user"):
        grow_embeddings(model, {"item": 9})
    with pytest.raises(TypeError, match="cardinality or \\(cardinality, dim\\)"):
        grow_embeddings(model, {"user": "many"})
    with pytest.raises(ValueError, match="2 sizes for the model's 1 embedding tables"):
        grow_embeddings(model, [7, 8])
    assert grow_embeddings(model, {"user": 6}) == {}
