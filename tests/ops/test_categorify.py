"""Categorify against a plain pandas reference of the index convention."""

from __future__ import annotations

import gc
import os

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.schema import Tags
from tabflow.testing import assert_frame_equal

N = 2_000


# ------------------------------------------------------------------------ references
def reference_vocab(train, freq_threshold=0, max_size=0, n_oov=1):
    """{value: index}: counts sorted by (-count, value), offset by pad + null + OOV."""
    counts = pd.Series(list(train), dtype=object).dropna().value_counts()
    kept = [(value, count) for value, count in counts.items() if count >= freq_threshold]
    # Tuples are combos: a null part sorts before every value, as in NVTabular.
    order = sorted(kept, key=lambda vc: (-vc[1], _sort_key(vc[0])))
    if max_size:
        order = order[: max_size - 2 - n_oov]
    return {value: i + 2 + n_oov for i, (value, _) in enumerate(order)}


def _sort_key(value):
    if isinstance(value, tuple):
        return tuple((False, 0) if _isnull(v) else (True, v) for v in value)
    return value


def reference_encode(values, vocab):
    return [1 if _isnull(v) else vocab.get(v, 2) for v in values]


def _isnull(value):
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def reference_buckets(values, buckets):
    """OOV bucket of each value: the documented stable hash, as HashBucket applies it."""
    frame = pd.DataFrame({"v": values})
    return nvt.Workflow(["v"] >> ops.HashBucket(num_buckets=buckets)).fit_transform(frame)["v"].tolist()


@pytest.fixture
def frame(rng):
    strings = pd.Series(rng.choice(["apple", "pear", "fig", "kiwi", "lime", None], N, p=[.3, .25, .2, .1, .05, .1]), dtype="str")
    ints = pd.Series(rng.zipf(1.5, N) % 50, dtype="int64")
    floats = pd.Series(rng.choice([0.5, 1.5, 2.5, np.nan], N))
    masked = pd.Series(rng.choice([7, 8, 9], N), dtype="Int64").mask(rng.random(N) < 0.1)
    return pd.DataFrame({"s": strings, "i": ints, "f": floats, "m": masked})


def _objects(frame):
    return frame.astype(object).where(frame.notna(), None)


def _host(data):
    from tabflow.backends import backend_for

    return backend_for(data).to_host(data)


def _fit_transform(df, node, npartitions=3):
    wf = nvt.Workflow(node)
    out = wf.fit_transform(nvt.Dataset(df, npartitions=npartitions)).compute()
    return wf, _host(out)


# --------------------------------------------------------------------------- tests
@pytest.mark.parametrize("npartitions", [1, 7])
def test_single_columns_match_reference(engine, to_engine, frame, npartitions):
    wf, out = _fit_transform(to_engine(frame), ["s", "i", "f", "m"] >> ops.Categorify(), npartitions)
    for name in ["s", "i", "f", "m"]:
        values = frame[name].astype(object).tolist()
        expected = reference_encode(values, reference_vocab(values))
        assert out[name].tolist() == expected, name
        assert out[name].dtype == np.int64
        assert 0 not in set(out[name])
    assert (out["s"] == 1).sum() == frame["s"].isna().sum()


@pytest.mark.parametrize("name", ["count", "count_", "0", "index"])
def test_columns_named_like_the_count_tables_own_columns(engine, to_engine, frame, name):
    renamed = frame.rename(columns={"s": name, "i": f"{name}_i"})
    wf, out = _fit_transform(to_engine(renamed), [name, f"{name}_i"] >> ops.Categorify(), 3)
    for column, source in ((name, "s"), (f"{name}_i", "i")):
        values = frame[source].astype(object).tolist()
        assert out[column].tolist() == reference_encode(values, reference_vocab(values)), column


def test_fit_on_many_partitions_equals_one_with_empty_partitions(frame):
    frame = frame.assign(keep=np.arange(N) >= N // 4)
    ddf = dd.from_pandas(frame, npartitions=4)
    ddf = ddf[ddf["keep"]].drop(columns="keep")
    assert 0 in ddf.map_partitions(len).compute().tolist()
    node = ["s", "i", "f", "m"] >> ops.Categorify(freq_threshold=3)
    many = nvt.Workflow(node).fit(nvt.Dataset(ddf))
    one = nvt.Workflow(["s", "i", "f", "m"] >> ops.Categorify(freq_threshold=3)).fit(
        nvt.Dataset(frame[frame["keep"]].drop(columns="keep"), npartitions=1)
    )
    data = frame.drop(columns="keep")
    pd.testing.assert_frame_equal(many.transform(data), one.transform(data))
    assert many.output_schema == one.output_schema
    for key, vocab in many.output_node.op.vocabs_.items():
        pd.testing.assert_frame_equal(vocab, one.output_node.op.vocabs_[key])


def test_freq_threshold_dict(frame):
    thresholds = {"s": 300, "i": 20}
    wf, out = _fit_transform(frame, ["s", "i", "f"] >> ops.Categorify(freq_threshold=thresholds))
    for name in ["s", "i", "f"]:
        values = frame[name].astype(object).tolist()
        vocab = reference_vocab(values, freq_threshold=thresholds.get(name, 0))
        assert out[name].tolist() == reference_encode(values, vocab), name
    assert (out["s"] == 2).sum() > 0
    assert wf.output_schema["s"].properties["freq_threshold"] == 300
    assert wf.output_schema["f"].properties["freq_threshold"] == 0


def test_max_size_is_the_embedding_table_size(frame):
    wf, out = _fit_transform(frame, ["i", "s"] >> ops.Categorify(max_size={"i": 8}))
    values = frame["i"].tolist()
    assert out["i"].tolist() == reference_encode(values, reference_vocab(values, max_size=8))
    assert out["i"].max() == 7
    assert wf.output_schema["i"].properties["cardinality"] == 8
    values = frame["s"].astype(object).tolist()
    assert out["s"].tolist() == reference_encode(values, reference_vocab(values))


def test_num_buckets_hash_oov_values_into_range(frame):
    train, test = frame.iloc[: N // 2], frame.iloc[N // 2 :]
    n_oov = {"i": 5, "s": 3}
    node = ["i", "s"] >> ops.Categorify(num_buckets=n_oov, freq_threshold=20)
    wf = nvt.Workflow(node).fit(nvt.Dataset(train, npartitions=4))
    out = wf.transform(test)
    for name, buckets in n_oov.items():
        vocab = reference_vocab(train[name].astype(object).tolist(), freq_threshold=20, n_oov=buckets)
        hashed = reference_buckets(test[name], buckets)
        for value, code, bucket in zip(test[name].astype(object), out[name], hashed):
            if _isnull(value):
                assert code == 1
            elif value in vocab:
                assert code == vocab[value]
            else:
                assert code == 2 + bucket, (name, value)
        assert wf.output_schema[name].properties["num_buckets"] == buckets
        assert wf.output_schema[name].properties["cardinality"] == len(vocab) + buckets + 2
    oov_codes = out["i"][~test["i"].isin(list(reference_vocab(train["i"].tolist(), 20, n_oov=5)))]
    assert oov_codes.between(2, 6).all() and oov_codes.nunique() > 1


def test_unseen_values_map_to_oov(frame):
    wf = nvt.Workflow(["s", "i"] >> ops.Categorify()).fit(frame)
    new = pd.DataFrame({"s": pd.Series(["never", "apple", None], dtype="str"), "i": [10**9, 1, -5]})
    out = wf.transform(new)
    vocab = reference_vocab(frame["s"].astype(object).tolist())
    assert out["s"].tolist() == [2, vocab["apple"], 1]
    assert out["i"].tolist()[0] == 2 and out["i"].tolist()[2] == 2


def test_joint_group_shares_one_vocabulary(frame, rng):
    df = pd.DataFrame({
        "a": pd.Series(rng.choice(["x", "y", "z", None], N), dtype="str"),
        "b": pd.Series(rng.choice(["y", "z", "w"], N, p=[.1, .3, .6]), dtype="str"),
        "c": pd.Series(rng.choice(["x", "q"], N), dtype="str"),
    })
    wf, out = _fit_transform(df, [["a", "b"], "c"] >> ops.Categorify(encode_type="joint"), 5)
    vocab = reference_vocab(df["a"].astype(object).tolist() + df["b"].astype(object).tolist())
    assert list(out.columns) == ["c", "a", "b"]
    assert out["a"].tolist() == reference_encode(df["a"].astype(object), vocab)
    assert out["b"].tolist() == reference_encode(df["b"].astype(object), vocab)
    c_values = df["c"].astype(object).tolist()
    assert out["c"].tolist() == reference_encode(c_values, reference_vocab(c_values))
    assert wf.output_schema["a"].properties["cardinality"] == wf.output_schema["b"].properties["cardinality"]


def test_combo_group_encodes_value_combinations(rng):
    df = pd.DataFrame({
        "a": pd.Series(rng.choice(["x", "y", None], N), dtype="str"),
        "b": pd.Series(rng.choice([1, 2, 3], N), dtype="Int64").mask(rng.random(N) < 0.2),
    })
    wf, out = _fit_transform(df, [["a", "b"]] >> ops.Categorify(encode_type="combo"), 4)
    assert list(out.columns) == ["a_b"]
    pairs = zip(df["a"].astype(object), df["b"].astype(object))
    keys = [None if _isnull(a) and _isnull(b) else (None if _isnull(a) else a, None if _isnull(b) else b) for a, b in pairs]
    assert out["a_b"].tolist() == reference_encode(keys, reference_vocab(keys))
    assert wf.output_schema["a_b"].properties["cardinality"] == out["a_b"].max() + 1
    decoded = wf.output_node.op.decode(out, "a_b")
    both_null = df["a"].isna() & df["b"].isna()
    pd.testing.assert_frame_equal(_objects(decoded[~both_null]), _objects(df[~both_null]))


def test_list_columns_encode_elements(rng):
    lists = [None if i % 17 == 0 else list(rng.choice(["p", "q", "r", "s"], rng.integers(0, 4))) for i in range(N)]
    lists[5] = ["p", None]
    df = pd.DataFrame({"tags": pd.Series(lists, dtype=pd.ArrowDtype(pa.list_(pa.string())))})
    wf, out = _fit_transform(df, ["tags"] >> ops.Categorify(), 6)
    flat = [v for row in lists if row is not None for v in row]
    vocab = reference_vocab(flat)
    expected = [[] if row is None else reference_encode(row, vocab) for row in lists]
    assert [list(row) for row in out["tags"]] == expected
    column = wf.output_schema["tags"]
    assert column.dtype == "list<int64>" and column.is_list
    assert {Tags.CATEGORICAL, Tags.LIST} <= column.tags
    decoded = wf.output_node.op.decode(out, "tags")
    assert [list(row) for row in decoded][:5] == [list(row) for row in ([] if r is None else r for r in lists[:5])]


def test_user_vocabs_skip_fitting(frame):
    node = ["s", "i"] >> ops.Categorify(vocabs={"s": ["pear", "apple", "pear", None]})
    wf, out = _fit_transform(frame, node)
    expected = {"pear": 3, "apple": 4}
    assert out["s"].tolist() == reference_encode(frame["s"].astype(object), expected)
    assert wf.output_schema["s"].properties["cardinality"] == 5
    i_values = frame["i"].tolist()
    assert out["i"].tolist() == reference_encode(i_values, reference_vocab(i_values))


def test_output_dtype_parameter(frame):
    wf, out = _fit_transform(frame, ["s"] >> ops.Categorify(dtype="int32"))
    assert out["s"].dtype == np.int32 and wf.output_schema["s"].dtype == "int32"


def test_save_load_round_trip(frame, tmp_path):
    node = ["s", "i", "f", "m"] >> ops.Categorify(num_buckets={"s": 4}, freq_threshold=5)
    wf = nvt.Workflow(node + ([["s", "i"]] >> ops.Categorify(encode_type="combo"))).fit(frame)
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    unseen = pd.DataFrame({"s": pd.Series(["zz", "apple", None], dtype="str"), "i": [1, 99, 2], "f": [0.5, 9.0, np.nan], "m": pd.array([7, None, 1], dtype="Int64")})
    for data in (frame, unseen):
        pd.testing.assert_frame_equal(loaded.transform(data), wf.transform(data))
    assert loaded.output_schema == wf.output_schema
    for key, vocab in wf.output_node.parents[0].op.vocabs_.items():
        pd.testing.assert_frame_equal(loaded.output_node.parents[0].op.vocabs_[key], vocab)


def test_decode_round_trip(frame):
    wf = nvt.Workflow(["s", "i", "f"] >> ops.Categorify(freq_threshold=30)).fit(frame)
    out = wf.transform(frame)
    op = wf.output_node.op
    for name in ["s", "i", "f"]:
        decoded = op.decode(out, name)
        known = out[name] > 2
        assert decoded[known].astype(object).tolist() == frame[name][known].astype(object).tolist()
        assert decoded[~known].isna().all()
    marked = op.decode(out["s"], "s", oov_value="<OOV>")
    assert (marked[out["s"] == 2] == "<OOV>").all()
    assert op.cardinality("s") == wf.output_schema["s"].properties["cardinality"]
    with pytest.raises(KeyError, match="'nope'"):
        op.decode(out, "nope")


def test_cardinality_bounds_every_index(frame):
    node = ["s", "i", "f", "m"] >> ops.Categorify(num_buckets=2)
    wf, out = _fit_transform(frame, node)
    sizes = ops.get_embedding_sizes(wf)
    for name in ["s", "i", "f", "m"]:
        properties = wf.output_schema[name].properties
        assert properties["cardinality"] == out[name].max() + 1 == sizes[name][0]
        assert properties["embedding_sizes"] == {"cardinality": sizes[name][0], "dimension": sizes[name][1]}
        assert properties["start_index"] == 0 and Tags.CATEGORICAL in wf.output_schema[name].tags


@pytest.mark.slow
def test_high_cardinality_column(rng):
    n = 1_000_000
    values = rng.permutation(n).astype(np.int64)
    values = np.concatenate([values, values[:1000], values[:10]])
    df = pd.DataFrame({"id": values, "name": pd.Series(values.astype(str), dtype="str")})
    wf = nvt.Workflow(["id", "name"] >> ops.Categorify()).fit(nvt.Dataset(df, npartitions=4))
    out = wf.transform(df)
    top = values[:10]
    assert out["id"].iloc[:10].tolist() == (np.argsort(top, kind="stable").argsort() + 3).tolist()
    assert out["id"].max() + 1 == wf.output_schema["id"].properties["cardinality"] == n + 3
    assert out["id"].nunique() == n and out["name"].nunique() == n


def test_integer_ids_are_counted_merged_and_looked_up_as_sorted_keys(rng):
    n = 60_000
    pool = rng.integers(-(2**62), 2**62, 20_000)
    ids = pd.Series(pool[rng.zipf(1.3, n) % len(pool)], dtype="Int64").mask(rng.random(n) < 0.1)
    small = pd.Series(rng.integers(-20, 20, n).astype(np.int32))
    wf, out = _fit_transform(pd.DataFrame({"id": ids, "small": small}), ["id", "small"] >> ops.Categorify(), npartitions=5)
    op = wf.output_node.op
    for name, column in (("id", ids), ("small", small)):
        values = column.astype(object).where(column.notna(), None).tolist()
        vocab = reference_vocab(values)
        assert out[name].tolist() == reference_encode(values, vocab), name
        assert op.vocabs_[name]["value"].tolist() == list(vocab), name
        # Held as its table of sorted keys: the frame is rebuilt with the values' own dtype.
        assert op.vocabs_.held_table(name, "pandas") is not None
    assert op.vocabs_["id"]["value"].dtype == np.int64 and op.vocabs_["small"]["value"].dtype == np.int32
    assert op.vocabs_["id"]["count"].dtype == np.int64


def test_transform_before_fit_raises(frame):
    wf = nvt.Workflow(["s"] >> ops.Categorify())
    with pytest.raises(ops.NotFittedError):
        wf.output_node.op.transform(nvt.ColumnSelector(["s"]), frame)


@pytest.mark.parametrize(
    "kwargs, columns, error, match",
    [
        ({}, ["t"], TypeError, "'t'"),
        ({"encode_type": "both"}, ["s"], ValueError, "encode_type"),
        ({"num_buckets": 0}, ["s"], ValueError, "num_buckets for 's'"),
        ({"max_size": 2}, ["s"], ValueError, "max_size 2 for 's'"),
        ({"start_index": 1}, ["s"], ValueError, "start_index"),
        ({"na_sentinel": -1}, ["s"], ValueError, "na_sentinel"),
        ({"freq_threshold": 2, "max_size": 10}, ["s"], ValueError, "freq_threshold and max_size"),
        pytest.param(
            {"search_sorted": True, "freq_threshold": 2}, ["s"], ValueError, "search_sorted",
            marks=pytest.mark.filterwarnings(r"ignore:Categorify\(search_sorted"),
        ),
        ({"num_buckets": 2.5}, ["s"], ValueError, "num_buckets"),
        ({"max_size": "big"}, ["s"], ValueError, "max_size"),
        ({"vocabs": {"s": ["a"]}, "encode_type": "combo"}, ["s"], ValueError, "combo"),
        ({"dtype": "float32"}, ["s"], TypeError, "integer dtype"),
        ({"vocabs": {"s": "apple"}}, ["s"], TypeError, r"vocabs\['s'\]"),
        ({}, [["s", "i"]], TypeError, r"\['s', 'i'\]"),
    ],
)
def test_bad_input_errors_name_the_column(frame, kwargs, columns, error, match):
    df = frame.assign(t=pd.Timestamp("2024-01-01"))
    with pytest.raises(error, match=match):
        nvt.Workflow(columns >> ops.Categorify(**kwargs)).fit(df)


def test_parameters_are_stored_unchanged():
    params = {"freq_threshold": {"a": 3}, "num_buckets": 7, "max_size": 0, "cat_cache": "device", "on_host": False}
    with pytest.warns(UserWarning, match="no effect"):  # cat_cache and on_host are NVTabular's only
        op = ops.Categorify(**params)
        assert op.clone().get_params() == op.get_params()
    assert {k: op.get_params()[k] for k in params} == params


def test_stable_hash_values_are_pinned():
    # Bucket assignment must never change between releases: saved models depend on it.
    frame = pd.DataFrame({"s": pd.Series(["zz-unseen"], dtype="str"), "i": [123456789]})
    wf = nvt.Workflow(["s", "i"] >> ops.Categorify(num_buckets=1000)).fit(frame.iloc[:0])
    out = wf.transform(frame)
    # xxHash64 (seed 0) of b"zz-unseen" and of 123456789's 8 little-endian bytes, mod 1000.
    assert out["s"].iloc[0] == 2 + 619
    assert out["i"].iloc[0] == 2 + 189


def test_combo_oov_values_hash_into_buckets(rng):
    df = pd.DataFrame({"a": rng.integers(0, 30, N), "b": pd.Series(rng.choice(["x", "y", "z"], N), dtype="str")})
    node = [["a", "b"]] >> ops.Categorify(encode_type="combo", freq_threshold=25, num_buckets=4)
    wf, out = _fit_transform(df, node, 5)
    keys = list(zip(df["a"], df["b"]))
    vocab = reference_vocab(keys, freq_threshold=25, n_oov=4)
    codes = out["a_b"].tolist()
    oov = [code for key, code in zip(keys, codes) if key not in vocab]
    assert [code for key, code in zip(keys, codes) if key in vocab] == [vocab[k] for k in keys if k in vocab]
    assert oov and set(oov) <= {2, 3, 4, 5} and len(set(oov)) > 1
    by_key = {}
    for key, code in zip(keys, codes):
        assert by_key.setdefault(key, code) == code
    _, again = _fit_transform(df, [["a", "b"]] >> ops.Categorify(encode_type="combo", freq_threshold=25, num_buckets=4), 1)
    assert again["a_b"].tolist() == codes


# ------------------------------------------------------------- out_path vocabulary files
def reference_unique(values, name, freq_threshold=0, max_size=0, n_oov=1):
    """NVTabular's unique.<name>.parquet for ``values``: the vocabulary, index = code."""
    vocab = reference_vocab(values, freq_threshold, max_size, n_oov)
    counts = pd.Series(list(values), dtype=object).dropna().value_counts()
    return pd.DataFrame(
        {name: list(vocab), f"{name}_size": [int(counts[v]) for v in vocab]},
        index=pd.RangeIndex(2 + n_oov, 2 + n_oov + len(vocab)),
    )


def reference_meta(values, unique, n_oov=1):
    nulls = sum(_isnull(v) for v in values)
    kept = int(unique.iloc[:, -1].sum())
    return pd.DataFrame({
        "kind": ["pad", "null", "oov", "unique"],
        "offset": [0, 1, 2, 2 + n_oov],
        "num_indices": [1, 1, n_oov, len(unique)],
        "num_observed": [0, nulls, len(values) - nulls - kept, kept],
    })


def _read_files(out_path, name):
    folder = out_path / "categories"
    return pd.read_parquet(folder / f"unique.{name}.parquet"), pd.read_parquet(folder / f"meta.{name}.parquet")


def _assert_same_table(written, expected):
    assert list(written.columns) == list(expected.columns)
    assert written.index.equals(expected.index)
    for name in expected.columns:
        assert _objects(written[[name]])[name].tolist() == _objects(expected[[name]])[name].tolist(), name


def _assert_codes_map_back(codes, values, unique, name, n_oov=1):
    """Every code either is null (1), OOV (2 .. 1 + n_oov) or ``unique.loc[code]`` is its value."""
    for code, value in zip(codes, values):
        if _isnull(value):
            assert code == 1
        elif code < 2 + n_oov:
            assert code >= 2 and not (unique[name] == value).any(), (code, value)
        else:
            assert unique.loc[code, name] == value, (code, value)


@pytest.mark.parametrize(
    "kwargs, n_oov",
    [
        ({}, 1),
        ({"freq_threshold": 40}, 1),
        ({"max_size": 9}, 1),
        ({"freq_threshold": 40, "num_buckets": 4}, 4),
        ({"max_size": 12, "num_buckets": 5}, 5),
    ],
)
def test_out_path_unique_files_map_codes_to_values(frame, tmp_path, kwargs, n_oov):
    train, test = frame.iloc[: N // 2], frame.iloc[N // 2 :]
    # A value never seen while fitting: it must be OOV, never a row of the file.
    unseen = {"s": pd.Series(["unseen"], dtype="str"), "i": [10**6], "f": [9.5], "m": pd.array([5], dtype="Int64")}
    test = pd.concat([test, pd.DataFrame(unseen)])
    wf = nvt.Workflow(["s", "i", "f", "m"] >> ops.Categorify(out_path=str(tmp_path), **kwargs))
    wf.fit(nvt.Dataset(train, npartitions=3))
    out = wf.transform(test)
    for name in ["s", "i", "f", "m"]:
        values = train[name].astype(object).tolist()
        unique, meta = _read_files(tmp_path, name)
        expected = reference_unique(values, name, kwargs.get("freq_threshold", 0), kwargs.get("max_size", 0), n_oov)
        _assert_same_table(unique, expected)
        pd.testing.assert_frame_equal(meta, reference_meta(values, expected, n_oov), check_dtype=False)
        assert unique[f"{name}_size"].dtype == np.int64 and meta["offset"].dtype == np.int64
        _assert_codes_map_back(out[name], test[name].astype(object), unique, name, n_oov)
        assert wf.output_schema[name].properties["cardinality"] == 2 + n_oov + len(unique)
        assert wf.output_schema[name].properties["cat_path"] == str(tmp_path / "categories" / f"unique.{name}.parquet")
    assert sorted(p.name for p in (tmp_path / "categories").iterdir()) == sorted(
        f"{kind}.{name}.parquet" for kind in ("unique", "meta") for name in "sifm"
    )


def test_out_path_joint_group_writes_one_shared_vocabulary(tmp_path, rng):
    df = pd.DataFrame({
        "a": pd.Series(rng.choice(["x", "y", "z", None], N), dtype="str"),
        "b": pd.Series(rng.choice(["y", "z", "w"], N, p=[.1, .3, .6]), dtype="str"),
    })
    wf, out = _fit_transform(df, [["a", "b"]] >> ops.Categorify(out_path=tmp_path, freq_threshold=2), 4)
    values = df["a"].astype(object).tolist() + df["b"].astype(object).tolist()
    unique, meta = _read_files(tmp_path, "a_b")
    _assert_same_table(unique, reference_unique(values, "a_b", freq_threshold=2))
    pd.testing.assert_frame_equal(meta, reference_meta(values, unique), check_dtype=False)
    for name in ["a", "b"]:
        _assert_codes_map_back(out[name], df[name].astype(object), unique, "a_b")
    assert not (tmp_path / "categories" / "unique.a.parquet").exists()


def test_out_path_combo_group_has_one_column_per_input(tmp_path, rng):
    df = pd.DataFrame({
        "a": pd.Series(rng.choice(["x", "y", None], N), dtype="str"),
        "b": pd.Series(rng.choice([1, 2, 3], N), dtype="Int64").mask(rng.random(N) < 0.2),
    })
    node = [["a", "b"]] >> ops.Categorify(encode_type="combo", out_path=tmp_path, num_buckets=2, freq_threshold=100)
    wf, out = _fit_transform(df, node, 3)
    pairs = zip(df["a"].astype(object), df["b"].astype(object))
    keys = [None if _isnull(a) and _isnull(b) else (None if _isnull(a) else a, None if _isnull(b) else b) for a, b in pairs]
    unique, meta = _read_files(tmp_path, "a_b")
    assert list(unique.columns) == ["a", "b", "a_b_size"]
    vocab = reference_vocab(keys, freq_threshold=100, n_oov=2)
    assert unique.index.tolist() == list(vocab.values())
    written = [(None if _isnull(a) else a, None if _isnull(b) else int(b)) for a, b in zip(unique["a"], unique["b"])]
    assert written == list(vocab)
    counts = pd.Series(keys, dtype=object).dropna().value_counts()
    assert unique["a_b_size"].tolist() == [counts[k] for k in vocab]
    nulls, kept = keys.count(None), sum(counts[k] for k in vocab)
    assert meta["num_observed"].tolist() == [0, nulls, len(keys) - nulls - kept, kept]
    for key, code in zip(keys, out["a_b"]):
        if key in vocab:
            assert written[code - 4] == key and unique.index[code - 4] == code
        else:
            assert code in (1, 2, 3)


def test_out_path_list_column_and_user_vocabs(tmp_path, rng):
    lists = [None if i % 11 == 0 else list(rng.choice(["p", "q", "r"], rng.integers(0, 4))) for i in range(N)]
    df = pd.DataFrame({
        "tags": pd.Series(lists, dtype=pd.ArrowDtype(pa.list_(pa.string()))),
        "s": pd.Series(rng.choice(["pear", "apple", "fig"], N), dtype="str"),
    })
    node = ["tags", "s"] >> ops.Categorify(out_path=tmp_path, vocabs={"s": ["fig", "pear"]})
    wf, out = _fit_transform(df, node, 4)
    flat = [v for row in lists if row is not None for v in row]
    unique, meta = _read_files(tmp_path, "tags")
    _assert_same_table(unique, reference_unique(flat, "tags"))
    for row, codes in zip(lists, out["tags"]):
        assert [unique.loc[c, "tags"] for c in codes] == (row or [])
    # User vocabularies have no counts: no size column, no num_observed (as NVTabular).
    unique, meta = _read_files(tmp_path, "s")
    assert list(unique.columns) == ["s"] and unique.index.tolist() == [3, 4]
    assert unique["s"].tolist() == ["fig", "pear"]
    assert list(meta.columns) == ["kind", "offset", "num_indices"]
    assert meta["num_indices"].tolist() == [1, 1, 1, 2]


def test_out_path_split_out_writes_part_files(frame, tmp_path):
    node = ["s", "i"] >> ops.Categorify(out_path=tmp_path, split_out={"i": 3})
    nvt.Workflow(node).fit(nvt.Dataset(frame, npartitions=4))
    folder = tmp_path / "categories" / "unique.i.parquet"
    assert sorted(p.name for p in folder.iterdir()) == ["part.0.parquet", "part.1.parquet", "part.2.parquet"]
    expected = reference_unique(frame["i"].tolist(), "i")
    parts = [pd.read_parquet(folder / f"part.{k}.parquet") for k in range(3)]
    pd.testing.assert_frame_equal(pd.concat(parts), expected, check_dtype=False, check_index_type=False)
    whole = dd.read_parquet(str(folder)).compute()
    pd.testing.assert_frame_equal(whole, expected, check_dtype=False, check_index_type=False)
    assert (tmp_path / "categories" / "unique.s.parquet").is_file()
    # A refit replaces the directory with a file and back, never mixing the two.
    nvt.Workflow(["i"] >> ops.Categorify(out_path=tmp_path)).fit(frame)
    assert folder.is_file()
    _assert_same_table(pd.read_parquet(folder), expected)
    nvt.Workflow(["i"] >> ops.Categorify(out_path=tmp_path, split_out=2)).fit(frame)
    assert folder.is_dir() and len(list(folder.iterdir())) == 2


def test_out_path_writes_are_atomic(frame, tmp_path, monkeypatch):
    nvt.Workflow(["s"] >> ops.Categorify(out_path=tmp_path)).fit(frame)
    before = {p.name: p.read_bytes() for p in (tmp_path / "categories").iterdir()}
    real = pd.DataFrame.to_parquet
    calls = []

    def failing(self, *args, **kwargs):
        calls.append(args[0])
        if len(calls) == 3:
            raise OSError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", failing)
    op = ops.Categorify(out_path=tmp_path, freq_threshold=500)
    with pytest.raises(OSError, match="disk full"):
        nvt.Workflow(["s", "i"] >> op).fit(frame)
    assert len(calls) == 3
    # Nothing half-written: the earlier files are intact, no new or temporary file appeared.
    after = {p.name: p.read_bytes() for p in (tmp_path / "categories").iterdir()}
    assert after == before
    assert not op.fitted


def test_no_files_without_out_path(frame, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    wf = nvt.Workflow(["s"] >> ops.Categorify()).fit(frame)
    assert list(tmp_path.iterdir()) == []
    assert "cat_path" not in wf.output_schema["s"].properties


# -------------------------------------------------------- NVTabular 23.08 fitting options
def test_nvtabular_fitting_keywords_are_accepted_with_its_defaults(frame):
    op = ops.Categorify()
    params = op.get_params()
    names = ["tree_width", "split_out", "split_every", "cardinality_memory_limit"]
    assert [params[name] for name in names] == [None, 1, 8, None]
    kwargs = {"split_out": {"s": 2}, "split_every": 3, "cardinality_memory_limit": "10GB"}
    op = ops.Categorify(**kwargs)
    assert {k: op.get_params()[k] for k in kwargs} == kwargs
    wf = nvt.Workflow(["s", "i"] >> op).fit(nvt.Dataset(frame, npartitions=5))
    expected = nvt.Workflow(["s", "i"] >> ops.Categorify()).fit(frame)
    pd.testing.assert_frame_equal(wf.transform(frame), expected.transform(frame))


def test_tree_width_is_ignored_with_a_future_warning(frame):
    with pytest.warns(FutureWarning, match="tree_width"):
        wf = nvt.Workflow(["s"] >> ops.Categorify(tree_width={"s": 4})).fit(frame)
    values = frame["s"].astype(object).tolist()
    assert wf.transform(frame)["s"].tolist() == reference_encode(values, reference_vocab(values))


@pytest.mark.parametrize("split_every", [2, 3, {"i": 2}])
def test_split_every_is_the_fan_in_of_the_count_merge(frame, monkeypatch, split_every):
    from tabflow.ops import _vocab

    sizes = []
    real = _vocab._sum_counts
    monkeypatch.setattr(_vocab, "_sum_counts", lambda frames: sizes.append(len(frames)) or real(frames))
    wf = nvt.Workflow(["i"] >> ops.Categorify(split_every=split_every)).fit(nvt.Dataset(frame, npartitions=16))
    fan_in = split_every["i"] if isinstance(split_every, dict) else split_every
    assert sizes and max(sizes) == fan_in
    values = frame["i"].tolist()
    assert wf.transform(frame)["i"].tolist() == reference_encode(values, reference_vocab(values))


def test_cardinality_memory_limit_warns_about_large_vocabularies(frame):
    with pytest.warns(UserWarning, match="cardinality_memory_limit"):
        nvt.Workflow(["s"] >> ops.Categorify(cardinality_memory_limit="24B")).fit(frame)
    # The default (12.5% of the machine's memory) stays silent on small data.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nvt.Workflow(["s"] >> ops.Categorify(cardinality_memory_limit=10**9)).fit(frame)
        nvt.Workflow(["s"] >> ops.Categorify()).fit(frame)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"split_out": 0}, ValueError, "split_out for 's'"),
        ({"split_every": 1}, ValueError, "split_every for 's'"),
        ({"split_every": {"s": 2.5}}, ValueError, "split_every for 's'"),
        ({"cardinality_memory_limit": "lots"}, ValueError, "cardinality_memory_limit"),
        ({"out_path": 3}, TypeError, "out_path"),
    ],
)
def test_bad_fitting_options_are_clear_errors(frame, kwargs, error, match):
    with pytest.raises(error, match=match):
        nvt.Workflow(["s"] >> ops.Categorify(**kwargs)).fit(frame)


# ----------------------------------------------------- floats against an integer vocabulary
FLOAT_BATCHES = [
    # The same values in batches whose other rows differ: codes must not depend on them.
    [30.0, 30.5, 7.0, 7.25],
    [30.0, 7.0],
    [30.5, np.nan, 30.0],
    [7.25, np.inf, -np.inf, 7.0],
    [30.5],
    [30.0],
]


def _float_reference(value, vocab, n_oov):
    """Integral floats are their integer; any other value is OOV (hashed when n_oov > 1)."""
    if _isnull(value):
        return 1
    if np.isfinite(value) and value == int(value) and int(value) in vocab:
        return vocab[int(value)]
    return 2 if n_oov == 1 else 2 + reference_buckets([value], n_oov)[0]


@pytest.mark.parametrize("n_oov", [1, 5])
@pytest.mark.parametrize("dtype", ["float64", "Float64", "float32"])
def test_floats_match_an_integer_vocabulary_only_when_integral(rng, n_oov, dtype):
    train = pd.DataFrame({"i": pd.array(rng.choice([7, 30, 41, 2, 2, 2], N), dtype="Int64").copy()})
    train.loc[rng.random(N) < 0.05, "i"] = pd.NA
    wf = nvt.Workflow(["i"] >> ops.Categorify(num_buckets=n_oov if n_oov > 1 else None))
    wf.fit(nvt.Dataset(train, npartitions=3))
    vocab = reference_vocab(train["i"].dropna().astype(int).tolist(), n_oov=n_oov)
    for batch in FLOAT_BATCHES:
        frame = pd.DataFrame({"i": pd.array(batch, dtype=dtype)})
        expected = [_float_reference(float(v), vocab, n_oov) for v in frame["i"].astype("float64")]
        assert wf.transform(frame)["i"].tolist() == expected, batch
        # A partitioned dataset with the same values gives the same codes.
        out = wf.transform(nvt.Dataset(frame, npartitions=2)).compute()
        assert out["i"].tolist() == expected, batch
    assert wf.transform(pd.DataFrame({"i": [30, 7]}))["i"].tolist() == [vocab[30], vocab[7]]


def test_floats_in_joint_and_combo_groups_match_integers_only_when_integral(rng):
    train = pd.DataFrame({
        "a": rng.choice([1, 2, 30], N), "b": rng.choice([30, 4, 7], N),
        "s": pd.Series(rng.choice(["x", "y"], N), dtype="str"),
    })
    joint = nvt.Workflow([["a", "b"]] >> ops.Categorify()).fit(train)
    combo = nvt.Workflow([["a", "s"]] >> ops.Categorify(encode_type="combo", num_buckets=3)).fit(train)
    joint_vocab = reference_vocab(list(train["a"]) + list(train["b"]))
    combo_vocab = reference_vocab(list(zip(train["a"], train["s"])), n_oov=3)
    buckets = {}
    for batch in FLOAT_BATCHES:
        strings = ["x" if k % 2 else "y" for k in range(len(batch))]
        frame = pd.DataFrame({"a": batch, "b": batch[::-1], "s": pd.Series(strings, dtype="str")})
        out = joint.transform(frame)
        for name in ("a", "b"):
            assert out[name].tolist() == [_float_reference(v, joint_vocab, 1) for v in frame[name]], (batch, name)
        for value, string, code in zip(batch, strings, combo.transform(frame)["a_s"].tolist()):
            integral = np.isfinite(value) and value == int(value)
            if integral and (int(value), string) in combo_vocab:
                assert code == combo_vocab[(int(value), string)], (batch, value)
            else:
                # Out of vocabulary (a null part too: the row is not all null), in one of the
                # OOV buckets, the same one in every batch.
                assert 2 <= code < 5, (batch, value)
                key = (int(value) if integral else value, string)
                assert buckets.setdefault(str(key), code) == code, (batch, value)


# ------------------------------------------------------------ NVTabular 23.08's interface
def test_positional_order_is_nvtabulars(tmp_path):
    # Categorify(freq_threshold, out_path, cat_cache, dtype, on_host, encode_type, name_sep, ...)
    op = ops.Categorify(2, str(tmp_path), "host", "int32", True, "combo", "-")
    assert (op.freq_threshold, op.out_path, op.dtype, op.encode_type, op.name_sep) == (2, str(tmp_path), "int32", "combo", "-")
    names = list(op.get_params())
    assert names[:16] == [
        "freq_threshold", "out_path", "cat_cache", "dtype", "on_host", "encode_type", "name_sep", "search_sorted",
        "num_buckets", "vocabs", "max_size", "single_table", "cardinality_memory_limit", "tree_width", "split_out",
        "split_every",
    ]


def test_categories_are_unique_file_paths_with_out_path(frame, tmp_path):
    op = ops.Categorify(out_path=str(tmp_path))
    assert op.categories == {}
    nvt.Workflow(["s", ["i", "m"]] >> op).fit(frame)
    assert sorted(op.categories) == ["i_m", "s"]
    unique = pd.read_parquet(op.categories["s"])
    values = frame["s"].astype(object).tolist()
    expected = reference_vocab(values)
    assert dict(zip(unique["s"], unique.index)) == expected
    assert op.categories["s"] == str(tmp_path / "categories" / "unique.s.parquet")


def test_categories_without_out_path_are_private_files_with_the_same_tables(frame, tmp_path, monkeypatch):
    # NVTabular scripts pd.read_parquet(op.categories[col]); without out_path the files are
    # written to a private temporary directory, never to ./categories.
    monkeypatch.chdir(tmp_path)
    with_files = ops.Categorify(out_path=str(tmp_path / "out"))
    private = ops.Categorify()
    for op in (with_files, private):
        nvt.Workflow(["s", "i", ["i", "m"]] >> op).fit(frame)
    assert sorted(private.categories) == ["i", "i_m", "s"]
    for name in ("s", "i", "i_m"):
        path = private.categories[name]
        assert not path.startswith(str(tmp_path)) and path.endswith(f"unique.{name}.parquet")
        written = pd.read_parquet(with_files.categories[name])
        pd.testing.assert_index_equal(pd.read_parquet(path).index, written.index)
        assert_frame_equal(pd.read_parquet(path), written)
    assert sorted(os.listdir(tmp_path)) == ["out"]
    assert private.categories == private.categories  # written once per fit


def test_private_categories_follow_a_refit_and_go_with_the_op(frame):
    op = ops.Categorify()
    nvt.Workflow(["s"] >> op).fit(frame)
    first = op.categories["s"]
    small = pd.DataFrame({"s": ["zz", "zz", None, "yy"]})
    nvt.Workflow(["s"] >> op).fit(small)
    unique = pd.read_parquet(op.categories["s"])
    expected = small["s"].value_counts()  # most frequent first, ties by value
    assert unique["s"].tolist() == sorted(expected.index, key=lambda v: (-expected[v], v))
    assert unique.index.tolist() == list(range(3, 3 + len(expected)))
    directory = os.path.dirname(os.path.dirname(op.categories["s"]))
    del op
    gc.collect()
    assert not os.path.exists(directory) and not os.path.exists(first)


def test_get_embedding_sizes_method(frame):
    op = ops.Categorify()
    wf = nvt.Workflow(["s", ["i", "m"]] >> op).fit(frame)
    sizes = op.get_embedding_sizes(["s", "i", "i_m"])
    n_s = frame["s"].nunique() + 3  # vocabulary + padding, null and one OOV index
    assert sizes["s"] == (n_s, min(512, max(16, round(1.6 * n_s**0.56))))
    assert sizes["i"] == sizes["i_m"] == op.get_embedding_sizes(["m"])["m"]
    assert ops.get_embedding_sizes(wf)["s"] == sizes["s"]
    with pytest.raises(KeyError, match="nope"):
        op.get_embedding_sizes(["nope"])


def test_threads_transforming_at_once_build_each_lookup_table_once(monkeypatch):
    # Partitions written side by side reach a freshly fitted Categorify together: each
    # vocabulary's table is built by one of them and shared, and every thread encodes alike.
    import threading
    import time

    from tabflow.backends.pandas_backend import PandasBackend
    from tabflow.selector import ColumnSelector

    rng = np.random.default_rng(3)
    # Strings longer than eight bytes: tables that need their vocabularies beside them.
    frame = pd.DataFrame({name: pd.Series(rng.choice([f"{name}-category-{k}" for k in range(50)], size=400), dtype="str") for name in ["a", "b", "c"]})
    op = ops.Categorify()
    nvt.Workflow(["a", "b", "c"] >> op).fit(nvt.Dataset(frame))
    op._tables.clear()  # as in a loaded workflow: the fit on pandas left its tables built
    built = []
    build = PandasBackend.lookup_table

    def slow_build(self, keys):
        built.append(len(keys))
        time.sleep(0.05)  # long enough for every thread to ask while the first builds
        return build(self, keys)

    monkeypatch.setattr(PandasBackend, "lookup_table", slow_build)
    results = [None] * 4
    barrier = threading.Barrier(4)

    def encode(i):
        barrier.wait()
        results[i] = op.transform(ColumnSelector(["a", "b", "c"]), frame)

    threads = [threading.Thread(target=encode, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 3  # one table per vocabulary
    for result in results[1:]:
        assert_frame_equal(result, results[0])
    expected = {name: dict(zip(op.vocabs_[name]["value"], range(3, 3 + len(op.vocabs_[name])))) for name in "abc"}
    for name in "abc":
        assert results[0][name].tolist() == [expected[name][v] for v in frame[name]]
