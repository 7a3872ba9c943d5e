"""What a script written for NVTabular 23.08's ops gets from tabflow's.

Each test names the NVTabular 23.08 behaviour it pins (read from ``nvtabular/ops/*.py`` and
merlin-core's ``merlin/dag`` at tag v23.08.00) and computes the expected values with plain
pandas/numpy. Op-by-op details live in ``tests/ops``; this file is the script's view:
signatures, import paths, output dtypes and the custom-op path.
"""

from __future__ import annotations

import importlib
import inspect
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.schema import Tags

#: NVTabular 23.08's constructor parameters, in order (``**kwargs`` left out).
NVT_SIGNATURES = {
    "AddMetadata": ["tags", "properties"],
    "AddTags": ["tags"],
    "AddProperties": ["properties"],
    "TagAsUserID": ["tags"],
    "TagAsItemID": ["tags"],
    "TagAsUserFeatures": ["tags"],
    "TagAsItemFeatures": ["tags"],
    "Bucketize": ["boundaries"],
    "Categorify": [
        "freq_threshold", "out_path", "cat_cache", "dtype", "on_host", "encode_type", "name_sep", "search_sorted",
        "num_buckets", "vocabs", "max_size", "single_table", "cardinality_memory_limit", "tree_width", "split_out",
        "split_every",
    ],
    "Clip": ["min_value", "max_value"],
    "ColumnSimilarity": ["left_features", "right_features", "metric", "on_device"],
    "DataStats": [],
    "DifferenceLag": ["partition_cols", "shift"],
    "DropLowCardinality": ["min_cardinality"],
    "Dropna": [],
    "FillMissing": ["fill_val", "add_binary_cols"],
    "FillMedian": ["add_binary_cols"],
    "Filter": ["f"],
    "Groupby": ["groupby_cols", "sort_cols", "aggs", "name_sep", "ascending"],
    "HashBucket": ["num_buckets"],
    "HashedCross": ["num_buckets"],
    "JoinExternal": ["df_ext", "on", "how", "on_ext", "columns_ext", "drop_duplicates_ext", "kind_ext", "cache"],
    "JoinGroupby": [
        "cont_cols", "stats", "split_out", "split_every", "cat_cache", "out_path", "on_host", "name_sep", "tree_width",
    ],
    "LambdaOp": ["f", "dependency", "label", "dtype", "tags", "properties"],
    "ListSlice": ["start", "end", "pad", "pad_value"],
    "LogOp": [],
    "Normalize": ["out_dtype"],
    "NormalizeMinMax": ["out_dtype"],
    "ReduceDtypeSize": ["float_dtype"],
    "Rename": ["f", "postfix", "name"],
    "TargetEncoding": [
        "target", "target_mean", "kfold", "fold_seed", "p_smooth", "out_col", "out_dtype", "split_out", "split_every",
        "cat_cache", "out_path", "on_host", "name_sep", "drop_folds", "tree_width",
    ],
    "ValueCount": [],
}

#: NVTabular 23.08's defaults that differ from None/False/0, where tabflow keeps them.
NVT_DEFAULTS = {
    ("Categorify", "split_every"): 8,
    ("Categorify", "split_out"): 1,
    ("ColumnSimilarity", "on_device"): True,
    ("DropLowCardinality", "min_cardinality"): 4,
    ("JoinGroupby", "stats"): ("count",),
    ("TargetEncoding", "kfold"): None,
    ("TargetEncoding", "fold_seed"): 42,
    ("TargetEncoding", "p_smooth"): 20,
}


def _parameters(cls):
    return [
        p for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def test_every_nvtabular_op_is_exported():
    assert set(NVT_SIGNATURES) <= set(ops.__all__)
    for name in ("Operator", "StatOperator", "ColumnSelector", "get_embedding_sizes"):
        assert name in ops.__all__


@pytest.mark.parametrize("name", sorted(NVT_SIGNATURES))
def test_positional_order_is_nvtabulars(name):
    # A positional call written for 23.08 binds the same parameters (extra tabflow
    # parameters, if any, come after NVTabular's).
    names = [p.name for p in _parameters(getattr(ops, name))]
    assert names[: len(NVT_SIGNATURES[name])] == NVT_SIGNATURES[name]


@pytest.mark.parametrize(("name", "parameter"), sorted(NVT_DEFAULTS))
def test_defaults_are_nvtabulars(name, parameter):
    defaults = {p.name: p.default for p in _parameters(getattr(ops, name))}
    assert defaults[parameter] == NVT_DEFAULTS[(name, parameter)]


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("tabflow.ops.fill", ["FillMissing", "FillMedian"]),
        ("tabflow.ops.value_counts", ["ValueCount"]),
        ("tabflow.ops.stat_operator", ["StatOperator"]),
        ("tabflow.ops.normalize", ["Normalize", "NormalizeMinMax"]),
        ("tabflow.ops.operator", ["Operator", "ColumnSelector"]),
        ("tabflow.ops.categorify", ["Categorify", "get_embedding_sizes"]),
        ("tabflow.ops.lambdaop", ["LambdaOp"]),
    ],
)
def test_nvtabular_module_paths_re_export_the_same_objects(module, names):
    imported = importlib.import_module(module)
    for name in names:
        public = getattr(ops, name) if name != "ColumnSelector" else nvt.ColumnSelector
        assert getattr(imported, name) is public


# --------------------------------------------------------------------------- output dtypes
def _frame():
    return pd.DataFrame({
        "user": [1, 1, 2, 2, 2],
        "c": ["a", "b", "a", "c", "a"],
        "x": [1.0, 4.0, 2.0, np.nan, 8.0],
        "n": np.array([3, 1, 4, 1, 5], dtype="int64"),
        "y": [1.0, 0.0, 1.0, 1.0, 0.0],
    })


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (["c"] >> ops.HashBucket(10), {"c": "int32"}),
        ([["c", "user"]] >> ops.HashedCross(10), {"c_X_user": "int32"}),
        (["n"] >> ops.Bucketize([2, 4]), {"n": "int32"}),
        (["x"] >> ops.DifferenceLag("user"), {"x_difference_lag_1": "float32"}),
        (["x", "n"] >> ops.Normalize(), {"x": "float64", "n": "float64"}),
        (["x"] >> ops.Normalize(out_dtype=np.float32), {"x": "float32"}),
        (["x", "n"] >> ops.NormalizeMinMax(), {"x": "float64", "n": "float64"}),
        (["x", "n"] >> ops.LogOp(), {"x": "float32", "n": "float32"}),
        (["c"] >> ops.Categorify(), {"c": "int64"}),
        (["c"] >> ops.TargetEncoding("y"), {"TE_c_y": "float32"}),
        (
            ["c"] >> ops.JoinGroupby(cont_cols=["x", "n"], stats=["count", "sum", "mean", "std", "var", "min", "max"]),
            {
                "c_count": "int32",
                "c_x_sum": "float64", "c_x_mean": "float32", "c_x_std": "float32", "c_x_var": "float32",
                "c_x_min": "float64", "c_x_max": "float64",
                # sum/min/max keep the column's dtype; unseen keys make integers nullable.
                "c_n_sum": "Int64", "c_n_mean": "float32", "c_n_std": "float32", "c_n_var": "float32",
                "c_n_min": "Int64", "c_n_max": "Int64",
            },
        ),
        (
            ["user", "x", "n"] >> ops.Groupby(groupby_cols=["user"], aggs={"x": ["sum", "mean", "count"], "n": ["sum"]}),
            {"user": "int64", "x_sum": "float32", "x_mean": "float32", "x_count": "int32", "n_sum": "float32"},
        ),
    ],
)
def test_output_dtypes_are_nvtabulars(node, expected):
    workflow = nvt.Workflow(node)
    out = workflow.fit_transform(_frame())
    assert workflow.output_schema.dtypes == expected
    assert {name: str(dtype) for name, dtype in out.dtypes.items()} == expected


def test_bucketize_keeps_nulls_null_in_a_nullable_int32():
    # Deliberate: 23.08 put NaN in the last bucket (np.digitize); tabflow keeps it null.
    out = nvt.Workflow(["x"] >> ops.Bucketize([2.0, 4.0])).fit_transform(_frame())
    assert str(out["x"].dtype) == "Int32"
    assert out["x"].tolist() == [0, 2, 1, pd.NA, 2]


def test_the_loaders_accept_the_nvtabular_dtypes():
    torch = pytest.importorskip("torch")
    from tabflow.loader.torch import Loader

    df = _frame()
    features = (
        (["c"] >> ops.HashBucket(10))
        + (["n"] >> ops.Bucketize([2, 4]))
        + (["x"] >> ops.FillMissing() >> ops.Normalize())
        + (["c"] >> ops.JoinGroupby(stats=["count"]))
        + (["y"] >> ops.AddTags(Tags.TARGET))
    )
    transformed = nvt.Workflow(features).fit(df).transform(nvt.Dataset(df))
    inputs, target = next(iter(Loader(transformed, batch_size=5)))
    assert inputs["c"].dtype == torch.int64 and inputs["n"].dtype == torch.int64
    assert inputs["c_count"].dtype == torch.float32  # JoinGroupby's outputs are tagged continuous
    assert inputs["x"].dtype == torch.float32 and target.dtype == torch.float32
    np.testing.assert_array_equal(inputs["n"].numpy(), np.digitize(df["n"], [2, 4]))


# ------------------------------------------------------------------------ custom ops
class Halve(ops.Operator):
    """A 23.08-style custom op declaring its output dtype as a numpy type."""

    def transform(self, col_selector, df):
        return df[col_selector.names] / 2

    @property
    def output_dtype(self):
        return np.float32


def test_a_custom_op_declaring_a_numpy_output_dtype_gets_it_in_schema_and_data():
    df = pd.DataFrame({"a": [1, 2, 3]})
    workflow = nvt.Workflow(["a"] >> Halve())
    out = workflow.fit_transform(df)
    assert workflow.output_schema["a"].dtype == "float32"
    assert workflow.output_dtypes == {"a": "float32"}
    assert out["a"].dtype == np.float32 and out["a"].tolist() == [0.5, 1.0, 1.5]
    partitioned = workflow.transform(nvt.Dataset(df, npartitions=2)).compute()
    assert partitioned["a"].dtype == np.float32


# ------------------------------------------------------------------- ops' own behaviour
def test_normalize_minmax_constant_column_as_nvtabular():
    # 23.08: dif == 0 gives df / (2 * df): 0.5, and NaN for 0.
    wf = nvt.Workflow(["k"] >> ops.NormalizeMinMax()).fit(pd.DataFrame({"k": [5.0, 5.0]}))
    out = wf.transform(pd.DataFrame({"k": [5.0, 0.0]}))
    with np.errstate(invalid="ignore"):
        expected = np.array([5.0, 0.0]) / (2 * np.array([5.0, 0.0]))
    np.testing.assert_array_equal(out["k"], expected)


def test_log_and_normalize_apply_element_wise_to_list_columns():
    rows = [[1.0, 3.0], [5.0]]
    df = pd.DataFrame({"l": pd.Series(rows, dtype=pd.ArrowDtype(pa.list_(pa.float64())))})
    logged = nvt.Workflow(["l"] >> ops.LogOp()).fit_transform(df)["l"]
    np.testing.assert_allclose(np.concatenate(logged.tolist()), np.log1p(np.float32([1, 3, 5])), rtol=1e-6)
    normed = nvt.Workflow(["l"] >> ops.Normalize()).fit_transform(df)["l"]
    flat = np.array([1.0, 3.0, 5.0])
    np.testing.assert_allclose(np.concatenate(normed.tolist()), (flat - flat.mean()) / flat.std(ddof=1))


def test_lambda_op_label_and_function_checks():
    def scale(col):
        return col * 2

    assert ops.LambdaOp(scale).label == "scale"
    plus_one = ops.LambdaOp(lambda col: col + 1)
    assert plus_one.label == "lambda col: col + 1"
    assert ops.LambdaOp(scale, label="mine").label == "mine"
    assert ops.LambdaOp(scale).get_params()["label"] is None  # the parameter stays as given
    df = pd.DataFrame({"a": [1]})
    with pytest.raises(ValueError, match="f is None"):
        nvt.Workflow(["a"] >> ops.LambdaOp(None)).fit(df)
    with pytest.raises(ValueError, match="one argument .* or two"):
        nvt.Workflow(["a"] >> ops.LambdaOp(lambda a, b, c: a)).fit(df)
    # 23.08 calls f(col) when f takes one parameter, even with a dependency.
    out = nvt.Workflow(["a"] >> ops.LambdaOp(lambda col: col + 1, dependency=["b"])).fit_transform(df.assign(b=5))
    assert out["a"].tolist() == [2]


@pytest.mark.parametrize(("op", "match"), [(ops.Clip, "min_value, max_value or both"), (ops.Rename, "f, postfix or name")])
def test_clip_and_rename_without_arguments_are_clear_errors(op, match):
    # 23.08 raised ValueError when the op was built; tabflow, when the workflow resolves it.
    with pytest.raises(ValueError, match=match):
        nvt.Workflow(["a"] >> op()).fit(pd.DataFrame({"a": [1.0]}))


@pytest.mark.parametrize("op", [ops.Filter(lambda df: df["a"] > 1), ops.Dropna()])
def test_row_filters_reset_the_index(op):
    df = pd.DataFrame({"a": [1.0, 2.0, np.nan, 3.0]}, index=[10, 11, 12, 13])
    out = nvt.Workflow(["a"] >> op).fit_transform(df)
    expected = df[df["a"] > 1] if isinstance(op, ops.Filter) else df.dropna()
    pd.testing.assert_frame_equal(out, expected.reset_index(drop=True))


def test_data_stats_output_format():
    df = _frame()
    stats = ops.DataStats()
    nvt.Workflow(["x", "n", "c"] >> stats).fit(df)
    x = df["x"]
    assert stats.output["x"] == {
        "dtype": "float64", "min": x.min(), "max": x.max(), "per_nan": 20.0,
        "mean": pytest.approx(x.mean()), "std": pytest.approx(x.std()),
    }
    assert stats.output["n"]["cardinality"] == df["n"].nunique()
    assert stats.output["c"]["cardinality"] == 3 and stats.output["c"]["max"] == 1  # lengths of strings


def test_categorify_fitted_interface(tmp_path):
    df = pd.DataFrame({"c": ["a", "b", "c", None]})
    op = ops.Categorify(0, str(tmp_path))  # 23.08: the second positional is out_path
    nvt.Workflow(["c"] >> op).fit(df)
    assert pd.read_parquet(op.categories["c"])["c"].tolist() == ["a", "b", "c"]
    assert op.get_embedding_sizes(["c"]) == {"c": (6, 16)}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"start_index": 1}, "start_index"),
        ({"na_sentinel": 0}, "na_sentinel"),
        ({"freq_threshold": 2, "max_size": 10}, "max_size"),
        ({"num_buckets": 0}, "num_buckets"),
        ({"encode_type": "both"}, "encode_type"),
    ],
)
def test_categorify_settings_nvtabular_refused_are_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nvt.Workflow(["c"] >> ops.Categorify(**kwargs)).fit(pd.DataFrame({"c": ["a"]}))


def test_fitted_statistics_under_nvtabular_names():
    df = _frame()
    te, jg, rd = ops.TargetEncoding("y", kfold=1), ops.JoinGroupby(cont_cols=["x"], stats=["mean"]), ops.ReduceDtypeSize()
    nvt.Workflow((["c"] >> te) + (["c"] >> jg) + (["n"] >> rd)).fit(df)
    assert te.means == {"y": pytest.approx(df["y"].mean())} and set(te.stats) == {"c"}
    assert set(jg.categories) == {"c"}
    assert rd.ranges == {"n": (1, 5)} and rd.dtypes == {"n": "int8"}


def test_target_encoding_accepts_its_full_nvtabular_arguments(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op = ops.TargetEncoding("y", kfold=None, out_path=str(tmp_path), split_out=2, split_every=4)
    assert sorted(str(w.message).split("(")[1].split("=")[0] for w in caught) == ["split_every", "split_out"]
    out = nvt.Workflow(["c"] >> op).fit_transform(_frame())
    assert list(out.columns) == ["TE_c_y"] and op._kfold == 3
    # out_path holds NVTabular's statistics files (full data and per fold).
    assert sorted(p.name for p in (tmp_path / "categories").iterdir()) == ["cat_stats.__fold___c.parquet", "cat_stats.c.parquet"]


def test_join_groupby_accepts_split_arguments():
    with pytest.warns(UserWarning, match="split_out"):
        op = ops.JoinGroupby(cont_cols=["x"], split_out=2)
    assert list(nvt.Workflow(["c"] >> op).fit_transform(_frame()).columns) == ["c_count"]


def test_list_slice_tags_list_and_hash_bucket_tags_categorical_only():
    df = pd.DataFrame({"l": pd.Series([[1, 2, 3]], dtype=pd.ArrowDtype(pa.list_(pa.int64()))), "c": ["a"]})
    wf = nvt.Workflow((["l"] >> ops.ListSlice(2)) + (["c"] >> ops.HashBucket(5))).fit(df)
    assert Tags.LIST in wf.output_schema["l"].tags
    assert set(wf.output_schema["c"].tags) == {Tags.CATEGORICAL}


_HOOK_OPS = {
    "Bucketize": lambda: ops.Bucketize([1, 5]),
    "Categorify": lambda: ops.Categorify(),
    "Categorify combo": lambda: ops.Categorify(encode_type="combo"),
    "HashBucket": lambda: ops.HashBucket(7),
    "HashedCross": lambda: ops.HashedCross(5),
    "Groupby": lambda: ops.Groupby(["k"], aggs={"v": ["list", "count"]}),
    "JoinGroupby": lambda: ops.JoinGroupby(cont_cols=["v"]),
    "TargetEncoding": lambda: ops.TargetEncoding(["v"]),
    "DifferenceLag": lambda: ops.DifferenceLag("k"),
}


@pytest.mark.parametrize("name", sorted(_HOOK_OPS))
def test_schema_hooks_answer_what_the_op_produces(name):
    # merlin builds each output column by _compute_dtype/_tags/_properties/_shape and
    # NVTabular's ops override those hooks, so NVTabular code (its test_ops_schema, custom
    # ops calling super()._compute_dtype) asks them about a column with the sources
    # column_mapping names for it; they must agree with compute_output_schema.
    from tabflow.schema import ColumnSchema, Schema

    op = _HOOK_OPS[name]()
    source = Schema([
        ColumnSchema(c, dtype="int32", tags=["TAG1"], properties={"p1": "1"}) for c in ["k", "v"]
    ])
    selector = nvt.ColumnSelector(["v"] if name != "Groupby" else ["k", "v"])
    output = op.compute_output_schema(source, selector)
    assert len(output) > 0
    for column, sources in op.column_mapping(selector).items():
        fragment = source.select_by_name(sources) if sources else Schema([])
        if column not in output.column_names:
            continue
        produced = output[column]
        blank = ColumnSchema(column)
        assert op._compute_dtype(blank, fragment).dtype == produced.dtype, column
        assert set(op._compute_tags(blank, fragment).tags) == set(produced.tags), column
        assert op._compute_properties(blank, fragment).properties == produced.properties, column
        assert op._compute_shape(blank, fragment).is_list == produced.is_list, column


def test_difference_lag_keeps_source_tags_and_properties_as_nvtabular():
    # NVTabular 23.08's DifferenceLag declares output_dtype float32 and output_tags
    # CONTINUOUS on merlin's hooks: the source column's tags and properties carry over.
    from tabflow.schema import ColumnSchema, Schema

    source = Schema([
        ColumnSchema("user", dtype="int64"),
        ColumnSchema("ts", dtype="int64", tags=["ts_tag"], properties={"unit": "s"}),
    ])
    out = ops.DifferenceLag("user").compute_output_schema(source, nvt.ColumnSelector(["ts"]))
    column = out["ts_difference_lag_1"]
    assert column.dtype == "float32"
    assert {str(t) for t in column.tags} == {"ts_tag", "continuous"}
    assert column.properties == {"unit": "s"}
    df = pd.DataFrame({"user": [1, 1, 2, 2], "ts": [10, 13, 5, 9]})
    got = nvt.Workflow(["ts"] >> ops.DifferenceLag("user")).fit_transform(nvt.Dataset(df)).to_ddf().compute()
    reference = df["ts"].diff().where(df["user"].eq(df["user"].shift())).astype("float32")
    pd.testing.assert_series_equal(got["ts_difference_lag_1"].reset_index(drop=True), reference.rename("ts_difference_lag_1"))
