"""tabflow.tools.data_gen: values, strings, lists, nulls and files as described, reproducibly.

NVTabular 23.08's ``tests/unit/test_tools.py`` intents, on the pandas engine, with exact
references computed with numpy/scipy. Every generator is seeded, so each assertion sees the
same data on every run; the binomial tolerances only say how far a correct generator may be.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import tabflow as nvt
from tabflow._install import pip_install
from tabflow.backends import get_backend, gpu_available
from tabflow.testing import assert_frame_equal
from tabflow.tools import data_gen
from tabflow.tools.data_gen import (
    CatCol,
    ContCol,
    DatasetGen,
    LabelCol,
    PowerLawDistro,
    UniformDistro,
)

# pandas' own text dtype (``str`` on pandas 3), what tabflow holds strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")

JSON_SAMPLE = {
    "conts": {f"cont_{i}": {"dtype": np.float32, "min_val": 0, "max_val": 1} for i in range(1, 6)},
    "cats": {
        "cat_1": {"dtype": None, "cardinality": 50, "min_entry_size": 1, "max_entry_size": 5,
                  "multi_min": 2, "multi_max": 5, "multi_avg": 3},
        **{f"cat_{i}": {"dtype": None, "cardinality": 50, "min_entry_size": 1, "max_entry_size": 5} for i in range(2, 6)},
    },
    "labels": {"lab_1": {"dtype": None, "cardinality": 2}},
}
DISTROS = {
    "cont_1": {"name": "powerlaw", "params": {"alpha": 0.1}},
    "cont_2": {"name": "powerlaw", "params": {"alpha": 0.2}},
    "cat_1": {"name": "powerlaw", "params": {"alpha": 0.1}},
    "cat_2": {"name": "powerlaw", "params": {"alpha": 0.2}},
}


def assert_binomial(count: int, trials: int, probability: float, sigmas: float = 5.0) -> None:
    """``count`` successes of ``trials`` are what a probability of ``probability`` gives."""
    spread = math.sqrt(trials * probability * (1 - probability))
    assert abs(count - trials * probability) <= sigmas * spread + 1, (count, trials * probability)


def flat_values(series: pd.Series) -> pd.Series:
    return get_backend("pandas").list_values_series(series)


def list_lengths(series: pd.Series) -> np.ndarray:
    return get_backend("pandas").list_lengths(series)


# ---------------------------------------------------------------------- distributions
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_values_fill_their_range(dtype):
    uniform = UniformDistro(seed=0)
    values = uniform.create_col(20_000, dtype=dtype, min_val=2, max_val=5)
    assert values.dtype == dtype
    assert values.min() >= 2 and values.max() <= 5
    assert abs(values.mean() - 3.5) <= 5 * 3 / math.sqrt(12 * 20_000)
    reference = stats.kstest(values.to_numpy(np.float64), stats.uniform(loc=2, scale=3).cdf)
    result = uniform.verify(values, min_val=2, max_val=5)
    assert result.statistic == pytest.approx(reference.statistic, abs=1e-6)
    assert result.pvalue > 1e-3
    assert uniform.verify(values).pvalue < 1e-12  # NVTabular's default range [0, 1] does not fit


@pytest.mark.parametrize("alpha", [0.1, 0.5, -0.5])
def test_powerlaw_follows_its_law(alpha):
    power_law = PowerLawDistro(alpha, seed=1)
    values = power_law.create_col(20_000, dtype=np.float64, min_val=0, max_val=40)
    assert values.min() >= 0 and values.max() <= 40
    # On [0, M] the density x**-alpha is scipy's powerlaw with a = 1 - alpha, scaled by M.
    assert stats.kstest(values.to_numpy(), stats.powerlaw(1 - alpha, scale=40).cdf).pvalue > 1e-3
    assert power_law.verify(values, min_val=0, max_val=40).pvalue > 1e-3
    assert values.mean() == pytest.approx(40 * (1 - alpha) / (2 - alpha), rel=0.02)


def test_powerlaw_with_a_lower_bound_matches_the_inverse_cdf():
    power_law = PowerLawDistro(0.3, seed=2)
    values = np.sort(power_law.sample(50_000, min_val=5, max_val=50))
    quantiles = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    gamma = 0.7
    expected = (5**gamma + quantiles * (50**gamma - 5**gamma)) ** (1 / gamma)
    np.testing.assert_allclose(np.quantile(values, quantiles), expected, rtol=0.02)


def test_distributions_are_reproducible_from_a_seed():
    first = PowerLawDistro(0.2, seed=3).create_col(100)
    assert first.equals(PowerLawDistro(0.2, seed=3).create_col(100))
    assert not first.equals(PowerLawDistro(0.2, seed=4).create_col(100))
    generator = np.random.default_rng(9)
    assert UniformDistro(seed=generator).create_col(5).equals(UniformDistro(seed=np.random.default_rng(9)).create_col(5))


def test_distributions_refuse_ranges_they_cannot_draw():
    with pytest.raises(ValueError, match="greater than min_val"):
        UniformDistro().create_col(3, min_val=2, max_val=2)
    with pytest.raises(ValueError, match="alpha below 1"):
        PowerLawDistro(1.0).create_col(3)
    with pytest.raises(ValueError, match="at least 0"):
        PowerLawDistro(0.1).create_col(3, min_val=-1)


# ------------------------------------------------------------------------ descriptions
def test_json_convert():
    cols = data_gen._get_cols_from_schema({**JSON_SAMPLE, "num_rows": 10}, distros=DISTROS)
    assert [len(cols[s]) for s in ("conts", "cats", "labels")] == [5, 5, 1]
    assert all(isinstance(c, ContCol) for c in cols["conts"]) and isinstance(cols["labels"][0], LabelCol)
    cat_1 = cols["cats"][0]
    assert isinstance(cat_1, CatCol) and (cat_1.multi_min, cat_1.multi_max, cat_1.multi_avg) == (2, 5, 3)
    assert isinstance(cat_1.distro, PowerLawDistro) and cat_1.distro.alpha == 0.1
    assert cols["conts"][1].distro.alpha == 0.2 and cols["conts"][2].distro is None
    assert set(data_gen.DISTRO_TYPES) == {"powerlaw", "uniform"}


def test_descriptions_with_unknown_names_are_refused():
    with pytest.raises(ValueError, match="unknown distribution 'zipf'"):
        data_gen._get_cols_from_schema({"conts": {"x": {"dtype": "float32"}}}, {"x": {"name": "zipf", "params": {}}})
    with pytest.raises(ValueError, match="unknown section 'features'"):
        data_gen._get_cols_from_schema({"features": {}})
    with pytest.raises(TypeError):
        data_gen._get_cols_from_schema({"labels": {"y": {"dtype": "int64", "cardinality": 2, "width": 3}}})


# --------------------------------------------------------------------------- columns
@pytest.mark.parametrize("distro", [None, DISTROS])
def test_width(distro):
    cols = data_gen._get_cols_from_schema({"conts": {"cont_1": {"dtype": np.float32, "width": 20}}}, distros=distro)
    df = DatasetGen(UniformDistro(), seed=0, cpu=True).create_df(1000, cols)
    assert df.shape == (1000, 20)
    assert list(df.columns) == ["cont_1"] + [f"cont_1_{i}" for i in range(1, 20)]
    assert (df.dtypes == np.float32).all()


def test_continuous_columns_follow_range_dtype_and_nulls():
    gen = DatasetGen(UniformDistro(), seed=1, cpu=True)
    df = gen.create_conts(
        10_000, [ContCol("a", "float32", min_val=-1, max_val=3, per_nan=20), ContCol("b", "int16", min_val=0, max_val=10), ContCol("c", None)]
    )
    assert df.dtypes.astype(str).tolist() == ["float32", "int16", "float64"]
    present = df["a"].dropna()
    assert present.min() >= -1 and present.max() <= 3
    assert_binomial(int(df["a"].isna().sum()), 10_000, 0.20)
    assert sorted(df["b"].unique().tolist()) == list(range(11))
    assert df["c"].between(0, 1).all() and df["c"].notna().all()
    constant = gen.create_conts(5, [ContCol("k", "int8", min_val=3, max_val=3)])["k"]
    assert constant.tolist() == [3] * 5 and str(constant.dtype) == "int8"


def test_categorical_codes_and_their_frequencies():
    gen = DatasetGen(PowerLawDistro(0.5), seed=2, cpu=True)
    n = 20_000
    df = gen.create_cats(n, [CatCol("c", None, 40), CatCol("wide", "int64", 40, min_val=10)])
    assert str(df["c"].dtype) == "int32" and str(df["wide"].dtype) == "int64"
    assert sorted(df["c"].unique().tolist()) == list(range(1, 41))
    assert sorted(df["wide"].unique().tolist()) == list(range(11, 41))
    # code k = ceil(draw): P(k) = F(k) - F(k - 1) for the power law F(x) = (x / 40) ** 0.5.
    counts = df["c"].value_counts()
    for code in range(1, 41):
        probability = (code / 40) ** 0.5 - ((code - 1) / 40) ** 0.5
        assert_binomial(int(counts[code]), n, probability)


def test_permutate_index_maps_codes_one_to_one():
    cols = [CatCol("c", None, 30)]
    plain = DatasetGen(PowerLawDistro(0.5), seed=3, cpu=True).create_cats(5000, cols)["c"]
    shuffled = DatasetGen(PowerLawDistro(0.5), seed=3, cpu=True).create_cats(5000, [CatCol("c", None, 30, permutate_index=True)])["c"]
    pairs = pd.DataFrame({"plain": plain, "shuffled": shuffled}).drop_duplicates()
    assert len(pairs) == plain.nunique() == shuffled.nunique() == 30
    assert pairs["plain"].is_unique and pairs["shuffled"].is_unique
    assert not (pairs["plain"] == pairs["shuffled"]).all()
    # The most frequent value is no longer the smallest code.
    assert plain.value_counts().idxmax() == 1 and shuffled.value_counts().idxmax() != 1


def test_permutate_index_on_a_series_keeps_nulls():
    ser = pd.Series([4, None, 4, 8, 15], dtype="Int64", name="c")
    out = DatasetGen(UniformDistro(), seed=4, cpu=True).permutate_index(ser)
    assert out.name == "c" and out.isna().tolist() == [False, True, False, False, False]
    assert sorted(out.dropna().unique().tolist()) == [4, 8, 15] and out[0] == out[2]


@pytest.mark.parametrize("num_rows", [1000, 10_000])
@pytest.mark.parametrize("distro", [None, DISTROS])
def test_cat_rep(num_rows, distro):
    cols = data_gen._get_cols_from_schema(JSON_SAMPLE, distros=distro)
    df = DatasetGen(UniformDistro(), seed=5, cpu=True).create_df(num_rows, cols, entries=True)
    cats = list(JSON_SAMPLE["cats"])
    assert df[cats].shape == (num_rows, 5)
    for rep in cols["cats"][1:]:
        assert df[rep.name].dtype == STRING
        assert df[rep.name].nunique() == rep.cardinality
        assert df[rep.name].str.len().min() == rep.min_entry_size
        assert df[rep.name].str.len().max() == rep.max_entry_size
    multi = df["cat_1"]
    assert get_backend("pandas").canonical_dtype(multi.dtype) == "list<string>"
    values = flat_values(multi)
    assert values.nunique() == 50
    assert values.str.len().min() == 1 and values.str.len().max() == 5
    lengths = list_lengths(multi)
    assert lengths.min() == 2 and lengths.max() == 5
    # 2 + Binomial(3, 1/3): mean 3, variance 2/3.
    assert abs(lengths.mean() - 3) <= 5 * math.sqrt(2 / 3 / num_rows)


def test_entry_sizes_average_as_described():
    gen = DatasetGen(UniformDistro(), seed=6, cpu=True)
    entries = gen.create_cat_entries(4000, min_size=2, max_size=12, avg_size=4)
    lengths = np.array([len(entry) for entry in entries])
    assert len(entries) == len(set(entries)) == 4001
    assert lengths.min() == 2 and lengths.max() == 12
    assert abs(lengths.mean() - 4) <= 5 * math.sqrt(10 * 0.2 * 0.8 / 4001)
    assert all(entry.isalnum() and entry.isascii() for entry in entries)


def test_entries_beyond_what_short_strings_hold():
    gen = DatasetGen(UniformDistro(), seed=7, cpu=True)
    # 62 letters and digits: exactly all one-character strings.
    assert sorted(gen.create_cat_entries(61, 1, 1)) == sorted("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    longer = gen.create_cat_entries(200, 1, 2)
    assert len(set(longer)) == 201 and sum(len(e) == 1 for e in longer) <= 62
    with pytest.raises(ValueError, match="raise max_entry_size or lower the cardinality"):
        gen.create_cat_entries(62, 1, 1)


def test_integer_categoricals_keep_their_codes_with_entries():
    gen = DatasetGen(UniformDistro(), seed=8, cpu=True)
    df = gen.create_cats(500, [CatCol("ids", "int64", 20), CatCol("names", "string", 20), CatCol("tags", "list<int64>", 20, multi_max=3)], entries=True)
    assert str(df["ids"].dtype) == "int64" and df["names"].dtype == STRING
    assert get_backend("pandas").canonical_dtype(df["tags"].dtype) == "list<int64>"


def test_labels_are_classes():
    gen = DatasetGen(PowerLawDistro(0.1), seed=9, cpu=True)
    df = gen.create_labels(5000, [LabelCol("click", None, 2), LabelCol("rating", "float32", 5), LabelCol("y", "int64", 3, per_nan=10)])
    assert str(df["click"].dtype) == "int64" and sorted(df["click"].unique().tolist()) == [0, 1]
    assert str(df["rating"].dtype) == "float32" and sorted(df["rating"].unique().tolist()) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert str(df["y"].dtype) == "Int64"
    assert_binomial(int(df["y"].isna().sum()), 5000, 0.10)
    with pytest.raises(ValueError, match="label 'bad' needs a cardinality"):
        gen.create_labels(3, [LabelCol("bad", "float64", None)])


@pytest.mark.parametrize("entries", [False, True])
def test_null_percentages(entries):
    gen = DatasetGen(UniformDistro(), seed=10, cpu=True)
    n = 8000
    df = gen.create_cats(n, [CatCol("c", None, 20, per_nan=30), CatCol("l", None, 20, multi_min=1, multi_max=3, per_nan=5)], entries=entries)
    assert df["c"].dtype == (STRING if entries else "Int32")
    assert_binomial(int(df["c"].isna().sum()), n, 0.30)
    assert_binomial(int(df["l"].isna().sum()), n, 0.05)
    # The shortest and longest lists are kept out of the nulls, so both lengths stay present.
    lengths = list_lengths(df["l"])[df["l"].notna().to_numpy()]
    assert lengths.min() == 1 and lengths.max() == 3


def test_invalid_columns_are_named():
    gen = DatasetGen(UniformDistro(), seed=11, cpu=True)
    with pytest.raises(ValueError, match="column 'c': cardinality 0"):
        gen.create_cats(3, [CatCol("c", None, 0)])
    with pytest.raises(ValueError, match="column 'c': codes are ids of at least 0"):
        gen.create_cats(3, [CatCol("c", None, 5, min_val=-2)])
    with pytest.raises(ValueError, match="column 'l': list lengths"):
        gen.create_cats(3, [CatCol("l", None, 5, multi_min=4, multi_max=2)])
    with pytest.raises(ValueError, match="column 'x' needs min_val and max_val"):
        gen.create_conts(3, [ContCol("x", "float32", min_val=None)])
    with pytest.raises(ValueError, match="per_nan is a percentage"):
        gen.create_conts(3, [ContCol("x", "float32", per_nan=150)])
    with pytest.raises(ValueError, match=r"described twice: \['x'\]"):
        gen.create_df(3, {"conts": [ContCol("x", "float32")], "labels": [LabelCol("x", None, 2)]})
    with pytest.raises(ValueError, match="needs a distribution"):
        DatasetGen(None)


def test_generation_is_reproducible_from_a_seed():
    cols = data_gen._get_cols_from_schema(JSON_SAMPLE, distros=DISTROS)
    first = DatasetGen(UniformDistro(), seed=12, cpu=True).create_df(300, cols, entries=True)
    assert_frame_equal(first, DatasetGen(UniformDistro(), seed=12, cpu=True).create_df(300, cols, entries=True))
    assert_frame_equal(first, DatasetGen(UniformDistro(), seed=np.random.default_rng(12), cpu=True).create_df(300, cols, entries=True))
    other = DatasetGen(UniformDistro(), seed=13, cpu=True).create_df(300, cols, entries=True)
    assert not first["cont_3"].equals(other["cont_3"])


def test_engines_give_the_same_data(engine):
    cols = data_gen._get_cols_from_schema(JSON_SAMPLE, distros=DISTROS)
    on_engine = DatasetGen(UniformDistro(), seed=14, cpu=engine == "pandas").create_df(200, cols, entries=True)
    assert get_backend(engine).is_frame(on_engine)
    assert_frame_equal(on_engine, DatasetGen(UniformDistro(), seed=14, cpu=True).create_df(200, cols, entries=True))


@pytest.mark.skipif(gpu_available(), reason="cuDF is installed here")
def test_gpu_without_cudf_names_the_fix():
    with pytest.raises(ImportError, match=re.escape(pip_install("gpu-cu12"))):
        DatasetGen(UniformDistro(), cpu=False)


@pytest.mark.parametrize("distro", [None, DISTROS])
def test_verify_df(distro):
    cols = data_gen._get_cols_from_schema(JSON_SAMPLE, distros=distro)
    gen = DatasetGen(UniformDistro(), seed=15, cpu=True)
    df = gen.create_df(10_000, cols)
    statistics, pvalues = gen.verify_df(df[["cont_3", "cont_4", "cont_5"]])
    assert len(statistics) == 3 and all(p > 1e-3 for p in pvalues)
    # NVTabular's check: category codes 1..50 are far from the [0, 1] range verify defaults to.
    statistics, _ = gen.verify_df(df[["cat_3", "cat_4"]])
    assert all(s > 0.9 for s in statistics)


# ----------------------------------------------------------------------------- files
def _batch_of(gen, cols, rows_per_file, entries):
    """A gpu_frac that makes full_df_create put ``rows_per_file`` rows in each file."""
    row_size = gen.get_row_size(gen.create_df(1, cols, entries=entries), cols["cats"])
    return (rows_per_file + 0.5) * row_size / get_backend("pandas").total_memory()


def test_get_row_size_and_get_batch():
    gen = DatasetGen(UniformDistro(), seed=16, cpu=True, gpu_frac=0.5)
    cats = [CatCol("l", None, 9, multi_max=5), CatCol("s", None, 9, max_entry_size=7)]
    row = gen.create_df(1, {"conts": [ContCol("x", "float32")], "cats": cats, "labels": [LabelCol("y", None, 2)]}, entries=True)
    # float32 + list of 5 strings of at most 5 characters (+ offsets) + a 7-character string + int64.
    assert gen.get_row_size(row, cats) == 4 + 5 * (5 + 4) + (7 + 4) + 8
    assert gen.get_batch(100) == int(get_backend("pandas").total_memory() * 0.5 // 100)
    assert DatasetGen(UniformDistro(), gpu_frac=1e-12, cpu=True).get_batch(10**6) == 1


@pytest.mark.parametrize("distro", [None, DISTROS])
def test_full_df(tmp_path, distro):
    cols = data_gen._get_cols_from_schema(JSON_SAMPLE, distros=distro)
    gen = DatasetGen(UniformDistro(), seed=17, cpu=True)
    gen.gpu_frac = _batch_of(gen, cols, 300, entries=True)
    files = gen.full_df_create(1000, cols, entries=True, output=tmp_path)
    assert files == [os.path.join(tmp_path, f"dataset_{i}.parquet") for i in range(4)]
    assert sorted(os.listdir(tmp_path)) == sorted([f"cat_{i}_vocab_0.parquet" for i in range(1, 6)] + [f"dataset_{i}.parquet" for i in range(4)])
    parts = [pd.read_parquet(path) for path in files]
    assert [len(part) for part in parts] == [300, 300, 300, 100]
    full = nvt.Dataset(files, engine="parquet", cpu=True).to_ddf().compute()
    assert len(full) == 1000 and list(full.columns) == list(JSON_SAMPLE["conts"]) + list(JSON_SAMPLE["cats"]) + ["lab_1"]
    for rep in cols["cats"]:
        vocabulary = pd.read_parquet(tmp_path / f"{rep.name}_vocab_0.parquet")
        assert vocabulary["idx"].tolist() == list(range(51)) and vocabulary[rep.name].is_unique
        values = full[rep.name] if rep.multi_max is None else flat_values(get_backend("pandas").with_list_columns(full)[rep.name])
        # One vocabulary for every file: 50 strings in all, each a vocabulary entry.
        assert values.nunique() == 50 and set(values) <= set(vocabulary[rep.name])
        assert values.str.len().min() == 1 and values.str.len().max() == 5


def test_full_df_without_entries_and_vocab_merged_afterwards(tmp_path):
    cats = [CatCol("c", None, 25, per_nan=10), CatCol("l", None, 25, multi_min=1, multi_max=4, per_nan=10)]
    cols = {"cats": cats, "labels": [LabelCol("y", None, 2)]}
    gen = DatasetGen(PowerLawDistro(0.2), seed=18, cpu=True)
    gen.gpu_frac = _batch_of(gen, cols, 400, entries=False)
    files = gen.full_df_create(1000, cols, output=tmp_path / "data")
    assert len(files) == 3 and str(get_backend("pandas").read_table(files[0])["c"].dtype) == "Int32"
    vocab_files = gen.create_vocab(cats, tmp_path / "vocab")
    assert vocab_files == [[str(tmp_path / "vocab" / f"{name}_vocab_0.parquet")] for name in ("c", "l")]
    final = gen.merge_vocab(files, vocab_files, cats, tmp_path / "data")
    assert final == [str(tmp_path / "data" / f"FINAL_{i}.parquet") for i in range(3)]
    pandas = get_backend("pandas")
    for coded_path, named_path in zip(files, final):
        coded = pandas.read_table(coded_path)
        named = pandas.read_table(named_path)
        for name, paths in zip(("c", "l"), vocab_files):
            vocabulary = pd.read_parquet(paths[0]).set_index("idx")[name]
            if name == "c":
                expected = coded["c"].map(vocabulary).astype(STRING)
                assert_frame_equal(named[["c"]], expected.to_frame("c"))
            else:
                assert named["l"].isna().tolist() == coded["l"].isna().tolist()
                np.testing.assert_array_equal(list_lengths(named["l"]), list_lengths(coded["l"]))
                assert flat_values(named["l"]).tolist() == flat_values(coded["l"]).map(vocabulary).tolist()


def test_merge_cats_encoding_of_lists_and_unknown_codes():
    gen = DatasetGen(UniformDistro(), cpu=True)
    lists = get_backend("pandas").list_from_values_offsets(np.array([1, 2, 9, 0]), np.array([0, 2, 2, 4]), name="l")
    names, offsets = gen.merge_cats_encoding(lists, pd.Series(["zero", "one", "two"]))
    pd.testing.assert_series_equal(pd.Series(names).reset_index(drop=True), pd.Series(["one", "two", None, "zero"], name=pd.Series(names).name, dtype=STRING))
    assert offsets.tolist() == [0, 2, 2, 4]
