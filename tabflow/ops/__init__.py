"""Ops: the steps of a workflow graph. One public op per module.

Examples
--------
>>> from tabflow import ops
>>> "Normalize" in ops.__all__
True
"""

from __future__ import annotations

from tabflow.graph.selector import (
    ColumnSelector,  # NVTabular 23.08 re-exported it here too
)
from tabflow.ops.add_metadata import (
    AddMetadata,
    AddProperties,
    AddTags,
    TagAsItemFeatures,
    TagAsItemID,
    TagAsUserFeatures,
    TagAsUserID,
)
from tabflow.ops.bucketize import Bucketize
from tabflow.ops.categorify import Categorify
from tabflow.ops.clip import Clip
from tabflow.ops.column_similarity import ColumnSimilarity
from tabflow.ops.data_stats import DataStats
from tabflow.ops.difference_lag import DifferenceLag
from tabflow.ops.drop_low_cardinality import DropLowCardinality
from tabflow.ops.dropna import Dropna
from tabflow.ops.embedding_sizes import get_embedding_sizes
from tabflow.ops.fill_median import FillMedian
from tabflow.ops.fill_missing import FillMissing
from tabflow.ops.filter import Filter
from tabflow.ops.groupby import Groupby
from tabflow.ops.hash_bucket import HashBucket
from tabflow.ops.hashed_cross import HashedCross
from tabflow.ops.hex_to_int import HexToInt
from tabflow.ops.join_external import JoinExternal
from tabflow.ops.join_groupby import JoinGroupby
from tabflow.ops.lambdaop import LambdaOp
from tabflow.ops.list_slice import ListSlice
from tabflow.ops.logop import LogOp
from tabflow.ops.normalize import Normalize
from tabflow.ops.normalize_minmax import NormalizeMinMax
from tabflow.ops.operator import NotFittedError, NotUpdatableError, Operator, StatOperator
from tabflow.ops.reduce_dtype_size import ReduceDtypeSize
from tabflow.ops.rename import Rename
from tabflow.ops.target_encoding import TargetEncoding
from tabflow.ops.value_count import ValueCount

__all__ = [
    "ColumnSelector",
    "Operator",
    "StatOperator",
    "NotFittedError",
    "NotUpdatableError",
    "Clip",
    "Categorify",
    "get_embedding_sizes",
    "Normalize",
    "NormalizeMinMax",
    "FillMissing",
    "FillMedian",
    "LogOp",
    "LambdaOp",
    "Rename",
    "JoinGroupby",
    "TargetEncoding",
    "JoinExternal",
    "DifferenceLag",
    "Groupby",
    "ColumnSimilarity",
    "AddMetadata",
    "AddTags",
    "AddProperties",
    "TagAsUserID",
    "TagAsItemID",
    "TagAsUserFeatures",
    "TagAsItemFeatures",
    "Bucketize",
    "DataStats",
    "DropLowCardinality",
    "Dropna",
    "Filter",
    "HashBucket",
    "HashedCross",
    "HexToInt",
    "ListSlice",
    "ReduceDtypeSize",
    "ValueCount",
]
