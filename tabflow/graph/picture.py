"""Pictures of graphs of nodes, drawn with matplotlib (imported only when drawing).

``node.graph`` and :func:`tabflow.viz.plot_workflow` (the public module) use these.

Examples
--------
>>> import tabflow as nvt
>>> from tabflow import ops
>>> from tabflow.viz import plot_workflow
>>> wf = nvt.Workflow((["a"] >> ops.Categorify()) + (["x"] >> ops.FillMissing() >> ops.Normalize()))
>>> ax = plot_workflow(wf)
>>> sorted(t.get_text() for t in ax.texts)
['+', 'Categorify', 'FillMissing', 'Normalize', 'a', 'x']
"""

from __future__ import annotations

from typing import Any

__all__ = ["plot_workflow", "workflow_layout", "GraphPicture"]

# Fill colour per node kind: inputs, ops (statistics ops darker), structure, drop, subgraph.
_COLORS = {
    "selection": "#dbe9f6", "op": "#fde7c6", "stat": "#f9c784", "concat": "#e4e4e4", "group": "#e4e4e4",
    "subset": "#e4e4e4", "drop": "#f4cccc", "subgraph": "#d9ead3",
}


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
    """Draw a workflow's node graph, inputs on the left and the output on the right.

    Boxes are nodes labelled like ``node.label`` (input columns, op class, ``+`` for a
    concatenation, ``- cols`` for dropped columns); arrows go from each parent to its child, dashed for dependencies (e.g.
    the columns a JoinGroupby aggregates). Statistics ops have a darker fill.

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

        width = max(x for x, _ in positions.values()) + 1
        height = max(abs(y) for _, y in positions.values()) * 2 + 1
        _, ax = plt.subplots(figsize=(min(2.4 * width + 1, 18), min(0.8 * height + 1, 12)))
    nodes = {node.id: node for node in workflow.nodes}
    for node in workflow.nodes:
        for upstream, style in [*((p, "-") for p in node.parents), *((d, "--") for d in node.dependencies)]:
            # Shrinking in points keeps the arrow heads outside the label boxes.
            ax.add_patch(
                FancyArrowPatch(
                    positions[upstream.id], positions[node.id], arrowstyle="-|>", mutation_scale=12,
                    linestyle=style, color="#555555", shrinkA=18, shrinkB=18, zorder=1,
                )
            )
    for node_id, (x, y) in positions.items():
        node = nodes[node_id]
        kind = "stat" if _is_statistics_op(node.op) else node.kind
        label = _label(node)
        if len(label) > max_label:
            label = label[: max_label - 1] + "…"
        ax.text(
            x, y, label, ha="center", va="center", fontsize=9, zorder=2,
            bbox={"boxstyle": "round,pad=0.4", "facecolor": _COLORS[kind], "edgecolor": "#333333"},
        )
    xs = [x for x, _ in positions.values()]
    ys = [y for _, y in positions.values()]
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.7)
    ax.set_axis_off()
    return ax


def _label(node: Any) -> str:
    return node.label


def _is_statistics_op(op: Any) -> bool:
    # Statistics ops are fitted in map / combine / finalize steps (or NVTabular's ``fit``).
    return op is not None and callable(getattr(op, "fit_finalize", None))


class GraphPicture:
    """The graph of nodes ending at one node, as ``node.graph`` returns it.

    A Jupyter cell ending in ``node.graph`` shows it (drawn with matplotlib, as
    :func:`plot_workflow` draws); ``to_graphviz()`` gives the same graph as a
    ``graphviz.Digraph`` for those who have the ``graphviz`` package.

    Examples
    --------
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> picture = (["x"] >> ops.FillMissing() >> ops.Normalize()).graph
    >>> [node.label for node in picture.nodes]
    ['x', 'FillMissing', 'Normalize']
    >>> picture._repr_png_()[1:4]  # shown inline by Jupyter
    b'PNG'
    """

    def __init__(self, output_node: Any) -> None:
        self.nodes = [*output_node.ancestors(), output_node]

    def plot(self, ax: Any = None, max_label: int = 28) -> Any:
        """Draw into ``ax`` (a new figure when omitted); returns the Axes."""
        return plot_workflow(self, ax=ax, max_label=max_label)

    def savefig(self, path: str, dpi: int = 100) -> None:
        """Write the picture to ``path`` (format from the extension: png, svg, pdf)."""
        self._figure(dpi).savefig(path)

    def _repr_png_(self) -> bytes:
        import io

        buffer = io.BytesIO()
        self._figure(100).savefig(buffer, format="png")
        return buffer.getvalue()

    def _figure(self, dpi: int) -> Any:
        # A figure outside pyplot: Jupyter shows the returned image once, not also the figure.
        from matplotlib.figure import Figure

        positions = workflow_layout(self)
        width = max(x for x, _ in positions.values()) + 1
        height = max(abs(y) for _, y in positions.values()) * 2 + 1
        figure = Figure(figsize=(min(2.4 * width + 1, 18), min(0.8 * height + 1, 12)), dpi=dpi)
        self.plot(ax=figure.add_subplot())
        return figure

    def to_graphviz(self) -> Any:
        """The graph as a ``graphviz.Digraph`` (dashed edges are dependencies)."""
        try:
            import graphviz
        except ImportError as err:
            raise ImportError("to_graphviz() needs the graphviz package: pip install graphviz") from err
        digraph = graphviz.Digraph()
        for node in self.nodes:
            digraph.node(str(node.id), _label(node))
            for parent in node.parents:
                digraph.edge(str(parent.id), str(node.id))
            for dependency in node.dependencies:
                digraph.edge(str(dependency.id), str(node.id), style="dashed")
        return digraph

    def __repr__(self) -> str:
        return f"GraphPicture({' -> '.join(node.label for node in self.nodes)})"
