"""A dataset as one 2-D ``.npy`` array, streamed partition by partition (``Dataset.to_npy``).

Each partition becomes rows of one numeric matrix: scalar columns are one matrix column each,
list columns whose lists all have the same length ``k`` become ``k`` columns ("exploded
column-wise", as merlin's ``dataframe_columnwise_explode``). Nulls, ragged lists and string
columns are errors: a ``.npy`` matrix has no place for them (merlin wrote strings as a pickled
object array, which ``np.load`` refuses without ``allow_pickle=True``).

The file's header is written with room for any row count, and updated once every partition
is written, so a file interrupted mid-write still loads (with the rows of the previous
header). ``append=True`` adds rows to an existing ``.npy`` file of the same width.

Examples
--------
>>> import os, tempfile, numpy as np, pandas as pd
>>> from tabflow.io.npy import write_npy
>>> path = os.path.join(tempfile.mkdtemp(), "x.npy")
>>> write_npy([pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]})], path)
>>> write_npy([pd.DataFrame({"a": [3], "b": [2.5]})], path, append=True)
>>> np.load(path).tolist()
[[1.0, 0.5], [2.0, 1.5], [3.0, 2.5]]
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Iterable

import numpy as np

__all__ = ["write_npy", "frame_matrix"]

_MAGIC = b"\x93NUMPY"
_HEADER_BYTES = 128  # room for any 64-bit row and column count with a plain dtype


def frame_matrix(frame: Any) -> np.ndarray:
    """One partition as a 2-D numpy array (see the module docstring)."""
    from tabflow.backends import backend_for

    backend = backend_for(frame)
    frame = backend.to_host(frame) if backend.name != "pandas" else frame
    from tabflow.backends import get_backend

    pandas = get_backend("pandas")
    arrays = []
    for name in frame.columns:
        series = frame[name]
        if series.isna().any():
            raise ValueError(f"Cannot convert data because null values were detected (column {name!r})")
        if pandas.is_list_dtype(series.dtype):
            lengths = np.asarray(pandas.list_lengths(series))
            if len(lengths) and (lengths != lengths[0]).any():
                raise ValueError(f"column {name!r} holds lists of different lengths; to_npy needs one length per list column")
            values = np.asarray(pandas.list_values_series(series).to_numpy())
            width = int(lengths[0]) if len(lengths) else 0
            arrays.append(values.reshape(len(series), width))
            continue
        if pandas.is_string_dtype(series.dtype) or series.dtype == object:
            raise TypeError(f"column {name!r} holds strings; to_npy writes numeric matrices (encode it first, e.g. Categorify)")
        numpy_dtype = getattr(series.dtype, "numpy_dtype", series.dtype)
        arrays.append(series.to_numpy(dtype=numpy_dtype).reshape(len(series), 1))
    if not arrays:
        return np.empty((len(frame), 0))
    return np.concatenate(arrays, axis=1) if len(arrays) > 1 else np.ascontiguousarray(arrays[0])


def write_npy(frames: Iterable[Any], output_file: str, append: bool = False) -> None:
    """Write (or with ``append``, add to) ``output_file`` the rows of every frame in ``frames``."""
    output_file = os.fspath(output_file)
    existing = _read_header(output_file) if append and os.path.exists(output_file) else None
    target = output_file if existing is not None else f"{output_file}.tmp-{os.getpid()}"
    rows, width, dtype = (existing[0][0], existing[0][1], existing[1]) if existing is not None else (0, None, None)
    if existing is not None and existing[2] < _HEADER_BYTES:
        target = _with_roomy_header(output_file, existing)
    handle = open(target, "r+b" if existing is not None else "wb")
    try:
        if existing is None:
            handle.write(b"\0" * _HEADER_BYTES)
        handle.seek(0, os.SEEK_END)
        for frame in frames:
            matrix = frame_matrix(frame)
            if width is None:
                width, dtype = matrix.shape[1], matrix.dtype
            if matrix.shape[1] != width:
                raise ValueError(f"cannot add rows of {matrix.shape[1]} columns to {output_file}, which has {width}")
            if dtype is not None and matrix.dtype != dtype:
                if not np.can_cast(matrix.dtype, dtype, casting="same_kind"):
                    raise TypeError(f"cannot add {matrix.dtype} rows to {output_file}, which holds {dtype}")
                matrix = matrix.astype(dtype)
            handle.write(np.ascontiguousarray(matrix).tobytes())
            rows += len(matrix)
        handle.seek(0)
        handle.write(_header(np.dtype(dtype if dtype is not None else "float64"), rows, width or 0))
    except BaseException:
        handle.close()
        if existing is None or target != output_file:
            os.remove(target)
        raise
    handle.close()
    if target != output_file:
        os.replace(target, output_file)


def _header(dtype: np.dtype, rows: int, width: int) -> bytes:
    text = "{" + f"'descr': {np.lib.format.dtype_to_descr(dtype)!r}, 'fortran_order': False, 'shape': ({rows}, {width}), " + "}"
    body = text.encode("latin1")
    padding = _HEADER_BYTES - len(_MAGIC) - 4 - len(body) - 1
    if padding < 0:
        raise ValueError(f"dtype {dtype} needs a longer .npy header than tabflow writes")
    return _MAGIC + b"\x01\x00" + (len(body) + padding + 1).to_bytes(2, "little") + body + b" " * padding + b"\n"


def _read_header(path: str) -> tuple[tuple[int, int], np.dtype, int]:
    """Shape, dtype and header length of an existing 2-D C-ordered ``.npy`` file."""
    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
        offset = handle.tell()
    if fortran or len(shape) != 2 or dtype.hasobject:
        raise ValueError(f"to_npy(append=True) adds rows to a 2-D C-ordered numeric .npy file; {path} holds {shape} {dtype}")
    if version != (1, 0):
        raise ValueError(f"to_npy(append=True) cannot update the header of {path} (npy format {version})")
    return (int(shape[0]), int(shape[1])), dtype, offset


def _with_roomy_header(path: str, existing: tuple) -> str:
    """A copy of ``path`` whose header has room for larger shapes (``np.save``'s may not)."""
    (rows, width), dtype, offset = existing
    target = f"{path}.tmp-{os.getpid()}"
    with open(path, "rb") as source, open(target, "wb") as copy:
        copy.write(_header(dtype, rows, width))
        source.seek(offset)
        shutil.copyfileobj(source, copy)
    return target
