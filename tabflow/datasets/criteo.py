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
from typing import Iterator

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


def _hex_table16() -> np.ndarray:
    """The four hex digits of every 16-bit value, as the uint32 whose bytes spell them."""
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    values = np.arange(1 << 16)
    chars = np.stack([digits[(values >> shift) & 15] for shift in (12, 8, 4, 0)], axis=1)
    return np.ascontiguousarray(chars).view(np.uint32).reshape(-1)


_HEX_TABLE16 = _hex_table16()


def generate_criteo(num_rows: int, seed: int = 0, cardinality_scale: float = 1.0) -> pd.DataFrame:
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

    Returns
    -------
    pandas.DataFrame
        ``label`` (int64), ``I1``-``I13`` (``Int64`` with nulls), ``C1``-``C26`` (strings
        with nulls), in that order.

    Examples
    --------
    >>> from tabflow.datasets import generate_criteo
    >>> df = generate_criteo(4, seed=7)
    >>> str(df["label"].dtype), str(df["I1"].dtype), len(df["C1"].iloc[0])
    ('int64', 'Int64', 8)
    >>> df.equals(generate_criteo(4, seed=7))
    True
    """
    _check_args(num_rows, seed, cardinality_scale)
    table = _generate_rows(0, num_rows, seed, cardinality_scale) if num_rows else _empty_table()
    return _table_to_pandas(table)


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
) -> list[str]:
    """Write a Criteo-like click log to ``num_files`` files, generating it chunk by chunk.

    Memory stays bounded by one chunk whatever ``num_rows`` is. The rows are exactly those of
    ``generate_criteo(num_rows, seed, cardinality_scale)``, split into consecutive files of
    near-equal size. A ``_schema.json`` tagging the label, continuous and categorical columns
    is written next to the files.

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
    if format not in ("parquet", "criteo_text"):
        raise ValueError(f"format must be 'parquet' or 'criteo_text', got {format!r}")
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
                                                 row_group_size, chunk_rows, bar)))
        else:
            path = os.path.join(output_dir, f"day_{k}")
            jobs.append((path, functools.partial(_write_text_file, path, start, stop, seed, cardinality_scale, chunk_rows, bar)))
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
    _write_schema(output_dir)
    return [path for path, _job in jobs]


# ------------------------------------------------------------------------------ writing


def _write_parquet_file(
    path: str, start: int, stop: int, seed: int, scale: float, row_group_size: int | None, chunk_rows: int, bar
) -> None:
    import pyarrow.parquet as pq

    with pq.ParquetWriter(path, _arrow_schema(), compression="snappy") as writer:
        for table in _iter_chunks(start, stop, seed, scale, chunk_rows):
            writer.write_table(table, row_group_size=row_group_size)
            if bar is not None:
                bar.update(table.num_rows)
        if start == stop:
            writer.write_table(_empty_table())


def _write_text_file(path: str, start: int, stop: int, seed: int, scale: float, chunk_rows: int, bar) -> None:
    import pyarrow.csv as pcsv

    # Nulls come out as empty fields and nothing needs quoting: exactly the raw log layout.
    options = pcsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    with pcsv.CSVWriter(path, _arrow_schema(), write_options=options) as writer:
        for table in _iter_chunks(start, stop, seed, scale, chunk_rows):
            writer.write_table(table)
            if bar is not None:
                bar.update(table.num_rows)


def _write_schema(output_dir: str) -> None:
    from tabflow.schema import SCHEMA_FILENAME, ColumnSchema, Schema, Tags

    columns = [ColumnSchema("label", dtype="int64", tags={Tags.TARGET, Tags.BINARY_CLASSIFICATION})]
    columns += [ColumnSchema(name, dtype="Int64", tags={Tags.CONTINUOUS}) for name in CONTINUOUS_COLUMNS]
    columns += [ColumnSchema(name, dtype="string", tags={Tags.CATEGORICAL}) for name in CATEGORICAL_COLUMNS]
    Schema(columns).to_json(os.path.join(output_dir, SCHEMA_FILENAME))


def _progress_bar(total: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="rows", unit_scale=True, desc="criteo")


# --------------------------------------------------------------------------- generation


def _iter_chunks(start: int, stop: int, seed: int, scale: float, chunk_rows: int) -> Iterator[pa.Table]:
    """Tables covering rows [start, stop), at most about ``chunk_rows`` rows each."""
    step = max(1, chunk_rows // _BLOCK_ROWS) * _BLOCK_ROWS
    position = start
    while position < stop:
        end = min(stop, (position // _BLOCK_ROWS) * _BLOCK_ROWS + step)
        yield _generate_rows(position, end, seed, scale)
        position = end


def _generate_rows(start: int, stop: int, seed: int, scale: float) -> pa.Table:
    first, last = start // _BLOCK_ROWS, -(-stop // _BLOCK_ROWS)
    blocks = [_generate_block(seed, block, scale) for block in range(first, last)]
    table = pa.concat_tables(blocks) if len(blocks) > 1 else blocks[0]
    return table.slice(start - first * _BLOCK_ROWS, stop - start)


def _generate_block(seed: int, block: int, scale: float) -> pa.Table:
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

    columns: list[pa.Array] = []
    logit = np.full(n, _SIGNAL_INTERCEPT)
    for j, (kind, a, b, null_rate) in enumerate(_CONTINUOUS_SPEC):
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

    for c, (vocabulary, exponent, null_rate) in enumerate(_CATEGORICAL_SPEC):
        ranks = _zipf_ranks(category_u[c], _vocabulary_size(vocabulary, scale), exponent)
        null = null_u[len(_CONTINUOUS_SPEC) + c] < null_rate
        if c in _CATEGORY_EFFECT_SD:
            # Per-category effect: a fixed pseudo-random value of the category, uniform with
            # the wanted standard deviation; null categories have no effect.
            u = _mix32(ranks, _column_key(c, 1)) * (1.0 / 2.0**32)
            logit += np.where(null, 0.0, _CATEGORY_EFFECT_SD[c] * np.sqrt(12.0) * (u - 0.5))
        columns.append(_hex_array(_mix32(ranks, _column_key(c, 0)), null))

    label = (label_u < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    return pa.Table.from_arrays([pa.array(label), *columns], schema=_arrow_schema())


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


def _hex_array(ids: np.ndarray, null: np.ndarray) -> pa.Array:
    """uint32 ids as an arrow string array of 8 lowercase hex digits, built from buffers.

    Each 16-bit half of an id indexes a table of its four digits, so formatting is two
    gathers; null slots keep their (ignored) digits so that every value is 8 bytes long.
    """
    halves = np.empty((len(ids), 2), dtype=np.uint32)
    halves[:, 0] = _HEX_TABLE16[ids >> np.uint32(16)]
    halves[:, 1] = _HEX_TABLE16[ids & np.uint32(0xFFFF)]
    offsets = np.arange(0, 8 * len(ids) + 1, 8, dtype=np.int32)
    null_count = int(np.count_nonzero(null))
    bitmap = pa.py_buffer(np.packbits(~null, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(
        pa.string(), len(ids), [bitmap, pa.py_buffer(offsets), pa.py_buffer(halves)], null_count=null_count
    )


# ------------------------------------------------------------------------------- helpers


def _arrow_schema() -> pa.Schema:
    return pa.schema(
        [("label", pa.int64())]
        + [(name, pa.int64()) for name in CONTINUOUS_COLUMNS]
        + [(name, pa.string()) for name in CATEGORICAL_COLUMNS]
    )


def _empty_table() -> pa.Table:
    return _arrow_schema().empty_table()


def _table_to_pandas(table: pa.Table) -> pd.DataFrame:
    from tabflow.backends import get_backend

    backend = get_backend("pandas")
    dtypes = {"label": "int64", **{c: "Int64" for c in CONTINUOUS_COLUMNS}, **{c: "string" for c in CATEGORICAL_COLUMNS}}
    # Writable: from_arrow keeps numeric columns as read-only views of the Arrow buffers.
    return backend.writable(backend.from_arrow(table, dtypes))


def _check_args(num_rows: int, seed: int, scale: float) -> None:
    if not isinstance(num_rows, (int, np.integer)) or num_rows < 0:
        raise ValueError(f"num_rows must be a non-negative integer, got {num_rows!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not scale > 0:
        raise ValueError(f"cardinality_scale must be positive, got {scale!r}")
