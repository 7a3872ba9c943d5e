"""Shared fixtures: the engine parametrisation and small seeded data sets."""

from __future__ import annotations

import numpy as np
import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--strict-engine", action="store_true",
        help="run every test with the strict engine on (pandas engine arrays follow CuPy's rules), "
             "so that a host/device array mix-up anywhere fails as it would on a GPU",
    )


@pytest.fixture(autouse=True, scope="session")
def _strict_engine_everywhere(request):
    if not request.config.getoption("--strict-engine"):
        yield
        return
    from tabflow.backends import strict_engine

    with strict_engine():
        yield


@pytest.fixture(params=["pandas", "strict", pytest.param("cudf", marks=pytest.mark.gpu)])
def engine(request):
    """Run a test once per engine: pandas, the strict engine (pandas whose engine arrays
    follow CuPy's rules, so a host/device mix-up fails here as it would on a GPU) and cuDF,
    skipped with the reason it cannot run (cuDF missing, failing to import, no GPU).

    The strict engine is a mode of the pandas engine: the test sees the name ``"pandas"``
    (frames, datasets and ``cpu=True`` are pandas), with the mode on for its whole run."""
    from tabflow.backends import gpu_unavailable_reason, strict_engine

    if request.param == "cudf":
        reason = gpu_unavailable_reason()
        if reason is not None:
            pytest.skip(f"cuDF engine: {reason}")
        yield "cudf"
    elif request.param == "strict":
        with strict_engine():
            yield "pandas"
    else:
        yield "pandas"


@pytest.fixture
def backend(engine):
    """The backend of the engine under test (the strict engine's while it is on)."""
    import pandas as pd

    from tabflow.backends import backend_for, get_backend

    return get_backend(engine) if engine == "cudf" else backend_for(pd.DataFrame())


@pytest.fixture
def to_engine(backend):
    """Convert a pandas frame (or NumPy array) to the engine under test."""
    return backend.from_host


@pytest.fixture
def rng():
    return np.random.default_rng(42)
