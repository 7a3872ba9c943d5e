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

import contextlib
import importlib
import importlib.util
import threading
from functools import lru_cache
from typing import Any, Iterator

from tabflow._install import pip_install
from tabflow.backends._device_memory import reset_device_memory
from tabflow.backends.protocol import Backend

__all__ = [
    "Backend", "backend_for", "collection_engine", "get_backend", "default_engine", "frame_library", "array_library", "cuda_memory_info", "gpu_available",
    "gpu_unavailable_reason", "reset_gpu_memory", "strict_engine",
]

_ENGINE_MODULES = {
    "pandas": "tabflow.backends.pandas_backend",
    "cudf": "tabflow.backends.cudf_backend",
}
# Top-level packages whose objects belong to each engine (dask collections are not frames).
_PACKAGE_ENGINE = {"pandas": "pandas", "numpy": "pandas", "pyarrow": "pandas", "cudf": "cudf", "cupy": "cudf"}
_STRICT_MODULE = "tabflow.backends.strict_backend"


class _StrictSwitch:
    """How many :func:`strict_engine` blocks are open (process-wide: dask's worker threads
    must see the same engine as the thread that started the computation)."""

    def __init__(self) -> None:
        self.depth = 0
        self.lock = threading.Lock()


_STRICT = _StrictSwitch()


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
    if engine == "cudf":
        # The backend module imports cuDF lazily, so check here that it imports at all: a
        # failure found later, inside a reader or an op, would be reported as something else.
        problem = _cudf_import_problem()
        if problem is not None:
            raise ImportError(problem)
    module = importlib.import_module(_ENGINE_MODULES[engine])
    return module.BACKEND


def frame_library(engine: str) -> Any:
    """The frame library of ``engine``, imported: the ``pandas`` module or the ``cudf`` one.

    For code that hands the library itself to users (NVTabular's ``dispatch.get_lib``,
    ``make_df``); everything else goes through the engine's :class:`Backend`. Without cuDF,
    ``"cudf"`` is an ImportError that names the GPU extras.

    Examples
    --------
    >>> from tabflow.backends import frame_library
    >>> frame_library("pandas").__name__
    'pandas'
    """
    get_backend(engine)
    return importlib.import_module(engine)


def array_library(engine: str) -> Any:
    """The array library of ``engine``'s columns, imported: ``numpy`` or ``cupy``.

    For code that holds arrays outside frames (``tabflow.table``, the array loader's device
    batches). CuPy alone is enough for ``"cudf"`` (cuDF itself is not needed to hold device
    arrays); without it, an ImportError names the GPU extras.

    Examples
    --------
    >>> from tabflow.backends import array_library
    >>> array_library("pandas").__name__
    'numpy'
    """
    if engine not in _ENGINE_MODULES:
        raise ValueError(f"unknown engine {engine!r}: expected one of {sorted(_ENGINE_MODULES)}")
    if engine == "pandas":
        return importlib.import_module("numpy")
    try:
        return importlib.import_module("cupy")
    except ImportError as error:
        raise ImportError(
            "device arrays need CuPy: install tabflow's GPU extras (gpu-cu12 or gpu-cu13), or cupy-cuda12x alone"
        ) from error


def cuda_memory_info(index: int | None = None) -> tuple[int, int] | None:
    """``(free, total)`` bytes of CUDA device ``index`` (None: the current one), or None when
    no GPU library is installed or none sees that device.

    CuPy is asked first: it numbers devices as CUDA does and knows the current device. NVML
    (``pynvml``) is the fallback for machines with a GPU but without the GPU engine; it
    knows no current device, so ``index=None`` means its device 0 there.

    Examples
    --------
    >>> from tabflow.backends import cuda_memory_info
    >>> sizes = cuda_memory_info()
    >>> sizes is None or sizes[0] <= sizes[1]
    True
    """
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        runtime = cupy.cuda.runtime
        try:
            count = runtime.getDeviceCount()
            if index is None:
                index = runtime.getDevice()
            if not 0 <= index < count:
                return None
            with cupy.cuda.Device(index):
                free, total = runtime.memGetInfo()
        except runtime.CUDARuntimeError:  # no driver or no device
            return None
        return int(free), int(total)
    return _nvml_memory_info(0 if index is None else index)


def _nvml_memory_info(index: int) -> tuple[int, int] | None:
    """``(free, total)`` of NVML device ``index``, or None without pynvml or that device."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:  # no driver
        return None
    try:
        if not 0 <= index < pynvml.nvmlDeviceGetCount():
            return None
        info = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(index))
    finally:
        pynvml.nvmlShutdown()
    return int(info.free), int(info.total)


def reset_gpu_memory(managed_memory: bool = False) -> None:
    """Reset RMM's GPU memory: a fresh ``cudaMallocAsync`` pool, the cuDF engine's default
    (``managed_memory``: CUDA unified memory instead; ``TABFLOW_GPU_ASYNC_POOL=0``: RMM's
    own default, ``cudaMalloc``); nothing to reset where RMM is not installed (the pandas
    engine).

    Examples
    --------
    >>> from tabflow.backends import reset_gpu_memory
    >>> reset_gpu_memory()
    """
    reset_device_memory(managed_memory=managed_memory)


_GPU_INSTALL = f"{pip_install('gpu-cu12')} for CUDA 12 or {pip_install('gpu-cu13')} for CUDA 13"


#: The module numba-cuda imports at the first compile of a GPU function
#: (``CUDATargetContext.load_additional_registries``, numba-cuda 0.30's
#: ``numba_cuda/numba/cuda/target.py``), not when cuDF is imported: a NumPy release that
#: broke it (numpy 2.5 removed ``np.row_stack``, which that module registers) would fail
#: the first user function or ``LambdaOp`` cuDF compiles, not the import.
_FIRST_COMPILE_MODULE = "numba.cuda.np.arrayobj"


@lru_cache(maxsize=None)
def _cudf_import_problem() -> str | None:
    """None when cuDF imports and numba-cuda can compile; else what failed, with the error
    itself, and how to mend it (see :func:`_mend`)."""
    if importlib.util.find_spec("cudf") is None:
        return f"the GPU engine needs RAPIDS cuDF, dask-cudf and CuPy: {_GPU_INSTALL} (or pass cpu=True to use pandas)"
    try:
        importlib.import_module("cudf")
    except Exception as err:  # noqa: BLE001 - any failure: the message carries it as it is
        return f"RAPIDS cuDF is installed but cannot be imported: {type(err).__name__}: {err}. {_mend(err)}"
    try:
        present = importlib.util.find_spec(_FIRST_COMPILE_MODULE) is not None
    except ImportError:  # numba-cuda's layout changed: nothing to check here
        present = False
    if present:
        try:
            importlib.import_module(_FIRST_COMPILE_MODULE)
        except Exception as err:  # noqa: BLE001
            return (
                "RAPIDS cuDF imports, but numba-cuda cannot compile GPU functions (cuDF compiles user functions "
                f"and LambdaOps on first use): its first compile imports {_FIRST_COMPILE_MODULE}, which fails with "
                f"{type(err).__name__}: {err}. {_mend(err)}"
            )
    return None


def _mend(err: BaseException) -> str:
    """How to mend a GPU library that fails to import, from what failed: NumPy newer than
    numba-cuda, a RAPIDS shared library, the CUDA driver, CuPy, or something else (then the
    error says what)."""
    import numpy

    text = " ".join(f"{type(e).__name__}: {e}" for e in _chain(err))
    modules = {frame.f_globals.get("__name__", "").split(".")[0] for e in _chain(err) for frame, _ in _frames(e)}
    pin = f"{_GPU_INSTALL}, whose constraints pin matching versions"
    if "module 'numpy' has no attribute" in text:
        advice = (
            f"numpy {numpy.__version__} no longer has a function the installed numba / numba-cuda uses: install "
            f"numpy<2.5 (what RAPIDS 26.10 supports) with {pin}"
        )
    elif any(word in text for word in ("CUDA driver", "cudaErrorInsufficientDriver", "CUDA_ERROR_", "cuInit", "libcuda.so")):
        advice = (
            "the CUDA driver is missing or older than the CUDA these wheels were built for (nvidia-smi shows the "
            f"driver's CUDA version): update the driver, or install the extra of its CUDA major with {pin}"
        )
    elif any(word in text for word in (".so", "shared object", "undefined symbol", "DLL load failed")):
        advice = (
            "a RAPIDS shared library did not load: the GPU wheels do not match each other or the CUDA runtime; "
            f"reinstall them together with {pin}"
        )
    elif "cupy" in modules or "cupy" in text.lower():
        advice = f"CuPy does not match the installed cuDF or the CUDA runtime: install the CuPy of the same CUDA major with {pin}"
    else:
        advice = f"install versions that work together with {pin}"
    return f"Cause: {advice}, or pass cpu=True to use pandas"


def _chain(err: BaseException) -> list[BaseException]:
    """``err`` and the exceptions it was raised from or during, each once."""
    seen: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _frames(err: BaseException) -> list[tuple[Any, int]]:
    import traceback

    return list(traceback.walk_tb(err.__traceback__))


def backend_for(obj: Any) -> Backend:
    """Return the backend that owns ``obj`` (a frame, series, index or array).

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends import backend_for
    >>> backend_for(np.arange(3)).name
    'pandas'
    """
    module = type(obj).__module__
    package = module.split(".", 1)[0]
    engine = _PACKAGE_ENGINE.get(package)
    if engine is None:
        if module == _STRICT_MODULE:  # a strict engine's device array
            return importlib.import_module(_STRICT_MODULE).BACKEND
        raise TypeError(
            f"tabflow cannot handle objects of type {module}.{type(obj).__name__}; "
            "pass a pandas or cuDF DataFrame/Series"
        )
    if _STRICT.depth and package in ("pandas", "pyarrow"):
        # Frames and series belong to the strict engine while it is on; NumPy arrays stay
        # host arrays, as they are beside cuDF.
        return importlib.import_module(_STRICT_MODULE).BACKEND
    return get_backend(engine)


@contextlib.contextmanager
def strict_engine() -> Iterator[None]:
    """Run the pandas engine as the strict engine while the block is open.

    Inside it, :func:`backend_for` gives pandas objects the strict engine
    (:mod:`tabflow.backends.strict_backend`): the same frames and results, but the engine
    arrays it returns are device arrays with CuPy's rules, so code that mixes host and
    device arrays raises the ``TypeError`` it would raise on a GPU. The switch is
    process-wide (dask's threads follow it); blocks may nest. Meant for tests of ops and of
    code written on the engine arrays (the suite runs every engine-parametrised test on it).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends import backend_for, strict_engine
    >>> with strict_engine():
    ...     type(backend_for(pd.Series([1])).null_mask(pd.Series([1]))).__name__
    'DeviceArray'
    >>> type(backend_for(pd.Series([1])).null_mask(pd.Series([1]))).__name__
    'ndarray'
    """
    rules = importlib.import_module(_STRICT_MODULE).frame_rules
    with _STRICT.lock:
        _STRICT.depth += 1
        if _STRICT.depth == 1:
            rules(True)
    try:
        yield
    finally:
        with _STRICT.lock:
            _STRICT.depth -= 1
            if _STRICT.depth == 0:
                rules(False)


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


def gpu_available() -> bool:
    """True when cuDF imports and at least one CUDA device is visible.

    Examples
    --------
    >>> from tabflow.backends import gpu_available
    >>> isinstance(gpu_available(), bool)
    True
    """
    return gpu_unavailable_reason() is None


@lru_cache(maxsize=None)
def gpu_unavailable_reason() -> str | None:
    """Why the GPU engine cannot run here, or None when it can.

    The reason names what is missing (cuDF, a CUDA device) or carries the error cuDF raised
    on import, so a skipped test or a refused ``cpu=False`` says what to mend.

    Examples
    --------
    >>> from tabflow.backends import gpu_unavailable_reason
    >>> reason = gpu_unavailable_reason()
    >>> reason is None or "cuDF" in reason or "CUDA" in reason
    True
    """
    problem = _cudf_import_problem()
    if problem is not None:
        return problem
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # noqa: BLE001 - no driver, no device: the error says which
        return f"cuDF imports but no CUDA device is usable: {type(err).__name__}: {err}"
    return None if count > 0 else "cuDF imports but no CUDA device is visible"


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
