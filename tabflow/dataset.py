"""``tabflow.dataset.Dataset``: the dataset class, whose home is :mod:`tabflow.io.dataset`.

NVTabular scripts import it as ``nvtabular.Dataset``, ``nvtabular.io.Dataset`` or
``merlin.io.Dataset``; all three are this one class (``tabflow.Dataset``,
``tabflow.io.Dataset``, ``tabflow.dataset.Dataset``).

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.dataset import Dataset
>>> from tabflow.io import Dataset as IoDataset
>>> Dataset is nvt.Dataset is IoDataset
True
>>> ds = Dataset(pd.DataFrame({"a": range(10)}), npartitions=2)
>>> ds.num_rows, ds.npartitions, ds.schema["a"].dtype
(10, 2, 'int64')
"""

from __future__ import annotations

from tabflow.io.dataset import Dataset

__all__ = ["Dataset"]
