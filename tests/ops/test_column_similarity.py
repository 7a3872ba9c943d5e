"""ColumnSimilarity: row-wise similarity of sparse id features."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import tabflow as nvt
from tabflow import ops
from tabflow.testing import assert_frame_equal


@pytest.fixture
def features():
    return sp.random(30, 12, density=0.3, format="csr", random_state=np.random.RandomState(0))


@pytest.fixture
def pairs(rng):
    n = 200
    df = pd.DataFrame({"a": rng.integers(0, 30, n).astype("float64"), "b": rng.integers(0, 30, n).astype("float64")})
    df.loc[:4, "a"] = np.nan
    df.loc[5, "b"] = 99  # outside the matrix
    return df


def _dense_reference(matrix, metric):
    dense = matrix.toarray()
    if metric == "tfidf":
        doc_freq = (dense != 0).sum(axis=0)
        dense = dense * np.log(dense.shape[0] / np.maximum(doc_freq, 1))
    if metric in ("tfidf", "cosine"):
        norms = np.linalg.norm(dense, axis=1, keepdims=True)
        dense = np.divide(dense, norms, out=np.zeros_like(dense), where=norms > 0)
    return dense


@pytest.mark.parametrize("metric", ["tfidf", "cosine", "inner"])
def test_matches_dense_reference(features, pairs, metric, engine, to_engine):
    wf = nvt.Workflow([["a", "b"]] >> ops.ColumnSimilarity(features, metric=metric))
    out = wf.fit_transform(nvt.Dataset(to_engine(pairs), npartitions=3)).compute()
    dense = _dense_reference(features, metric)
    expected = np.full(len(pairs), np.nan)
    ok = pairs["a"].notna() & pairs["b"].lt(30)
    ia, ib = pairs.loc[ok, "a"].astype(int), pairs.loc[ok, "b"].astype(int)
    expected[ok.to_numpy()] = (dense[ia] * dense[ib]).sum(axis=1)
    assert_frame_equal(out, pd.DataFrame({"a_b_sim": expected.astype("float64")}), check_exact=False, rtol=1e-9)


def test_right_features_and_save_load(features, pairs, tmp_path):
    right = sp.random(40, 12, density=0.2, format="csc", random_state=np.random.RandomState(1))
    wf = nvt.Workflow([["a", "b"]] >> ops.ColumnSimilarity(features, right_features=right, metric="inner"))
    out = wf.fit_transform(pairs)
    ok = pairs["a"].notna() & pairs["b"].lt(30)
    i, j = pairs.loc[ok, "a"].astype(int), pairs.loc[ok, "b"].astype(int)
    np.testing.assert_allclose(out.loc[ok, "a_b_sim"], (features.toarray()[i] * right.toarray()[j]).sum(axis=1), rtol=1e-5)
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert_frame_equal(loaded.transform(pairs), out)
    assert loaded.ops[0].right_features.format == "csc"
    assert len(wf.transform(pairs.iloc[:0])) == 0


def test_clear_errors(features, pairs):
    with pytest.raises(ValueError, match="pairs"):
        nvt.Workflow(["a"] >> ops.ColumnSimilarity(features)).fit(pairs)
    with pytest.raises(ValueError, match="columns"):
        nvt.Workflow([["a", "b"]] >> ops.ColumnSimilarity(features, right_features=sp.eye(3, format="csr"))).fit(pairs)
    with pytest.raises(ValueError, match="jaccard"):
        nvt.Workflow([["a", "b"]] >> ops.ColumnSimilarity(features, metric="jaccard")).fit(pairs)
