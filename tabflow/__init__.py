"""tabflow: GPU/CPU dataframe ETL and asynchronous data loading for recommender and CTR models.

The API is the one NVTabular users know, so ``import tabflow as nvt`` is the only change an
NVTabular script needs.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow import ops
>>> df = pd.DataFrame({"item": ["a", "b", "a"], "price": [1.0, None, 3.0]})
>>> wf = nvt.Workflow((["item"] >> ops.Categorify()) + (["price"] >> ops.FillMissing(0.0)))
>>> wf.fit_transform(df)["item"].tolist()
[3, 4, 3]
"""

from __future__ import annotations

import logging

from tabflow import compat, datasets, dispatch, dtypes, graph, io, ops, schema, serialize, utils
from tabflow.dataset import Dataset
from tabflow.schema import ColumnSchema, Schema
from tabflow.selector import ColumnGroup, ColumnSelector, Node
from tabflow.serialize import register_function
from tabflow.utils import Distributed, Serial
from tabflow.workflow import Workflow

__version__ = "0.1.0"

# Silent unless the application configures logging: what tabflow plans and does (fit passes,
# partitions, files written, directories replaced) goes to the "tabflow.*" loggers at INFO.
logging.getLogger(__name__).addHandler(logging.NullHandler())

#: NVTabular's name of :class:`Node`.
WorkflowNode = Node

__all__ = [
    "Dataset",
    "Workflow",
    "ColumnSelector",
    "ColumnGroup",
    "Node",
    "WorkflowNode",
    "Schema",
    "ColumnSchema",
    "register_function",
    "Distributed",
    "Serial",
    "utils",
    "ops",
    "graph",
    "io",
    "schema",
    "serialize",
    "datasets",
    "dispatch",
    "compat",
    "dtypes",
    "__version__",
]
