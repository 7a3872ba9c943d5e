"""HugeCTR's files, laid out as merlin-core 23.08 wrote them (what HugeCTR's readers expect).

Next to the data of ``Dataset.to_parquet`` and ``Dataset.to_hugectr``:

``_file_list.txt``
    The number of data files on the first line, then one path per line.
``_metadata.json``
    ``{"file_stats": [{"file_name", "num_rows"}, ...], "cats": [{"col_name", "index"}, ...],
    "conts": [...], "labels": [...]}``: rows per file, and each role's columns with their
    position among the columns of the files.
``_hugectr.keyset`` (``to_parquet(write_hugectr_keyset=True)``)
    For every column whose schema has ``embedding_sizes`` (Categorify's), the keys
    ``0..cardinality`` as 4-byte big-endian integers, column after column.

``to_hugectr`` writes HugeCTR's binary ``Norm`` format instead of parquet: each file
``<i>.data`` starts with a 64-byte header of eight little-endian int64 (0, rows, number of
labels, of continuous columns, of categorical columns, 0, 0, 0; all zero when there are no
categorical columns), then per row the labels and continuous values as float32 and, per
categorical column, the number of keys (int32, always 1) and the key (uint32).

Examples
--------
>>> from tabflow.io.hugectr import file_list, record_bytes
>>> file_list(["/d/0.data", "/d/1.data"])
b'2\\n/d/0.data\\n/d/1.data\\n'
>>> import numpy as np
>>> len(record_bytes(np.zeros((3, 1)), np.zeros((3, 2)), np.zeros((3, 4), dtype=np.int64)))  # 3 rows of 4 + 8 + 4 * 8 bytes
132
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

__all__ = [
    "FILE_LIST",
    "METADATA_JSON",
    "KEYSET",
    "DATA_SUFFIX",
    "HEADER_BYTES",
    "file_list",
    "metadata_json",
    "keyset",
    "header",
    "record_bytes",
]

FILE_LIST = "_file_list.txt"
METADATA_JSON = "_metadata.json"
KEYSET = "_hugectr.keyset"
DATA_SUFFIX = ".data"
HEADER_BYTES = 64
_UINT32_MAX = np.iinfo(np.uint32).max


def file_list(paths: Sequence[str]) -> bytes:
    """``_file_list.txt``: the count of files, then their paths."""
    return "".join(f"{line}\n" for line in [len(paths), *paths]).encode("utf-8")


def metadata_json(
    file_names: Sequence[str], num_rows: Sequence[int], columns: Sequence[str],
    cats: Sequence[str], conts: Sequence[str], labels: Sequence[str],
) -> bytes:
    """``_metadata.json``: rows per file and the position of each role's columns."""
    position = {name: i for i, name in enumerate(columns)}
    # (Hive key columns live in directory names, not in the files: they have no position.)
    data = {
        "file_stats": [{"file_name": name, "num_rows": int(rows)} for name, rows in zip(file_names, num_rows)],
        **{role: [{"col_name": c, "index": position[c]} for c in names if c in position]
           for role, names in (("cats", cats), ("conts", conts), ("labels", labels))},
    }
    return json.dumps(data).encode("utf-8")


def keyset(schema: Any) -> bytes:
    """``_hugectr.keyset``: keys ``0..cardinality`` of every column with ``embedding_sizes``."""
    chunks = []
    for column in schema:
        sizes = column.properties.get("embedding_sizes")
        if isinstance(sizes, dict) and "cardinality" in sizes:
            chunks.append(np.arange(int(sizes["cardinality"]) + 1, dtype=">u4").tobytes())
    return b"".join(chunks)


def header(rows: int, n_labels: int, n_conts: int, n_cats: int) -> bytes:
    """The 64-byte header of a ``.data`` file."""
    fields = [0, rows, n_labels, n_conts, n_cats, 0, 0, 0] if n_cats else [0] * 8
    return np.array(fields, dtype="<i8").tobytes()


def record_bytes(labels: np.ndarray, conts: np.ndarray, cats: np.ndarray) -> bytes:
    """The records of some rows: ``labels`` and ``conts`` (rows x columns, cast to float32)
    and ``cats`` (rows x columns of non-negative integer keys below 2**32)."""
    rows = len(labels)
    if cats.size and (cats.min() < 0 or cats.max() > _UINT32_MAX):
        raise ValueError(f"HugeCTR keys are unsigned 32-bit integers; got values from {cats.min()} to {cats.max()}")
    record = np.dtype(
        [
            ("labels", "<f4", (labels.shape[1],)),
            ("conts", "<f4", (conts.shape[1],)),
            ("cats", [("nnz", "<i4"), ("key", "<u4")], (cats.shape[1],)),
        ]
    )
    out = np.empty(rows, dtype=record)
    out["labels"] = labels
    out["conts"] = conts
    out["cats"]["nnz"] = 1
    out["cats"]["key"] = cats
    return out.tobytes()
