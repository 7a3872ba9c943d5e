"""Model: forward pass against a hand-written torch computation, shapes from get_embedding_sizes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from framework_data import write_etl_output

from tabflow.framework_utils.torch.models import Model
from tabflow.ops import get_embedding_sizes


@pytest.fixture(scope="module")
def etl(tmp_path_factory):
    return write_etl_output(tmp_path_factory.mktemp("framework_utils"))


def _batch_norm_eval(x: torch.Tensor, bn: torch.nn.BatchNorm1d) -> torch.Tensor:
    return (x - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias


def _reference_forward(model: Model, x_single, bags, x_cont) -> torch.Tensor:
    """The network written out with plain tensor ops (eval mode: no dropout, running BN stats)."""
    parts = []
    if bags is not None:
        for layer, name in zip(model.mh_cat_layer.embedding_layers, model.mh_cat_layer.embedding_names):
            values, offsets = bags[name]
            rows = [values[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
            parts.append(torch.stack([layer.weight[r].sum(0) for r in rows]))
    if x_single is not None:
        parts += [layer.weight[x_single[:, i]] for i, layer in enumerate(model.initial_cat_layer.embedding_layers)]
    if x_cont is not None:
        parts.append(_batch_norm_eval(x_cont, model.initial_cont_layer))
    x = torch.cat(parts, dim=1)
    for block in model.layers:
        linear, _, bn, _ = block
        x = _batch_norm_eval(F.relu(x @ linear.weight.T + linear.bias), bn)
    x = x @ model.output_layer.weight.T + model.output_layer.bias
    if model.max_output:
        x = model.max_output * torch.sigmoid(x)
    return x.view(-1)


def _randomise_batch_norm_statistics(model: Model) -> None:
    gen = torch.Generator().manual_seed(3)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm1d) and module.num_features:
            module.running_mean.copy_(torch.randn(module.num_features, generator=gen))
            module.running_var.copy_(torch.rand(module.num_features, generator=gen) + 0.5)


@pytest.mark.parametrize("max_output", [None, 3.0])
def test_forward_matches_a_plain_torch_computation(max_output):
    torch.manual_seed(0)
    model = Model(({"u": (7, 3), "i": (5, 2)}, {"tags": (6, 4)}), num_continuous=2, emb_dropout=0.1,
                  layer_hidden_dims=[8, 4], layer_dropout_rates=[0.2, 0.1], max_output=max_output)
    with torch.no_grad():
        _randomise_batch_norm_statistics(model)
    model.eval()
    x_single = torch.tensor([[1, 2], [6, 4], [3, 1]])
    bags = {"tags": (torch.tensor([1, 2, 5, 3]), torch.tensor([0, 2, 2, 4]))}
    x_cont = torch.randn(3, 2)
    with torch.no_grad():
        out = model((x_single, bags), x_cont)
        expected = _reference_forward(model, x_single, bags, x_cont)
    torch.testing.assert_close(out, expected)
    assert out.shape == (3,) and out.dtype == torch.float32
    if max_output:
        assert bool(((out > 0) & (out < max_output)).all())


def test_module_names_and_widths_follow_nvtabular():
    model = Model(({"u": (7, 3)}, {"tags": (6, 4)}), 2, 0.0, [8, 4], [0.0, 0.0])
    keys = set(model.state_dict())
    assert {"initial_cat_layer.embedding_layers.0.weight", "mh_cat_layer.embedding_layers.0.weight",
            "initial_cont_layer.running_mean", "layers.0.0.weight", "layers.1.2.running_var",
            "output_layer.weight"} <= keys
    assert model.layers[0][0].in_features == 3 + 4 + 2
    assert isinstance(model.layers[0][1], torch.nn.ReLU) and isinstance(model.layers[0][2], torch.nn.BatchNorm1d)
    assert model.output_layer.in_features == 4


def test_single_hot_only_and_continuous_only():
    torch.manual_seed(0)
    cats_only = Model({"u": (7, 3)}, 0, 0.0, [4], [0.0])
    assert not hasattr(cats_only, "mh_cat_layer")
    # TorchAsyncItr with conts=[] gives a [batch, 0] x_cont; it counts as no continuous input.
    assert cats_only(torch.tensor([[1], [2]]), torch.zeros(2, 0)).shape == (2,)
    assert cats_only(torch.tensor([[1], [2]]), None).shape == (2,)
    conts_only = Model({}, 3, 0.0, [4], [0.0])
    assert not hasattr(conts_only, "initial_cat_layer")
    assert conts_only(None, torch.randn(5, 3)).shape == (5,)
    assert conts_only(torch.zeros(5, 0, dtype=torch.int64), torch.randn(5, 3)).shape == (5,)


def test_embedding_shapes_from_get_embedding_sizes(etl):
    _, workflow, _ = etl
    single, multi = get_embedding_sizes(workflow)
    model = Model((single, multi), num_continuous=2, emb_dropout=0.0, layer_hidden_dims=[8], layer_dropout_rates=[0.0])
    tables = [tuple(t.weight.shape) for t in model.initial_cat_layer.embedding_layers]
    assert tables == [single["user"], single["item"]]
    assert [tuple(t.weight.shape) for t in model.mh_cat_layer.embedding_layers] == [multi["tags"]]
    single_only = Model(single, 2, 0.0, [8], [0.0])
    assert single_only.layers[0][0].in_features == sum(dim for _, dim in single.values()) + 2


@pytest.mark.parametrize(
    "args, error, match",
    [
        (({"u": (7, 3)}, 0, 0.0, [8, 4], [0.0]), ValueError, "one rate per hidden layer"),
        (({"u": (7, 3)}, 0, 0.0, [], []), ValueError, "at least one hidden layer"),
        (({}, 0, 0.0, [4], [0.0]), ValueError, "no input"),
        (([(7, 3)], 0, 0.0, [4], [0.0]), TypeError, "embedding_table_shapes"),
        ((({"u": (7, 3)}, {}, {}), 0, 0.0, [4], [0.0]), ValueError, "single_hot, multi_hot"),
    ],
)
def test_constructor_errors(args, error, match):
    with pytest.raises(error, match=match):
        Model(*args)


def test_forward_names_a_missing_or_unexpected_input():
    model = Model(({"u": (7, 3)}, {"tags": (5, 2)}), 2, 0.0, [4], [0.0])
    x_single, x_cont = torch.tensor([[1], [2]]), torch.randn(2, 2)
    bags = {"tags": (torch.tensor([1]), torch.tensor([0, 1, 1]))}
    with pytest.raises(ValueError, match="expects multi-hot columns"):
        model(x_single, x_cont)
    with pytest.raises(ValueError, match="expects single-hot"):
        model((None, bags), x_cont)
    with pytest.raises(ValueError, match="expects continuous"):
        model((x_single, bags), None)
    single_only = Model({"u": (7, 3)}, 0, 0.0, [4], [0.0])
    with pytest.raises(ValueError, match="batch has multi-hot columns but the model was built without"):
        single_only((x_single, bags), None)
    with pytest.raises(ValueError, match="batch has continuous columns"):
        single_only(x_single, x_cont)
