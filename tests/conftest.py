"""Shared fixtures: the engine parametrisation and small seeded data sets."""

from __future__ import annotations

import numpy as np
import pytest


def _cudf_available() -> bool:
    from tabflow.backends import gpu_available

    return gpu_available()


@pytest.fixture(params=["pandas", pytest.param("cudf", marks=pytest.mark.gpu)])
def engine(request):
    """Run a test once per engine; cuDF is skipped with the reason where it cannot run."""
    if request.param == "cudf" and not _cudf_available():
        pytest.skip('cuDF engine needs RAPIDS cuDF and a CUDA GPU (pip install "tabflow-etl[gpu-cu12]" or "tabflow-etl[gpu-cu13]")')
    return request.param


@pytest.fixture
def to_engine(engine):
    """Convert a pandas frame to the engine under test."""
    from tabflow.backends import get_backend

    backend = get_backend(engine)
    return backend.from_host


@pytest.fixture
def rng():
    return np.random.default_rng(42)
