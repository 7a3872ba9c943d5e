"""Reading and writing datasets: ``Dataset``, shuffle modes, readers per file format, the parquet writer.

``merlin.io`` / ``nvtabular.io`` names live here: ``Dataset``, ``Shuffle``, ``shuffle_df``,
``DataFrameIter`` and ``MERLIN_METADATA_DIR_NAME``.

Examples
--------
>>> import pandas as pd
>>> from tabflow.io import Dataset, Shuffle
>>> Dataset(pd.DataFrame({"a": range(4)})).num_rows, Shuffle.PER_PARTITION.value
(4, 0)
"""

from __future__ import annotations

from tabflow.io.dataframe_iter import DataFrameIter
from tabflow.io.dataset import Dataset
from tabflow.io.shuffle import Shuffle, shuffle_df

__all__ = ["Dataset", "DataFrameIter", "Shuffle", "shuffle_df", "MERLIN_METADATA_DIR_NAME"]

#: merlin's hidden directory beside a dataset's files, holding its ``schema.json``
#: (written and read by :mod:`tabflow.compat.tf_metadata`).
MERLIN_METADATA_DIR_NAME = ".merlin"
