"""plot_workflow draws one box per node and one arrow per edge, laid out by depth."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import tabflow as nvt  # noqa: E402
from tabflow import ops  # noqa: E402
from tabflow.viz import plot_workflow, workflow_layout  # noqa: E402


def _workflow():
    cats = ["c1", "c2"] >> ops.Categorify()
    conts = ["x"] >> ops.FillMissing() >> ops.Normalize()
    return nvt.Workflow(cats + conts + ["label"])


def test_layout_puts_every_node_right_of_its_parents():
    wf = _workflow()
    positions = workflow_layout(wf)
    assert set(positions) == {node.id for node in wf.nodes}
    for node in wf.nodes:
        for parent in node.parents:
            assert positions[parent.id][0] < positions[node.id][0]
    assert len(set(positions.values())) == len(positions)  # no two boxes on top of each other


def test_plot_draws_nodes_and_edges():
    wf = _workflow()
    figure, ax = plt.subplots()
    try:
        assert plot_workflow(wf, ax=ax) is ax
        labels = [t.get_text() for t in ax.texts]
        assert sorted(labels) == sorted(node.label if node.kind != "concat" else "+" for node in wf.nodes)
        assert {"Categorify", "FillMissing", "Normalize", "+", "c1, c2", "label"} <= set(labels)
        edges = sum(len(node.parents) + len(node.dependencies) for node in wf.nodes)
        assert len(ax.patches) == edges
    finally:
        plt.close(figure)


def test_plot_fitted_workflow_with_dependency_and_long_labels():
    df = pd.DataFrame({"user": ["a", "b", "a"], "item": ["x", "y", "y"], "price": [1.0, 2.0, 3.0]})
    many = [f"col_{i}" for i in range(12)]
    df = df.assign(**{name: 1.0 for name in many})
    joined = ["user"] >> ops.JoinGroupby(cont_cols=["price"], stats=["mean"])
    wf = nvt.Workflow(joined + (many >> ops.Clip(min_value=0))).fit(df)
    ax = plot_workflow(wf, max_label=10)
    try:
        assert all(len(t.get_text()) <= 10 for t in ax.texts)
        styles = {patch.get_linestyle() for patch in ax.patches}
        assert len(ax.patches) == sum(len(n.parents) + len(n.dependencies) for n in wf.nodes)
        assert styles  # solid edges at least
    finally:
        plt.close(ax.figure)


def test_drop_node_shows_dropped_columns():
    wf = nvt.Workflow((["a", "b"] >> ops.Clip(min_value=0)) - ["b"])
    ax = plot_workflow(wf)
    try:
        assert "- b" in [t.get_text() for t in ax.texts]
    finally:
        plt.close(ax.figure)


def test_node_graph_is_a_picture_of_its_ancestors(tmp_path):
    joined = ["item"] >> ops.JoinGroupby(cont_cols=["price"], stats=["mean"])
    node = (["x"] >> ops.FillMissing() >> ops.Normalize()) + joined
    picture = node.graph
    labels = [n.label for n in picture.nodes]
    assert labels[-1] == "+" and {"FillMissing", "Normalize", "JoinGroupby"} <= set(labels)
    assert repr(picture).startswith("GraphPicture(") and repr(picture).endswith("+)")
    ax = picture.plot()
    try:
        assert sorted(t.get_text() for t in ax.texts) == sorted(labels)
    finally:
        plt.close(ax.figure)
    picture.savefig(str(tmp_path / "graph.svg"))
    assert (tmp_path / "graph.svg").read_text().lstrip().startswith("<?xml")


def test_graphviz_export_needs_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz raises ImportError
    with pytest.raises(ImportError, match="pip install graphviz"):
        (["x"] >> ops.LogOp()).graph.to_graphviz()
