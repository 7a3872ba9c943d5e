"""Dataset tools: describe a dataset and generate synthetic data like it (``nvtabular.tools``).

:mod:`~tabflow.tools.dataset_inspector` writes the statistics of a dataset's columns as a
JSON description; :mod:`~tabflow.tools.data_gen` generates frames or parquet files that follow
such a description (seeded, on pandas or cuDF). ``python -m tabflow.tools.inspector_script``
runs the inspector from the command line.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.tools import data_gen, dataset_inspector
>>> df = pd.DataFrame({"x": [0.5, 1.5, 2.5, 3.5], "c": ["a", "b", "a", "bb"], "y": [0, 1, 0, 1]})
>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "stats.json")
>>> described = dataset_inspector.DatasetInspector().inspect(nvt.Dataset(df), {"conts": ["x"], "cats": ["c"], "labels": ["y"]}, path)
>>> cols = data_gen._get_cols_from_schema(described)
>>> gen = data_gen.DatasetGen(data_gen.UniformDistro(), seed=0, cpu=True)
>>> synthetic = gen.create_df(described["num_rows"], cols, entries=True)
>>> list(synthetic.columns), synthetic.shape
(['x', 'c', 'y'], (4, 3))
"""

from __future__ import annotations

from tabflow.tools import data_gen, dataset_inspector

__all__ = ["data_gen", "dataset_inspector"]
