"""Small helpers shared by the op tests."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np

import tabflow as nvt
from tabflow.backends import backend_for


def dataset_with_empty_partitions(frame, npartitions: int = 3) -> nvt.Dataset:
    """A dataset whose partitions are ``frame`` in ``npartitions`` pieces with empty ones between."""
    bounds = np.linspace(0, len(frame), npartitions + 1).astype(int)
    empty = frame.iloc[:0]
    pieces = [empty]
    for start, stop in zip(bounds[:-1], bounds[1:]):
        pieces += [frame.iloc[start:stop], empty]
    ddf = dd.from_map(_identity, pieces, meta=empty, enforce_metadata=False)
    return nvt.Dataset(ddf, cpu=backend_for(frame).name == "pandas")


def _identity(piece):
    return piece


def to_host(frame):
    """A pandas copy of a pandas or cuDF frame, with a fresh index."""
    return backend_for(frame).to_host(frame).reset_index(drop=True)


def xxh64(data: bytes) -> int:
    """xxHash64 (seed 0) of ``data``: the reference ``xxhash`` package's where it is installed
    (the ``dev`` extra), else tabflow's kernel, which ``test_hashing`` checks against that
    package. The engine tests compare the columns' hashes with it either way, so that they
    run (on cuDF too) without the dev extra."""
    try:
        import xxhash
    except ImportError:
        from tabflow.backends._hashing import xxh64_bytes

        return xxh64_bytes(data)
    return xxhash.xxh64_intdigest(data, 0)
