"""Shared fixtures: the engine parametrisation and small seeded data sets.

``TABFLOW_REQUIRE_GPU=1`` (the GPU kit sets it) makes a run that must verify the GPU half
fail where the GPU cannot run instead of skipping: a GPU test (marked ``gpu``) that would be
skipped because cuDF, a GPU library or CUDA is missing or fails to import is a failure
carrying the reason, the import error itself included. Skips for other reasons (an op that
takes no such column, a case that exists only in pandas) stay skips.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

#: Set by the GPU kit (``../shared/gpu/on_device.sh``, ``scripts/gpu_check.sh``).
REQUIRE_GPU = os.environ.get("TABFLOW_REQUIRE_GPU") == "1"
#: How a skip that says the GPU cannot run begins (:func:`skip_unless_cudf`, :func:`skip_unless_cuda`).
GPU_UNAVAILABLE = ("cuDF engine: ", "CUDA device: ")
#: Modules whose absence means the GPU cannot run (``pytest.importorskip`` of one of them).
GPU_LIBRARIES = ("cudf", "dask_cudf", "cupy", "cupyx", "rmm", "dask_cuda")


def gpu_cannot_run(reason: str) -> bool:
    """Whether a skip reason says the GPU engine or CUDA cannot run here."""
    return reason.startswith(GPU_UNAVAILABLE) or any(f"could not import '{name}'" in reason for name in GPU_LIBRARIES)


def skip_unless_cudf() -> None:
    """Skip the calling test where the cuDF engine cannot run, with the reason (the import
    error itself where cuDF fails to import); fail instead under ``TABFLOW_REQUIRE_GPU=1``."""
    from tabflow.backends import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:
        (pytest.fail if REQUIRE_GPU else pytest.skip)(f"cuDF engine: {reason}")


def skip_unless_cuda() -> None:
    """Skip the calling test without a CUDA device for PyTorch (a CPU build of torch, no
    driver); fail instead under ``TABFLOW_REQUIRE_GPU=1``."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        why = "torch is a CPU build" if torch.version.cuda is None else "torch sees no CUDA device"
        (pytest.fail if REQUIRE_GPU else pytest.skip)(f"CUDA device: {why} (torch {torch.__version__})")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under ``TABFLOW_REQUIRE_GPU=1``, a GPU test skipped because the GPU cannot run (a
    ``skipif``, an ``importorskip`` of a GPU library) is reported failed, with the reason."""
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_GPU and report.skipped and item.get_closest_marker("gpu") is not None and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        if gpu_cannot_run(reason):
            report.outcome = "failed"
            report.longrepr = f"TABFLOW_REQUIRE_GPU=1, but this GPU test cannot run: {reason}"


@pytest.fixture
def cudf_engine():
    """For GPU tests that do not take the ``engine`` parameter: skip (or fail, see the
    module) where the cuDF engine cannot run."""
    skip_unless_cudf()


@pytest.fixture
def cuda_device():
    """For tests that need PyTorch on a CUDA device: skip (or fail, see the module) without one."""
    skip_unless_cuda()


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
    from tabflow.backends import strict_engine

    if request.param == "cudf":
        skip_unless_cudf()
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


@pytest.fixture(scope="session")
def load_benchmark():
    """``load_benchmark("etl")`` runs ``benchmarks/etl.py`` as a module and returns it (the
    benchmark scripts are files, not a package). The module stays registered in
    ``sys.modules`` for the session, as an imported module is (dataclasses look it up)."""
    import importlib.util
    import sys

    directory = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks")
    loaded: list[str] = []

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"tabflow_benchmark_{name}", os.path.join(directory, f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        loaded.append(spec.name)
        spec.loader.exec_module(module)
        return module

    yield load
    for name in loaded:
        sys.modules.pop(name, None)
