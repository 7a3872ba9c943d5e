"""ConcatenatedEmbeddings and MultiHotEmbeddings against plain-torch lookups and pooling."""

from __future__ import annotations

import pytest
import torch

from tabflow.framework_utils.torch.layers import (
    ConcatenatedEmbeddings,
    MultiHotEmbeddings,
)

ROWS = [[1, 2], [], [5], [3, 3, 4]]


def _pool_reference(weight: torch.Tensor, rows: list[list[int]], mode: str) -> torch.Tensor:
    """One pooled vector per row, by Python loops over the table rows; empty rows are zeros."""
    out = []
    for row in rows:
        if not row:
            out.append(torch.zeros(weight.shape[1]))
            continue
        vectors = weight[torch.tensor(row)]
        out.append({"sum": vectors.sum(0), "mean": vectors.mean(0), "max": vectors.max(0).values}[mode])
    return torch.stack(out)


def _flat(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    values = torch.tensor([v for row in rows for v in row], dtype=torch.int64)
    offsets = torch.tensor([0] + list(torch.tensor([len(r) for r in rows]).cumsum(0)), dtype=torch.int64)
    return values, offsets


def test_concatenated_embeddings_look_up_each_column_in_its_table():
    torch.manual_seed(0)
    emb = ConcatenatedEmbeddings({"a": (6, 3), "b": (4, 2)})
    x = torch.tensor([[1, 2], [5, 0], [3, 3]])
    tables = [layer.weight.detach() for layer in emb.embedding_layers]
    expected = torch.cat([tables[0][x[:, 0]], tables[1][x[:, 1]]], dim=1)
    torch.testing.assert_close(emb(x), expected)
    assert emb.output_dim == 5 and emb.embedding_names == ["a", "b"]


def test_concatenated_embeddings_one_dimensional_input():
    emb = ConcatenatedEmbeddings({"a": (6, 3), "b": (4, 2)})
    # One index per table: a single example, as in NVTabular.
    torch.testing.assert_close(emb(torch.tensor([1, 2])), emb(torch.tensor([[1, 2]])))
    single = ConcatenatedEmbeddings({"a": (6, 3)})
    torch.testing.assert_close(single(torch.tensor([1, 4, 5])), single(torch.tensor([[1], [4], [5]])))


def test_concatenated_embeddings_dropout_and_sparse_columns():
    emb = ConcatenatedEmbeddings({"a": (6, 3), "b": (4, 2)}, dropout=0.5, sparse_columns=["b"])
    assert [layer.sparse for layer in emb.embedding_layers] == [False, True]
    assert emb.dropout.p == 0.5
    emb.eval()  # no dropout: deterministic
    emb(torch.tensor([[1, 2]])).sum().backward()
    assert emb.embedding_layers[1].weight.grad.is_sparse and not emb.embedding_layers[0].weight.grad.is_sparse


def test_concatenated_embeddings_accept_json_lists():
    emb = ConcatenatedEmbeddings({"Store": [1116, 81], "Year": [4, 16]})  # Rossmann's stats.json
    assert [tuple(layer.weight.shape) for layer in emb.embedding_layers] == [(1116, 81), (4, 16)]


@pytest.mark.parametrize(
    "shapes, kwargs, error, match",
    [
        ({"a": (6, 3)}, {"sparse_columns": ["b"]}, ValueError, "sparse_columns"),
        ({}, {}, ValueError, "at least one table"),
        ({"a": (0, 3)}, {}, ValueError, "positive"),
        ({"a": (6,)}, {}, ValueError, "cardinality, width"),
        (({"a": (6, 3)}, {}), {}, TypeError, "Model"),
    ],
)
def test_concatenated_embeddings_errors(shapes, kwargs, error, match):
    with pytest.raises(error, match=match):
        ConcatenatedEmbeddings(shapes, **kwargs)


def test_concatenated_embeddings_wrong_width_is_an_error():
    emb = ConcatenatedEmbeddings({"a": (6, 3), "b": (4, 2)})
    with pytest.raises(ValueError, match=r"\[batch, 2\]"):
        emb(torch.tensor([[1, 2, 3]]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_multi_hot_embeddings_every_input_form_matches_the_reference(mode):
    torch.manual_seed(1)
    emb = MultiHotEmbeddings({"tags": (7, 3)}, mode=mode)
    expected = _pool_reference(emb.embedding_layers[0].weight.detach(), ROWS, mode)
    values, offsets = _flat(ROWS)
    width = max(len(r) for r in ROWS)
    padded = torch.tensor([row + [0] * (width - len(row)) for row in ROWS])
    coords = [(i, j) for i, row in enumerate(ROWS) for j in range(len(row))]
    sparse = torch.sparse_coo_tensor(torch.tensor(coords).T, values, size=(len(ROWS), width), check_invariants=True)
    starts = offsets[:-1].unsqueeze(1)  # NVTabular's loaders: each row's start, [batch, 1]
    forms = {
        "values/offsets": (values, offsets),
        "nvtabular starts": (values.unsqueeze(1), starts),
        "padded dense": padded,
        "sparse": sparse,
    }
    for form, data in forms.items():
        torch.testing.assert_close(emb({"tags": data}), expected, msg=lambda m, form=form: f"{form}: {m}")


def test_multi_hot_embeddings_concatenate_columns_in_table_order():
    emb = MultiHotEmbeddings({"a": (5, 2), "b": (6, 3)}, mode="sum")
    batch = {"b": _flat([[1], [2, 3]]), "a": _flat([[4, 4], [1]])}
    out = emb(batch)
    wa, wb = (layer.weight.detach() for layer in emb.embedding_layers)
    expected = torch.cat([_pool_reference(wa, [[4, 4], [1]], "sum"), _pool_reference(wb, [[1], [2, 3]], "sum")], dim=1)
    torch.testing.assert_close(out, expected)
    assert out.shape == (2, emb.output_dim)


def test_multi_hot_embeddings_errors():
    with pytest.raises(ValueError, match="mode"):
        MultiHotEmbeddings({"a": (5, 2)}, mode="median")
    emb = MultiHotEmbeddings({"a": (5, 2)})
    with pytest.raises(KeyError, match="'a'"):
        emb({"b": _flat([[1]])})
    with pytest.raises(ValueError, match="offsets"):
        emb({"a": (torch.tensor([1, 2]), torch.zeros(2, 2, dtype=torch.int64))})
    with pytest.raises(TypeError, match="tensor"):
        emb({"a": 1})
