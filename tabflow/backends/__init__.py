"""Engine backends: every difference between pandas and cuDF lives behind this layer.

An op or the workflow never names pandas or cudf. It asks :func:`backend_for` for the
backend of the frame it holds (or :func:`get_backend` for an engine by name) and calls
methods on it: those of the :class:`Backend` protocol (:mod:`tabflow.backends.protocol`),
which both engines implement. The pandas backend is always available; the cuDF backend module is imported
only when a cuDF object is met or the ``"cudf"`` engine is asked for, so importing tabflow
never imports cudf or probes a GPU.

Examples
--------
>>> import pandas as pd
>>> from tabflow.backends import backend_for
>>> backend_for(pd.DataFrame({"a": [1]})).name
'pandas'
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import lru_cache
from typing import Any

from tabflow._install import pip_install
from tabflow.backends.protocol import SAMPLE_VARIANTS, Backend

__all__ = [
    "Backend", "SAMPLE_VARIANTS", "backend_for", "collection_engine", "get_backend", "default_engine", "gpu_available",
]

_ENGINE_MODULES = {
    "pandas": "tabflow.backends.pandas_backend",
    "cudf": "tabflow.backends.cudf_backend",
}
# Top-level packages whose objects belong to each engine (dask collections are not frames).
_PACKAGE_ENGINE = {"pandas": "pandas", "numpy": "pandas", "pyarrow": "pandas", "cudf": "cudf", "cupy": "cudf"}


@lru_cache(maxsize=None)
def get_backend(engine: str) -> Backend:
    """Return the backend object for ``engine`` ("pandas" or "cudf").

    Raises
    ------
    ImportError
        For "cudf" when RAPIDS cuDF is not installed, with the command to install it.
    ValueError
        For an unknown engine name.

    Examples
    --------
    >>> from tabflow.backends import get_backend
    >>> get_backend("pandas").name
    'pandas'
    """
    if engine not in _ENGINE_MODULES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {sorted(_ENGINE_MODULES)}")
    if engine == "cudf" and importlib.util.find_spec("cudf") is None:
        # The backend module imports cuDF lazily, so check here that it exists at all.
        raise ImportError(
            f"the GPU engine needs RAPIDS cuDF, dask-cudf and CuPy: {pip_install('gpu-cu12')} for CUDA 12 "
            f"or {pip_install('gpu-cu13')} for CUDA 13 (or pass cpu=True to use pandas)"
        )
    module = importlib.import_module(_ENGINE_MODULES[engine])
    return module.BACKEND


def backend_for(obj: Any) -> Backend:
    """Return the backend that owns ``obj`` (a frame, series, index or array).

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends import backend_for
    >>> backend_for(np.arange(3)).name
    'pandas'
    """
    package = type(obj).__module__.split(".", 1)[0]
    engine = _PACKAGE_ENGINE.get(package)
    if engine is None:
        raise TypeError(
            f"tabflow cannot handle objects of type {type(obj).__module__}.{type(obj).__name__}; "
            "pass a pandas or cuDF DataFrame/Series"
        )
    return get_backend(engine)


def collection_engine(collection: Any) -> str:
    """The engine (``"pandas"`` or ``"cudf"``) of a dask collection's partitions.

    dask picks a collection's class from its partitions' type, and dask_cudf registers its
    own classes, so the public class tells the engine without computing anything.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> from tabflow.backends import collection_engine
    >>> collection_engine(dd.from_pandas(pd.DataFrame({"a": [1]}), npartitions=1))
    'pandas'
    """
    return "cudf" if type(collection).__module__.startswith("dask_cudf") else "pandas"


@lru_cache(maxsize=None)
def gpu_available() -> bool:
    """True when cuDF imports and at least one CUDA device is visible.

    Examples
    --------
    >>> from tabflow.backends import gpu_available
    >>> isinstance(gpu_available(), bool)
    True
    """
    try:
        importlib.import_module("cudf")
    except Exception:  # noqa: BLE001 - any failure to import means "no usable GPU engine"
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001
        return False


def default_engine(cpu: bool | None = None) -> str:
    """The engine to use: ``cpu=True`` forces pandas, ``False`` forces cuDF, None picks.

    Examples
    --------
    >>> from tabflow.backends import default_engine
    >>> default_engine(cpu=True)
    'pandas'
    """
    if cpu is None:
        return "cudf" if gpu_available() else "pandas"
    if cpu:
        return "pandas"
    get_backend("cudf")  # raises a clear ImportError when cuDF is missing
    return "cudf"
