"""Text comes out of every reader as pandas' own string dtype, as pandas' readers give it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow import ops

# Whether pandas infers a string dtype for text (pandas 3), which pd.read_csv and
# pd.read_parquet then give it; older pandas reads text as objects.
PANDAS_READS_STRINGS = isinstance(pd.Series(["x"]).dtype, pd.StringDtype)
# The engine's text dtype: pandas' own (``str`` on pandas 3), else Arrow-backed ``string``.
STRING = pd.Series(["x"]).dtype if PANDAS_READS_STRINGS else pd.StringDtype("pyarrow")


def _as_pandas_reads(text):
    """``text`` as this pandas' readers give text (unchanged where that is the engine's)."""
    return text if PANDAS_READS_STRINGS else text.astype(STRING)


@pytest.fixture
def frame(rng):
    n = 300
    words = rng.choice(["ab", "c", "déjà", ""], n).astype(object)
    words[rng.random(n) < 0.1] = None
    return pd.DataFrame({"w": words, "k": rng.choice(["x", "y"], n), "n": rng.normal(size=n)})


def _text_columns_equal(got, expected):
    for name in ("w", "k"):
        assert got[name].dtype == STRING, name
        pd.testing.assert_series_equal(got[name].reset_index(drop=True), expected[name].reset_index(drop=True).astype(STRING))


@pytest.mark.parametrize("header", [True, False])
def test_csv_text_is_what_read_csv_gives(frame, tmp_path, header):
    for i, start in enumerate(range(0, len(frame), 100)):
        frame.iloc[start : start + 100].to_csv(tmp_path / f"part_{i}.csv", index=False, header=header)
    files = [str(tmp_path / f"part_{i}.csv") for i in range(3)]
    options = {} if header else {"names": list(frame.columns)}
    reference = pd.concat([pd.read_csv(f, **({} if header else {"header": None, "names": list(frame.columns)})) for f in files])
    got = nvt.Dataset(files, engine="csv", part_size="4KB", **options).compute()
    assert got["w"].dtype == _as_pandas_reads(reference["w"]).dtype  # pandas' own reader's dtype
    assert got["w"].isna().tolist() == reference["w"].isna().tolist()
    _text_columns_equal(got, reference)


def test_parquet_and_orc_text_is_what_pandas_readers_give(frame, tmp_path):
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=70)
    orc.write_table(table, tmp_path / "a.orc")
    reference = pd.read_parquet(tmp_path / "a.parquet")
    for path in ("a.parquet", "a.orc"):
        got = nvt.Dataset(str(tmp_path / path), part_size="2KB").compute()
        assert got["w"].dtype == _as_pandas_reads(reference["w"]).dtype
        _text_columns_equal(got, reference)


def test_in_memory_frames_keep_the_string_dtype_they_were_given(frame):
    # Different rows for each: dask names a collection by its values, and two frames that
    # differ only in their string dtype get one name (and so one dtype) in a process.
    given = [frame.iloc[:150].astype({"w": STRING, "k": STRING}), frame.iloc[150:].astype({"w": "string", "k": "string"})]
    for data in given:
        got = nvt.Dataset(data, npartitions=3).compute()
        pd.testing.assert_frame_equal(got.reset_index(drop=True), data.reset_index(drop=True))
    # Text held as Python objects becomes the engine's string dtype.
    got = nvt.Dataset(frame.astype({"w": object}), npartitions=2).compute()
    assert got["w"].dtype == STRING and got["w"].isna().tolist() == frame["w"].isna().tolist()


def test_ops_and_outputs_do_not_depend_on_the_string_dtype(frame, tmp_path):
    outputs = []
    for shift, dtype in enumerate((STRING, "string", object)):
        # Rows rotated per dtype: dask names a collection by its values alone (see above).
        data = pd.concat([frame.iloc[shift:], frame.iloc[:shift]]).reset_index(drop=True).astype({"w": dtype, "k": dtype})
        graph = (
            (["w"] >> ops.Categorify())
            + (["k"] >> ops.HashBucket(11))
            + (["w", "k"] >> ops.Rename(postfix="_raw"))
        )
        workflow = nvt.Workflow(graph)
        out_dir = tmp_path / str(dtype)
        workflow.fit_transform(nvt.Dataset(data, npartitions=3)).to_parquet(str(out_dir), output_files=1)
        out = pd.read_parquet(out_dir)
        order = np.roll(np.arange(len(frame)), shift)  # back to the fixture's row order
        outputs.append((workflow.output_schema.dtypes, out.iloc[order].reset_index(drop=True), pq.read_schema(next(out_dir.glob("*.parquet")))))
    schemas, frames, arrow = zip(*outputs)
    assert all(s == schemas[0] for s in schemas) and schemas[0]["w_raw"] == "string"
    for other in frames[1:]:
        pd.testing.assert_frame_equal(other, frames[0])  # codes, hashes and strings alike
    assert all(a.field("w_raw").type == arrow[0].field("w_raw").type for a in arrow)
    # The written strings read back as pandas' text, the missing values as pandas gives them.
    _text_columns_equal(_as_pandas_reads(frames[0][["w_raw", "k_raw"]]).set_axis(["w", "k"], axis=1), frame)
    # The hashes are those of the strings themselves, as the pandas engine computes them.
    reference = nvt.Workflow(["k"] >> ops.HashBucket(11)).fit_transform(frame[["k"]].astype(STRING))
    np.testing.assert_array_equal(frames[0]["k"].to_numpy(), reference["k"].to_numpy())
