"""NVTabular-era scripts, run with only their imports changed.

Each test follows the shape of one family of NVTabular 23.08 examples (MovieLens ETL and
PyTorch training, Criteo conversion, ETL and fastai training, Outbrain-style feature
engineering, Rossmann-style fastai tabular regression) on tiny synthetic data, and checks
the results against plain pandas/numpy.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import pandas as pd
import pytest
import torch

import tabflow as nvt
from tabflow import ops
from tabflow.loader.torch import DLDataLoader, TorchAsyncItr
from tabflow.ops import get_embedding_sizes
from tabflow.schema import Tags

# --------------------------------------------------------------------------- helpers


def categorify_reference(values: pd.Series) -> dict:
    """Categorify's mapping: 1 null, 2 out-of-vocabulary, then by descending count, ties by value."""
    counts = values.dropna().value_counts()
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    return {value: 3 + k for k, value in enumerate(order)}


def normalized(values: pd.Series) -> np.ndarray:
    values = values.astype("float64")
    return ((values - values.mean()) / values.std(ddof=1)).to_numpy()


# --------------------------------------------------------------------------- MovieLens


@pytest.fixture
def movielens(tmp_path):
    rng = np.random.default_rng(7)
    genres = ["Action", "Comedy", "Drama", "Horror", "Romance"]
    movies = pd.DataFrame({
        "movieId": np.arange(1, 31),
        "genres": [list(rng.choice(genres, size=rng.integers(1, 4), replace=False)) for _ in range(30)],
    })
    movies.to_parquet(tmp_path / "movies_converted.parquet")
    n = 600
    ratings = pd.DataFrame({
        "userId": rng.integers(1, 40, n),
        "movieId": rng.integers(1, 31, n),
        "rating": rng.choice([0.5, 1.5, 2.0, 3.0, 3.5, 4.0, 4.5, 5.0], n),
        "timestamp": rng.integers(10**9, 2 * 10**9, n),
    })
    ratings.iloc[:480].to_parquet(tmp_path / "train.parquet")
    ratings.iloc[480:].to_parquet(tmp_path / "valid.parquet")
    return tmp_path, movies, ratings.iloc[:480], ratings.iloc[480:].reset_index(drop=True)


def test_movielens_etl_and_pytorch_training(movielens):
    root, movies, train, valid = movielens
    # The external table read with plain pandas holds ``genres`` as an object column of arrays.
    movies_read = pd.read_parquet(root / "movies_converted.parquet")
    joined = ["userId", "movieId"] >> ops.JoinExternal(movies_read, on=["movieId"])
    cat_features = joined >> ops.Categorify()
    # The MovieLens notebook's lambda: saved with the workflow as code.
    rating = nvt.ColumnSelector(["rating"]) >> ops.LambdaOp(lambda col: (col > 3).astype("int8"), dtype=np.int8)
    workflow = nvt.Workflow(cat_features + rating)

    train_ds = nvt.Dataset([str(root / "train.parquet")])
    valid_ds = nvt.Dataset([str(root / "valid.parquet")])
    workflow.fit(train_ds)
    assert workflow.input_dtypes == {"userId": "int64", "movieId": "int64", "rating": "float64"}
    assert workflow.output_dtypes == {"userId": "int64", "movieId": "int64", "genres": "list<int64>", "rating": "int8"}
    assert workflow.output_schema.column_names == ["userId", "movieId", "genres", "rating"]

    dict_dtypes = {"userId": np.int64, "movieId": np.int64, "rating": np.float32}
    common = dict(cats=["userId", "movieId", "genres"], labels=["rating"], dtypes=dict_dtypes)
    workflow.transform(train_ds).to_parquet(output_path=str(root / "train_out"), shuffle=nvt.io.Shuffle.PER_PARTITION, **common)
    workflow.transform(valid_ds).to_parquet(output_path=str(root / "valid_out"), shuffle=None, **common)
    workflow.save(str(root / "workflow"))

    # Reference: a pandas merge, the Categorify convention fitted on the training rows.
    user_codes = categorify_reference(train["userId"])
    ref = train.merge(movies, on="movieId", how="left")
    movie_codes = categorify_reference(ref["movieId"])
    genre_codes = categorify_reference(ref["genres"].explode())
    out = pd.read_parquet(root / "valid_out")
    expected = valid.merge(movies, on="movieId", how="left")
    assert out["userId"].tolist() == [user_codes.get(u, 2) for u in expected["userId"]]
    assert out["movieId"].tolist() == [movie_codes.get(m, 2) for m in expected["movieId"]]
    assert [list(g) for g in out["genres"]] == [[genre_codes.get(x, 2) for x in g] for g in expected["genres"]]
    np.testing.assert_array_equal(out["rating"].to_numpy(), (expected["rating"] > 3).astype(np.float32))
    assert out["rating"].dtype == np.float32

    train_out = pd.read_parquet(root / "train_out")
    assert len(train_out) == len(train)
    assert sorted(train_out["userId"]) == sorted(user_codes[u] for u in train["userId"])

    loaded = nvt.Workflow.load(str(root / "workflow"))
    # Trusted, the saved lambda runs again and gives the same output (MovieLens 03 reloads it).
    trusted = nvt.Workflow.load(str(root / "workflow"), trust_code=True)
    pd.testing.assert_frame_equal(trusted.transform(valid.copy()), workflow.transform(valid.copy()))
    single, multi = get_embedding_sizes(loaded)
    assert single["userId"][0] == 3 + train["userId"].nunique()
    assert single["movieId"][0] == 3 + ref["movieId"].nunique()
    assert multi == {"genres": (3 + len(genre_codes), multi["genres"][1])}
    assert loaded.output_schema.select_by_tag(Tags.CATEGORICAL).column_names == ["userId", "movieId", "genres"]

    # Training loop as the PyTorch example writes it (no continuous columns).
    itr = TorchAsyncItr(
        nvt.Dataset(sorted(glob.glob(str(root / "train_out" / "*.parquet")))), batch_size=64,
        cats=["userId", "movieId"], conts=[], labels=["rating"], shuffle=True,
    )
    loader = DLDataLoader(itr, batch_size=None, collate_fn=lambda x: x, pin_memory=False, num_workers=0)
    tables = torch.nn.ModuleList([torch.nn.Embedding(card, 4) for card, _ in single.values()])
    head = torch.nn.Linear(8, 1)
    optimizer = torch.optim.Adam([*tables.parameters(), *head.parameters()], lr=0.05)
    seen, labels = 0, []
    for x_cat, x_cont, y in loader:
        assert x_cat.dtype == torch.int64 and x_cat.shape[1] == 2 and x_cont.shape == (len(y), 0)
        logits = head(torch.cat([t(x_cat[:, k]) for k, t in enumerate(tables)], dim=1)).squeeze(1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        seen += len(y)
        labels.extend(y.tolist())
    itr.shutdown()
    assert seen == len(train)
    assert sorted(labels) == sorted((train["rating"] > 3).astype(float))


def test_merlin_models_movielens_1m_etl_gives_the_schema_merlin_gives():
    # merlin-models 23.08's default_ml1m_transformation: two JoinExternal, TargetEncoding over
    # a selector plus a node, columns tagged again in later operands of ``+``, ValueCount and
    # Rename(name=). Models find the item and user ids, the TE columns' owners and the list
    # lengths through the tags and properties the merged schemas carry (expected values: what
    # merlin-core 23.08's Schema.__add__ gives on this graph).
    rng = np.random.default_rng(11)
    movies = pd.DataFrame({
        "movieId": np.arange(1, 21), "title": [f"t{i}" for i in range(20)],
        "genres": [["Drama", "Comedy", "Action"][: 1 + i % 3] for i in range(20)],
    })
    users = pd.DataFrame({
        "userId": np.arange(1, 11), "gender": list("MF") * 5, "age": [1, 18, 25, 35, 45] * 2,
        "occupation": np.arange(10) % 4, "zipcode": [f"z{i % 3}" for i in range(10)],
    })
    ratings = pd.DataFrame({
        "userId": rng.integers(1, 11, 300), "movieId": rng.integers(1, 21, 300), "rating": rng.integers(1, 6, 300),
        "timestamp": np.arange(300),
    })
    joined = ["userId", "movieId"] >> ops.JoinExternal(movies, on=["movieId"]) >> ops.JoinExternal(users, on=["userId"])
    cat_features = joined >> ops.Categorify(dtype="int32")
    label = nvt.ColumnSelector(["rating"])
    te_features = nvt.ColumnSelector(["movieId", "userId"]) + joined[["age", "gender", "occupation", "zipcode"]] >> ops.TargetEncoding(
        label, kfold=5, p_smooth=20
    )
    te_features_norm = te_features >> ops.Normalize()
    te_user = ["TE_userId_rating", "TE_age_rating", "TE_gender_rating", "TE_occupation_rating", "TE_zipcode_rating"]
    feats_te_user = te_features_norm[te_user] >> ops.AddMetadata(tags=["user"])
    feats_te_item = te_features_norm[["TE_movieId_rating"]] >> ops.AddMetadata(tags=["item"])
    feats_item = cat_features["movieId"] >> ops.AddMetadata(tags=["item_id", "item"])
    feats_user = cat_features["userId"] >> ops.AddMetadata(tags=["user_id", "user"])
    feats_genres = cat_features["genres"] >> ops.ValueCount() >> ops.TagAsItemFeatures()
    feats_target = (
        nvt.ColumnSelector(["rating"]) >> ops.LambdaOp(lambda col: (col > 3).astype("int32"))
        >> ops.AddMetadata(tags=["binary_classification", "target"]) >> ops.Rename(name="rating_binary")
    )
    target_orig = ["rating"] >> ops.LambdaOp(lambda col: col.astype("float32")) >> ops.AddMetadata(tags=["regression", "target"])
    workflow = nvt.Workflow(
        cat_features + te_features_norm + feats_te_user + feats_te_item + feats_item + feats_user + feats_genres
        + feats_target + target_orig
    )
    out = workflow.fit_transform(ratings)
    schema = workflow.output_schema

    assert schema.column_names == [
        "title", "gender", "age", "occupation", "zipcode", *te_user, "TE_movieId_rating", "movieId", "userId", "genres",
        "rating_binary", "rating",
    ]
    assert list(out.columns) == schema.column_names
    assert schema.select_by_tag(Tags.ITEM_ID).column_names == ["movieId"]
    assert schema.select_by_tag(Tags.USER_ID).column_names == ["userId"]
    assert schema["movieId"].tags == {Tags.CATEGORICAL, Tags.ITEM, Tags.ID}
    assert schema["userId"].tags == {Tags.CATEGORICAL, Tags.USER, Tags.ID}
    assert {name: schema[name].tags for name in te_user} == {name: {Tags.CONTINUOUS, Tags.USER} for name in te_user}
    assert schema["TE_movieId_rating"].tags == {Tags.CONTINUOUS, Tags.ITEM}
    assert schema.select_by_tag(Tags.TARGET).column_names == ["rating_binary", "rating"]
    for name in ["title", "gender", "age", "occupation", "zipcode"]:
        assert schema[name].tags == {Tags.CATEGORICAL}
    genres = schema["genres"]
    lengths = ratings.merge(movies, on="movieId")["genres"].map(len)
    assert genres.is_list and genres.is_ragged and genres.dtype == "list<int32>"
    assert dict(genres.value_count) == {"min": lengths.min(), "max": lengths.max()}
    # merlin's Categorify tags no column as a list; tabflow's adds Tags.LIST to list columns.
    assert genres.tags == {Tags.CATEGORICAL, Tags.ITEM, Tags.LIST}
    # The merged columns' values are the encoded ids (the later operands re-tag the same data).
    codes = categorify_reference(ratings["movieId"])
    assert out["movieId"].tolist() == [codes[m] for m in ratings["movieId"]] and out["movieId"].dtype == np.int32
    assert out["rating_binary"].tolist() == (ratings["rating"] > 3).astype("int32").tolist()


# --------------------------------------------------------------------------- Criteo

CONT = [f"I{i}" for i in range(1, 5)]
CAT = [f"C{i}" for i in range(1, 5)]
LABEL = ["label"]


def _criteo_text(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"label": rng.integers(0, 2, rows)})
    for name in CONT:
        values = pd.Series(rng.integers(-2, 50, rows), dtype="Int64")
        frame[name] = values.mask(rng.random(rows) < 0.15)
    for k, name in enumerate(CAT):
        ids = rng.integers(0, 12 + 4 * k, rows) * 2654435761 % 2**32
        frame[name] = pd.Series([f"{v:08x}" for v in ids]).mask(rng.random(rows) < 0.1)
    return frame


def test_criteo_conversion_etl_and_fastai_training(tmp_path):
    pytest.importorskip("fastai")
    from fastai.data.core import DataLoaders
    from fastai.learner import Learner
    from fastai.metrics import RocAucBinary
    from fastai.tabular.model import TabularModel

    days = [_criteo_text(300, seed) for seed in (1, 2, 3)]
    raw = tmp_path / "raw"
    raw.mkdir()
    for k, frame in enumerate(days):
        frame.to_csv(raw / f"day_{k}", sep="\t", header=False, index=False, na_rep="")

    # Conversion step: tab-separated text, column names given, "hex" and numpy dtypes.
    dtypes = {"label": np.int32, **{c: np.int32 for c in CONT}, **{c: "hex" for c in CAT}}
    dataset = nvt.Dataset(sorted(glob.glob(str(raw / "day_*"))), engine="csv", names=LABEL + CONT + CAT,
                          sep="\t", dtypes=dtypes, part_mem_fraction=0.01)
    files = dataset.to_parquet(str(tmp_path / "converted"), preserve_files=True)
    assert [os.path.basename(f) for f in files] == ["day_0.parquet", "day_1.parquet", "day_2.parquet"]
    day1 = pd.read_parquet(tmp_path / "converted" / "day_1.parquet")
    assert day1["I2"].astype("float64").equals(days[1]["I2"].astype("float64"))
    hex_ids = days[1]["C3"].map(lambda v: int(v, 16) if isinstance(v, str) else None)
    assert day1["C3"].astype("float64").equals(hex_ids.astype("float64"))

    # ETL step.
    cat_features = CAT >> ops.Categorify(freq_threshold=2, out_path=str(tmp_path / "stats"))
    cont_features = CONT >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    workflow = nvt.Workflow(cat_features + cont_features + LABEL, client=None)
    train_paths = [str(tmp_path / "converted" / f"day_{k}.parquet") for k in (0, 1)]
    valid_paths = [str(tmp_path / "converted" / "day_2.parquet")]
    train_ds = nvt.Dataset(train_paths, engine="parquet", part_size="64KB")
    valid_ds = nvt.Dataset(valid_paths, engine="parquet", part_size="64KB")
    workflow.fit(train_ds)
    dict_dtypes = {**{c: np.int64 for c in CAT}, **{c: np.float32 for c in CONT + LABEL}}
    for ds, name, shuffle in ((train_ds, "train", nvt.io.Shuffle.PER_PARTITION), (valid_ds, "valid", None)):
        workflow.transform(ds).to_parquet(output_path=str(tmp_path / name), shuffle=shuffle, out_files_per_proc=2,
                                          dtypes=dict_dtypes, cats=CAT, conts=CONT, labels=LABEL)
    workflow.save(str(tmp_path / "workflow"))

    train_raw = pd.concat(days[:2], ignore_index=True)
    out = pd.read_parquet(tmp_path / "valid")
    assert list(out.columns) == CAT + CONT + LABEL
    assert all(out[c].dtype == np.int64 for c in CAT) and all(out[c].dtype == np.float32 for c in CONT + LABEL)
    for name in CONT:
        fitted = np.log1p(train_raw[name].fillna(0).clip(lower=0).astype("float64"))
        valid_values = np.log1p(days[2][name].fillna(0).clip(lower=0).astype("float64"))
        expected = (valid_values - fitted.mean()) / fitted.std(ddof=1)
        np.testing.assert_allclose(out[name], expected, rtol=1e-4, atol=1e-4)
    for name in CAT:
        counts = train_raw[name].value_counts()
        kept = train_raw[name].where(train_raw[name].map(counts) >= 2)
        codes = categorify_reference(kept.map(lambda v: int(v, 16), na_action="ignore"))
        valid_ids = days[2][name].map(lambda v: int(v, 16), na_action="ignore")
        assert out[name].tolist() == [1 if pd.isna(v) else codes.get(v, 2) for v in valid_ids]
    schema = nvt.Dataset(str(tmp_path / "train")).schema
    assert schema.select_by_tag(Tags.CONTINUOUS).column_names == CONT
    assert schema.select_by_tag(Tags.TARGET).column_names == LABEL

    # Training step, as the fastai notebook writes it.
    workflow = nvt.Workflow.load(str(tmp_path / "workflow"))
    embeddings = [[card, min(16, dim)] for card, dim in get_embedding_sizes(workflow).values()]

    def gen_col(batch):
        return batch[0], batch[1], batch[2].long()

    def loader(name, shuffle):
        paths = sorted(glob.glob(str(tmp_path / name / "*.parquet")))
        itr = TorchAsyncItr(nvt.Dataset(paths, engine="parquet", part_mem_fraction=0.001), batch_size=128,
                            cats=CAT, conts=CONT, labels=LABEL, shuffle=shuffle, parts_per_chunk=1)
        return DLDataLoader(itr, collate_fn=gen_col, batch_size=None, pin_memory=False, num_workers=0)

    train_dl, valid_dl = loader("train", True), loader("valid", False)
    model = TabularModel(emb_szs=embeddings, n_cont=len(CONT), out_sz=2, layers=[16, 8])
    learn = Learner(DataLoaders(train_dl, valid_dl), model, loss_func=torch.nn.CrossEntropyLoss(), metrics=[RocAucBinary()])
    learn.fit(1, 1e-2)
    assert np.isfinite(learn.recorder.values[-1][0])
    train_dl.dataset.shutdown()
    valid_dl.dataset.shutdown()


# --------------------------------------------------------------------------- Outbrain


class DaysSincePublished(ops.Operator):
    """A custom op in the 23.08 style: ``dependencies`` as a method, names as a selector."""

    def transform(self, columns, gdf):
        for column in columns.names:
            published = pd.to_datetime(gdf[column])
            seen = pd.to_datetime(gdf["timestamp"] + 1465876799998, unit="ms")
            delta = (seen - published).dt.days
            gdf[column + "_since_published"] = (delta * (delta >= 0) * (delta <= 10 * 365)).astype("float64")
        return gdf

    def output_column_names(self, columns):
        return nvt.ColumnSelector([column + "_since_published" for column in columns.names])

    @property
    def output_dtype(self):
        return "float64"

    def dependencies(self):
        return ["timestamp"]


def _events(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    states = ["US>CA>807", "US>NY>501", "GB>H9", "CA>ON>2"]
    publish = pd.Timestamp("2016-06-01") - pd.to_timedelta(rng.integers(0, 400, rows), unit="D")
    return pd.DataFrame({
        "display_id": np.arange(rows),
        "ad_id": rng.integers(0, 15, rows),
        "platform": rng.integers(1, 4, rows),
        "geo_location": rng.choice(states, rows),
        "timestamp": rng.integers(0, 10**9, rows),
        "publish_time": pd.Series(publish.strftime("%Y-%m-%d")).mask(rng.random(rows) < 0.1),
        "clicked": rng.integers(0, 2, rows),
    })


def test_outbrain_style_feature_engineering(tmp_path):
    train, valid = _events(400, 1), _events(120, 2)
    train.to_parquet(tmp_path / "train_gdf.parquet")
    valid.to_parquet(tmp_path / "valid_gdf.parquet")
    promoted = pd.DataFrame({"ad_id": np.arange(15), "campaign_id": np.arange(15) % 4, "advertiser_id": np.arange(15) % 6})

    geo_location = nvt.ColumnGroup(["geo_location"])
    country = geo_location >> (lambda col: col.str.slice(0, 2)) >> ops.Rename(postfix="_country")
    state = geo_location >> (lambda col: col.str.slice(0, 5)) >> ops.Rename(postfix="_state")
    geo_features = geo_location + country + state
    joined = ["ad_id", "platform"] >> ops.JoinExternal(promoted, on=["ad_id"])
    cats = nvt.ColumnGroup(["ad_id", "platform"])
    cat_features = geo_features + joined >> ops.Categorify()
    te_features = cats >> ops.TargetEncoding("clicked", kfold=5, p_smooth=20)
    counts = ["ad_id"] >> ops.JoinGroupby(cont_cols=["clicked"], stats=["count", "mean"])
    date_features = ["publish_time"] >> DaysSincePublished() >> ops.FillMedian() >> ops.LogOp()
    weighted = ["platform"] >> ops.LambdaOp(lambda col, gdf: col * gdf["clicked"], dependency=["clicked"]) >> ops.Rename(postfix="_clicks")
    workflow = nvt.Workflow(cat_features + te_features + counts + date_features + weighted + ["display_id", "clicked"])

    train_ds = nvt.Dataset(str(tmp_path / "train_gdf.parquet"), part_size="150MB")
    valid_ds = nvt.Dataset(str(tmp_path / "valid_gdf.parquet"), part_size="150MB")
    workflow.fit(train_ds)
    workflow.transform(valid_ds).to_parquet(output_path=str(tmp_path / "valid"), out_files_per_proc=1)
    workflow.transform(train_ds).to_parquet(output_path=str(tmp_path / "train"), shuffle=nvt.io.Shuffle.PER_PARTITION,
                                            out_files_per_proc=2)
    out = pd.read_parquet(tmp_path / "valid")

    # Categorify of the derived geo columns and of the joined columns.
    for name, values_train, values_valid in (
        ("geo_location_country", train["geo_location"].str.slice(0, 2), valid["geo_location"].str.slice(0, 2)),
        ("geo_location_state", train["geo_location"].str.slice(0, 5), valid["geo_location"].str.slice(0, 5)),
        ("campaign_id", train.merge(promoted, on="ad_id")["campaign_id"], valid.merge(promoted, on="ad_id")["campaign_id"]),
    ):
        codes = categorify_reference(values_train)
        assert out[name].tolist() == [codes.get(v, 2) for v in values_valid], name

    # Target encoding of data it was not fitted on: the smoothed full-data mean.
    global_mean = train["clicked"].mean()
    stats = train.groupby("ad_id")["clicked"].agg(["sum", "count"])
    smoothed = (stats["sum"] + 20 * global_mean) / (stats["count"] + 20)
    expected_te = valid["ad_id"].map(smoothed).fillna(global_mean)
    np.testing.assert_allclose(out["TE_ad_id_clicked"], expected_te, rtol=1e-5)

    # JoinGroupby equals a pandas groupby joined back.
    grouped = train.groupby("ad_id")["clicked"].agg(["count", "mean"])
    np.testing.assert_array_equal(out["ad_id_count"], valid["ad_id"].map(grouped["count"]).fillna(0))
    np.testing.assert_allclose(out["ad_id_clicked_mean"], valid["ad_id"].map(grouped["mean"]), rtol=1e-6)

    # The custom op, then FillMedian (median of the training values) and LogOp.
    def days_since(frame):
        delta = (pd.to_datetime(frame["timestamp"] + 1465876799998, unit="ms") - pd.to_datetime(frame["publish_time"])).dt.days
        return delta * (delta >= 0) * (delta <= 3650)

    median = days_since(train).median()
    np.testing.assert_allclose(out["publish_time_since_published"], np.log1p(days_since(valid).fillna(median)), rtol=1e-5)
    np.testing.assert_array_equal(out["platform_clicks"], valid["platform"] * valid["clicked"])
    assert sorted(pd.read_parquet(tmp_path / "train")["display_id"]) == list(range(len(train)))

    # A row filter over the whole selection keeps exactly the pandas-selected rows.
    kept = nvt.Workflow(["display_id", "platform"] >> ops.Filter(f=lambda df: df["platform"] > 1)).fit_transform(valid_ds)
    assert kept.to_ddf().compute()["display_id"].tolist() == valid.loc[valid["platform"] > 1, "display_id"].tolist()


# --------------------------------------------------------------------------- Rossmann


def _stores(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "Store": rng.integers(1, 20, rows),
        "DayOfWeek": rng.integers(1, 8, rows),
        "StateHoliday": rng.choice(["0", "a", "b"], rows),
        "CompetitionDistance": pd.Series(rng.integers(10, 5000, rows).astype(float)).mask(rng.random(rows) < 0.1),
        "Promo2SinceYear": rng.integers(2009, 2016, rows).astype(np.int32),
    })
    frame["Sales"] = (3000 + 500 * frame["DayOfWeek"] + rng.normal(0, 200, rows)).round()
    return frame


def test_rossmann_style_fastai_tabular(tmp_path):
    pytest.importorskip("fastai")
    from fastai.learner import Learner
    from fastai.tabular.all import MSELossFlat
    from fastai.tabular.data import TabularDataLoaders
    from fastai.tabular.model import TabularModel

    CATEGORICAL_COLUMNS = ["Store", "DayOfWeek", "StateHoliday"]
    CONTINUOUS_COLUMNS = ["CompetitionDistance", "Promo2SinceYear"]
    LABEL_COLUMNS = ["Sales"]
    train, valid = _stores(500, 1), _stores(150, 2)
    train.to_csv(tmp_path / "train.csv", index=False)
    valid.to_csv(tmp_path / "valid.csv", index=False)

    cat_features = CATEGORICAL_COLUMNS >> ops.Categorify()
    cont_features = CONTINUOUS_COLUMNS >> ops.FillMissing() >> ops.LogOp() >> ops.Normalize()
    label_feature = LABEL_COLUMNS >> ops.LogOp()
    workflow = nvt.Workflow(cat_features + cont_features + label_feature)
    csv_dtypes = {"StateHoliday": str, "Promo2SinceYear": np.int32, "Sales": np.float32}
    train_ds = nvt.Dataset(str(tmp_path / "train.csv"), part_size="100MB", dtypes=csv_dtypes)
    valid_ds = nvt.Dataset(str(tmp_path / "valid.csv"), part_size="100MB", dtypes=csv_dtypes)
    assert train_ds.to_ddf().head()["StateHoliday"].tolist() == train["StateHoliday"].head().tolist()
    assert len(train_ds.to_ddf().compute()) == len(train)
    workflow.fit(train_ds)
    tags = dict(cats=CATEGORICAL_COLUMNS, conts=CONTINUOUS_COLUMNS, labels=LABEL_COLUMNS)
    workflow.transform(train_ds).to_parquet(output_path=str(tmp_path / "train"), out_files_per_proc=2,
                                            shuffle=nvt.io.Shuffle.PER_PARTITION, **tags)
    workflow.transform(valid_ds).to_parquet(output_path=str(tmp_path / "valid"), **tags)

    out = pd.read_parquet(tmp_path / "valid")
    for name in CONTINUOUS_COLUMNS:  # Promo2SinceYear is read as int32, as asked
        # LogOp works in float32, as NVTabular's did: the reference does too.
        fitted = np.log(train[name].fillna(0).astype(np.float32) + 1).astype("float64")
        expected = (np.log(valid[name].fillna(0).astype(np.float32) + 1) - fitted.mean()) / fitted.std(ddof=1)
        # log(year) varies by ~0.1%, so float32 rounding shows at ~1e-4 after scaling.
        np.testing.assert_allclose(out[name], expected, rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(out["Sales"], np.log1p(valid["Sales"]), rtol=1e-6)
    holiday = categorify_reference(train["StateHoliday"])
    assert out["StateHoliday"].tolist() == [holiday.get(v, 2) for v in valid["StateHoliday"]]

    EMBEDDING_TABLE_SHAPES = get_embedding_sizes(workflow)
    assert list(EMBEDDING_TABLE_SHAPES) == CATEGORICAL_COLUMNS

    def loader(name, shuffle):
        itr = TorchAsyncItr(nvt.Dataset(str(tmp_path / name)), batch_size=64, cats=CATEGORICAL_COLUMNS,
                            conts=CONTINUOUS_COLUMNS, labels=LABEL_COLUMNS, shuffle=shuffle)
        return DLDataLoader(itr, collate_fn=lambda x: (x[0], x[1], x[2].unsqueeze(1)), batch_size=None,
                            pin_memory=False, num_workers=0)

    train_dl, valid_dl = loader("train", True), loader("valid", False)
    max_log_y = float(np.log1p(train["Sales"].max()) * 1.2)
    model = TabularModel(emb_szs=list(EMBEDDING_TABLE_SHAPES.values()), n_cont=len(CONTINUOUS_COLUMNS), out_sz=1,
                         layers=[32, 16], y_range=(0, max_log_y))
    learn = Learner(TabularDataLoaders(train_dl, valid_dl), model, loss_func=MSELossFlat())
    learn.fit(2, 1e-2)
    preds, targets = learn.get_preds()
    assert preds.shape == (len(valid), 1)
    np.testing.assert_allclose(np.sort(targets.numpy().ravel()), np.sort(np.log1p(valid["Sales"]).to_numpy()), rtol=1e-5)
    train_dl.dataset.shutdown()
    valid_dl.dataset.shutdown()


# --------------------------------------------------------------------------- edge cases


def test_preserve_files_through_a_transform_and_its_refusals(tmp_path):
    for k in range(2):
        pd.DataFrame({"x": np.arange(k * 10, k * 10 + 10, dtype=np.int32)}).to_csv(tmp_path / f"part{k}.csv", index=False)
    ds = nvt.Dataset(sorted(glob.glob(str(tmp_path / "*.csv"))), dtypes={"x": np.float32}, part_size="1KB")
    workflow = nvt.Workflow(["x"] >> ops.Normalize()).fit(ds)
    files = workflow.transform(ds).to_parquet(str(tmp_path / "out"), preserve_files=True, shuffle=nvt.io.Shuffle.PER_PARTITION)
    assert [os.path.basename(f) for f in files] == ["part0.parquet", "part1.parquet"]
    expected = normalized(pd.Series(np.arange(20)))
    np.testing.assert_allclose(sorted(pd.read_parquet(files[1])["x"]), expected[10:], rtol=1e-5)
    with pytest.raises(ValueError, match="output_files"):
        ds.to_parquet(str(tmp_path / "bad"), preserve_files=True, output_files=3)
    with pytest.raises(ValueError, match="do not map to files"):
        nvt.Dataset(pd.DataFrame({"x": [1.0]})).to_parquet(str(tmp_path / "bad"), preserve_files=True)
    with pytest.raises(ValueError, match="only applies to CSV"):
        nvt.Dataset(files, dtypes={"x": "hex"})


def test_plain_pandas_list_column_is_a_list_column():
    frame = pd.DataFrame({"tags": [["a", "b"], ["c"], ["a"], None], "n": [1, 2, 3, 4]})
    assert nvt.Dataset(frame).schema["tags"].is_list
    out = nvt.Workflow(["tags"] >> ops.Categorify()).fit_transform(frame)
    codes = categorify_reference(frame["tags"].explode())
    # Given back as pandas holds list columns: one NumPy array per row.
    assert out["tags"].dtype == object and out["tags"][0].dtype == np.int64
    assert [list(row) for row in out["tags"][:3]] == [[codes[v] for v in row] for row in frame["tags"][:3]]
