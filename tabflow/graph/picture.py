"""Pictures of graphs of nodes: Graphviz SVG, a matplotlib drawing, or a text description.

``node.graph`` returns a :class:`GraphPicture`, which Jupyter shows inline as an SVG laid out
by Graphviz's ``dot`` (edges routed around the boxes, so workflows of dozens of columns stay
readable) when the ``graphviz`` package and the ``dot`` program are installed, else as a
matplotlib drawing (:func:`plot_workflow`), else as a text description; showing it never
raises. Every optional package is imported only when drawing.

Examples
--------
>>> import tabflow as nvt
>>> from tabflow import ops
>>> from tabflow.viz import plot_workflow
>>> wf = nvt.Workflow((["a"] >> ops.Categorify()) + (["x"] >> ops.FillMissing() >> ops.Normalize()))
>>> ax = plot_workflow(wf)
>>> sorted(t.get_text() for t in ax.texts)
['+', 'Categorify', 'FillMissing', 'Normalize', 'a', 'x']
>>> print(wf.output_node.graph.describe())
[0] a
[1] Categorify <- [0]
[2] x
[3] FillMissing <- [2]
[4] Normalize <- [3]
[5] + <- [1], [4]
"""

from __future__ import annotations

import html
import inspect
import io
import subprocess
from typing import Any

from tabflow.graph.steps import Concat

__all__ = ["plot_workflow", "workflow_layout", "GraphPicture"]

# Fill colour per node kind: inputs, ops (statistics ops darker), structure, drop, subgraph.
_COLORS = {
    "selection": "#dbe9f6", "op": "#fde7c6", "stat": "#f9c784", "concat": "#e4e4e4", "group": "#e4e4e4",
    "subset": "#e4e4e4", "drop": "#f4cccc", "subgraph": "#d9ead3",
}

# Graphviz boxes: column names per line, lines per box, characters of the parameters line.
_NAMES_PER_LINE = 4
_NAME_LINES = 3
_PARAMS_CHARS = 48

_NO_PICTURE_HINT = (
    "(for a picture install the graphviz package and Graphviz's dot program, e.g. "
    "`pip install graphviz` and `apt install graphviz`, or matplotlib)"
)


def workflow_layout(workflow: Any) -> dict[int, tuple[float, float]]:
    """``{node id: (x, y)}`` for drawing a workflow left to right.

    Inputs that ops read sit in column 0; every other node as far right as its consumers
    allow (one column before the earliest of them, the output last), which keeps each op
    next to the ``+`` that uses it. Within a column, nodes are ordered by the mean height of
    their parents, to limit crossing edges, and spread evenly around 0.

    Examples
    --------
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> from tabflow.viz import workflow_layout
    >>> wf = nvt.Workflow(["x"] >> ops.LogOp())
    >>> sorted(workflow_layout(wf).values())
    [(0.0, 0.0), (1.0, 0.0)]
    """
    nodes = workflow.nodes  # topological: upstream nodes come first
    consumers: dict[int, list[int]] = {node.id: [] for node in nodes}
    depth: dict[int, int] = {}
    for node in nodes:
        upstream = [*node.parents, *node.dependencies]
        depth[node.id] = 1 + max((depth[u.id] for u in upstream), default=-1)
        for u in upstream:
            consumers[u.id].append(node.id)
    column: dict[int, int] = {}
    for node in reversed(nodes):
        after = [column[c] for c in consumers[node.id]]
        column[node.id] = min(after) - 1 if after else max(depth.values())
    by_id = {node.id: node for node in nodes}
    for node in nodes:
        # Inputs that ops read start at the left; pass-through columns (say a label only
        # concatenated to the output) join next to the `+` that takes them.
        if node.kind == "selection" and any(by_id[c].kind == "op" for c in consumers[node.id]):
            column[node.id] = 0
    positions: dict[int, tuple[float, float]] = {}
    for level in sorted(set(column.values())):
        members = [node for node in nodes if column[node.id] == level]

        def height(node: Any) -> float:
            ys = [positions[u.id][1] for u in [*node.parents, *node.dependencies] if u.id in positions]
            return sum(ys) / len(ys) if ys else float("-inf")

        if level > 0:
            members.sort(key=height, reverse=True)
        for i, node in enumerate(members):
            positions[node.id] = (float(level), (len(members) - 1) / 2 - i)
    return positions


def plot_workflow(workflow: Any, ax: Any = None, max_label: int = 28) -> Any:
    """Draw a workflow's node graph with matplotlib, inputs on the left, the output on the right.

    Boxes are nodes labelled like ``node.label`` (input columns, op class, ``+`` for a
    concatenation, ``- cols`` for dropped columns); arrows go from each parent to its child,
    dashed for dependencies (e.g. the columns a JoinGroupby aggregates). Statistics ops
    have a darker fill. For large workflows ``node.graph`` (laid out by Graphviz) reads
    better.

    Parameters
    ----------
    workflow : Workflow
    ax : matplotlib Axes, optional
        Axes to draw into; a new figure is made when omitted.
    max_label : int, default 28
        Longer labels (long column lists) are shortened with an ellipsis.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> from tabflow.viz import plot_workflow
    >>> ax = plot_workflow(nvt.Workflow(["x"] >> ops.Clip(min_value=0) >> ops.LogOp()))
    >>> [t.get_text() for t in ax.texts], len(ax.patches)
    (['x', 'Clip', 'LogOp'], 2)
    """
    from matplotlib.patches import FancyArrowPatch

    positions = workflow_layout(workflow)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=_figure_size(positions))
    nodes = {node.id: node for node in workflow.nodes}
    for node in workflow.nodes:
        for upstream, style in [*((p, "-") for p in _solid(node)), *((d, "--") for d in _dashed(node))]:
            # Shrinking in points keeps the arrow heads outside the label boxes.
            ax.add_patch(
                FancyArrowPatch(
                    positions[upstream.id], positions[node.id], arrowstyle="-|>", mutation_scale=12,
                    linestyle=style, color="#555555", shrinkA=18, shrinkB=18, zorder=1,
                )
            )
    for node_id, (x, y) in positions.items():
        node = nodes[node_id]
        label = node.label
        if len(label) > max_label:
            label = label[: max_label - 1] + "…"
        ax.text(
            x, y, label, ha="center", va="center", fontsize=9, zorder=2,
            bbox={"boxstyle": "round,pad=0.4", "facecolor": _COLORS[_color_kind(node)], "edgecolor": "#333333"},
        )
    xs = [x for x, _ in positions.values()]
    ys = [y for _, y in positions.values()]
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.7)
    ax.set_axis_off()
    return ax


class GraphPicture:
    """The graph of nodes ending at one node, as ``node.graph`` returns it.

    A Jupyter cell ending in ``node.graph`` (NVTabular's ``workflow.output_node.graph``)
    shows the best picture this installation can make: an SVG laid out by Graphviz when the
    ``graphviz`` package and the ``dot`` program are installed, else a matplotlib drawing,
    else the text of :meth:`describe`. Boxes show input columns, ops (statistics ops darker,
    with the parameters that differ from their defaults), ``+`` for concatenations (a chain
    of ``a + b + c`` drawn as one) and ``- cols`` for drops; dashed edges are dependencies.

    Examples
    --------
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> picture = (["x"] >> ops.FillMissing() >> ops.Clip(min_value=0)).graph
    >>> [node.label for node in picture.nodes]
    ['x', 'FillMissing', 'Clip']
    >>> bundle = picture._repr_mimebundle_()  # what Jupyter shows
    >>> sorted(bundle)[-1], bundle["text/plain"].splitlines()[-1]
    ('text/plain', '[2] Clip(min_value=0) <- [1]')
    """

    def __init__(self, output_node: Any) -> None:
        self.nodes = [*output_node.ancestors(), output_node]

    # ---------------------------------------------------------------- graphviz
    def to_graphviz(self) -> Any:
        """The graph as a ``graphviz.Digraph`` (NVTabular's ``node.graph``), laid out left to right.

        Raises ImportError (saying what to install) without the ``graphviz`` package.
        Rendering it (``.pipe()``, ``.render()``, showing it in Jupyter) also needs
        Graphviz's ``dot`` program.
        """
        try:
            import graphviz
        except ImportError as err:
            raise ImportError("drawing with Graphviz needs the graphviz package: pip install graphviz") from err
        digraph = graphviz.Digraph(
            graph_attr={"rankdir": "LR", "nodesep": "0.15", "ranksep": "0.45", "fontname": "Helvetica"},
            node_attr={"shape": "box", "style": "rounded,filled", "fontname": "Helvetica", "fontsize": "11",
                       "color": "#333333", "margin": "0.12,0.05", "height": "0.3"},
            edge_attr={"color": "#555555", "arrowsize": "0.6"},
        )
        merged = _merged_concats(self.nodes)
        for node in self.nodes:
            if node.id in merged:
                continue
            digraph.node(
                str(node.id), _html_label(node), fillcolor=_COLORS[_color_kind(node)],
                tooltip=graphviz.escape(_tooltip(node)), **({"shape": "circle", "width": "0.3"} if node.kind == "concat" else {}),
            )
            for parent in _drawn_upstream(node, _solid(node), merged):
                digraph.edge(str(parent.id), str(node.id))
            for dependency in _drawn_upstream(node, _dashed(node), merged):
                digraph.edge(str(dependency.id), str(node.id), style="dashed")
        return digraph

    def to_svg(self) -> str:
        """The Graphviz picture as SVG text (needs the graphviz package and the dot program)."""
        return self.to_graphviz().pipe(format="svg", encoding="utf-8")

    # -------------------------------------------------------------- matplotlib
    def plot(self, ax: Any = None, max_label: int = 28) -> Any:
        """Draw with matplotlib into ``ax`` (a new figure when omitted); returns the Axes."""
        return plot_workflow(self, ax=ax, max_label=max_label)

    def savefig(self, path: str, dpi: int = 100) -> None:
        """Write the matplotlib drawing to ``path`` (format from the extension: png, svg, pdf)."""
        self._figure(dpi).savefig(path)

    def _figure(self, dpi: int) -> Any:
        # A figure outside pyplot: Jupyter shows the returned image once, not also the figure.
        from matplotlib.figure import Figure

        figure = Figure(figsize=_figure_size(workflow_layout(self)), dpi=dpi)
        self.plot(ax=figure.add_subplot())
        return figure

    # -------------------------------------------------------------------- text
    def describe(self) -> str:
        """The graph as text: one numbered line per node, with the nodes it reads from
        (``<=`` for dependencies)."""
        number = {node.id: k for k, node in enumerate(self.nodes)}
        lines = []
        for node in self.nodes:
            line = f"[{number[node.id]}] {_text_label(node)}"
            if _solid(node):
                line += " <- " + ", ".join(f"[{number[p.id]}]" for p in _solid(node))
            if _dashed(node):
                line += " <= " + ", ".join(f"[{number[d.id]}]" for d in _dashed(node))
            lines.append(line)
        return "\n".join(lines)

    # ----------------------------------------------------------------- Jupyter
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The best picture available (SVG, else PNG) and the text description."""
        bundle: dict[str, Any] = {}
        try:
            bundle["image/svg+xml"] = self.to_svg()
        except (ImportError, RuntimeError, subprocess.CalledProcessError):
            # No graphviz package, no dot program (ExecutableNotFound), or dot failed.
            try:
                buffer = io.BytesIO()
                self._figure(100).savefig(buffer, format="png")
                bundle["image/png"] = buffer.getvalue()
            except ImportError:
                pass
        text = self.describe()
        bundle["text/plain"] = text if bundle else f"{text}\n{_NO_PICTURE_HINT}"
        return bundle

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:
        return f"GraphPicture({' -> '.join(node.label for node in self.nodes)})"


def _figure_size(positions: dict[int, tuple[float, float]]) -> tuple[float, float]:
    width = max(x for x, _ in positions.values()) + 1
    height = max(abs(y) for _, y in positions.values()) * 2 + 1
    return min(2.4 * width + 1, 18), min(0.8 * height + 1, 12)


def _color_kind(node: Any) -> str:
    # Statistics ops are fitted in map / combine / finalize steps (or NVTabular's ``fit``).
    op = node.step.op
    return "stat" if op is not None and callable(getattr(op, "fit_finalize", None)) else node.kind


def _solid(node: Any) -> list[Any]:
    """The nodes whose columns ``node`` takes in as its input: every operand of a ``+``
    (merlin keeps all but the first as dependencies), the parents of other nodes."""
    return [*node.parents, *node.dependencies] if isinstance(node.step, Concat) else node.parents


def _dashed(node: Any) -> list[Any]:
    """The nodes ``node`` reads beside its input (a JoinGroupby's aggregated columns, the
    columns ``a - b`` drops), drawn dashed."""
    return [] if isinstance(node.step, Concat) else node.dependencies


def _merged_concats(nodes: list[Any]) -> set[int]:
    """Ids of ``+`` nodes drawn as part of the ``+`` they feed: a graph saved when each ``+``
    made a node of its own (``a + b + c`` as a chain of two), drawn as one ``+``."""
    consumers: dict[int, list[Any]] = {node.id: [] for node in nodes}
    for node in nodes:
        for upstream in [*node.parents, *node.dependencies]:
            consumers[upstream.id].append(node)
    return {
        node.id for node in nodes
        if node.kind == "concat" and len(consumers[node.id]) == 1 and consumers[node.id][0].kind == "concat"
        and node in _solid(consumers[node.id][0])
    }


def _drawn_upstream(node: Any, upstream: list[Any], merged: set[int]) -> list[Any]:
    """``upstream`` with merged ``+`` nodes replaced by their own drawn inputs."""
    drawn = []
    for item in upstream:
        if item.id in merged:
            drawn.extend(_drawn_upstream(item, _solid(item), merged))
        else:
            drawn.append(item)
    return drawn


def _names(node: Any) -> list[str] | None:
    """Column names a selection or drop node shows, None for other nodes."""
    if node.kind == "selection":
        selector = node.selector
        return [str(name) for name in selector.grouped_names] or [f"tag {tag}" for tag in selector.tags]
    if node.kind == "drop" and node.dropped is not None and node.dropped.names:
        return [str(name) for name in node.dropped.names]
    return None


def _changed_params(op: Any) -> str:
    """``name=value`` for the op's parameters that differ from their defaults."""
    try:
        signature = inspect.signature(type(op).__init__)
    except (TypeError, ValueError):
        return ""
    shown = []
    for name, parameter in signature.parameters.items():
        if parameter.default is inspect.Parameter.empty or not hasattr(op, name):
            continue
        value = getattr(op, name)
        try:
            same = value is parameter.default or bool(value == parameter.default)
        except Exception:  # noqa: BLE001 - e.g. a DataFrame compared with None
            same = False
        if not same:
            text = repr(value)
            shown.append(f"{name}={text if len(text) <= 24 else text[:23] + '…'}")
    return ", ".join(shown)


def _text_label(node: Any) -> str:
    names = _names(node)
    if names is not None:
        prefix = "- " if node.kind == "drop" else ""
        shown = ", ".join(names[:8]) + (f", … ({len(names)} columns)" if len(names) > 8 else "")
        return prefix + shown
    params = _changed_params(node.op) if node.kind == "op" else ""
    return f"{node.label}({params})" if params else node.label


def _html_label(node: Any) -> str:
    """The box's text as a Graphviz HTML-like label (escaped, so any column name is safe)."""
    names = _names(node)
    if names is not None:
        per_line = [names[i : i + _NAMES_PER_LINE] for i in range(0, len(names), _NAMES_PER_LINE)]
        lines = [", ".join(html.escape(name) for name in line) for line in per_line[:_NAME_LINES]]
        if len(per_line) > _NAME_LINES:
            lines[-1] += f", … ({len(names)} columns)"
        prefix = "− " if node.kind == "drop" else ""
        return "<" + prefix + "<BR/>".join(lines) + ">"
    label = f"<B>{html.escape(node.label)}</B>"
    params = _changed_params(node.op) if node.kind == "op" else ""
    if params:
        params = params if len(params) <= _PARAMS_CHARS else params[: _PARAMS_CHARS - 1] + "…"
        label += f'<BR/><FONT POINT-SIZE="9">{html.escape(params)}</FONT>'
    return f"<{label}>"


def _tooltip(node: Any) -> str:
    """Shown on hover in the SVG: every column of a selection, the op with its parameters."""
    names = _names(node)
    if names is not None:
        return ", ".join(names)
    return repr(node.step)[:2000]
