"""Fixtures of the loader tests: uneven partitions, a row id, lists, nulls; no leaked threads."""

from __future__ import annotations

import threading

import pandas as pd
import pytest
from loader_data import NUM_ROWS, make_frame, tagged_schema, write_dataset


@pytest.fixture(scope="session")
def frame() -> pd.DataFrame:
    return make_frame(NUM_ROWS)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory, frame) -> str:
    return write_dataset(str(tmp_path_factory.mktemp("loader") / "data"), frame, schema=tagged_schema(frame))


@pytest.fixture
def dataset(data_dir):
    import tabflow as nvt

    return nvt.Dataset(data_dir, engine="parquet", part_size=1, cpu=True)


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Every loader thread started by a test is gone when the test ends."""
    before = set(threading.enumerate())
    yield
    import gc

    gc.collect()
    leaked = [t for t in threading.enumerate() if t not in before and t.name.startswith("tabflow") and t.is_alive()]
    assert not leaked, f"threads left running: {leaked}"
