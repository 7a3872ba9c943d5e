"""EmbeddingTables against explicit gather-and-reduce references; YAML config; DLRM training."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch
import yaml

import tabflow as nvt
from tabflow import ops
from tabflow.framework_utils.torch import (
    DLRM,
    EmbeddingFeature,
    EmbeddingTables,
    embedding_config,
    sparse_and_dense_parameters,
)
from tabflow.loader.torch import Loader
from tabflow.schema import ColumnSchema, Schema, Tags

# Bags with padding inside, an empty bag, repeats and a bag of padding only.
BAGS = [[3, 1, 0, 4], [], [2, 2], [0, 0], [5]]


def _values_offsets(bags):
    values = torch.tensor([v for bag in bags for v in bag], dtype=torch.int64)
    offsets = torch.tensor(np.cumsum([0, *map(len, bags)]), dtype=torch.int64)
    return values, offsets


def _padded(bags, width=4):
    return torch.tensor([bag + [0] * (width - len(bag)) for bag in bags], dtype=torch.int64)


def _reference(weight, bags, combiner):
    rows = []
    for bag in bags:
        kept = [v for v in bag if v != 0]
        total = weight[kept].sum(0) if kept else torch.zeros(weight.shape[1])
        if combiner == "mean" and kept:
            total = total / len(kept)
        elif combiner == "sqrtn" and kept:
            total = total / math.sqrt(len(kept))
        rows.append(total)
    return torch.stack(rows)


def _tables(combiner="sum", sparse=False, concat=False):
    torch.manual_seed(0)
    features = [EmbeddingFeature("c", "c", 7, 3), EmbeddingFeature("l", "l", 6, 3, combiner, True)]
    return EmbeddingTables(features, sparse=sparse, concat=concat)


def _planted_weights(tables):
    # Nonzero everywhere, row 0 included: padding must drop out of the pooling, not just
    # contribute a zero row.
    with torch.no_grad():
        for table in tables.tables.values():
            table.weight.copy_(torch.arange(table.weight.numel(), dtype=torch.float32).reshape(table.weight.shape) + 1)


def test_single_hot_is_a_row_gather():
    tables = _tables()
    idx = torch.tensor([1, 6, 3, 3])
    out = tables({"c": idx, "l": _padded([[1]] * 4)})
    torch.testing.assert_close(out["c"], tables.tables["c"].weight[idx])


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_multi_hot_values_offsets_match_reference(combiner):
    tables = _tables(combiner)
    _planted_weights(tables)
    values, offsets = _values_offsets(BAGS)
    out = tables({"c": torch.ones(len(BAGS), dtype=torch.int64), "l__values": values, "l__offsets": offsets})
    torch.testing.assert_close(out["l"], _reference(tables.tables["l"].weight.detach(), BAGS, combiner))


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_padded_dense_and_sparse_inputs_match_reference(combiner):
    tables = _tables(combiner)
    _planted_weights(tables)
    dense = _padded(BAGS)
    expected = _reference(tables.tables["l"].weight.detach(), BAGS, combiner)
    c = torch.ones(len(BAGS), dtype=torch.int64)
    torch.testing.assert_close(tables({"c": c, "l": dense})["l"], expected)
    torch.testing.assert_close(tables({"c": c, "l": dense.to_sparse()})["l"], expected)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_padding_never_contributes(combiner):
    tables = _tables(combiner)
    values, offsets = _values_offsets([[2, 0, 0, 3], [0]])
    with_padding = tables({"c": torch.tensor([1, 1]), "l__values": values, "l__offsets": offsets})["l"]
    v2, o2 = _values_offsets([[2, 3], []])
    without = tables({"c": torch.tensor([1, 1]), "l__values": v2, "l__offsets": o2})["l"]
    torch.testing.assert_close(with_padding, without)
    # The padding row starts at zero and gets no gradient.
    table = tables.tables["l"]
    assert torch.count_nonzero(table.weight[0]) == 0
    with_padding.sum().backward()
    assert torch.count_nonzero(table.weight.grad[0]) == 0
    assert torch.count_nonzero(table.weight.grad[2]) > 0


def test_concat_and_output_dim():
    tables = _tables(concat=True)
    dense = _padded(BAGS)
    out = tables({"c": torch.arange(1, 6), "l": dense})
    assert out.shape == (5, tables.output_dim) == (5, 6)
    separate = _tables()({"c": torch.arange(1, 6), "l": dense})
    torch.testing.assert_close(out, torch.cat([separate["c"], separate["l"]], dim=1))


def test_missing_input_is_named():
    with pytest.raises(KeyError, match="'l'"):
        _tables()({"c": torch.tensor([1])})


# ---------------------------------------------------------------------------- from a workflow


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    n = 64
    words = np.array(["w%d" % i for i in range(9)])
    frame = pd.DataFrame({
        "src": rng.choice(words[:5], n), "dst": rng.choice(words, n), "user": rng.choice(["u1", "u2", "u3"], n),
        "x": rng.normal(size=n), "y": rng.integers(0, 2, n),
    })
    frame["genres"] = pd.Series(
        [list(rng.choice(["drama", "comedy", "action", "noir"], rng.integers(0, 4))) for _ in range(n)],
        dtype=pd.ArrowDtype(pa.list_(pa.string())),
    )
    cats = ([["src", "dst"]] >> ops.Categorify(encode_type="joint")) + (["user", "genres"] >> ops.Categorify())
    workflow = nvt.Workflow(cats + (["x"] >> ops.Normalize()) + ["y"])
    out = workflow.fit_transform(frame)
    return workflow, out


def test_from_schema_joint_group_shares_one_table(fitted):
    workflow, out = fitted
    schema = workflow.output_schema
    tables = EmbeddingTables.from_schema(schema, dims={"src_dst": 5, "user": 3, "genres": 4}, combiner="mean")
    assert list(tables.tables) == ["src_dst", "user", "genres"]
    assert [f.table for f in tables.features] == ["src_dst", "src_dst", "user", "genres"]
    assert tables.tables["src_dst"].weight.shape == (schema["src"].properties["cardinality"], 5)
    assert isinstance(tables.tables["user"], torch.nn.Embedding)
    assert isinstance(tables.tables["genres"], torch.nn.EmbeddingBag)
    with Loader(nvt.Dataset(out, schema=schema), batch_size=64, labels=["y"]) as loader:
        inputs, _ = next(iter(loader))
    embedded = tables(inputs)
    weight = tables.tables["src_dst"].weight
    torch.testing.assert_close(embedded["src"], weight[inputs["src"]])
    torch.testing.assert_close(embedded["dst"], weight[inputs["dst"]])


def test_loader_layouts_agree(fitted):
    workflow, out = fitted
    schema = workflow.output_schema
    tables = EmbeddingTables.from_schema(schema, dims=4, combiner="sqrtn")
    dataset = nvt.Dataset(out, schema=schema)
    with Loader(dataset, batch_size=20, labels=["y"]) as ragged, Loader(
        dataset, batch_size=20, labels=["y"], sparse_as_dense=True, sparse_max={"genres": 3}
    ) as dense:
        for (a, _), (b, _) in zip(ragged, dense):
            assert "genres__values" in a and b["genres"].dim() == 2
            torch.testing.assert_close(tables(a)["genres"], tables(b)["genres"])


def test_explicit_shared_and_options(fitted):
    workflow, _ = fitted
    schema = workflow.output_schema
    tables = EmbeddingTables.from_schema(schema, shared={"people": ["user", "genres"]}, dims=3, columns=["user", "genres"])
    assert list(tables.tables) == ["people"]
    cardinality = max(schema["user"].properties["cardinality"], schema["genres"].properties["cardinality"])
    assert tables.tables["people"].weight.shape == (cardinality, 3)
    by_rule = EmbeddingTables.from_schema(schema, default_dim_rule=lambda n: n + 1, dims={"genres": 2})
    assert by_rule.tables["user"].embedding_dim == schema["user"].properties["cardinality"] + 1
    assert by_rule.tables["genres"].embedding_dim == 2
    with pytest.raises(ValueError, match="combiner"):
        EmbeddingTables.from_schema(schema, combiner="max")
    with pytest.raises(ValueError, match="one dim"):
        EmbeddingTables.from_schema(schema, dims={"src": 4, "dst": 8})
    with pytest.raises(KeyError, match="nope"):
        EmbeddingTables.from_schema(schema, shared={"t": ["nope"]})


def test_default_dims_follow_schema_suggestion(fitted):
    workflow, _ = fitted
    tables = EmbeddingTables.from_schema(workflow.output_schema)
    sizes = workflow.output_schema["user"].properties["embedding_sizes"]
    assert tables.tables["user"].weight.shape == (sizes["cardinality"], sizes["dimension"])


def test_yaml_round_trip(fitted, tmp_path):
    workflow, _ = fitted
    tables = EmbeddingTables.from_schema(workflow.output_schema, dims=6, combiner={"genres": "sqrtn"})
    path = tmp_path / "embedding_config.yml"
    text = tables.to_yaml(path)
    loaded = yaml.safe_load(path.read_text())
    assert loaded == yaml.safe_load(text) == tables.embedding_config()
    assert loaded == embedding_config(workflow.output_schema, dims=6, combiner={"genres": "sqrtn"})
    slot = loaded["slots_config"]["genres"]
    assert slot == {
        "dim": 6, "cardinality": workflow.output_schema["genres"].properties["cardinality"],
        "embedding_summation": True, "combiner": "sqrtn", "multi_hot": True, "table": "genres",
    }
    assert loaded["feature_groups"] == {"src_dst": ["src", "dst"]}
    rebuilt = EmbeddingTables.from_config(str(path))
    assert rebuilt.features == tables.features
    assert {k: t.weight.shape for k, t in rebuilt.tables.items()} == {k: t.weight.shape for k, t in tables.tables.items()}
    assert EmbeddingTables.from_config(text).features == tables.features


def test_config_without_cardinality_is_rejected():
    schema = Schema([ColumnSchema("c", dtype="int64", tags={Tags.CATEGORICAL})])
    with pytest.raises(ValueError, match="nothing to embed"):
        embedding_config(schema)
    with pytest.raises(ValueError, match="cardinality"):
        embedding_config(schema, columns=["c"])


# ------------------------------------------------------------------------------ optimizers


def test_sparse_tables_give_sparse_gradients():
    tables = _tables(sparse=True)
    values, offsets = _values_offsets(BAGS)
    out = tables({"c": torch.tensor([1, 2, 3, 4, 5]), "l__values": values, "l__offsets": offsets})
    torch.cat([out["c"], out["l"]], 1).sum().backward()
    assert all(t.weight.grad.is_sparse for t in tables.tables.values())
    sparse, dense = sparse_and_dense_parameters(torch.nn.ModuleDict({"emb": tables, "head": torch.nn.Linear(6, 1)}))
    assert len(sparse) == 2 and len(dense) == 2


def test_dlrm_interactions_shape():
    tables = EmbeddingTables([EmbeddingFeature(n, n, 5, 4) for n in "abc"])
    model = DLRM(tables, continuous=["x", "z"], bottom_mlp=[8, 4], top_mlp=[6])
    # 4 vectors (bottom + 3 embeddings): 6 pairs, plus the 4-wide bottom output.
    assert model.top[0].in_features == 4 + 6
    with pytest.raises(ValueError, match="8 wide"):
        DLRM(tables, continuous=["x"], bottom_mlp=[8])


def test_dlrm_training_reduces_loss_on_planted_problem():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    n = 2048
    item = rng.integers(0, 20, n)
    lengths = rng.integers(0, 4, n)
    tags = [list(rng.integers(0, 8, k)) for k in lengths]
    x = rng.normal(size=n)
    # The click depends on the item, on one tag and on x.
    logit = np.where(item % 2 == 0, 1.5, -1.5) + np.array([2.0 if 3 in t else -0.5 for t in tags]) + x
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    frame = pd.DataFrame({"item": item, "x": x, "y": y})
    frame["tags"] = pd.Series(tags, dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    workflow = nvt.Workflow((["item", "tags"] >> ops.Categorify()) + (["x"] >> ops.Normalize()) + ["y"])
    out = workflow.fit_transform(frame)
    model = DLRM.from_schema(workflow.output_schema, embedding_dim=8, bottom_mlp=[16], top_mlp=[16], combiner="mean")
    sparse, dense = sparse_and_dense_parameters(model)
    assert len(sparse) == 2 and dense
    optimizers = [torch.optim.SparseAdam(sparse, lr=0.05), torch.optim.Adam(dense, lr=0.01)]
    loss_fn = torch.nn.BCEWithLogitsLoss()

    def epoch_loss(train: bool) -> float:
        total, rows = 0.0, 0
        with Loader(nvt.Dataset(out, schema=workflow.output_schema), batch_size=256, labels=["y"], shuffle=train) as loader:
            for inputs, target in loader:
                loss = loss_fn(model(inputs), target.float())
                if train:
                    for opt in optimizers:
                        opt.zero_grad()
                    loss.backward()
                    for opt in optimizers:
                        opt.step()
                total += loss.item() * len(target)
                rows += len(target)
        return total / rows

    with torch.no_grad():
        before = epoch_loss(False)
    for _ in range(6):
        epoch_loss(True)
    with torch.no_grad():
        after = epoch_loss(False)
    assert after < before - 0.1, (before, after)
