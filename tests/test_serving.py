"""The serving plan gives exactly what the batch path gives, for every request form.

Every workflow below is fitted on one seeded frame and then asked for many random requests
of zero to four rows (unseen categories, nulls, NaN, infinities, -0.0, empty strings, a
non-default index). Each request is served as a frame, as a dict of lists, as a dict of NumPy
arrays and, for one row, as a dict of scalars; every answer is compared bit for bit with the
in-memory batch executor (``GraphRunner``, what ``Workflow.transform`` ran for every frame
before the plan existed) on the same request.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.backends import backend_for
from tabflow.exceptions import UntrustedCodeError
from tabflow.graph import Subgraph
from tabflow.graph.executor import GraphRunner
from tabflow.graph.serving import ServingPlan, request_frame
from tabflow.ops import NotFittedError
from tabflow.workflow import SERVING_MAX_ROWS

# pandas' own text dtype (``str`` on pandas 3), what tabflow holds strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")

# Fitting LogOp on 1e300 overflows float32 in the batch path itself.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

WORDS = ["a", "b", "c", "d", "", "zz", "é", "a b"]
UNSEEN = ["new", "NEW", "q"]
FLOATS = [0.0, -0.0, 1.5, 2.0, -7.25, np.nan, np.inf, -np.inf, 1e300, 3.0, 30.0]


def make_frame(rng: np.random.Generator, n: int, unseen: bool = False) -> pd.DataFrame:
    words = WORDS + (UNSEEN if unseen else [])
    tags = [None if rng.random() < 0.1 else list(rng.choice(words, int(rng.integers(0, 3)))) for _ in range(n)]
    frame = pd.DataFrame({
        "s": pd.array(rng.choice(words + [None], n).tolist(), dtype="string"),
        "s2": pd.array(rng.choice(words + [None], n).tolist(), dtype="string"),
        "i": pd.array(rng.choice([0, 1, 2, 5, 50, -3, 10**6, None], n).tolist(), dtype="Int64"),
        "j": rng.integers(-5, 5, n).astype(np.int64),
        "f": rng.choice(FLOATS, n),
        "f32": rng.normal(size=n).astype(np.float32),
        "b": rng.choice([True, False], n),
        "tags": pd.Series(tags, dtype=pd.ArrowDtype(pa.list_(pa.string()))),
    })
    frame.index = pd.RangeIndex(7, 7 + n)  # requests need not start at row 0
    return frame


@pytest.fixture(scope="module")
def train() -> pd.DataFrame:
    return make_frame(np.random.default_rng(0), 500).reset_index(drop=True)


def batch(workflow: nvt.Workflow, frame: pd.DataFrame) -> pd.DataFrame:
    """The in-memory batch path on ``frame``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow of 1e300 squared, log of -inf...
        return GraphRunner([workflow.output_node], workflow.input_schema).transform(frame)


def handed_out(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as ``Workflow.transform`` hands it to users: list columns in pandas' form."""
    return backend_for(frame).lists_as_arrays(frame)


def assert_identical(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    for name in expected.columns:
        if expected[name].dtype.kind == "f":  # -0.0 and NaN payloads too
            assert got[name].to_numpy().tobytes() == expected[name].to_numpy().tobytes(), name


def assert_dict_matches(got: dict, expected: pd.DataFrame) -> None:
    """A dict answer holds the batch frame's columns: NumPy arrays of the same dtype, or the
    pandas arrays the frame holds."""
    assert list(got) == expected.columns.tolist()
    for name in expected.columns:
        column = expected[name]
        if isinstance(column.dtype, np.dtype):
            assert isinstance(got[name], np.ndarray) and got[name].dtype == column.dtype, name
            assert got[name].tobytes() == column.to_numpy().tobytes(), name
        else:
            pd.testing.assert_extension_array_equal(got[name], column.array)


def python_value(value):
    if value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


def dict_requests(frame: pd.DataFrame, names: list[str]) -> list[dict]:
    """The same request as a dict of lists and as a dict of NumPy arrays (and of scalars for
    one row)."""
    lists = {name: [python_value(v) for v in frame[name].tolist()] for name in names}
    numpy = {name: frame[name].dtype if isinstance(frame[name].dtype, np.dtype) else object for name in names}
    forms = [lists, {name: np.array(values, dtype=numpy[name]) for name, values in lists.items()}]
    if len(frame) == 1:
        forms.append({name: values[0] for name, values in lists.items()})
    return forms


WORKFLOWS = {
    "criteo": lambda: (["s", "s2"] >> ops.Categorify(freq_threshold=2))
    + (["i", "j", "f", "f32"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()),
    "categorify": lambda: ["s", "s2", "i", "j", "f", "b"] >> ops.Categorify(),
    "freq_threshold": lambda: ["s", "i", "f"] >> ops.Categorify(freq_threshold={"s": 60, "i": 30, "f": 1}),
    "max_size": lambda: ["s", "i", "f"] >> ops.Categorify(max_size=6, dtype="int32"),
    "num_buckets": lambda: ["s", "i", "f", "b"] >> ops.Categorify(num_buckets=7),
    "combo": lambda: [["s", "s2"], ["i", "f"]] >> ops.Categorify(encode_type="combo", num_buckets=5),
    "joint": lambda: [["s", "s2"]] >> ops.Categorify(encode_type="joint", num_buckets=3, start_index=0),
    "single_table": lambda: ["s", "i", "f"] >> ops.Categorify(single_table=True, num_buckets={"i": 4}),
    "vocabs": lambda: ["s", "j"] >> ops.Categorify(vocabs={"s": ["zz", "a", ""], "j": [3, -1, 0]}),
    "fill": lambda: ["i", "j", "f", "f32"] >> ops.FillMissing(fill_val=0.5, add_binary_cols=True),
    "fill_string": lambda: ["s"] >> ops.FillMissing(fill_val="?", add_binary_cols=True),
    "fill_median": lambda: ["i", "j", "f", "f32"] >> ops.FillMedian(add_binary_cols=True),
    "clip": lambda: ["i", "j", "f", "f32"] >> ops.Clip(min_value=-1.5, max_value=3),
    "normalize_minmax": lambda: ["i", "j", "f", "f32"] >> ops.NormalizeMinMax(out_dtype="float32"),
    "hash_bucket": lambda: ["s", "i", "j", "f", "b"] >> ops.HashBucket({"s": 11, "i": 3, "j": 2**40, "f": 5, "b": 2}),
    "bucketize": lambda: ["i", "j", "f"] >> ops.Bucketize({"i": [0, 1, 10], "j": [0], "f": [-1.0, 2.0]}),
    "rename_and_tags": lambda: (["i", "j", "s"] >> ops.Rename(postfix="_r") >> ops.AddTags(["custom"])) + ["f"],
    "lambda": lambda: (["i", "f"] >> ops.LambdaOp(lambda col: col * 2) >> ops.Normalize()) + ["s"],
    "no_kernel": lambda: (["i", "j", "f"] >> ops.ReduceDtypeSize()) + (["j"] >> ops.LogOp() >> ops.Rename(postfix="_log")),
    "list_columns": lambda: (["tags"] >> ops.Categorify()) + (["s"] >> ops.Categorify()) + (["tags"] >> ops.Rename(postfix="_raw")),
    "shared_branches": lambda: (["f"] >> ops.Clip(min_value=0)) + (["f", "i"] >> ops.FillMissing() >> ops.Rename(postfix="_x")) + ["j"],
}


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_plan_matches_the_batch_path_on_random_requests(name, train):
    workflow = nvt.Workflow(WORKFLOWS[name]())
    workflow.fit(train)
    plan = workflow.compile_serving()
    assert plan.list_outputs == (name == "list_columns")  # answers are looked through for lists only then
    rng = np.random.default_rng(1)
    for _ in range(25):
        request = make_frame(rng, int(rng.integers(0, 5)), unseen=True)
        expected = batch(workflow, request)
        assert_identical(plan.transform(request), expected)
        assert_identical(workflow.transform(request), handed_out(expected))
        if name == "list_columns":
            continue  # a dict cannot tell a list value from a column of values
        reference = batch(workflow, request.reset_index(drop=True))
        for form in dict_requests(request, workflow.input_schema.column_names):
            assert_dict_matches(plan.transform(form), reference)


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_frames_of_more_rows_match_the_batch_path(name, train):
    # Frames of up to eight rows are read row by row, larger ones column by column.
    workflow = nvt.Workflow(WORKFLOWS[name]()).fit(train)
    rng = np.random.default_rng(13)
    for rows in (5, 8, 9, 40):
        request = make_frame(rng, rows, unseen=True)
        assert_identical(workflow.transform(request), handed_out(batch(workflow, request)))


def wide(frame: pd.DataFrame, copies: int) -> pd.DataFrame:
    """``copies`` of each column side by side, ``s_0``, ``s_1``, ...: frames of as many
    columns as servers see."""
    return pd.concat([frame.add_suffix(f"_{k}") for k in range(copies)], axis=1)


def wide_workflow(copies: int) -> nvt.Workflow:
    def names(*columns: str) -> list[str]:
        return [f"{column}_{k}" for k in range(copies) for column in columns]

    return nvt.Workflow(
        (names("s", "s2") >> ops.Categorify(freq_threshold=2))
        + (names("i", "j", "f", "f32") >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())
        + (names("b", "j") >> ops.Categorify(num_buckets=3) >> ops.Rename(postfix="_c"))
        + (names("i", "s") >> ops.Rename(postfix="_raw")) + names("tags")
    )


def request_layouts(request: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The same request in other frame layouts: column order, extra columns, dtypes of the
    string and integer columns, indexes, all nulls."""
    strings = [name for name in request.columns if name.startswith("s")]
    integers = [name for name in request.columns if name.startswith("i_")]
    kinds = {
        "object": lambda column: column.astype(object).where(column.notna(), None),
        "str": lambda column: column.astype("str"),
        "category": lambda column: column.astype("category"),
        "string[python]": lambda column: column.astype("string[python]"),
        "string[pyarrow]": lambda column: column.astype("string[pyarrow]"),
        "float64": lambda column: column.astype("Float64").astype(float),
        "Float64": lambda column: column.astype("Float64"),
    }

    def converted(names: list[str], kind: str) -> pd.DataFrame:
        return request.assign(**{name: kinds[kind](request[name]) for name in names})

    layouts = {f"strings as {kind}": converted(strings, kind) for kind in list(kinds)[:5]}
    layouts.update({f"integers as {kind}": converted(integers, kind) for kind in ("object", "float64", "Float64")})
    layouts["one string column as object"] = converted(strings[:1], "object")
    if request[integers].notna().all().all():
        layouts["integers as int64"] = request.astype(dict.fromkeys(integers, np.int64))
    rows = len(request)
    nulls = {name: pd.NA for name in strings + integers} | {name: np.nan for name in request.columns if name.startswith("f_")}
    layouts.update({
        "as made": request,
        "reversed": request[request.columns[::-1]],
        "one extra column": request.assign(label=1.5),
        "a few extra columns": request.assign(label=1.5, id="x", day=pd.Timestamp("2024-01-01")),
        "mostly extra columns": request.assign(**{f"extra{k}": float(k) for k in range(30)}),
        "string index": request.set_axis([f"r{k}" for k in range(rows)]),
        "repeated index": request.set_axis([3] * rows),
        "named datetime index": request.set_axis(pd.date_range("2024-01-01", periods=rows, name="when")),
        "all nulls": request.assign(**nulls).astype(request.dtypes.to_dict()),
    })
    return layouts


def test_request_frames_of_any_layout_match_the_batch_path(train):
    workflow = wide_workflow(3).fit(wide(train, 3))
    plan = workflow.compile_serving()
    rng = np.random.default_rng(14)
    for rows in (1, 1, 2, 3, 8, 9):
        request = wide(make_frame(rng, rows, unseen=True), 3)
        for layout, frame in request_layouts(request).items():
            try:
                assert_identical(plan.transform(frame), batch(workflow, frame))
            except AssertionError as error:
                raise AssertionError(f"{rows} row(s), {layout}") from error
    # One set of column labels with other dtypes, one request after the other.
    request = wide(make_frame(rng, 2, unseen=True), 3)
    for _ in range(2):
        for frame in request_layouts(request).values():
            assert_identical(plan.transform(frame), batch(workflow, frame))


def test_frames_of_number_columns_only_match_the_batch_path(train):
    # Integers beyond float64's precision beside float columns, and frames of one dtype.
    workflow = nvt.Workflow((["j", "f"] >> ops.Categorify()) + (["j", "f"] >> ops.HashBucket(7) >> ops.Rename(postfix="_h")))
    plan = workflow.fit(train).compile_serving()
    for values in ([2**60 + 1, 3], [1, -2]):
        mixed = pd.DataFrame({"j": np.array(values, dtype=np.int64), "f": [0.5, np.nan]})
        floats = mixed.astype(float)
        for frame in (mixed, floats, mixed.iloc[:1], floats.iloc[1:]):
            assert_identical(plan.transform(frame), batch(workflow, frame))


def test_frame_answers_are_independent_of_each_other_and_of_the_plan(train):
    # Two outputs of one column; another column's output between them.
    workflow = nvt.Workflow((["j"] >> ops.Rename(postfix="_a")) + ["f"] + (["j"] >> ops.Rename(postfix="_b"))).fit(train)
    request = make_frame(np.random.default_rng(15), 3)
    first = workflow.transform(request)
    expected = batch(workflow, request)
    first.loc[first.index[0], "j_a"] = 1234
    first.columns.name = "features"
    assert first["j_b"].tolist() == expected["j_b"].tolist()
    again = workflow.transform(request)
    assert_identical(again, expected)
    assert again.columns.name is None and request["j"].tolist() == expected["j_a"].tolist()


def test_the_criteo_workflow_runs_on_kernels_only(train):
    workflow = nvt.Workflow(WORKFLOWS["criteo"]())
    plan = workflow.fit(train).compile_serving()
    assert plan.fallbacks == [] and plan.unsupported is None
    # ... and the ops without kernels are named.
    assert nvt.Workflow(WORKFLOWS["no_kernel"]()).fit(train).compile_serving().fallbacks == ["ReduceDtypeSize"]


def test_plan_matches_the_dataset_path(train):
    workflow = nvt.Workflow(WORKFLOWS["criteo"]() + ["b"])
    workflow.fit(nvt.Dataset(train, npartitions=3))
    rng = np.random.default_rng(2)
    for rows in (1, 3):
        request = make_frame(rng, rows, unseen=True)
        expected = workflow.transform(nvt.Dataset(request)).to_ddf().compute()
        assert_identical(workflow.serve(request), expected)


def test_requests_in_other_dtypes_are_conformed_as_the_batch_path_does(train):
    workflow = nvt.Workflow(WORKFLOWS["criteo"]() + (["b", "j"] >> ops.Categorify(num_buckets=3) >> ops.Rename(postfix="_c")))
    workflow.fit(train)
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(1, 4))
        request = pd.DataFrame({
            "s": pd.Series(rng.choice(WORDS + UNSEEN + [None], n).tolist(), dtype=object),  # object strings
            "s2": pd.Series(rng.choice(WORDS + UNSEEN, n).tolist()),  # pandas' default str dtype
            "i": rng.choice([0.0, 1.0, 2.0, np.nan, 5.0, 10.5 if rng.random() < 0.3 else 3.0], n),  # floats, Int64 fitted
            "j": rng.choice([1, 2, 3, 2**40 if rng.random() < 0.2 else 4], n).astype(np.int64),
            "f": rng.integers(0, 5, n) if rng.random() < 0.5 else np.array([2**60 + 1] * n),  # ints, float64 fitted
            "f32": rng.normal(size=n),  # float64, float32 fitted
            "b": rng.choice([True, False], n).astype(object),
        })
        expected = batch(workflow, request)
        assert_identical(workflow.serve(request), expected)
        as_arrays = {name: request[name].to_numpy() for name in request.columns}
        assert_dict_matches(workflow.serve(as_arrays), batch(workflow, request_frame(as_arrays)))
    # Values a JSON body holds: ints for integers, floats, None.
    one = {"s": "a", "s2": None, "i": 3.0, "j": 2, "f": 7, "f32": 0.25, "b": True}
    assert_dict_matches(workflow.serve(one), batch(workflow, request_frame(one)))


JSON_VALUES = {
    "s": WORDS + UNSEEN + [None],
    "s2": WORDS + [None],
    "i": [0, 3, None, 2.5, 10**6, 2**60 + 1, float("nan"), True],  # Int64 fitted
    "j": [1, -3, None, 2.0, 2**40],  # int64 fitted
    "f": [0.5, None, 3, float("inf"), -0.0, 2**60 + 1],  # float64 fitted
    "f32": [0.25, None, 1, 1e300],  # float32 fitted
    "b": [True, False, None],
}


def test_frames_built_from_json_bodies_match_the_batch_path(train, monkeypatch):
    # pd.DataFrame(rows) holds a number column as int64, float64 or object (a None beside
    # ints, a bool beside numbers) depending on the values sent: one set of labels comes in
    # many sets of dtypes, more than the plan remembers (two here).
    from tabflow.graph import serving

    monkeypatch.setattr(serving, "_DTYPE_LAYOUTS", 2)
    workflow = nvt.Workflow(WORKFLOWS["criteo"]() + (["b", "j"] >> ops.Categorify(num_buckets=3) >> ops.Rename(postfix="_c")))
    plan = workflow.fit(train).compile_serving()
    rng = np.random.default_rng(16)
    frames = []
    for _ in range(60):
        rows = [{name: values[int(rng.integers(len(values)))] for name, values in JSON_VALUES.items()} for _ in range(int(rng.integers(1, 4)))]
        frames.append(pd.DataFrame(rows))
    assert len({tuple(map(str, frame.dtypes)) for frame in frames}) > 10
    for frame in frames + frames[::-1]:  # and again, in another order
        assert_identical(plan.transform(frame), batch(workflow, frame))


def test_a_word_in_a_numeric_column_is_the_batch_path_error(train):
    workflow = nvt.Workflow(WORKFLOWS["criteo"]()).fit(train)
    request = make_frame(np.random.default_rng(4), 2).astype({"i": object})
    request.loc[8, "i"] = "many"
    with pytest.raises(ValueError) as batch_error:
        batch(workflow, request)
    with pytest.raises(ValueError) as served_error:
        workflow.transform(request)
    assert str(served_error.value) == str(batch_error.value) and "'i'" in str(served_error.value)
    with pytest.raises(ValueError, match="column 'i' holds 'many'"):
        workflow.serve({name: request[name].tolist() for name in request.columns})


def test_dict_answers_have_pinned_dtypes(train):
    workflow = nvt.Workflow(
        (["s"] >> ops.Categorify()) + (["s2"] >> ops.Categorify(dtype="int32"))
        + (["i"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())
        + (["j"] >> ops.LogOp()) + (["i", "s"] >> ops.Rename(postfix="_raw")) + (["f"] >> ops.Bucketize([0.0]))
        + ["b"]
    ).fit(train)
    out = workflow.serve({"s": "a", "s2": "nope", "i": None, "j": 3, "f": float("nan"), "b": True})
    assert {name: str(values.dtype) for name, values in out.items()} == {
        "s": "int64", "s2": "int32", "i": "float64", "j": "float32", "i_raw": "Int64", "s_raw": str(STRING), "f": "Int32",
        "b": "bool",
    }
    assert isinstance(out["s2"], np.ndarray) and out["s2"].tolist() == [2]  # out of vocabulary
    assert isinstance(out["i_raw"], pd.arrays.IntegerArray) and out["i_raw"].isna().tolist() == [True]
    assert out["s_raw"].tolist() == ["a"] and out["f"].isna().tolist() == [True]
    codes = workflow.serve({"s": [None, "zzz", "a"], "s2": ["a"] * 3, "i": [1, 2, 3], "j": [0] * 3, "f": [1.0] * 3, "b": [False] * 3})
    assert codes["s2"].tolist()[0] == codes["s2"].tolist()[2] and codes["s"].tolist()[:2] == [1, 2]


def test_a_column_two_branches_produce_is_the_last_one_as_in_the_batch_path(train):
    clipped = ["f"] >> ops.Clip(min_value=0)
    workflow = nvt.Workflow(clipped + ["f", "s"] + (["s"] >> ops.Categorify()) + (clipped >> ops.Rename(postfix="_c"))).fit(train)
    request = make_frame(np.random.default_rng(12), 3)
    request["f"] = [-1.0, 2.0, float("nan")]
    out = workflow.transform(request)
    assert_identical(out, batch(workflow, request))
    assert out["f"].tolist()[0] == -1.0 and out["f_c"].tolist()[0] == 0.0 and out["s"].dtype == "int64"
    # An op whose dependency gives a column its parent gives reads the dependency's.
    workflow = nvt.Workflow(clipped >> ops.LambdaOp(lambda col, frame: col + frame["f"], dependency=["f"], dtype="float64")).fit(train)
    out = workflow.transform(request)
    assert_identical(out, batch(workflow, request))
    assert out["f"].tolist()[0] == -2.0


def test_empty_requests(train):
    workflow = nvt.Workflow(WORKFLOWS["criteo"]()).fit(train)
    request = make_frame(np.random.default_rng(5), 0)
    assert_identical(workflow.transform(request), batch(workflow, request))
    empty = {name: [] for name in workflow.input_schema.column_names}
    assert_dict_matches(workflow.serve(empty), batch(workflow, request_frame(empty)))


def test_a_saved_and_loaded_workflow_serves_identically(train, tmp_path):
    hashed = WORKFLOWS["hash_bucket"]() >> ops.Rename(postfix="_hashed")
    workflow = nvt.Workflow(WORKFLOWS["criteo"]() + WORKFLOWS["combo"]() + hashed).fit(train)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.compile_serving().fallbacks == []
    rng = np.random.default_rng(6)
    for _ in range(10):
        request = make_frame(rng, int(rng.integers(1, 4)), unseen=True)
        assert_identical(loaded.transform(request), batch(workflow, request))


def test_lambdas_run_by_their_transform_and_need_trust_once_loaded(train, tmp_path):
    workflow = nvt.Workflow(WORKFLOWS["lambda"]()).fit(train)
    assert workflow.compile_serving().fallbacks == ["LambdaOp"]
    workflow.save(str(tmp_path / "wf"))
    request = {"i": 4, "f": 2.5, "s": "a"}
    trusted = nvt.Workflow.load(str(tmp_path / "wf"), trust_code=True)
    assert_dict_matches(trusted.serve(request), batch(workflow, request_frame(request)))
    untrusted = nvt.Workflow.load(str(tmp_path / "wf"))
    with pytest.raises(UntrustedCodeError):
        untrusted.serve(request)


def test_ops_of_other_packages_and_overridden_transforms_get_no_kernel(train):
    class Shifted(ops.Normalize):
        """A subclass whose transform is its own: Normalize's kernel must not stand in for it."""

        def transform(self, col_selector, df):
            return super().transform(col_selector, df) + 100.0

    class Doubled(ops.Operator):
        def transform(self, col_selector, df):
            return df[col_selector.names] * 2

    workflow = nvt.Workflow((["f"] >> Shifted()) + (["j"] >> Doubled() >> ops.LogOp())).fit(train)
    plan = workflow.compile_serving()
    assert sorted(plan.fallbacks) == ["Doubled", "Shifted"]
    request = make_frame(np.random.default_rng(7), 3, unseen=True)
    out = plan.transform(request)
    assert_identical(out, batch(workflow, request))
    assert (out["f"].dropna() > 90).all()


def test_an_op_that_drops_rows_is_served_by_the_batch_path(train):
    workflow = nvt.Workflow((["f", "j"] >> ops.FillMissing()) >> ops.Filter(lambda df: df["j"] > 0)).fit(train)
    request = make_frame(np.random.default_rng(8), 4)
    request["j"] = [3, -1, 2, -4]
    out = workflow.transform(request)
    assert_identical(out, batch(workflow, request))
    assert out["j"].tolist() == [3, 2]


def test_a_looping_subgraph_is_served_by_the_batch_path(train):
    class PlusOne(ops.Operator):
        def transform(self, col_selector, df):
            return df[col_selector.names] + 1.0

    loop = Subgraph("loop", ["f32"] >> PlusOne(), loop_until=lambda frame: (frame["f32"] > 3.0).all())
    workflow = nvt.Workflow((["f32"] >> ops.Clip(min_value=0.0) >> loop) + (["s"] >> ops.Categorify())).fit(train)
    assert "Subgraph(loop)" in workflow.compile_serving().unsupported
    request = make_frame(np.random.default_rng(9), 2)
    assert_identical(workflow.transform(request), batch(workflow, request))


def test_one_plan_serves_many_threads_at_once(train):
    workflow = nvt.Workflow(WORKFLOWS["criteo"]() + (WORKFLOWS["num_buckets"]() >> ops.Rename(postfix="_hashed"))).fit(train)
    rng = np.random.default_rng(10)
    requests = [make_frame(rng, int(rng.integers(1, 4)), unseen=True) for _ in range(40)]
    expected = [batch(workflow, request) for request in requests]
    plan = workflow.compile_serving()
    failures: list[BaseException] = []
    start = threading.Barrier(6)

    def serve(offset: int) -> None:
        start.wait()
        try:
            for k in range(len(requests)):
                position = (k + offset) % len(requests)
                assert_identical(plan.transform(requests[position]), expected[position])
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=serve, args=(offset,)) for offset in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_a_missing_request_column_is_named_with_the_fix(train):
    workflow = nvt.Workflow(WORKFLOWS["criteo"]()).fit(train)
    request = {"s": "a", "s2": "b", "i": 1, "j": 2, "f32": 0.5}
    for form in (request, request_frame(request)):
        with pytest.raises(KeyError, match=r"lacks column\(s\) \['f'\].*remove_inputs\(\['f'\]\)"):
            workflow.transform(form)
    workflow.remove_inputs(["f"])
    assert "f" not in workflow.serve(request)


def test_transform_sends_small_frames_and_dicts_through_the_plan(train, monkeypatch):
    workflow = nvt.Workflow(WORKFLOWS["criteo"]()).fit(train)
    small = make_frame(np.random.default_rng(11), SERVING_MAX_ROWS)
    large = make_frame(np.random.default_rng(11), SERVING_MAX_ROWS + 1)
    served = workflow.transform(small)
    plan = workflow.compile_serving()
    assert_identical(served, batch(workflow, small))

    def refuse(self, request):
        raise AssertionError("the plan served a large frame")

    monkeypatch.setattr(ServingPlan, "transform", refuse)
    assert_identical(workflow.transform(large), batch(workflow, large))
    with pytest.raises(AssertionError, match="the plan served"):
        workflow.transform({"s": "a", "s2": "b", "i": 1, "j": 2, "f": 0.5, "f32": 0.5})
    assert workflow.compile_serving() is plan


def test_the_plan_follows_refits_remove_inputs_and_cleared_statistics(train):
    workflow = nvt.Workflow(WORKFLOWS["criteo"]())
    request = {"s": "a", "s2": "b", "i": 5, "j": 2, "f": 0.5, "f32": 0.5}
    before = workflow.fit(train).serve(request)
    plan = workflow.compile_serving()
    shifted = train.assign(i=train["i"] + 10)
    after = workflow.fit(shifted).serve(request)
    assert workflow.compile_serving() is not plan and after["i"][0] < before["i"][0]
    assert_dict_matches(after, batch(workflow, request_frame(request)))
    workflow.clear_stats()
    with pytest.raises(NotFittedError):
        workflow.transform(request)


def test_the_plan_follows_fitted_state_set_by_hand(train):
    workflow = nvt.Workflow(WORKFLOWS["criteo"]())
    request = {"s": "a", "s2": "b", "i": 5, "j": 2, "f": 0.5, "f32": 0.5}
    before = workflow.fit(train).serve(request)
    plan = workflow.compile_serving()
    assert plan.is_current() and workflow.compile_serving() is plan
    categorify = next(op for op in workflow.ops if isinstance(op, ops.Categorify))
    normalize = next(op for op in workflow.ops if isinstance(op, ops.Normalize))

    # A vocabulary set in place, as in a notebook.
    categorify.vocabs_["s"] = pd.DataFrame({"value": pd.Series(["b", "a"], dtype="str"), "count": [2, 1]})
    assert not plan.is_current()
    after = workflow.serve(request)
    assert after["s"].tolist() == [4] and before["s"].tolist() != [4]
    assert workflow.compile_serving() is not plan
    assert_dict_matches(after, batch(workflow, request_frame(request)))
    pd.testing.assert_frame_equal(workflow.transform(request_frame(request)), batch(workflow, request_frame(request)))

    # Statistics replaced as a whole.
    plan = workflow.compile_serving()
    normalize.means_ = {name: mean + 1.0 for name, mean in normalize.means_.items()}
    moved = workflow.serve(request)
    assert workflow.compile_serving() is not plan
    assert moved["f"][0] == pytest.approx(after["f"][0] - 1.0 / normalize.stds_["f"])
    assert_dict_matches(moved, batch(workflow, request_frame(request)))
