"""ColumnSimilarity: similarity of two ids' sparse feature vectors, for every row."""

from __future__ import annotations

from typing import Any

import numpy as np

from tabflow.backends import backend_for, get_backend
from tabflow.backends.protocol import Frame
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._numeric import require_numeric
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["ColumnSimilarity"]

_METRICS = ("tfidf", "cosine", "inner")


class ColumnSimilarity(Operator):
    """For each pair of id columns ``[left, right]``, the similarity of the two ids' features.

    Row ``i`` of ``left_features`` (a sparse matrix, e.g. the categories or tags of item
    ``i``) describes id ``i`` of the left column; ``right_features`` (default: the same
    matrix) describes the right column's ids. The metric is ``"inner"`` (plain dot
    product), ``"cosine"`` (dot product of L2-normalised rows) or ``"tfidf"`` (each
    column ``j`` of a matrix weighted by ``log(N / df_j)``, with ``N`` its number of rows and
    ``df_j`` the rows where column ``j`` is non-zero, then rows L2-normalised: the cosine
    similarity of tf-idf vectors). Null ids and ids outside the matrix give a null
    similarity. Select pairs as column groups: ``[["item_a", "item_b"]] >> ColumnSimilarity(m)``;
    the output column is ``<left>_<right>_sim`` (float64, NVTabular 23.08's ``float``).

    Parameters
    ----------
    left_features : scipy.sparse matrix
    right_features : scipy.sparse matrix, optional
        Must have as many columns as ``left_features``.
    metric : {"tfidf", "cosine", "inner"}, default "tfidf"
    on_device : bool, default True
        NVTabular 23.08's default. True lets the data's engine compute the products (the
        cuDF backend gathers the rows on the host, so the matrices need no GPU memory);
        False always uses the pandas engine's host path. The results are the same.

    Examples
    --------
    >>> import pandas as pd, scipy.sparse as sp
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> tags = sp.csr_matrix([[1, 1, 0], [0, 1, 1], [1, 1, 0]])
    >>> op = ops.ColumnSimilarity(tags, metric="cosine")
    >>> df = pd.DataFrame({"a": [0, 0, 1], "b": [1, 2, 2]})
    >>> nvt.Workflow([["a", "b"]] >> op).fit_transform(df)["a_b_sim"].round(3).tolist()
    [0.5, 1.0, 0.5]
    """

    row_wise = True

    _derived_attributes = ("_prepared",)

    def __init__(self, left_features: Any, right_features: Any = None, metric: str = "tfidf", on_device: bool = True) -> None:
        self.left_features = left_features
        self.right_features = right_features
        self.metric = metric
        self.on_device = on_device

    def _pairs(self, col_selector: ColumnSelector) -> list[tuple[str, ...]]:
        return [tuple(g) for g in col_selector.grouped_names if not isinstance(g, str)]

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if self.metric not in _METRICS:
            raise ValueError(f"ColumnSimilarity metric must be one of {list(_METRICS)}, got {self.metric!r}")
        bad = [g for g in col_selector.grouped_names if isinstance(g, str) or len(g) != 2]
        if bad:
            raise ValueError(f"ColumnSimilarity needs pairs of id columns such as [['a', 'b']], got {bad}")
        right = self.right_features if self.right_features is not None else self.left_features
        if self.left_features.shape[1] != right.shape[1]:
            raise ValueError(
                f"left_features has {self.left_features.shape[1]} columns but right_features has {right.shape[1]}"
            )
        require_numeric(input_schema, col_selector, "ColumnSimilarity")

    def _matrices(self) -> tuple[Any, Any]:
        # Weighted, normalised copies are derived from the parameters once per process.
        def build() -> tuple[Any, Any]:
            left = _weigh(self.left_features, self.metric)
            return left, (left if self.right_features is None else _weigh(self.right_features, self.metric))

        return self._derived("_prepared", "matrices", build)

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        compute = backend if self.on_device else get_backend("pandas")
        left, right = self._matrices()
        out = {}
        for a, b in self._pairs(col_selector):
            # The ids index host matrices: they are read to the host (HostArray).
            ids_a = backend.to_numpy(df[a], "float64", na_value=np.nan)
            ids_b = backend.to_numpy(df[b], "float64", na_value=np.nan)
            valid = (ids_a >= 0) & (ids_a < left.shape[0]) & (ids_b >= 0) & (ids_b < right.shape[0])
            similarity = np.full(len(df), np.nan, dtype=np.float64)
            if valid.any():
                dots = compute.sparse_rowwise_dot(left, ids_a[valid].astype(np.int64), right, ids_b[valid].astype(np.int64))
                similarity[valid] = compute.to_host(dots)
            out[f"{a}_{b}_sim"] = backend.from_host(similarity)
        return backend.frame_from_dict(out, index=df.index)

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        return {f"{a}_{b}_sim": [a, b] for a, b in self._pairs(col_selector)}

    def compute_output_schema(self, input_schema: Schema, col_selector: ColumnSelector, prev_output_schema: Any = None) -> Schema:
        return Schema([ColumnSchema(name, dtype="float64", tags={Tags.CONTINUOUS}) for name in self.column_mapping(col_selector)])


def _weigh(matrix: Any, metric: str) -> Any:
    """CSR copy of ``matrix`` (on the host) weighted and row-normalised for ``metric``."""
    import scipy.sparse as sp

    host = matrix.get() if type(matrix).__module__.startswith("cupyx") else matrix
    features = sp.csr_matrix(host, dtype=np.float64, copy=True)
    features.eliminate_zeros()
    if metric == "inner":
        return features
    if metric == "tfidf":
        doc_freq = np.bincount(features.indices, minlength=features.shape[1])
        idf = np.log(features.shape[0] / np.maximum(doc_freq, 1))
        features = sp.csr_matrix(features.multiply(idf[np.newaxis, :]))
    norms = np.sqrt(np.asarray(features.multiply(features).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.csr_matrix(sp.diags(scale) @ features)
