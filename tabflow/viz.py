"""Pictures of workflows: ``workflow.output_node.graph`` (Graphviz SVG in Jupyter, with
matplotlib and plain text as fallbacks) and :func:`plot_workflow` (matplotlib).

The drawing code lives with the graph (:mod:`tabflow.graph.picture`, which ``node.graph``
uses); this module is where scripts import it from. Optional packages (graphviz,
matplotlib) are imported only when drawing.

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

from tabflow.graph.picture import GraphPicture, plot_workflow, workflow_layout

__all__ = ["plot_workflow", "workflow_layout", "GraphPicture"]
