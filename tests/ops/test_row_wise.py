"""Ops declared row-wise give the same rows however the data is split into partitions.

A workflow reads many small files as fewer, larger partitions for ops that declare
``row_wise`` (see ``Operator.row_wise``). Each such op is fitted and run here on one
partition and on seven uneven ones (one of them empty), and must give the same statistics
(to rounding) and the same rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.graph.operator import OPERATOR_REGISTRY


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = 400
    ids = rng.integers(0, 60, rows)
    return pd.DataFrame({
        "id": pd.array([None if i % 9 == 0 else f"user-{i}" for i in ids], dtype="string"),
        "key": pd.array([f"k{i % 7}" for i in ids], dtype="string"),
        "hex": pd.array([None if i % 11 == 0 else format(int(i) * 2654435761 % 2**32, "x") for i in ids], dtype="string"),
        "n": pd.array([None if k % 6 == 0 else int(k) for k in rng.integers(-5, 500, rows)], dtype="Int64"),
        "x": rng.lognormal(size=rows),
        "tags": pd.Series([list(rng.integers(0, 30, k)) for k in rng.integers(0, 5, rows)]),
        "left": rng.integers(0, 80, rows),
        "right": rng.integers(0, 80, rows),
    })


#: Every op of tabflow that declares itself row-wise, with the columns and parameters it is
#: checked with here.
CASES = {
    "Categorify": lambda: ["id", "tags"] >> ops.Categorify(freq_threshold=2),
    "Normalize": lambda: ["x", "n"] >> ops.FillMissing() >> ops.Normalize(),
    "NormalizeMinMax": lambda: ["x"] >> ops.NormalizeMinMax(),
    "FillMissing": lambda: ["n", "x"] >> ops.FillMissing(fill_val=7, add_binary_cols=True),
    "FillMedian": lambda: ["n"] >> ops.FillMedian(add_binary_cols=True),
    "Clip": lambda: ["n"] >> ops.Clip(min_value=0, max_value=300),
    "LogOp": lambda: ["x"] >> ops.LogOp(),
    "HashBucket": lambda: ["id"] >> ops.HashBucket(16),
    "HashedCross": lambda: [["id", "key"]] >> ops.HashedCross(32),
    "Bucketize": lambda: ["x"] >> ops.Bucketize([0.5, 1.0, 2.0]),
    "Rename": lambda: ["x"] >> ops.Rename(postfix="_r"),
    "HexToInt": lambda: ["hex"] >> ops.HexToInt(),
    "ListSlice": lambda: ["tags"] >> ops.ListSlice(0, 2, pad=True),
    "AddMetadata": lambda: ["x"] >> ops.AddMetadata(tags=["continuous"]),
    "DataStats": lambda: ["x", "id"] >> ops.DataStats(),
    "ValueCount": lambda: ["tags"] >> ops.ValueCount(),
    "ReduceDtypeSize": lambda: ["n", "x"] >> ops.ReduceDtypeSize(),
    "DropLowCardinality": lambda: ["key", "id"] >> ops.Categorify() >> ops.DropLowCardinality(min_cardinality=8),
    "JoinGroupby": lambda: ["key"] >> ops.JoinGroupby(cont_cols=["x"], stats=["count", "sum", "mean", "std"]),
    "ColumnSimilarity": lambda: [["left", "right"]] >> ops.ColumnSimilarity(_features(), metric="inner", on_device=False),
}


def _features():
    import scipy.sparse

    rng = np.random.default_rng(5)
    return scipy.sparse.random(80, 12, density=0.3, random_state=rng, format="csr")


def test_every_row_wise_op_is_checked():
    declared = {
        name for name, cls in OPERATOR_REGISTRY.items()
        if cls.__module__.startswith("tabflow.") and cls.__dict__.get("row_wise", False)
    }
    assert declared == set(CASES)


def test_ops_that_look_across_rows_are_not_row_wise():
    for op in (ops.LambdaOp(lambda col: col), ops.Filter(lambda df: df["x"] > 0), ops.Dropna(), ops.TargetEncoding(["x"]),
               ops.DifferenceLag(["id"]), ops.Groupby(["id"])):
        assert not op.row_wise, type(op).__name__
    assert not type("Mine", (ops.Operator,), {}).row_wise  # unknown: not row-wise


@pytest.mark.parametrize("name", sorted(CASES))
def test_row_wise_op_gives_the_same_rows_over_any_partitions(name):
    frame = _frame()

    def run(npartitions: int) -> pd.DataFrame:
        dataset = nvt.Dataset(frame, npartitions=npartitions)
        workflow = nvt.Workflow(CASES[name]())
        return workflow.fit_transform(dataset).compute().reset_index(drop=True)

    whole, split = run(1), run(7)
    assert len(whole) == len(frame)
    pd.testing.assert_frame_equal(whole, split, check_exact=False, rtol=1e-12)
