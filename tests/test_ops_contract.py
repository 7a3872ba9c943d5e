"""The op contract, run over every op in ``ops.__all__``.

An op added to ``ops.__all__`` is covered automatically. When its constructor has required
arguments, add one line to ``CONSTRUCTOR_ARGS``; ops that can be built neither from that table
nor with defaults are skipped with the reason.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import scipy.sparse as sp

import tabflow as nvt
from tabflow import ops
from tabflow.backends import backend_for
from tabflow.schema import Tags
from tabflow.testing import assert_frame_equal


@nvt.register_function
def double(col):
    """Registered, so a saved workflow using it loads without trusting code."""
    return col * 2


@nvt.register_function
def first_column_present(frame):
    """Registered, so a saved workflow using it loads without trusting code."""
    return frame.iloc[:, 0].notna()


#: Arguments for ops that cannot be built (or do nothing) with defaults. One line per op.
CONSTRUCTOR_ARGS: dict[str, dict] = {
    "HashBucket": {"num_buckets": 10},
    "HashedCross": {"num_buckets": 10},
    "Bucketize": {"boundaries": [0, 10, 50]},
    "ListSlice": {"start": 0, "end": 2},
    "Filter": {"f": first_column_present},
    "Clip": {"min_value": 0},
    "LambdaOp": {"f": double},
    "Rename": {"postfix": "_renamed"},
    "AddTags": {"tags": [Tags.TARGET]},
    "AddProperties": {"properties": {"unit": "seconds"}},
    "TargetEncoding": {"target": "label"},
    "DifferenceLag": {"partition_cols": "label"},
    "JoinExternal": {"df_ext": pd.DataFrame({"label": [0, 1], "label_name": ["no", "yes"]}), "on": "label"},
    "ColumnSimilarity": {"left_features": sp.csr_matrix(np.eye(100, 8))},
    "Groupby": {"groupby_cols": ["label"]},
}

#: Ops whose output for a row depends on its neighbours within the partition, so that the
#: partitioned result legitimately differs from transforming the whole frame at once.
PARTITION_LOCAL = {"DifferenceLag", "Groupby"}

#: Input columns for ops that need a particular selection (keys, id pairs) rather than the
#: generic numeric / string / list tries.
INPUT_COLUMNS: dict[str, list] = {
    "JoinExternal": ["label"],
    "ColumnSimilarity": [["label", "i"]],
}

_BASES = (ops.Operator, ops.StatOperator)
OP_NAMES = [
    name
    for name in ops.__all__
    if isinstance(getattr(ops, name), type)
    and issubclass(getattr(ops, name), ops.Operator)
    and getattr(ops, name) not in _BASES
]


def _build(name: str) -> ops.Operator:
    cls = getattr(ops, name)
    if name in CONSTRUCTOR_ARGS:
        return cls(**CONSTRUCTOR_ARGS[name])
    try:
        return cls()
    except TypeError as err:
        pytest.skip(f"{name} cannot be built with defaults ({err}); add it to CONSTRUCTOR_ARGS")


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 60
    # Not whole numbers: sums of whole numbers are exact in any order, and would hide an
    # order that changes between fits (see test_fitting_twice_gives_the_same_statistics).
    x = rng.integers(0, 100, n) + rng.random(n)
    x[[3, 17, 40]] = np.nan
    strings = rng.choice(["a", "b", "c", "d"], n).astype(object)
    strings[[5, 33]] = None
    ints = pd.array(rng.integers(-5, 50, n), dtype="Int64")
    ints[[0, 21]] = pd.NA
    lists = pd.Series([list(range(k % 4)) for k in range(n)], dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    return pd.DataFrame(
        {
            "x": x,
            "i": ints,
            "s": pd.array(strings, dtype="string"),
            "l": lists,
            "label": rng.integers(0, 2, n),
        }
    )


def _same_params(left: dict, right: dict) -> bool:
    try:
        return bool(left == right)
    except (TypeError, ValueError):  # array-valued parameters
        return repr(left) == repr(right)


def _fitted_workflow(name: str, to_engine):
    """Fit the op on the numeric columns (float and nullable int), else on the string column,
    else on the list column; skip if none is valid."""
    frame = to_engine(_frame())
    dataset = nvt.Dataset(frame, npartitions=3)
    errors = []
    candidates = [INPUT_COLUMNS[name]] if name in INPUT_COLUMNS else [["x", "i"], ["s"], ["l"]]
    for columns in candidates:
        workflow = nvt.Workflow(columns >> _build(name))
        try:
            workflow.fit_schema(dataset.schema)
        except (TypeError, ValueError, KeyError) as err:
            errors.append(f"{columns}: {err}")
            continue
        return workflow.fit(dataset), dataset, frame, columns
    pytest.skip(f"{name} accepts no numeric, string or list column: {errors}")


def _assert_declared_dtypes(workflow: nvt.Workflow, out) -> None:
    backend = backend_for(out)
    assert list(out.columns) == workflow.output_schema.column_names
    actual = {c: backend.canonical_dtype(out[c].dtype) for c in out.columns}
    declared = {c: backend.canonical_dtype(d) for c, d in workflow.output_schema.dtypes.items()}
    # A frame handed to a user on pandas holds list columns in pandas' form, one NumPy array
    # per row (whose dtype pandas may widen: integers with a null item are floats).
    for name, dtype in declared.items():
        if dtype.startswith("list<") and out[name].dtype == object:
            assert all(isinstance(row, np.ndarray) for row in out[name].dropna()), name
            actual[name] = dtype
    assert actual == declared


def test_op_list_is_not_empty():
    assert {"Normalize", "Clip", "FillMissing", "LambdaOp"} <= set(OP_NAMES)


@pytest.mark.parametrize("name", OP_NAMES)
def test_params_round_trip(name):
    op = _build(name)
    params = op.get_params()
    assert set(params) == set(type(op)._param_names())
    assert _same_params(type(op)(**params).get_params(), params)
    clone = op.clone()
    assert type(clone) is type(op) and clone is not op
    assert _same_params(clone.get_params(), params)
    assert repr(op).startswith(f"{name}(")


@pytest.mark.parametrize("name", OP_NAMES)
def test_fit_transform_matches_declared_schema(name, to_engine, tmp_path):
    workflow, dataset, frame, _ = _fitted_workflow(name, to_engine)
    partitioned = workflow.transform(dataset)
    for part in partitioned.to_iter(arrow_lists=True):
        _assert_declared_dtypes(workflow, part)
    for part in partitioned.to_iter():
        _assert_declared_dtypes(workflow, part)
    _assert_declared_dtypes(workflow, partitioned.to_ddf(arrow_lists=True).compute())
    whole = partitioned.compute()
    _assert_declared_dtypes(workflow, whole)
    in_memory = workflow.transform(frame)
    _assert_declared_dtypes(workflow, in_memory)
    if name not in PARTITION_LOCAL:
        assert_frame_equal(whole, in_memory)
    # An empty input must produce the declared columns and dtypes too.
    _assert_declared_dtypes(workflow, workflow.transform(frame.iloc[:0]))

    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == workflow.output_schema
    assert_frame_equal(loaded.transform(frame), in_memory)


@pytest.mark.parametrize("name", [n for n in OP_NAMES if issubclass(getattr(ops, n), ops.StatOperator)])
def test_stat_op_transform_before_fit_raises(name, to_engine):
    _, _, frame, columns = _fitted_workflow(name, to_engine)
    with pytest.raises(ops.NotFittedError):
        _build(name).transform(nvt.ColumnSelector(columns), frame[columns])
    unfitted = nvt.Workflow(columns >> _build(name))
    with pytest.raises(ops.NotFittedError):
        unfitted.transform(frame)


def _statistics(op) -> dict:
    """The op's fitted state on the host, comparable across fits."""
    from tabflow.backends import backend_for as owner

    def host(value):
        if isinstance(value, dict):
            return {k: host(v) for k, v in value.items()}
        if hasattr(value, "to_pandas") or hasattr(value, "dtypes"):
            try:
                return owner(value).to_host(value)
            except TypeError:
                return value
        return value

    return {name: host(value) for name, value in op.fitted_state().items()}


def _assert_same_statistics(left: dict, right: dict, exact: bool = True, rtol: float = 1e-9) -> None:
    assert set(left) == set(right)
    for name in left:
        a, b = left[name], right[name]
        if isinstance(a, dict):
            _assert_same_statistics(a, b, exact, rtol)
        elif isinstance(a, pd.DataFrame):
            pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_exact=exact, rtol=rtol)
        elif isinstance(a, pd.Series):
            pd.testing.assert_series_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_exact=exact, rtol=rtol)
        elif isinstance(a, float) and not exact:
            assert a == pytest.approx(b, rel=rtol, nan_ok=True), name
        elif sp.issparse(a):
            assert (a != b).nnz == 0, name
        else:
            assert _same_params(a, b) or repr(a) == repr(b), name


STAT_OP_NAMES = [n for n in OP_NAMES if issubclass(getattr(ops, n), ops.StatOperator)]


#: How far two fits of the same data on the same engine may differ (see docs/guide/ops.md,
#: "Fitted statistics"): not at all on pandas; on cuDF, float sums and what is computed from
#: them (means, variances, target encodings) to float64 rounding, since libcudf's hash
#: group-by adds a group's values in no fixed order. Counts, minima, maxima, vocabularies
#: and integer sums are exact on both.
REFIT_RTOL = {"pandas": None, "cudf": 1e-12}


@pytest.mark.parametrize("name", STAT_OP_NAMES)
def test_fitting_twice_gives_the_same_statistics(name, engine, to_engine):
    workflow, dataset, frame, _ = _fitted_workflow(name, to_engine)
    first = [_statistics(op) for op in workflow.ops]
    workflow.fit(dataset)
    rtol = REFIT_RTOL[engine]
    for before, op in zip(first, workflow.ops):
        _assert_same_statistics(before, _statistics(op), exact=rtol is None, rtol=rtol or 0.0)


#: Fitted attributes that describe the fitted data's partitions rather than its statistics:
#: TargetEncoding recognises its training partitions and encodes them out of fold, with folds
#: drawn per partition (its full statistics, ``statistics_``, ``encodings_`` and ``means_``, are compared).
PARTITION_STATE = {"TargetEncoding": {"partitions_", "oof_encodings_", "fold_statistics_"}}


@pytest.mark.parametrize("name", [n for n in STAT_OP_NAMES if n not in PARTITION_LOCAL])
def test_statistics_do_not_depend_on_the_partitioning(name, to_engine):
    workflow, dataset, frame, columns = _fitted_workflow(name, to_engine)
    skip = PARTITION_STATE.get(name, set())
    expected = [{k: v for k, v in _statistics(op).items() if k not in skip} for op in workflow.ops]
    for npartitions in (1, 7):
        other = nvt.Workflow(columns >> _build(name)).fit(nvt.Dataset(frame, npartitions=npartitions))
        for before, op in zip(expected, [{k: v for k, v in _statistics(o).items() if k not in skip} for o in other.ops]):
            # Sums in another order differ in the last bits: floats compare to 1e-9.
            _assert_same_statistics(before, op, exact=False)


@pytest.mark.parametrize("name", [n for n in STAT_OP_NAMES if n not in PARTITION_LOCAL])
def test_statistics_do_not_depend_on_the_row_order(name, to_engine):
    """cuDF groups and joins in no particular order: a fitted table that followed the rows'
    order (pandas' first appearance) would differ between engines and between fits."""
    workflow, dataset, frame, columns = _fitted_workflow(name, to_engine)
    skip = PARTITION_STATE.get(name, set())
    expected = [{k: v for k, v in _statistics(op).items() if k not in skip} for op in workflow.ops]
    order = np.random.default_rng(3).permutation(len(frame))
    shuffled = backend_for(frame).take_rows(frame, backend_for(frame).from_host(order))
    other = nvt.Workflow(columns >> _build(name)).fit(nvt.Dataset(shuffled, npartitions=3))
    for before, op in zip(expected, [{k: v for k, v in _statistics(o).items() if k not in skip} for o in other.ops]):
        _assert_same_statistics(before, op, exact=False)


@pytest.mark.parametrize("name", OP_NAMES)
def test_the_input_frame_is_never_mutated(name, to_engine):
    workflow, dataset, frame, _ = _fitted_workflow(name, to_engine)
    before = backend_for(frame).to_host(frame).copy(deep=True)
    workflow.transform(frame)
    nvt.Workflow(workflow.output_node).fit(frame)
    assert_frame_equal(frame, before)


def _typed_frame(dtype: str) -> pd.DataFrame:
    """Column ``v`` of ``dtype`` over 40 rows (nulls where the dtype holds them) and a label."""
    rng = np.random.default_rng(11)
    n = 40
    raw = rng.integers(0, 6, n)
    if dtype == "string":
        values = pd.array(np.array(["a", "b", "c", "d", "e", "f"], dtype=object)[raw], dtype="string")
        values[[2, 19]] = pd.NA
    elif dtype in ("bool", "boolean"):
        values = pd.array(raw % 2 == 0, dtype=dtype)
        if dtype == "boolean":
            values[[2, 19]] = pd.NA
    elif dtype[0].isupper():  # masked integers and floats hold nulls as NA
        values = pd.array(raw, dtype=dtype)
        values[[2, 19]] = pd.NA
    elif dtype.startswith("float"):
        values = raw.astype(dtype)
        values[[2, 19]] = np.nan
    else:
        values = raw.astype(dtype)
    return pd.DataFrame({"v": values, "label": rng.integers(0, 2, n)})


#: Input dtypes the planned schema must follow: plain and masked integers, unsigned ones,
#: floats, booleans and strings.
INPUT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint32", "float32", "float64", "bool", "string", "Int32", "UInt16", "Float32", "boolean"]


@pytest.mark.parametrize("dtype", INPUT_DTYPES)
@pytest.mark.parametrize("name", [n for n in OP_NAMES if n not in INPUT_COLUMNS])
def test_planned_dtypes_are_the_transformed_dtypes_for_every_input_dtype(name, dtype):
    """The output schema says what the data will hold: an op that keeps int32 integral plans
    int32, not float32. An op that refuses the dtype says so when the schema is planned."""
    frame = _typed_frame(dtype)
    dataset = nvt.Dataset(frame, npartitions=3)
    workflow = nvt.Workflow(["v"] >> _build(name))
    try:
        workflow.fit(dataset)
    except (TypeError, ValueError) as err:
        # Refused while planning, before reading any partition; the message names the column.
        assert "v" in str(err) or dtype in str(err) or name in str(err)
        return
    for part in workflow.transform(dataset).to_iter(arrow_lists=True):
        _assert_declared_dtypes(workflow, part)
    _assert_declared_dtypes(workflow, workflow.transform(frame))
    _assert_declared_dtypes(workflow, workflow.transform(frame.iloc[:0]))
