"""Workflow.partial_fit against plain pandas/NumPy references of the statistics of all the
data seen, and of Categorify's incremental index rules."""

from __future__ import annotations

import json
import os
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow import ops

DAYS = 6


# ------------------------------------------------------------------------ references
class ReferenceIds:
    """Categorify's documented update rule, value by value: known values keep their index;
    the others, with cumulative counts of at least ``threshold``, get the next indices by
    (count descending, value ascending), at most ``max_size`` rows in all."""

    def __init__(self, threshold=0, max_size=0, n_oov=1):
        self.threshold, self.max_size, self.n_oov = threshold, max_size, n_oov
        self.ids: dict = {}
        self.counts: Counter = Counter()

    def update(self, values):
        self.counts.update(v for v in values if not _isnull(v))
        candidates = [(v, c) for v, c in self.counts.items() if v not in self.ids and c >= self.threshold]
        order = sorted(candidates, key=lambda vc: (-vc[1], _sort_key(vc[0])))
        if self.max_size:
            order = order[: max(self.max_size - 2 - self.n_oov - len(self.ids), 0)]
        for value, _ in order:
            self.ids[value] = 2 + self.n_oov + len(self.ids)

    def encode(self, values):
        return [1 if _isnull(v) else self.ids.get(v, 2) for v in values]

    @property
    def cardinality(self):
        return 2 + self.n_oov + len(self.ids)


def _sort_key(value):
    if isinstance(value, tuple):
        return tuple((False, 0) if _isnull(v) else (True, v) for v in value)
    return value


def _isnull(value):
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def _day(day, rng, n=400):
    """A day of a log whose vocabulary drifts: most values come from a window that moves
    by 15 a day, so every day brings new ones and old ones fade."""
    ids = 15 * day + rng.zipf(1.3, n) % 60
    short = pd.Series([f"v{i}" for i in ids], dtype="str").mask(rng.random(n) < 0.05)
    long = pd.Series([f"a-long-item-name-{i}" for i in ids[::-1]], dtype="str")
    numbers = pd.Series(ids % 37 + 100 * day, dtype="int64")
    tags = [[f"t{(i + k) % 90}" for k in range(i % 3)] for i in ids]
    return pd.DataFrame({
        "short": short,
        "long": long,
        "num": numbers,
        "tags": pd.Series(tags, dtype=pd.ArrowDtype(pa.list_(pa.string()))),
        "a": pd.Series([f"a{i % 7}" for i in ids], dtype="str"),
        "b": pd.Series([f"b{(i + day) % 5}" for i in ids], dtype="str"),
        "x": rng.normal(10 * day, 1 + day, n),
        "y": (rng.random(n) < 0.3).astype("float64"),
    })


def _values(frame, column):
    if column == "tags":
        return [v for row in frame[column] for v in row]
    if isinstance(column, tuple):
        return [tuple(None if _isnull(v) else v for v in row) for row in frame[list(column)].astype(object).itertuples(index=False)]
    return frame[column].astype(object).tolist()


# ------------------------------------------------------------------------ Categorify
@pytest.mark.parametrize("kwargs, n_oov", [({}, 1), ({"freq_threshold": 4}, 1), ({"max_size": 40}, 1), ({"num_buckets": 3}, 3)])
def test_categorify_ids_never_move_and_new_ones_follow(engine, to_engine, rng, kwargs, n_oov, tmp_path):
    columns = ["short", "long", "num", "tags"]
    cats = columns >> ops.Categorify(out_path=str(tmp_path), **kwargs)
    combo = [["a", "b"]] >> ops.Categorify(encode_type="combo", **kwargs)
    wf = nvt.Workflow(cats + combo)
    refs = {c: ReferenceIds(kwargs.get("freq_threshold", 0), kwargs.get("max_size", 0), n_oov) for c in [*columns, ("a", "b")]}
    history: dict = {c: {} for c in refs}
    probe = pd.concat([_day(d, np.random.default_rng(d)) for d in range(DAYS)], ignore_index=True)
    probe.loc[len(probe)] = {"short": "never-seen", "long": "never-seen", "num": 10**9, "tags": ["never-seen"], "a": "zz", "b": "zz",
                             "x": 0.0, "y": 0.0}
    rows = 0
    for day in range(DAYS):
        frame = _day(day, np.random.default_rng(day))
        rows += len(frame)
        wf.partial_fit(nvt.Dataset(to_engine(frame), npartitions=3))
        for column, ref in refs.items():
            ref.update(_values(frame, column))
        out = wf.transform(to_engine(probe))
        out = out.to_pandas() if hasattr(out, "to_pandas") else out
        for column, ref in refs.items():
            name = "a_b" if isinstance(column, tuple) else column
            values = _values(probe, column)
            codes = [int(v) for row in out[name] for v in row] if column == "tags" else out[name].astype(int).tolist()
            expected = ref.encode(values)
            if n_oov > 1:  # OOV values hash into the buckets: compare the known ones only
                known = [e > 2 + n_oov - 1 or e == 1 for e in expected]
                assert all(2 <= c < 2 + n_oov for c, k in zip(codes, known) if not k)
                codes, expected = [c for c, k in zip(codes, known) if k], [e for e, k in zip(expected, known) if k]
            assert codes == expected, (column, day)
            # Ids seen on an earlier day never change; new ones are contiguous after the old.
            assert all(ref.ids[v] == i for v, i in history[column].items())
            new = sorted(i for v, i in ref.ids.items() if v not in history[column])
            assert new == list(range(2 + n_oov + len(history[column]), 2 + n_oov + len(ref.ids)))
            history[column] = dict(ref.ids)
            assert wf.output_schema[name].properties["cardinality"] == ref.cardinality
        assert (wf.n_updates_, wf.n_samples_seen_) == (day, rows)
        # The files under out_path hold the grown vocabularies, index = code.
        unique = pd.read_parquet(tmp_path / "categories" / "unique.short.parquet")
        assert dict(zip(unique["short"], unique.index)) == refs["short"].ids
        assert unique["short_size"].tolist() == [refs["short"].counts[v] for v in unique["short"]]
        meta = pd.read_parquet(tmp_path / "categories" / "meta.short.parquet")
        nulls = sum(_isnull(v) for d in range(day + 1) for v in _day(d, np.random.default_rng(d))["short"])
        kept = sum(refs["short"].counts[v] for v in refs["short"].ids)
        assert meta["num_observed"].tolist() == [0, nulls, rows - nulls - kept, kept]


def test_freq_threshold_counts_every_day(rng):
    wf = nvt.Workflow(["c"] >> ops.Categorify(freq_threshold=3))
    wf.partial_fit(pd.DataFrame({"c": ["a", "a", "a", "b", "b", "c"]}))
    assert wf.transform(pd.DataFrame({"c": ["a", "b", "c"]}))["c"].tolist() == [3, 2, 2]
    # b reaches 3 today (2 + 1): it gets the next index; c (1 + 1) is still OOV.
    wf.partial_fit(pd.DataFrame({"c": ["b", "c", "d", "d", "d", "d"]}))
    assert wf.transform(pd.DataFrame({"c": ["a", "b", "c", "d"]}))["c"].tolist() == [3, 5, 2, 4]
    wf.partial_fit(pd.DataFrame({"c": ["c", "e"]}))  # c reaches 3 on the third day
    assert wf.transform(pd.DataFrame({"c": ["a", "b", "c", "d", "e", None]}))["c"].tolist() == [3, 5, 6, 4, 2, 1]
    op = wf.output_node.op
    assert op.vocabs_["c"]["count"].tolist() == [3, 4, 3, 3] and op.oov_counts_ == {"c": 1}
    assert op.rare_counts_["c"]["value"].tolist() == ["e"]


def test_max_size_caps_the_total_and_later_values_go_to_buckets():
    wf = nvt.Workflow(["c"] >> ops.Categorify(max_size=7, num_buckets=2))  # 3 values: rows 4, 5, 6
    wf.partial_fit(pd.DataFrame({"c": ["a", "a", "b"]}))
    wf.partial_fit(pd.DataFrame({"c": ["z", "z", "z", "y", "x", "x"]}))
    out = wf.transform(pd.DataFrame({"c": ["a", "b", "z", "x", "y"]}))["c"].tolist()
    assert out[:3] == [4, 5, 6] and all(code in (2, 3) for code in out[3:])
    assert wf.output_schema["c"].properties["cardinality"] == 7
    expected = nvt.Workflow(["c"] >> ops.HashBucket(num_buckets=2)).fit_transform(pd.DataFrame({"c": ["x", "y"]}))["c"] + 2
    assert out[3:] == expected.tolist()


def test_user_vocabulary_and_start_index_stay(rng):
    wf = nvt.Workflow(["c"] >> ops.Categorify(vocabs={"c": ["q", "p"]}, start_index=0))
    wf.partial_fit(pd.DataFrame({"c": ["p", "r"]})).partial_fit(pd.DataFrame({"c": ["s", "q"]}))
    assert wf.transform(pd.DataFrame({"c": ["q", "p", "s", None]}))["c"].tolist() == [3, 4, 2, 1]


def test_updates_after_load_continue_where_the_saved_workflow_stopped(tmp_path):
    def build():
        return nvt.Workflow(
            (["c"] >> ops.Categorify(freq_threshold=2)) + (["x"] >> ops.FillMedian() >> ops.Normalize())
            + (["c"] >> ops.JoinGroupby(cont_cols=["x"], stats=["count", "mean", "std"]))
        )

    days = [_day(d, np.random.default_rng(d)).rename(columns={"short": "c"})[["c", "x"]] for d in range(DAYS)]
    for d in days:
        d.loc[d.index[::7], "x"] = np.nan
    straight = build()
    for d in days:
        straight.partial_fit(d)
    resumed = build().partial_fit(days[0])
    for i, d in enumerate(days[1:], start=1):
        path = str(tmp_path / f"wf{i}")
        resumed.save(path)
        with open(os.path.join(path, "workflow.json")) as handle:
            assert json.load(handle)["seen"] == {"updates": i - 1, "rows": sum(len(x) for x in days[:i])}
        resumed = nvt.Workflow.load(path).partial_fit(d)
    probe = pd.concat(days, ignore_index=True)
    pd.testing.assert_frame_equal(resumed.transform(probe), straight.transform(probe), rtol=1e-12)
    assert (resumed.n_updates_, resumed.n_samples_seen_) == (DAYS - 1, sum(len(d) for d in days))


# ------------------------------------------------------------------------ statistics
def _with_gaps(frame, rng):
    frame = frame.copy()
    frame.loc[rng.random(len(frame)) < 0.1, "x"] = np.nan
    frame.loc[frame.index[:2], "x"] = [np.inf, -np.inf]
    return frame


def test_statistics_of_updates_equal_those_of_all_the_data(engine, to_engine, rng):
    parts = [_with_gaps(_day(d, np.random.default_rng(d)), rng) for d in range(3)]
    for d, part in enumerate(parts):
        part["n"] = (part["num"] * (d + 1) * 40).astype("int64")  # wider every day
    stats = ops.DataStats()
    wf = nvt.Workflow(
        (["x"] >> ops.Normalize()) + (["x"] >> ops.NormalizeMinMax() >> ops.Rename(postfix="_mm"))
        + (["n"] >> ops.ReduceDtypeSize()) + (["x"] >> ops.FillMedian() >> ops.Rename(postfix="_med"))
        + (["tags"] >> ops.ValueCount()) + (["y", "short", "tags"] >> stats >> ops.Rename(postfix="_s"))
    )
    for part in parts:
        wf.partial_fit(nvt.Dataset(to_engine(part), npartitions=2))
    everything = pd.concat(parts, ignore_index=True)
    finite = everything["x"][np.isfinite(everything["x"])]
    by_name = {type(op).__name__: op for op in wf.ops}
    assert by_name["Normalize"].counts_ == {"x": len(finite)}
    np.testing.assert_allclose(by_name["Normalize"].means_["x"], finite.mean(), rtol=1e-12)
    np.testing.assert_allclose(by_name["Normalize"].stds_["x"], finite.std(ddof=1), rtol=1e-12)
    assert (by_name["NormalizeMinMax"].mins_["x"], by_name["NormalizeMinMax"].maxs_["x"]) == (finite.min(), finite.max())
    assert by_name["ReduceDtypeSize"].ranges_["n"] == [everything["n"].min(), everything["n"].max()]
    assert wf.output_schema["n"].dtype == "int16"  # day 1 alone fitted int8
    assert by_name["FillMedian"].medians_["x"] == finite.median()
    lengths = everything["tags"].list.len()
    assert wf.output_schema["tags"].value_count == {"min": lengths.min(), "max": lengths.max()}
    refit = ops.DataStats()
    nvt.Workflow(["y", "short", "tags"] >> refit).fit(nvt.Dataset(to_engine(everything), npartitions=3))
    pd.testing.assert_frame_equal(stats.stats_, refit.stats_, rtol=1e-12)
    assert stats.output["short"]["cardinality"] == everything["short"].nunique()


def test_group_statistics_and_target_encoding_merge_sums_and_counts(rng, tmp_path):
    parts = [_day(d, np.random.default_rng(d)) for d in range(3)]
    parts[1].loc[parts[1].index[::5], "y"] = np.nan

    def build():
        return (
            (["short", ["a", "b"]] >> ops.TargetEncoding("y", kfold=3, p_smooth=5))
            + (["short"] >> ops.JoinGroupby(cont_cols=["x"], stats=["count", "sum", "mean", "std", "var", "min", "max"]))
        )

    updated = nvt.Workflow(build())
    for part in parts:
        updated.partial_fit(part)
    for i, part in enumerate(parts):  # one file, one partition a day: the partitions the updates saw
        part.to_parquet(tmp_path / f"day{i}.parquet", index=False)
    fitted = nvt.Workflow(build()).fit(nvt.Dataset(str(tmp_path), engine="parquet"))
    (te_u, jg_u), (te_f, jg_f) = ([op for op in w.ops if isinstance(op, ops.StatOperator)] for w in (updated, fitted))
    for name in te_f.statistics_:
        pd.testing.assert_frame_equal(te_u.statistics_[name], te_f.statistics_[name], rtol=1e-12)
        pd.testing.assert_frame_equal(te_u.fold_statistics_[name], te_f.fold_statistics_[name], rtol=1e-12)
    assert te_u.partitions_ == te_f.partitions_ and te_u.means_ == pytest.approx(te_f.means_, rel=1e-12)
    pd.testing.assert_frame_equal(jg_u.stats_["short"], jg_f.stats_["short"], rtol=1e-9)
    # Every day's rows keep their folds: each is encoded out of fold over all the days.
    for part in parts:
        pd.testing.assert_frame_equal(updated.transform(part), fitted.transform(part), rtol=1e-9)


def test_downstream_of_categorify_is_exact_since_ids_do_not_move():
    days = [_day(d, np.random.default_rng(d)) for d in range(3)]

    def build():
        return ["short"] >> ops.Categorify() >> ops.JoinGroupby(cont_cols=["x"], stats=["count", "mean"])

    updated = nvt.Workflow(build())
    for d in days:
        updated.partial_fit(d)
    counts = pd.concat(days)["short"].value_counts(dropna=False)  # nulls are a group too
    stats = updated.ops[-1].stats_["short"]
    assert len(stats) == len(counts) and sorted(stats["short_count"]) == sorted(counts)


def test_drop_low_cardinality_follows_the_grown_vocabulary():
    wf = nvt.Workflow(["c", "d"] >> ops.Categorify() >> ops.DropLowCardinality(min_cardinality=4))
    wf.partial_fit(pd.DataFrame({"c": ["a", "a"], "d": ["p", "q"]}))
    assert wf.output_schema.column_names == ["d"]
    wf.partial_fit(pd.DataFrame({"c": ["b", "c"], "d": ["p", "p"]}))
    assert wf.output_schema.column_names == ["c", "d"]


# ------------------------------------------------------------------------ refusals
def test_ops_that_cannot_be_updated_say_why_before_reading_data():
    df = pd.DataFrame({"c": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]})
    single = nvt.Workflow(["c"] >> ops.Categorify(single_table=True)).partial_fit(df)
    with pytest.raises(ops.NotUpdatableError, match="single_table"):
        single.partial_fit(df)

    class Mean(ops.StatOperator):
        def fit_partition(self, col_selector, frame):
            return frame[col_selector.names].sum()

        def combine_partials(self, partials):
            return sum(partials)

        def fit_finalize(self, partial):
            self.total_ = partial

        def transform(self, col_selector, frame):
            return frame[col_selector.names]

    custom = nvt.Workflow((["x"] >> Mean()) + (["x"] >> ops.Normalize() >> ops.Rename(postfix="_n"))).fit(df)
    normalize = [op for op in custom.ops if isinstance(op, ops.Normalize)][0]
    before = dict(normalize.means_)
    with pytest.raises(ops.NotUpdatableError, match="Mean cannot be updated.*fitted_partial"):
        custom.partial_fit(df)
    assert normalize.means_ == before and custom.n_updates_ == 0  # nothing was updated
    for op, match in [(ops.Categorify(freq_threshold=2), "freq_threshold"), (ops.FillMedian(), "FillMedian"),
                      (ops.JoinGroupby(cont_cols=["x"]), "JoinGroupby")]:
        fitted = nvt.Workflow(["c" if isinstance(op, (ops.Categorify, ops.JoinGroupby)) else "x"] >> op).fit(df)
        with pytest.raises(ops.NotUpdatableError, match=f"{match}.*partial_fit"):
            fitted.partial_fit(df)
    # Without freq_threshold a plain fit's vocabulary is all an update needs.
    plain = nvt.Workflow(["c"] >> ops.Categorify()).fit(df).partial_fit(pd.DataFrame({"c": ["z"]}))
    assert plain.transform(pd.DataFrame({"c": ["a", "b", "z"]}))["c"].tolist() == [3, 4, 5]


def test_update_reads_new_data_with_the_fitted_dtypes():
    wf = nvt.Workflow(["c"] >> ops.Categorify()).partial_fit(pd.DataFrame({"c": pd.array([1, 2, None], dtype="Int64")}))
    wf.partial_fit(pd.DataFrame({"c": np.array([2, 5], dtype="int64")}))
    assert wf.input_dtypes == {"c": "Int64"}
    assert wf.transform(pd.DataFrame({"c": pd.array([1, 2, 5, None], dtype="Int64")}))["c"].tolist() == [3, 4, 5, 1]
    with pytest.raises(KeyError, match="c"):
        wf.partial_fit(pd.DataFrame({"d": [1]}))


# ------------------------------------------------------------------------ cluster
distributed = pytest.importorskip("distributed")


@pytest.mark.distributed
@pytest.mark.timeout(180)
def test_updates_on_a_cluster_equal_local_updates(tmp_path):
    def build():
        return nvt.Workflow(
            (["short", "tags"] >> ops.Categorify(freq_threshold=2)) + (["x"] >> ops.FillMedian() >> ops.Normalize())
            + (["short"] >> ops.TargetEncoding("y", kfold=2))
        )

    paths = []
    for d in range(3):
        path = tmp_path / f"day{d}.parquet"
        _day(d, np.random.default_rng(d)).to_parquet(path, index=False, row_group_size=100)
        paths.append(str(path))
    local = build()
    for path in paths:
        local.partial_fit(nvt.Dataset(path, engine="parquet", part_size=1))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40) as cluster:
        with distributed.Client(cluster) as client:
            remote = build()
            remote.client = client
            for path in paths:
                remote.partial_fit(nvt.Dataset(path, engine="parquet", part_size=1, client=client))
            probe = pd.concat([_day(d, np.random.default_rng(d)) for d in range(3)], ignore_index=True)
            pd.testing.assert_frame_equal(remote.transform(probe), local.transform(probe), rtol=1e-12)
    assert remote.n_samples_seen_ == local.n_samples_seen_ == len(probe)


def test_state_kept_for_updates_survives_a_save(tmp_path):
    day1 = pd.DataFrame({"c": ["a", "b", "a", None], "x": [1.0, 2.0, np.nan, 4.0], "y": [1.0, 0.0, 1.0, 0.0], "n": [1, 2, 3, 4]})
    day2 = pd.DataFrame({"c": ["z", "b"], "x": [10.0, np.nan], "y": [1.0, 1.0], "n": [1000, 2]})

    def build():
        return nvt.Workflow(
            (["c", "x", "n"] >> ops.DataStats()) + (["c"] >> ops.TargetEncoding("y", kfold=2))
            + (["n"] >> ops.ReduceDtypeSize() >> ops.Rename(postfix="_r")) + (["x"] >> ops.FillMedian() >> ops.Rename(postfix="_m"))
        )

    straight = build().partial_fit(day1)
    straight.save(str(tmp_path / "wf"))
    straight.partial_fit(day2)
    loaded = nvt.Workflow.load(str(tmp_path / "wf")).partial_fit(day2)
    stats = [[op for op in w.ops if isinstance(op, ops.DataStats)][0] for w in (loaded, straight)]
    pd.testing.assert_frame_equal(stats[0].stats_, stats[1].stats_)
    assert stats[0].output["c"]["cardinality"] == 3 and loaded.output_dtypes["n_r"] == "int16"
    pd.testing.assert_frame_equal(loaded.transform(day1), straight.transform(day1))
