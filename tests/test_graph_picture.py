"""node.graph: a Graphviz SVG when graphviz and dot are there, else matplotlib, else text; never an error."""

from __future__ import annotations

import shutil
import sys
import xml.etree.ElementTree as ET

import pytest

import tabflow as nvt
from tabflow import ops

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]
SVG = "{http://www.w3.org/2000/svg}"


def _graphviz_ready() -> bool:
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


needs_graphviz = pytest.mark.skipif(not _graphviz_ready(), reason="needs the graphviz package and the dot program")


def _per_column_workflow():
    # One Categorify per column, joined by a chain of 25 `+`, as scripts written column by
    # column build it; a statistics chain; ops with dependencies (dashed edges).
    node = [CATS[0]] >> ops.Categorify(freq_threshold=15)
    for name in CATS[1:]:
        node = node + ([name] >> ops.Categorify(freq_threshold=15))
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    encoded = ["C1", "C2"] >> ops.TargetEncoding("label")
    joined = ["C3"] >> ops.JoinGroupby(cont_cols=["I1"], stats=["mean", "count"])
    return nvt.Workflow(node + conts + encoded + joined + ["label"])


def _without(monkeypatch, *packages):
    """Make ``import package`` (and its submodules) fail, as in an install without it."""
    for name in list(sys.modules):
        if name.split(".")[0] in packages:
            monkeypatch.setitem(sys.modules, name, None)
    for name in packages:
        monkeypatch.setitem(sys.modules, name, None)


def _svg_shapes(svg: str):
    root = ET.fromstring(svg)
    groups = list(root.iter(f"{SVG}g"))
    nodes = {g.find(f"{SVG}title").text: g for g in groups if g.get("class") == "node"}
    edges = [g.find(f"{SVG}title").text.replace("&#45;", "-").split("->") for g in groups if g.get("class") == "edge"]
    return nodes, edges, groups


def _texts(group) -> str:
    return " ".join(t.text or "" for t in group.iter(f"{SVG}text"))


@needs_graphviz
def test_jupyter_gets_an_svg_of_every_node_with_concatenation_chains_drawn_as_one():
    workflow = _per_column_workflow()
    picture = workflow.output_node.graph
    bundle = picture._repr_mimebundle_()
    assert set(bundle) == {"image/svg+xml", "text/plain"}
    nodes, edges, _ = _svg_shapes(bundle["image/svg+xml"])
    plus = [n for n in workflow.nodes if n.kind == "concat"]
    # The 29 two-input `+` nodes are drawn as one `+` taking all 30 inputs.
    assert len(plus) == 29 and len(nodes) == len(workflow.nodes) - 28
    (drawn_plus,) = [node_id for node_id, group in nodes.items() if _texts(group).strip() == "+"]
    assert drawn_plus == str(workflow.output_node.id)
    inputs = sorted(int(a) for a, b in edges if b == drawn_plus)
    expected = [n.id for n in workflow.nodes if n.kind != "concat" and any(c.kind == "concat" and n in c.parents for c in workflow.nodes)]
    assert inputs == sorted(expected) and len(inputs) == 26 + 4
    labels = [_texts(group) for group in nodes.values()]
    assert sum("Categorify" in text and "freq_threshold=15" in text for text in labels) == 26
    assert any("Clip" in text and "min_value=0" in text for text in labels)
    assert any("… (13 columns)" in text for text in labels)
    # Every edge of the graph but those into merged `+` nodes is drawn, dependencies dashed.
    drawn = {(a, b) for a, b in edges}
    for node in workflow.nodes:
        if node.kind != "concat":
            for parent in node.parents:
                assert (str(parent.id), str(node.id)) in drawn
    dashed = [g for g in _svg_shapes(bundle["image/svg+xml"])[2] if g.get("class") == "edge" and "stroke-dasharray" in ET.tostring(g, encoding="unicode")]
    assert len(dashed) == sum(len(n.dependencies) for n in workflow.nodes) == 2


@needs_graphviz
def test_column_names_with_markup_characters_are_drawn_as_written():
    names = ['a<b>', 'x & y', 'q"uote', "back\\slash"]
    picture = (names >> ops.Clip(min_value=0)).graph
    svg = picture.to_svg()
    text = " ".join(_texts(group) for group in _svg_shapes(svg)[0].values())
    for name in names:
        assert name in text
    digraph = picture.to_graphviz()
    assert type(digraph).__name__ == "Digraph" and "rankdir=LR" in digraph.source


def test_without_the_dot_program_jupyter_gets_the_matplotlib_picture(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` to run
    bundle = (["x"] >> ops.FillMissing() >> ops.Normalize()).graph._repr_mimebundle_()
    assert set(bundle) == {"image/png", "text/plain"}
    assert bundle["image/png"][:8] == b"\x89PNG\r\n\x1a\n"


def test_without_the_graphviz_package_jupyter_gets_the_matplotlib_picture(monkeypatch):
    pytest.importorskip("matplotlib")
    _without(monkeypatch, "graphviz")
    picture = (["x"] >> ops.FillMissing() >> ops.Normalize()).graph
    bundle = picture._repr_mimebundle_()
    assert set(bundle) == {"image/png", "text/plain"} and bundle["image/png"][1:4] == b"PNG"
    with pytest.raises(ImportError, match="pip install graphviz"):
        picture.to_graphviz()


def test_without_graphviz_and_matplotlib_jupyter_shows_a_text_description(monkeypatch):
    pytest.importorskip("IPython")
    from IPython.core.formatters import DisplayFormatter

    _without(monkeypatch, "graphviz", "matplotlib")
    node = (["x", "y"] >> ops.FillMissing()) + (["item"] >> ops.JoinGroupby(cont_cols=["price"], stats=["mean"]))
    shown, _ = DisplayFormatter().format(node.graph)  # what IPython does with a cell's value
    assert set(shown) == {"text/plain"}
    assert shown["text/plain"].splitlines() == [
        "[0] x, y",
        "[1] FillMissing <- [0]",
        "[2] item",
        "[3] price",
        "[4] JoinGroupby(cont_cols=['price'], stats=['mean']) <- [2] <= [3]",
        "[5] + <- [1], [4]",
        "(for a picture install the graphviz package and Graphviz's dot program, e.g. `pip install graphviz` "
        "and `apt install graphviz`, or matplotlib)",
    ]


def test_description_shortens_long_column_lists_and_names_drops():
    workflow = nvt.Workflow((CATS >> ops.Categorify()) - ["C2"])
    lines = str(workflow.output_node.graph).splitlines()
    assert lines == ["[0] C1, C2, C3, C4, C5, C6, C7, C8, … (26 columns)", "[1] Categorify <- [0]", "[2] - C2 <- [1]"]
