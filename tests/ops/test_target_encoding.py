"""TargetEncoding: smoothed target means, out-of-fold on the fitted training data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.backends import backend_for
from tabflow.testing import assert_frame_equal


@pytest.fixture
def train(rng):
    n = 800
    df = pd.DataFrame({
        "cat": rng.choice(["a", "b", "c", "d"], n, p=[0.5, 0.3, 0.15, 0.05]),
        "shop": rng.integers(0, 3, n),
        "click": rng.integers(0, 2, n).astype("float64"),
        "spend": rng.gamma(2.0, 10.0, n),
    })
    df.loc[rng.random(n) < 0.05, "cat"] = None
    df.loc[rng.random(n) < 0.05, "spend"] = np.nan
    return df


def _smoothed(frame, keys, target, p, mean):
    grouped = frame.dropna(subset=[target]).groupby(keys, dropna=False)[target].agg(["sum", "count"])
    return (grouped["sum"] + p * mean) / (grouped["count"] + p)


def _full_reference(train, data, keys, target, p):
    mean = train[target].mean()
    table = _smoothed(train, keys, target, p, mean).rename("te").reset_index()
    return data[keys].merge(table, on=keys, how="left")["te"].fillna(mean).to_numpy()


def test_full_statistics_on_other_data(train, engine, to_engine):
    valid = train.sample(frac=0.5, random_state=1).reset_index(drop=True)
    valid.loc[0, "cat"] = "never-seen"
    op = ops.TargetEncoding(["click", "spend"], p_smooth=10)
    wf = nvt.Workflow(["cat", ["cat", "shop"]] >> op).fit(nvt.Dataset(to_engine(train), npartitions=3))
    out = wf.transform(nvt.Dataset(to_engine(valid), npartitions=2)).compute()
    out = backend_for(out).to_host(out)
    assert list(out.columns) == ["TE_cat_click", "TE_cat_spend", "TE_cat_shop_click", "TE_cat_shop_spend"]
    for keys, name in ((["cat"], "cat"), (["cat", "shop"], "cat_shop")):
        for target in ("click", "spend"):
            expected = _full_reference(train, valid, keys, target, 10)
            np.testing.assert_allclose(out[f"TE_{name}_{target}"], expected, rtol=1e-5)
    assert wf.output_schema["TE_cat_click"].dtype == "float32"


def test_after_shuffle_by_keys(train, engine, tmp_path):
    """Partitions of files regrouped by key repeat index labels; the encodings joined back
    must land on the partition's own index (cuDF refuses to reindex repeated labels)."""
    train = train.assign(rid=np.arange(len(train)))
    for k in range(4):
        train.iloc[k * 200:(k + 1) * 200].to_parquet(tmp_path / f"part_{k}.parquet", index=False)
    shuffled = nvt.Dataset(str(tmp_path), cpu=engine == "pandas").shuffle_by_keys("shop")
    wf = nvt.Workflow((["cat", "shop"] >> ops.TargetEncoding("click", kfold=1, p_smooth=10)) + ["rid"])
    wf.fit(shuffled)
    out = wf.transform(shuffled).compute()
    out = backend_for(out).to_host(out).sort_values("rid").reset_index(drop=True)
    for keys, name in ((["cat"], "TE_cat_click"), (["shop"], "TE_shop_click")):
        np.testing.assert_allclose(out[name].to_numpy(), _full_reference(train, train, keys, "click", 10), rtol=1e-6)


@pytest.mark.parametrize("npartitions", [1, 4])
def test_training_rows_get_out_of_fold_statistics(train, npartitions):
    op = ops.TargetEncoding("click", kfold=4, p_smooth=5, drop_folds=False)
    wf = nvt.Workflow(["cat"] >> op)
    ds = nvt.Dataset(train, npartitions=npartitions)
    out = wf.fit(ds).transform(ds).compute()
    folds = out["__fold__"].to_numpy()
    assert set(folds) == {0, 1, 2, 3}
    mean = train["click"].mean()
    expected = np.empty(len(train))
    for f in range(4):
        others = train[folds != f]
        table = _smoothed(others, ["cat"], "click", 5, mean).rename("te").reset_index()
        rows = folds == f
        expected[rows] = train.loc[rows, ["cat"]].merge(table, on="cat", how="left")["te"].fillna(mean).to_numpy()
    np.testing.assert_allclose(out["TE_cat_click"].to_numpy(), expected, rtol=1e-5)
    # The whole in-memory training frame is recognised too, with the same folds.
    whole = wf.transform(train)
    np.testing.assert_array_equal(whole["__fold__"].to_numpy(), folds)
    # Any other data uses full statistics and reports no fold.
    other = wf.transform(train.iloc[:-1])
    assert (other["__fold__"] == -1).all()
    np.testing.assert_allclose(other["TE_cat_click"], _full_reference(train, train.iloc[:-1], ["cat"], "click", 5), rtol=1e-5)


def test_out_of_fold_excludes_own_target(train):
    # A single-row category: out of fold it can only see the prior, never its own label.
    df = pd.concat([train, pd.DataFrame({"cat": ["solo"], "shop": [0], "click": [1.0], "spend": [1.0]})], ignore_index=True)
    wf = nvt.Workflow(["cat"] >> ops.TargetEncoding("click", p_smooth=1, kfold=3))
    out = wf.fit_transform(df)
    assert out["TE_cat_click"].iloc[-1] == pytest.approx(df["click"].mean(), rel=1e-6)


def test_fit_many_partitions_equals_one(train):
    tables = []
    for npartitions in (1, 7):
        op = ops.TargetEncoding("spend", kfold=2)
        nvt.Workflow(["cat"] >> op).fit(nvt.Dataset(train, npartitions=npartitions))
        tables.append(op.encodings_["cat"].sort_values("cat", na_position="last").reset_index(drop=True))
        assert op.means_["spend"] == pytest.approx(train["spend"].mean())
    pd.testing.assert_frame_equal(tables[0], tables[1], check_exact=False, rtol=1e-10)


def test_kfold_one_target_mean_and_out_col(train):
    wf = nvt.Workflow(["cat"] >> ops.TargetEncoding("click", kfold=1, target_mean=0.5, p_smooth=3, out_col="enc", out_dtype="float64"))
    out = wf.fit_transform(train)
    table = _smoothed(train, ["cat"], "click", 3, 0.5).rename("te").reset_index()
    expected = train[["cat"]].merge(table, on="cat", how="left")["te"].to_numpy()
    np.testing.assert_allclose(out["enc"], expected)
    assert out["enc"].dtype == "float64"


def test_save_load_keeps_folds_and_statistics(train, tmp_path):
    ds = nvt.Dataset(train, npartitions=3)
    wf = nvt.Workflow(["cat", ["cat", "shop"]] >> ops.TargetEncoding("click"))
    train_out = wf.fit(ds).transform(ds).compute()
    valid_out = wf.transform(train.iloc[:100])
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert_frame_equal(loaded.transform(ds).compute(), train_out)
    assert_frame_equal(loaded.transform(train.iloc[:100]), valid_out)


def test_clear_errors(train):
    with pytest.raises(KeyError, match="label"):
        nvt.Workflow(["cat"] >> ops.TargetEncoding("label")).fit(train)
    with pytest.raises(TypeError, match="'cat'"):
        nvt.Workflow(["shop"] >> ops.TargetEncoding("cat")).fit(train)
    with pytest.raises(ValueError, match="kfold"):
        nvt.Workflow(["cat"] >> ops.TargetEncoding("click", kfold=0)).fit(train)


def test_kfold_none_means_three_as_in_nvtabular(train):
    default = nvt.Workflow(["cat"] >> ops.TargetEncoding("click", drop_folds=False))
    three = nvt.Workflow(["cat"] >> ops.TargetEncoding("click", kfold=3, drop_folds=False))
    assert default.ops[0].kfold is None  # stored as given
    assert_frame_equal(default.fit_transform(train), three.fit_transform(train))
    assert set(default.transform(train)["__fold__"]) == {0, 1, 2}


def test_target_given_as_a_node(train):
    # NVTabular 23.08's example: labels made by an op, passed as the target.
    labels = nvt.ColumnSelector(["spend"]) >> ops.LambdaOp(lambda col: (col > 20).astype("float64"), dtype="float64")
    wf = nvt.Workflow(["cat"] >> ops.TargetEncoding(labels, kfold=1, p_smooth=4))
    out = wf.fit_transform(train)
    assert list(out.columns) == ["TE_cat_spend"]
    binary = train.assign(spend=(train["spend"] > 20).astype("float64"))
    np.testing.assert_allclose(out["TE_cat_spend"], _full_reference(binary, binary, ["cat"], "spend", 4), rtol=1e-5)


def test_nvtabular_names_of_the_fitted_state(train):
    op = ops.TargetEncoding("click", kfold=1, p_smooth=0)
    assert op.means == {} and op.stats == {}
    nvt.Workflow(["cat"] >> op).fit(train)
    assert op.means == {"click": pytest.approx(train["click"].mean())}
    assert list(op.stats) == ["cat"]  # no folds, no fold statistics
    table = pd.read_parquet(op.stats["cat"]).set_index("cat")
    assert table.loc["a", "cat_click_sum"] / table.loc["a", "cat_count"] == pytest.approx(
        train.loc[train["cat"] == "a", "click"].mean()
    )


def _statistics_reference(frame, keys, targets, name):
    """NVTabular's statistics file of ``keys`` from plain pandas: rows and target sums per key."""
    grouped = frame.groupby(keys, dropna=False)
    table = grouped.size().rename(f"{name}_count").to_frame()
    for target in targets:
        table[f"{name}_{target}_sum"] = grouped[target].sum()
    return _plain_keys(table.reset_index(), keys)


def _read_statistics(path, keys):
    return _plain_keys(pd.read_parquet(path), keys)


def _plain_keys(table, keys):
    """Sorted by ``keys``, text keys as objects with None for missing: the file's pandas
    metadata records the engine's string dtype, which differs between pandas versions."""
    table = table.copy()
    for key in keys:
        if not pd.api.types.is_numeric_dtype(table[key]):
            table[key] = table[key].astype(object).where(table[key].notna(), None)
    return table.sort_values(keys, na_position="last").reset_index(drop=True)


@pytest.mark.parametrize("kfold", [1, 3])
@pytest.mark.parametrize("fold_seed", [None, 7])
def test_statistics_files_as_nvtabular_writes_them(train, tmp_path, kfold, fold_seed):
    valid = train.iloc[:50].copy()
    valid.loc[valid.index[:5], "cat"] = "never-seen"
    op = ops.TargetEncoding(["click", "spend"], kfold=kfold, fold_seed=fold_seed, out_path=str(tmp_path), drop_folds=False)
    wf = nvt.Workflow(["cat", ["cat", "shop"]] >> op)
    ds = nvt.Dataset(train, npartitions=4)
    out = wf.fit(ds).transform(ds).compute()
    groups = {"cat": ["cat"], "cat_shop": ["cat", "shop"]}
    names = [*groups, *(f"__fold___{name}" for name in groups)] if kfold > 1 else list(groups)
    assert op.stats == {name: str(tmp_path / "categories" / f"cat_stats.{name}.parquet") for name in names}
    assert sorted(p.name for p in (tmp_path / "categories").iterdir()) == sorted(f"cat_stats.{n}.parquet" for n in names)
    for name, keys in groups.items():
        expected = _statistics_reference(train, keys, ["click", "spend"], name)
        assert_frame_equal(_read_statistics(op.stats[name], keys), expected, check_dtype=False)
        if kfold > 1:
            # The fold of each training row is the ``__fold__`` the transform gives it.
            folded = train.assign(__fold__=out["__fold__"].to_numpy())
            fold_keys = ["__fold__", *keys]
            expected = _statistics_reference(folded, fold_keys, ["click", "spend"], f"__fold___{name}")
            got = _read_statistics(op.stats[f"__fold___{name}"], fold_keys)
            assert list(got.columns) == list(expected.columns)
            assert_frame_equal(got, expected, check_dtype=False)
    # Unseen values are in no file and get the prior.
    assert "never-seen" not in set(pd.read_parquet(op.stats["cat"])["cat"].dropna())
    encoded = wf.transform(valid)
    np.testing.assert_allclose(encoded["TE_cat_click"].iloc[:5], train["click"].mean(), rtol=1e-6)


def test_statistics_files_without_out_path_are_private(train, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    op = ops.TargetEncoding("click", kfold=2)
    nvt.Workflow(["cat"] >> op).fit(nvt.Dataset(train, npartitions=3))
    assert list(tmp_path.iterdir()) == []  # nothing where NVTabular wrote (./categories)
    paths = op.stats
    assert sorted(paths) == ["__fold___cat", "cat"] and op.stats == paths  # written once per fit
    expected = _statistics_reference(train, ["cat"], ["click"], "cat")
    assert_frame_equal(_read_statistics(paths["cat"], ["cat"]), expected, check_dtype=False)
    folds = pd.read_parquet(paths["__fold___cat"])
    assert folds.groupby("cat", dropna=False)["__fold___cat_count"].sum().sum() == len(train)


def test_statistics_files_survive_save_and_load(train, tmp_path):
    wf = nvt.Workflow(["cat"] >> ops.TargetEncoding("click", kfold=3, fold_seed=5))
    wf.fit(nvt.Dataset(train, npartitions=2))
    before = {name: pd.read_parquet(path) for name, path in wf.ops[0].stats.items()}
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf")).ops[0]
    assert sorted(loaded.stats) == sorted(before)
    for name, table in before.items():
        assert_frame_equal(pd.read_parquet(loaded.stats[name]), table)


def test_full_nvtabular_signature_in_order(train, tmp_path):
    args = ("click", None, None, 42, 20, None, "float32", 2, 4, "device", str(tmp_path), False, "_", True, 8)
    with pytest.warns(UserWarning, match="no effect"):
        op = ops.TargetEncoding(*args)
    names = ["target", "target_mean", "kfold", "fold_seed", "p_smooth", "out_col", "out_dtype", "split_out",
             "split_every", "cat_cache", "out_path", "on_host", "name_sep", "drop_folds", "tree_width"]
    assert op.get_params() == dict(zip(names, args))
    out = nvt.Workflow(["cat"] >> op).fit_transform(train)
    assert_frame_equal(out, nvt.Workflow(["cat"] >> ops.TargetEncoding("click")).fit_transform(train))
    # out_path holds the statistics files, as NVTabular's did.
    assert sorted(p.name for p in (tmp_path / "categories").iterdir()) == ["cat_stats.__fold___cat.parquet", "cat_stats.cat.parquet"]


def test_fold_column_only_with_folds_as_nvtabular(train):
    """NVTabular keeps ``__fold__`` (drop_folds=False) only when there are folds (kfold > 1)."""
    one = nvt.Workflow(["cat"] >> ops.TargetEncoding("click", kfold=1, drop_folds=False))
    out = one.fit_transform(train)
    assert "__fold__" not in out.columns and "__fold__" not in one.output_schema.column_names
    two = nvt.Workflow(["cat"] >> ops.TargetEncoding("click", kfold=2, drop_folds=False))
    out = two.fit_transform(nvt.Dataset(train, npartitions=2)).compute()
    assert two.output_schema.column_names == ["TE_cat_click", "__fold__"]
    assert set(out["__fold__"]) == {0, 1} and str(out["__fold__"].dtype) == two.output_schema["__fold__"].dtype


def test_encodings_carry_the_targets_own_tags(train):
    """NVTabular gives an encoding its target's tags and CONTINUOUS; tabflow's standard tags
    (TARGET, CATEGORICAL, ...) stay behind, so the encoding is a continuous feature."""
    from tabflow.schema import ColumnSchema, Schema, Tags

    schema = Schema([
        ColumnSchema("cat", dtype="string", tags={Tags.CATEGORICAL, "shop"}),
        ColumnSchema("click", dtype="int64", tags={Tags.TARGET, Tags.BINARY, "label_v2"}),
    ])
    out = ops.TargetEncoding("click", out_dtype="float64").compute_output_schema(schema, nvt.ColumnSelector(["cat"]))
    assert set(out["TE_cat_click"].tags) == {Tags.CONTINUOUS, "label_v2"}
    assert out["TE_cat_click"].dtype == "float64" == ops.TargetEncoding("click", out_dtype="float64").output_dtype
    fitted = nvt.Workflow(["cat"] >> ops.TargetEncoding("click")).fit(train)
    assert fitted.output_schema["TE_cat_click"].tags == {Tags.CONTINUOUS}
    assert str(fitted.transform(train)["TE_cat_click"].dtype) == fitted.output_schema["TE_cat_click"].dtype == "float32"


def test_a_failed_statistics_write_leaves_the_op_unfitted(train, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    op = ops.TargetEncoding("click", kfold=2, out_path=str(blocked))
    with pytest.raises(OSError):
        nvt.Workflow(["cat"] >> op).fit(train)
    assert not op.fitted and op.stats == {} and not hasattr(op, "means_")
