"""Synthetic Criteo-like click logs: the shape, skew and formats of the real data, any size.

The generator is fully vectorised and seeded. Rows are drawn in fixed blocks whose random
streams depend only on ``(seed, block number)``, so the same seed gives the same rows however
they are chunked or split into files. Category vocabularies and the planted label effects
depend only on the column, not on the seed: data drawn with two seeds look like two days of
the same log (shared categories, same signal), which makes them a natural train / valid pair.

Columns
-------
``label``
    int64 click (0/1), about a quarter positive, logistically dependent on a few continuous
    columns and on per-category effects of a few categorical columns.
``I1`` .. ``I13``
    Heavy-tailed non-negative counts (rounded log-normal or geometric) with 5-40 % nulls;
    ``I2`` also holds a few small negatives as the real ``I2`` does. Nullable ``Int64``.
``C1`` .. ``C26``
    8-character lowercase hex ids, Zipf-distributed; vocabularies from 3 to about ten
    million (times ``cardinality_scale``), 0-30 % nulls.

Other shapes of the same log (the same rows, counts, label and categories, drawn the same
way) come from three parameters:

- ``ids``: how the categories are spelled: ``"hex"`` (the ids above), ``"text"`` (URLs and
  user agents of 30 to 80 bytes that hold the id, most sharing their first eight bytes with
  many others) or ``"int"`` (int64 ids spread over 63 bits);
- ``nulls``: ``"criteo"`` (the rates above) or ``"sparse"`` (every other continuous and
  categorical column, ``I1``, ``I3``, ... and ``C1``, ``C3``, ..., 60 % to 90 % null);
- ``multi_hot``: categorical columns held as lists of 1 to 20 ids a row (multi-hot), the
  row's own category first; their rows are never null.

Examples
--------
>>> from tabflow.datasets import generate_criteo
>>> df = generate_criteo(5, seed=1)
>>> list(df.columns[:3]), len(df.columns), len(df)
(['label', 'I1', 'I2'], 40, 5)
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

__all__ = ["generate_criteo", "write_criteo", "CONTINUOUS_COLUMNS", "CATEGORICAL_COLUMNS", "LABEL_COLUMNS"]

CONTINUOUS_COLUMNS = [f"I{i}" for i in range(1, 14)]
CATEGORICAL_COLUMNS = [f"C{i}" for i in range(1, 27)]
LABEL_COLUMNS = ["label"]

# Rows per random block. Blocks are the unit of determinism: a block is always generated
# whole, from its own stream seeded by (seed, block), and then sliced, so the rows are
# bit-identical under any chunking or file split. Small blocks also keep temporaries in cache.
_BLOCK_ROWS = 1 << 14
_DEFAULT_CHUNK_ROWS = 1 << 19

# Continuous columns: (kind, a, b, null rate). "lognormal": floor(exp(N(a, b))) with a = log of
# a typical value; "geometric": failures before the first success with probability a.
_CONTINUOUS_SPEC = [
    ("geometric", 0.30, 0.0, 0.40),
    ("lognormal", 1.1, 1.6, 0.05),
    ("lognormal", 1.8, 1.3, 0.20),
    ("lognormal", 1.4, 1.0, 0.21),
    ("lognormal", 7.9, 1.9, 0.05),
    ("lognormal", 3.5, 1.4, 0.22),
    ("lognormal", 1.1, 1.5, 0.05),
    ("lognormal", 2.0, 1.1, 0.05),
    ("lognormal", 3.6, 1.3, 0.05),
    ("geometric", 0.55, 0.0, 0.40),
    ("lognormal", 0.7, 1.0, 0.05),
    ("geometric", 0.80, 0.0, 0.38),
    ("lognormal", 1.4, 1.2, 0.21),
]
_NEGATIVE_COLUMN = 1  # I2
_NEGATIVE_RATE = 0.04
_MAX_COUNT = float(2**31 - 1)

# Categorical columns: (vocabulary size at scale 1, Zipf exponent, null rate). Vocabularies
# follow the real Criteo display-ads columns; the biggest ones reach a few million distinct
# values at ten million rows.
_CATEGORICAL_SPEC = [
    (1_460, 1.2, 0.0),
    (583, 1.2, 0.0),
    (10_131_227, 0.9, 0.03),
    (2_202_608, 0.95, 0.03),
    (305, 1.3, 0.0),
    (24, 1.1, 0.12),
    (12_517, 1.1, 0.0),
    (633, 1.2, 0.0),
    (3, 1.0, 0.0),
    (93_145, 1.05, 0.03),
    (5_683, 1.1, 0.0),
    (8_351_593, 0.9, 0.03),
    (3_194, 1.1, 0.0),
    (27, 1.0, 0.0),
    (14_992, 1.1, 0.0),
    (5_461_306, 0.9, 0.03),
    (10, 1.0, 0.0),
    (5_652, 1.1, 0.0),
    (2_173, 1.2, 0.30),
    (4, 0.8, 0.30),
    (7_046_547, 0.9, 0.03),
    (18, 1.0, 0.30),
    (15, 1.0, 0.0),
    (286_181, 1.05, 0.03),
    (105, 1.2, 0.30),
    (142_572, 1.05, 0.30),
]
_MIN_VOCABULARY = 3

# The planted signal: logit = intercept + sum(weight * standardised log count) + sum(effects).
_SIGNAL_INTERCEPT = -1.65
_CONTINUOUS_WEIGHTS = {2: 0.8, 6: -0.7, 10: 0.7}  # I3, I7, I11
_CATEGORY_EFFECT_SD = {0: 0.8, 5: 1.0, 8: 0.7, 13: 1.0, 16: 0.9, 22: 0.9}  # C1, C6, C9, C14, C17, C23

#: How ``ids`` may spell the categories, and ``nulls`` may place the nulls.
ID_FORMS = ("hex", "text", "int")
NULL_FORMS = ("criteo", "sparse")
# Text ids: the 8 hex digits of the id between one of these prefixes and suffixes (chosen by
# the category, so a category is always spelled the same): URLs, user agents, addresses of
# 30 to 80 bytes. Five of the nine begin with the same eight bytes ("https://", "Mozilla/").
_TEXT_TEMPLATES = [
    ("https://shop.example.com/item/", "?ref=feed"),
    ("https://www.example.org/p/", ""),
    ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/", ""),
    ("https://cdn.example.net/images/", "/thumb-320x240.jpg"),
    ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) Mobile/", ""),
    ("app://feed/", "/open?src=push&campaign=spring"),
    ("https://news.example.com/", ""),
    ("user-", "@mail.example.com"),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Safari/", ""),
]
# Sparse nulls: every other column, its null rate spread evenly over this range.
_SPARSE_NULL_RATES = (0.6, 0.9)
#: Ids a row of a multi-hot column holds, at least and at most.
MULTI_HOT_LENGTHS = (1, 20)


@dataclass(frozen=True)
class _Form:
    """How the rows are spelled (see the module's docstring); the default is the Criteo log."""

    ids: str = "hex"
    nulls: str = "criteo"
    multi_hot: tuple[str, ...] = ()

    def null_rates(self) -> tuple[list[float], list[float]]:
        """The null rates of the continuous and of the categorical columns."""
        continuous = [spec[3] for spec in _CONTINUOUS_SPEC]
        categorical = [spec[2] for spec in _CATEGORICAL_SPEC]
        if self.nulls == "sparse":
            for rates in (continuous, categorical):
                sparse = range(0, len(rates), 2)
                low, high = _SPARSE_NULL_RATES
                for k, j in enumerate(sparse):
                    rates[j] = low + (high - low) * k / max(1, len(sparse) - 1)
        return continuous, categorical

    def value_type(self) -> pa.DataType:
        return pa.int64() if self.ids == "int" else pa.string()

    def arrow_schema(self) -> pa.Schema:
        value = self.value_type()
        return pa.schema(
            [("label", pa.int64())]
            + [(name, pa.int64()) for name in CONTINUOUS_COLUMNS]
            + [(name, pa.list_(value) if name in self.multi_hot else value) for name in CATEGORICAL_COLUMNS]
        )


def _form(ids: str, nulls: str, multi_hot: Sequence[str]) -> _Form:
    if ids not in ID_FORMS:
        raise ValueError(f"ids must be one of {list(ID_FORMS)}, got {ids!r}")
    if nulls not in NULL_FORMS:
        raise ValueError(f"nulls must be one of {list(NULL_FORMS)}, got {nulls!r}")
    if isinstance(multi_hot, str):
        raise ValueError(f"multi_hot takes a list of categorical column names, got the string {multi_hot!r}")
    unknown = [name for name in multi_hot if name not in CATEGORICAL_COLUMNS]
    if unknown:
        raise ValueError(f"multi_hot names columns that are not categorical columns C1..C26: {unknown}")
    return _Form(ids, nulls, tuple(name for name in CATEGORICAL_COLUMNS if name in multi_hot))


def _hex_table16() -> np.ndarray:
    """The four hex digits of every 16-bit value, as the uint32 whose bytes spell them."""
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    values = np.arange(1 << 16)
    chars = np.stack([digits[(values >> shift) & 15] for shift in (12, 8, 4, 0)], axis=1)
    return np.ascontiguousarray(chars).view(np.uint32).reshape(-1)


_HEX_TABLE16 = _hex_table16()


def generate_criteo(
    num_rows: int, seed: int = 0, cardinality_scale: float = 1.0, ids: str = "hex", nulls: str = "criteo",
    multi_hot: Sequence[str] = (),
) -> pd.DataFrame:
    """Generate a Criteo-like click log as a pandas DataFrame.

    Parameters
    ----------
    num_rows : int
        Number of rows.
    seed : int, default 0
        Non-negative seed; the same seed always gives the same rows.
    cardinality_scale : float, default 1.0
        Multiplies every categorical vocabulary size (at least 3 values per column are kept).
        Distinct values are naturally bounded by the number of rows.
    ids : {"hex", "text", "int"}, default "hex"
        How the categories are spelled: 8 hex digits, URLs and user agents of 30 to 80
        bytes holding those digits, or int64 ids. The categories themselves (which rows
        share one) do not change.
    nulls : {"criteo", "sparse"}, default "criteo"
        Criteo's null rates, or 60 % to 90 % nulls in every other continuous and
        categorical column (``I1``, ``I3``, ..., ``C1``, ``C3``, ...).
    multi_hot : list of str, default ()
        Categorical columns held as lists of 1 to 20 ids a row (never null), the row's own
        category first and the others drawn from the column's distribution.

    Returns
    -------
    pandas.DataFrame
        ``label`` (int64), ``I1``-``I13`` (``Int64`` with nulls), ``C1``-``C26`` (strings,
        or ``Int64`` for int ids, with nulls; lists of them for ``multi_hot``), in that order.

    Examples
    --------
    >>> from tabflow.datasets import generate_criteo
    >>> df = generate_criteo(4, seed=7)
    >>> str(df["label"].dtype), str(df["I1"].dtype), len(df["C1"].iloc[0])
    ('int64', 'Int64', 8)
    >>> df.equals(generate_criteo(4, seed=7))
    True
    >>> urls = generate_criteo(4, seed=7, ids="text", multi_hot=["C2"])
    >>> urls["C1"].iloc[0].endswith(df["C1"].iloc[0]) or df["C1"].iloc[0] in urls["C1"].iloc[0]
    True
    >>> 1 <= len(urls["C2"].iloc[0]) <= 20
    True
    """
    _check_args(num_rows, seed, cardinality_scale)
    form = _form(ids, nulls, multi_hot)
    table = _generate_rows(0, num_rows, seed, cardinality_scale, form) if num_rows else _empty_table(form)
    return _table_to_pandas(table, form)


def write_criteo(
    output_dir: str | os.PathLike,
    num_rows: int,
    num_files: int = 1,
    format: str = "parquet",
    seed: int = 0,
    cardinality_scale: float = 1.0,
    row_group_size: int | None = None,
    progress: bool = False,
    chunk_rows: int = _DEFAULT_CHUNK_ROWS,
    num_workers: int = 1,
    ids: str = "hex",
    nulls: str = "criteo",
    multi_hot: Sequence[str] = (),
) -> list[str]:
    """Write a Criteo-like click log to ``num_files`` files, generating it chunk by chunk.

    Memory stays bounded by one chunk whatever ``num_rows`` is. The rows are exactly those of
    ``generate_criteo(num_rows, seed, cardinality_scale)``, split into consecutive files of
    near-equal size. A ``_schema.json`` tagging the label, continuous and categorical columns
    is written next to the files. ``ids``, ``nulls`` and ``multi_hot`` choose the shape of
    the data as for :func:`generate_criteo`; the raw text format holds only the default
    shape's spelling (hex ids, no lists).

    Parameters
    ----------
    output_dir : path
        Directory to write into (created when missing).
    num_rows : int
        Total number of rows.
    num_files : int, default 1
        Number of files.
    format : {"parquet", "criteo_text"}
        ``"parquet"`` (snappy, files ``part_<k>.parquet``) or the raw Criteo text format
        (files ``day_<k>``: tab-separated, no header, label first, an empty field for null),
        which ``tabflow.Dataset(output_dir, engine="criteo")`` reads.
    seed : int, default 0
        Non-negative seed.
    cardinality_scale : float, default 1.0
        Multiplies every categorical vocabulary size.
    row_group_size : int, optional
        Maximum rows per parquet row group (default: one row group per chunk).
    progress : bool, default False
        Show a tqdm progress bar over rows.
    chunk_rows : int, optional
        Rows generated at a time (memory knob; does not change the data).
    num_workers : int, default 1
        Files written at the same time, each by its own thread (random draws, array maths,
        Arrow conversion and parquet writing release the GIL for most of their work). The
        files are identical whatever the number; memory grows to one chunk per worker.
    ids, nulls, multi_hot
        The shape of the data, as for :func:`generate_criteo`.

    Returns
    -------
    list of str
        Paths of the written files, in row order.

    Examples
    --------
    >>> import tempfile
    >>> import tabflow as nvt
    >>> from tabflow.datasets import write_criteo
    >>> paths = write_criteo(tempfile.mkdtemp(), 10, num_files=2, seed=3)
    >>> [p.rsplit("/", 1)[-1] for p in paths], nvt.Dataset(paths).num_rows
    (['part_0.parquet', 'part_1.parquet'], 10)
    """
    _check_args(num_rows, seed, cardinality_scale)
    form = _form(ids, nulls, multi_hot)
    if format not in ("parquet", "criteo_text"):
        raise ValueError(f"format must be 'parquet' or 'criteo_text', got {format!r}")
    if format == "criteo_text" and (form.ids != "hex" or form.multi_hot):
        raise ValueError("the raw Criteo text format holds hex ids without lists: write ids='text', ids='int' "
                         "or multi_hot columns as parquet")
    if not isinstance(num_files, (int, np.integer)) or num_files < 1:
        raise ValueError(f"num_files must be a positive integer, got {num_files!r}")
    if row_group_size is not None and row_group_size < 1:
        raise ValueError(f"row_group_size must be positive, got {row_group_size!r}")
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be positive, got {chunk_rows!r}")
    if not isinstance(num_workers, (int, np.integer)) or num_workers < 1:
        raise ValueError(f"num_workers must be a positive integer, got {num_workers!r}")
    output_dir = os.fspath(output_dir)
    os.makedirs(output_dir, exist_ok=True)
    bar = _progress_bar(num_rows) if progress else None
    jobs = []
    for k in range(num_files):
        start, stop = k * num_rows // num_files, (k + 1) * num_rows // num_files
        if format == "parquet":
            path = os.path.join(output_dir, f"part_{k}.parquet")
            jobs.append((path, functools.partial(_write_parquet_file, path, start, stop, seed, cardinality_scale,
                                                 row_group_size, chunk_rows, bar, form)))
        else:
            path = os.path.join(output_dir, f"day_{k}")
            jobs.append((path, functools.partial(_write_text_file, path, start, stop, seed, cardinality_scale, chunk_rows, bar, form)))
    try:
        if num_workers == 1 or len(jobs) == 1:
            for _path, job in jobs:
                job()
        else:
            with ThreadPoolExecutor(max_workers=min(int(num_workers), len(jobs)), thread_name_prefix="tabflow-criteo") as pool:
                for future in [pool.submit(job) for _path, job in jobs]:
                    future.result()
    finally:
        if bar is not None:
            bar.close()
    _write_schema(output_dir, form)
    return [path for path, _job in jobs]


# ------------------------------------------------------------------------------ writing


def _write_parquet_file(
    path: str, start: int, stop: int, seed: int, scale: float, row_group_size: int | None, chunk_rows: int, bar,
    form: _Form,
) -> None:
    import pyarrow.parquet as pq

    with pq.ParquetWriter(path, form.arrow_schema(), compression="snappy") as writer:
        if row_group_size is None or row_group_size <= chunk_rows:
            for table in _iter_chunks(start, stop, seed, scale, chunk_rows, form):
                writer.write_table(table, row_group_size=row_group_size)
                if bar is not None:
                    bar.update(table.num_rows)
        else:
            # Row groups larger than a chunk: chunks are gathered until a group is full.
            pending: list[pa.Table] = []
            held = 0
            for table in _iter_chunks(start, stop, seed, scale, chunk_rows, form):
                pending.append(table)
                held += table.num_rows
                while held >= row_group_size:
                    merged = pa.concat_tables(pending)
                    writer.write_table(merged.slice(0, row_group_size), row_group_size=row_group_size)
                    pending, held = [merged.slice(row_group_size)], held - row_group_size
                if bar is not None:
                    bar.update(table.num_rows)
            if held:
                writer.write_table(pa.concat_tables(pending), row_group_size=row_group_size)
        if start == stop:
            writer.write_table(_empty_table(form))


def _write_text_file(path: str, start: int, stop: int, seed: int, scale: float, chunk_rows: int, bar, form: _Form) -> None:
    import pyarrow.csv as pcsv

    # Nulls come out as empty fields and nothing needs quoting: exactly the raw log layout.
    options = pcsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    with pcsv.CSVWriter(path, form.arrow_schema(), write_options=options) as writer:
        for table in _iter_chunks(start, stop, seed, scale, chunk_rows, form):
            writer.write_table(table)
            if bar is not None:
                bar.update(table.num_rows)


def _write_schema(output_dir: str, form: _Form) -> None:
    from tabflow.schema import SCHEMA_FILENAME, ColumnSchema, Schema, Tags

    value = "Int64" if form.ids == "int" else "string"
    columns = [ColumnSchema("label", dtype="int64", tags={Tags.TARGET, Tags.BINARY_CLASSIFICATION})]
    columns += [ColumnSchema(name, dtype="Int64", tags={Tags.CONTINUOUS}) for name in CONTINUOUS_COLUMNS]
    columns += [
        ColumnSchema(name, dtype=f"list<{value.lower()}>" if name in form.multi_hot else value, tags={Tags.CATEGORICAL})
        for name in CATEGORICAL_COLUMNS
    ]
    Schema(columns).to_json(os.path.join(output_dir, SCHEMA_FILENAME))


def _progress_bar(total: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="rows", unit_scale=True, desc="criteo")


# --------------------------------------------------------------------------- generation


def _iter_chunks(start: int, stop: int, seed: int, scale: float, chunk_rows: int, form: _Form) -> Iterator[pa.Table]:
    """Tables covering rows [start, stop), at most about ``chunk_rows`` rows each."""
    step = max(1, chunk_rows // _BLOCK_ROWS) * _BLOCK_ROWS
    position = start
    while position < stop:
        end = min(stop, (position // _BLOCK_ROWS) * _BLOCK_ROWS + step)
        yield _generate_rows(position, end, seed, scale, form)
        position = end


def _generate_rows(start: int, stop: int, seed: int, scale: float, form: _Form) -> pa.Table:
    first, last = start // _BLOCK_ROWS, -(-stop // _BLOCK_ROWS)
    blocks = [_generate_block(seed, block, scale, form) for block in range(first, last)]
    table = pa.concat_tables(blocks) if len(blocks) > 1 else blocks[0]
    return table.slice(start - first * _BLOCK_ROWS, stop - start)


def _generate_block(seed: int, block: int, scale: float, form: _Form) -> pa.Table:
    """All columns of one block of rows. Blocks are small enough to stay in cache."""
    rng = np.random.default_rng([seed, block])
    n = _BLOCK_ROWS
    # The draws below happen in a fixed order: the stream of a block is part of the format.
    label_u = rng.random(n)
    normal = rng.standard_normal((len(_CONTINUOUS_SPEC), n))
    count_u = 1.0 - rng.random((len(_CONTINUOUS_SPEC), n))  # in (0, 1]: its log stays finite
    negative_u = rng.random(n)
    null_u = rng.random((len(_CONTINUOUS_SPEC) + len(_CATEGORICAL_SPEC), n))
    category_u = rng.random((len(_CATEGORICAL_SPEC), n))
    continuous_nulls, categorical_nulls = form.null_rates()

    columns: list[pa.Array] = []
    logit = np.full(n, _SIGNAL_INTERCEPT)
    for j, (kind, a, b, _null_rate) in enumerate(_CONTINUOUS_SPEC):
        null_rate = continuous_nulls[j]
        if kind == "lognormal":
            values = np.exp(a + b * normal[j])
        else:
            # Inverse CDF of the geometric distribution (failures before the first success).
            values = np.log(count_u[j]) / np.log1p(-a)
        values = np.floor(np.minimum(values, _MAX_COUNT)).astype(np.int64)
        if j == _NEGATIVE_COLUMN:
            negative = negative_u < _NEGATIVE_RATE
            values[negative] = -1 - (negative_u[negative] * 75).astype(np.int64) % 3
        null = null_u[j] < null_rate
        if j in _CONTINUOUS_WEIGHTS:
            center, spread = (a, b) if kind == "lognormal" else (0.0, 1.0)
            standardised = (np.log1p(np.maximum(values, 0)) - center) / spread
            logit += _CONTINUOUS_WEIGHTS[j] * np.where(null, 0.0, standardised)
        columns.append(pa.array(values, mask=null))

    for c, (vocabulary, exponent, _null_rate) in enumerate(_CATEGORICAL_SPEC):
        size = _vocabulary_size(vocabulary, scale)
        ranks = _zipf_ranks(category_u[c], size, exponent)
        multi_hot = CATEGORICAL_COLUMNS[c] in form.multi_hot
        null = null_u[len(_CONTINUOUS_SPEC) + c] < categorical_nulls[c]
        if multi_hot:
            null = np.zeros(n, dtype=bool)
        if c in _CATEGORY_EFFECT_SD:
            # Per-category effect: a fixed pseudo-random value of the category, uniform with
            # the wanted standard deviation; null categories have no effect.
            u = _mix32(ranks, _column_key(c, 1)) * (1.0 / 2.0**32)
            logit += np.where(null, 0.0, _CATEGORY_EFFECT_SD[c] * np.sqrt(12.0) * (u - 0.5))
        if not multi_hot:
            columns.append(_id_array(ranks, c, null, form.ids))
            continue
        # The list's first id is the row's category, the others come from the same
        # distribution (drawn after every draw above: the other columns do not change).
        low, high = MULTI_HOT_LENGTHS
        lengths = low + (rng.random(n) * (high - low + 1)).astype(np.int64)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        items = _zipf_ranks(rng.random(int(offsets[-1])), size, exponent)
        items[offsets[:-1]] = ranks
        values = _id_array(items, c, np.zeros(len(items), dtype=bool), form.ids)
        columns.append(pa.ListArray.from_arrays(pa.array(offsets), values))

    label = (label_u < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    return pa.Table.from_arrays([pa.array(label), *columns], schema=form.arrow_schema())


def _vocabulary_size(vocabulary: int, scale: float) -> int:
    return int(max(min(vocabulary, _MIN_VOCABULARY), round(vocabulary * scale)))


def _zipf_ranks(u: np.ndarray, size: int, exponent: float) -> np.ndarray:
    """Ranks in [0, size) with P(rank = k) roughly proportional to (k + 1) ** -exponent.

    Inverse CDF of the continuous power law on [1, size + 1), floored: one pass, no tables.
    """
    top = size + 1.0
    if abs(exponent - 1.0) < 1e-9:
        x = np.exp(u * np.log(top))
    else:
        power = 1.0 - exponent
        x = (1.0 + u * (top**power - 1.0)) ** (1.0 / power)
    return np.minimum(np.floor(x).astype(np.int64) - 1, size - 1)


def _column_key(column: int, purpose: int) -> int:
    return (0x9E3779B9 * (2 * column + purpose + 1)) & 0xFFFFFFFF


def _mix32(ranks: np.ndarray, key: int) -> np.ndarray:
    """A bijection of uint32 (offset, xor-shift-multiply rounds): distinct ranks stay distinct."""
    x = ranks.astype(np.uint32) + np.uint32(key)
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


def _id_array(ranks: np.ndarray, column: int, null: np.ndarray, ids: str) -> pa.Array:
    """The categories ``ranks`` of categorical column ``column`` spelled as ``ids`` says."""
    hex_ids = _mix32(ranks, _column_key(column, 0))
    if ids == "int":
        # The hex id in the upper bits (distinct ranks stay distinct), 31 more mixed bits below.
        low = _mix32(ranks, _column_key(column, 2)) >> np.uint32(1)
        values = (hex_ids.astype(np.int64) << np.int64(31)) | low.astype(np.int64)
        return pa.array(values, mask=null)
    digits = _hex_digits(hex_ids)
    if ids == "text":
        return _text_array(digits, _mix32(ranks, _column_key(column, 3)) % np.uint32(len(_TEXT_TEMPLATES)), null)
    offsets = np.arange(0, 8 * len(hex_ids) + 1, 8, dtype=np.int32)
    return _string_array(offsets, digits, null)


def _hex_digits(ids: np.ndarray) -> np.ndarray:
    """uint32 ids as 8 lowercase hex digits each, one row of bytes per id.

    Each 16-bit half of an id indexes a table of its four digits, so formatting is two gathers.
    """
    halves = np.empty((len(ids), 2), dtype=np.uint32)
    halves[:, 0] = _HEX_TABLE16[ids >> np.uint32(16)]
    halves[:, 1] = _HEX_TABLE16[ids & np.uint32(0xFFFF)]
    return halves.view(np.uint8).reshape(len(ids), 8)


def _string_array(offsets: np.ndarray, data: np.ndarray, null: np.ndarray) -> pa.Array:
    """An arrow string array of buffers; null slots keep their (ignored) bytes."""
    null_count = int(np.count_nonzero(null))
    bitmap = pa.py_buffer(np.packbits(~null, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(
        pa.string(), len(null), [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=null_count
    )


def _template_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The text templates as rows of bytes (the id's 8 bytes left as spaces), each one's
    length and where its id starts."""
    texts = [prefix + " " * 8 + suffix for prefix, suffix in _TEXT_TEMPLATES]
    width = max(len(text) for text in texts)
    rows = np.zeros((len(texts), width), dtype=np.uint8)
    for k, text in enumerate(texts):
        rows[k, : len(text)] = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    lengths = np.array([len(text) for text in texts], dtype=np.int64)
    starts = np.array([len(prefix) for prefix, _suffix in _TEXT_TEMPLATES], dtype=np.int64)
    return rows, lengths, starts


_TEMPLATES = _template_table()


def _text_array(digits: np.ndarray, templates: np.ndarray, null: np.ndarray) -> pa.Array:
    """Strings of the templates numbered ``templates`` with each row's 8 hex digits in place."""
    rows, lengths, starts = _TEMPLATES
    text = rows[templates]  # one row of bytes per string, its template's width
    np.put_along_axis(text, starts[templates][:, None] + np.arange(8), digits, axis=1)
    length = lengths[templates]
    offsets = np.zeros(len(templates) + 1, dtype=np.int32)
    np.cumsum(length, out=offsets[1:])
    return _string_array(offsets, text[np.arange(text.shape[1]) < length[:, None]], null)


# ------------------------------------------------------------------------------- helpers


def _empty_table(form: _Form) -> pa.Table:
    return form.arrow_schema().empty_table()


def _table_to_pandas(table: pa.Table, form: _Form) -> pd.DataFrame:
    from tabflow.backends import get_backend

    backend = get_backend("pandas")
    value = "Int64" if form.ids == "int" else "string"
    dtypes = {"label": "int64", **{c: "Int64" for c in CONTINUOUS_COLUMNS}}
    dtypes.update({c: f"list<{value.lower()}>" if c in form.multi_hot else value for c in CATEGORICAL_COLUMNS})
    # Writable: from_arrow keeps numeric columns as read-only views of the Arrow buffers.
    return backend.writable(backend.from_arrow(table, dtypes))


def _check_args(num_rows: int, seed: int, scale: float) -> None:
    if not isinstance(num_rows, (int, np.integer)) or num_rows < 0:
        raise ValueError(f"num_rows must be a non-negative integer, got {num_rows!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not scale > 0:
        raise ValueError(f"cardinality_scale must be positive, got {scale!r}")
