"""NVTabular 23.08 / merlin.dag custom operators: the hooks a subclass of ``ops.Operator``
overrides (``transform``, ``output_column_names``, ``column_mapping``, ``dependencies``,
``compute_selector``, ``compute_input_schema``, ``compute_output_schema``,
``compute_column_schema`` and its ``_compute_*`` parts, ``validate_schemas``,
``create_node``, ``dynamic_dtypes``, ``save_artifacts`` / ``load_artifacts``,
``StatOperator.set_storage_path``) are called where merlin's graph called them, and such ops
fit, transform, save and load. Expected values come from plain pandas/numpy.

The ops are module-level classes, as in a user's script: that registers them for
``Workflow.load``.
"""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ColumnSelector, ops
from tabflow.graph import Graph, Node
from tabflow.schema import ColumnSchema, Schema, Tags
from tabflow.schema.dtypes import canonical_dtype

DAY = 60 * 60 * 24


@pytest.fixture
def events():
    rng = np.random.default_rng(0)
    first = rng.integers(0, 50 * DAY, size=40)
    return pd.DataFrame(
        {
            "event_ts": first + rng.integers(-3 * DAY, 30 * DAY, size=40),
            "first_ts": first,
            "price": np.where(np.arange(40) % 7 == 0, np.nan, rng.random(40) * 100),
            "item": rng.choice(["a", "b", "c", None], size=40),
        }
    )


# ------------------------------------------------------------------ NVTabular's own example
class ItemRecency(ops.Operator):
    """NVTabular's tests/unit/test_tf4rec.py op, unchanged but for the import."""

    def transform(self, columns, gdf):
        for column in columns.names:
            col = gdf[column]
            item_first_timestamp = gdf["first_ts"]
            delta_days = (col - item_first_timestamp) / (60 * 60 * 24)
            gdf[column + "_age_days"] = delta_days * (delta_days >= 0)
        return gdf

    def compute_selector(self, input_schema, selector, parents_selector, dependencies_selector):
        self._validate_matching_cols(input_schema, parents_selector, "computing input selector")
        return parents_selector

    def column_mapping(self, col_selector):
        return {name + "_age_days": [name] for name in col_selector.names}

    @property
    def dependencies(self):
        return ["first_ts"]

    @property
    def output_dtype(self):
        return np.float64


def _recency(df):
    delta = (df["event_ts"] - df["first_ts"]) / DAY
    return (delta * (delta >= 0)).rename("event_ts_age_days")


def test_nvtabular_custom_op_with_dependencies_fits_transforms_saves_and_loads(events, tmp_path):
    recency = ["event_ts"] >> ItemRecency()
    assert [d.selector.names for d in recency.dependencies] == [["first_ts"]]
    wf = nvt.Workflow((recency >> ops.LogOp()) + ["item"])
    out = wf.fit_transform(events)
    expected = np.log1p(_recency(events)).astype("float32")
    assert out.columns.tolist() == ["event_ts_age_days", "item"]
    np.testing.assert_allclose(out["event_ts_age_days"], expected, rtol=1e-6)
    assert wf.output_schema["event_ts_age_days"].dtype == "float32"
    # The op's own node: the dependency is read, not transformed; float64 as declared.
    assert recency.input_columns.names == ["event_ts"]
    assert recency.output_schema.dtypes == {"event_ts_age_days": "float64"}
    assert wf.input_schema.column_names == ["event_ts", "first_ts", "item"]

    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert type(loaded.output_node.parents[0].parents[0].op) is ItemRecency
    pd.testing.assert_frame_equal(loaded.transform(events), out)


class Scaled(ops.Operator):
    """Custom op with a parameter, output names as a list, and its own output schema."""

    def __init__(self, factor=2.0):
        self.factor = factor

    def transform(self, col_selector, df):
        return pd.DataFrame({f"{c}_x{self.factor:g}": df[c] * self.factor for c in col_selector.names})

    def output_column_names(self, col_selector):
        return [f"{c}_x{self.factor:g}" for c in col_selector.names]

    def compute_output_schema(self, input_schema, col_selector, prev_output_schema=None):
        schema = super().compute_output_schema(input_schema, col_selector, prev_output_schema)
        return Schema([c.with_dtype("float32").with_tags(Tags.CONTINUOUS).with_properties({"factor": self.factor}) for c in schema])


def test_custom_output_column_names_and_compute_output_schema(events, tmp_path):
    wf = nvt.Workflow(["price", "first_ts"] >> Scaled(factor=0.5))
    out = wf.fit_transform(events)
    assert out.columns.tolist() == ["price_x0.5", "first_ts_x0.5"]
    # The schema the op declares is the output's, data included (cast as declared).
    assert wf.output_dtypes == {"price_x0.5": "float32", "first_ts_x0.5": "float32"}
    assert out.dtypes.astype(str).tolist() == ["float32", "float32"]
    np.testing.assert_allclose(out["price_x0.5"], (events["price"] * 0.5).astype("float32"))
    np.testing.assert_allclose(out["first_ts_x0.5"], (events["first_ts"] * 0.5).astype("float32"))
    assert wf.output_schema["price_x0.5"].tags == {Tags.CONTINUOUS}
    assert wf.output_schema["price_x0.5"].properties["factor"] == 0.5
    # column_mapping derives from output_column_names, as merlin's base does the reverse.
    assert wf.graph.column_mapping == {"price_x0.5": ["price"], "first_ts_x0.5": ["first_ts"]}

    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_node.op.factor == 0.5 and loaded.output_schema == wf.output_schema
    pd.testing.assert_frame_equal(loaded.transform(events), out)


class Weighted(ops.Operator):
    """Takes ``w`` from the data through compute_input_schema, as merlin allowed."""

    def compute_input_schema(self, root_schema, parents_schema, deps_schema, selector):
        return super().compute_input_schema(root_schema, parents_schema, deps_schema, selector) + root_schema[["w"]]

    def transform(self, col_selector, df):
        return df[col_selector.names].mul(df["w"], axis=0)


def test_compute_input_schema_may_read_a_data_column_no_parent_brings():
    df = pd.DataFrame({"x": [1.0, 2.0, None, 4.0], "y": [3, 4, 5, 6], "w": [0.5, 2.0, 4.0, 1.0]})
    wf = nvt.Workflow(["x", "y"] >> Weighted())
    out = wf.fit_transform(nvt.Dataset(df, npartitions=2)).compute()
    # The data column is read with the selected ones (through every dask partition).
    assert wf.input_schema.column_names == ["x", "y", "w"] and out.columns.tolist() == ["x", "y"]
    np.testing.assert_allclose(out["x"], df["x"] * df["w"])
    np.testing.assert_allclose(out["y"], df["y"] * df["w"])
    # A pandas frame (served by the compiled plan) and a one-row request read it too.
    pd.testing.assert_frame_equal(wf.transform(df), out.reset_index(drop=True))
    pd.testing.assert_frame_equal(wf.transform(df.iloc[[3]]), out.iloc[[3]])
    with pytest.raises(KeyError, match="w"):
        nvt.Workflow(["x"] >> Weighted()).fit(nvt.Dataset(df[["x", "y"]]))


class SourceNamed(ops.Operator):
    """Overrides compute_column_schema (NVTabular's ops override its parts)."""

    def compute_column_schema(self, col_name, input_schema):
        return super().compute_column_schema(col_name, input_schema).with_properties({"from": input_schema.column_names})


class Int32Counts(ops.Operator):
    """Overrides _compute_dtype, as NVTabular's FillMissing / JoinGroupby do."""

    def transform(self, col_selector, df):
        return df[col_selector.names].notna().sum(axis=1).to_frame("n_present")

    def column_mapping(self, col_selector):
        return {"n_present": col_selector.names}

    def _compute_dtype(self, col_schema, input_schema):
        return col_schema.with_dtype(np.int32)


def test_compute_column_schema_and_its_parts_are_user_hooks(events):
    wf = nvt.Workflow((["price", "event_ts"] >> SourceNamed()) + (["price", "item"] >> Int32Counts()))
    out = wf.fit_transform(events)
    assert wf.output_schema["price"].properties["from"] == ["price"]
    assert wf.output_schema["event_ts"].properties["from"] == ["event_ts"]
    assert wf.output_dtypes["n_present"] == "int32" and out["n_present"].dtype == np.int32
    np.testing.assert_array_equal(out["n_present"], events[["price", "item"]].notna().sum(axis=1))


class FloatsOnly(ops.Operator):
    seen: ClassVar[list] = []

    def validate_schemas(self, parents_schema, deps_schema, input_schema, output_schema, strict_dtypes=False):
        type(self).seen.append((parents_schema.column_names, input_schema.column_names, output_schema.column_names))
        wrong = [c.name for c in input_schema if not c.dtype.startswith("float")]
        if wrong:
            raise ValueError(f"FloatsOnly needs float columns, got {wrong}")


def test_validate_schemas_is_called_with_the_resolved_schemas(events):
    FloatsOnly.seen = []
    nvt.Workflow(["price"] >> FloatsOnly()).fit(events)
    # Once planned, and again once its output dtypes were seen on the data.
    assert FloatsOnly.seen and all(seen == (["price"], ["price"], ["price"]) for seen in FloatsOnly.seen)
    with pytest.raises(ValueError, match=r"float columns, got \['event_ts'\]"):
        nvt.Workflow(["event_ts"] >> FloatsOnly()).fit(events)


class TaggedNode(Node):
    """A Node subclass that an op's create_node returns."""


class MakesItsNode(ops.Operator):
    def create_node(self, selector):
        return TaggedNode(selector)


def test_create_node_builds_the_input_node_of_names_and_selectors(events):
    for node in (ColumnSelector(["price"]) >> MakesItsNode(), ["price"] >> MakesItsNode(), "price" >> MakesItsNode()):
        assert isinstance(node.parents[0], TaggedNode) and node.parents[0].selector.names == ["price"]
    # An op class follows a selector as NVTabular allowed; a node on the left is kept.
    assert isinstance((ColumnSelector(["price"]) >> MakesItsNode).op, MakesItsNode)
    upstream = ["price"] >> ops.FillMissing()
    assert (upstream >> MakesItsNode()).parents == [upstream]
    out = nvt.Workflow(["price"] >> MakesItsNode()).fit_transform(events)
    pd.testing.assert_frame_equal(out, events[["price"]])


class StringLength(ops.Operator):
    """Declares float32, but its dtype is only known from the data (dynamic_dtypes)."""

    def transform(self, col_selector, df):
        return df[col_selector.names].apply(lambda s: s.str.len())

    @property
    def output_dtype(self):
        return np.float32

    @property
    def dynamic_dtypes(self):
        return True


def test_dynamic_dtypes_take_the_dtype_the_data_has():
    df = pd.DataFrame({"s": ["ab", "cde", "f"]})
    wf = nvt.Workflow(["s"] >> StringLength())
    out = wf.fit_transform(df)
    assert out["s"].tolist() == [2, 3, 1]
    # The dtype the transform gives (a pandas integer), not the declared float32.
    assert wf.output_dtypes["s"] == canonical_dtype(out["s"].dtype) and wf.output_dtypes["s"] != "float32"


def test_dependencies_may_be_names_selectors_nodes_or_lists():
    lagged = ["x"] >> ops.Normalize()

    class Dep(ops.Operator):
        def __init__(self, dependency=None):
            self.dependency = dependency

        @property
        def dependencies(self):
            return self.dependency

    assert [d.selector.names for d in (["a"] >> Dep("y")).dependencies] == [["y"]]
    assert [d.selector.names for d in (["a"] >> Dep(ColumnSelector(["y", "z"]))).dependencies] == [["y", "z"]]
    assert (["a"] >> Dep(lagged)).dependencies == [lagged]
    mixed = (["a"] >> Dep(["y", lagged])).dependencies
    assert mixed[0].selector.names == ["y"] and mixed[1] is lagged
    assert (["a"] >> Dep(None)).dependencies == [] and (["a"] >> Dep([])).dependencies == []
    # NVTabular's DifferenceLag reads its partition columns (names or nodes) the same way.
    assert (["t"] >> ops.DifferenceLag(partition_cols=[lagged])).dependencies == [lagged]
    assert (["t"] >> ops.DifferenceLag(partition_cols=["u"])).dependencies[0].selector == ColumnSelector(["u"])


# ------------------------------------------------------------------- statistics ops, storage
class LegacyMean(ops.StatOperator):
    """NVTabular-style statistics op: ``fit`` returns dask objects, ``fit_finalize`` keeps
    them under its own names, and ``set_storage_path`` records where the workflow is."""

    def __init__(self):
        self.paths = []

    def fit(self, col_selector, ddf):
        return ddf[col_selector.names].mean()

    def fit_finalize(self, dask_stats):
        self.means = {k: float(v) for k, v in dask_stats.items()}

    def transform(self, col_selector, df):
        return df[col_selector.names] - pd.Series(self.means)

    def set_storage_path(self, new_path, copy=False):
        self.paths.append((os.path.basename(str(new_path)), copy))


def test_set_storage_path_is_called_on_save_and_load(events, tmp_path):
    op = LegacyMean()
    wf = nvt.Workflow(["price"] >> op).fit(events)
    wf.save(str(tmp_path / "saved"))
    # Bundled into the directory being written (a temporary name), then pointed at the
    # published one, as NVTabular's save did with copy=True.
    assert len(op.paths) == 2 and op.paths[0][1] is True and op.paths[1] == ("saved", False)
    loaded = nvt.Workflow.load(str(tmp_path / "saved"))
    assert loaded.output_node.op.paths == [("saved", False)]
    assert loaded.output_node.op.means == {"price": pytest.approx(events["price"].mean())}


def test_categorify_vocabulary_files_travel_with_the_saved_workflow(events, tmp_path):
    stats = tmp_path / "stats"
    op = ops.Categorify(out_path=str(stats))
    wf = nvt.Workflow(["item"] >> op).fit(events)
    counts = events["item"].value_counts()
    expected = sorted(counts.index, key=lambda v: (-counts[v], v))
    wf.save(str(tmp_path / "wf"))
    bundled = tmp_path / "wf" / "categories" / "unique.item.parquet"
    assert bundled.exists() and op.out_path == str(tmp_path / "wf")  # NVTabular's set_storage_path
    assert pd.read_parquet(op.categories["item"])["item"].tolist() == expected
    assert pd.read_parquet(stats / "categories" / "unique.item.parquet")["item"].tolist() == expected  # left in place
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    loaded_op = loaded.output_node.op
    assert loaded_op.out_path == str(tmp_path / "wf")
    assert pd.read_parquet(loaded_op.categories["item"])["item"].tolist() == expected
    pd.testing.assert_frame_equal(loaded.transform(events), wf.transform(events))


def test_categorify_without_out_path_writes_no_files_when_saved(events, tmp_path):
    op = ops.Categorify()
    wf = nvt.Workflow(["item"] >> op).fit(events)
    wf.save(str(tmp_path / "wf"))
    assert op.out_path is None and not (tmp_path / "wf" / "categories").exists()


class Lookup(ops.Operator):
    """Keeps a table in a file of its own (save_artifacts / load_artifacts)."""

    def __init__(self, table=None):
        self.table = table

    def transform(self, col_selector, df):
        return df[col_selector.names].apply(lambda s: s.map(self.loaded_))

    def save_artifacts(self, artifact_path=None):
        pd.DataFrame({"key": list(self.table), "value": list(self.table.values())}).to_parquet(
            os.path.join(artifact_path, "lookup.parquet")
        )

    def load_artifacts(self, artifact_path=None):
        table = pd.read_parquet(os.path.join(artifact_path, "lookup.parquet"))
        self.loaded_ = dict(zip(table["key"], table["value"]))


def test_save_and_load_artifacts_hooks(events, tmp_path):
    op = Lookup(table={"a": 1.0, "b": 2.0, "c": 3.0})
    op.loaded_ = dict(op.table)
    wf = nvt.Workflow(["item"] >> op).fit(events)
    wf.save(str(tmp_path / "wf"))
    assert (tmp_path / "wf" / "lookup.parquet").exists()
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_node.op.loaded_ == {"a": 1.0, "b": 2.0, "c": 3.0}
    pd.testing.assert_series_equal(loaded.transform(events)["item"], events["item"].map(op.table))


def test_an_op_fitted_in_one_workflow_transforms_in_another_without_fit(events):
    # NVTabular's test_embedding_cat_export_import: the fitted Categorify is reused.
    op = ops.Categorify()
    first = nvt.Workflow(["item"] >> op).fit_transform(events)
    second = nvt.Workflow(["item"] >> op).transform(nvt.Dataset(events.iloc[::-1])).compute()
    assert second["item"].tolist() == first["item"].tolist()[::-1]
    with pytest.raises(ops.NotFittedError):
        nvt.Workflow(["item"] >> ops.Categorify()).transform(events)


# ---------------------------------------------------------------------------- graph pieces
def test_graph_column_mapping_traces_outputs_to_data_columns():
    # NVTabular's tests/unit/workflow/test_workflow_schemas.py.
    renamed = ["a", "b"] >> ops.Rename(postfix="_renamed") >> ops.Rename(postfix="_again")
    wf = nvt.Workflow(renamed).fit_schema(Schema(["a", "b"]))
    assert wf.graph.column_mapping == {"a_renamed_again": ["a"], "b_renamed_again": ["b"]}
    sim = [["a", "b"]] >> ops.ColumnSimilarity(["a"], ["b"])
    wf = nvt.Workflow(sim + (sim >> ops.Rename(postfix="_renamed"))).fit_schema(Schema(["a", "b"]))
    assert wf.graph.column_mapping == {"a_b_sim": ["a", "b"], "a_b_sim_renamed": ["a", "b"]}
    te = ["c"] >> ops.TargetEncoding("y")
    wf = nvt.Workflow(te + ["y"]).fit_schema(Schema(["c", "y"]))
    mapping = wf.graph.column_mapping  # the encoding is computed from the group and the target
    assert sorted(mapping["TE_c_y"]) == ["c", "y"] and mapping["y"] == ["y"]
    with pytest.raises(ValueError, match="construct_schema"):
        _ = Graph(["a"] >> ops.LogOp()).column_mapping


def test_node_children_selector_setter_and_subset_inputs():
    selection = nvt.ColumnSelector(["x", "y"]) >> ops.LogOp()
    source = selection.parents[0]
    assert source.children == [selection]
    node = nvt.WorkflowNode([])
    node.selector = ["a", "b"]
    assert node.selector == ColumnSelector(["a", "b"])
    with pytest.raises(TypeError, match="selects input columns"):
        selection.selector = ["x"]
    subset = selection[["y"]]
    wf = nvt.Workflow(subset).fit_schema(Schema(["x", "y"]))
    assert wf.output_node.input_columns.names == ["y"] and wf.output_node.output_columns.names == ["y"]
    other = Node(["z"])
    other.add_child(node)
    assert node.parents == [other] and other.children == [node]
    other.remove_child(node)
    assert node.parents == [] and other.children == []
    selection.compute_schemas(Schema([ColumnSchema("x", dtype="float64"), ColumnSchema("y", dtype="int64")]))
    selection.validate_schemas(Schema(["x", "y"]))


def test_nvtabular_module_names():
    import warnings

    from tabflow.graph import ops as graph_ops
    from tabflow.workflow import WorkflowNode

    assert WorkflowNode is nvt.Node is nvt.WorkflowNode
    assert nvt.graph.Operator is nvt.graph.BaseOperator is ops.Operator
    assert {f.name for f in nvt.graph.Supports} == {"CPU_DATAFRAME", "GPU_DATAFRAME", "CPU_DICT_ARRAY", "GPU_DICT_ARRAY"}
    assert ops.Operator().supported_formats == nvt.graph.DataFormats.PANDAS_DATAFRAME | nvt.graph.DataFormats.CUDF_DATAFRAME
    assert graph_ops.UDF is ops.LambdaOp and graph_ops.Rename is ops.Rename and graph_ops.Subgraph is nvt.graph.Subgraph
    assert not ops.Operator().is_subgraph and not ops.Operator().dynamic_dtypes
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert nvt.ColumnGroup(["a"]) == ColumnSelector(["a"])
    assert [w.category for w in caught] == [DeprecationWarning]
