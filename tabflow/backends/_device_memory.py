"""GPU memory for the cuDF engine: a stream-ordered pool unless the process chose otherwise.

RMM's default resource (``rmm.mr.CudaMemoryResource``) allocates each buffer with
``cudaMalloc`` and frees it with ``cudaFree``, and ``cudaFree`` waits for all work queued on
the GPU. cuDF and CuPy make and free temporaries in almost every call, so on that resource a
workflow stops the GPU at every free, and the thread that reads the next partition ahead
stops the threads computing. ``cudaMallocAsync`` keeps freed memory in a pool the driver
manages and frees in stream order, without waiting; cudf-polars uses it by default for the
same reason.

So, the first time the cuDF engine is used in a process, :func:`use_async_pool` replaces
RMM's default resource by ``rmm.mr.CudaAsyncMemoryResource``. A resource set before
(``rmm.reinitialize(pool_allocator=True)``, ``rmm.mr.set_current_device_resource``, dask-cuda's
``rmm_pool_size`` / ``rmm_async`` / ``rmm_managed_memory``) is kept. The environment variable
``TABFLOW_GPU_ASYNC_POOL=0`` keeps RMM's default as well. The pool keeps the memory it has
grown to for reuse (RMM's release threshold for it is the device's memory), as RMM's own
pools do: a process that trains with PyTorch after a large ETL can give it back with
:func:`reset_device_memory` (``tabflow.backends.reset_gpu_memory``).

Buffers allocated before the switch stay valid: each RMM buffer frees through the resource
that allocated it.

Examples
--------
>>> import importlib.util
>>> from tabflow.backends._device_memory import use_async_pool
>>> decision = use_async_pool()  # what the cuDF engine does on first use
>>> decision == "RMM is not installed" or importlib.util.find_spec("rmm") is not None
True
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from typing import Any

__all__ = ["use_async_pool", "reset_device_memory", "POOL_VARIABLE"]

#: ``0`` keeps RMM's default resource (``cudaMalloc`` / ``cudaFree``) for the cuDF engine.
POOL_VARIABLE = "TABFLOW_GPU_ASYNC_POOL"

logger = logging.getLogger(__name__)

_LOCK = threading.Lock()
# What the first use decided; None until then (one decision per process).
_DECISION: str | None = None


def _rmm() -> Any | None:
    try:
        return importlib.import_module("rmm")
    except ImportError:
        return None


def _switch(rmm: Any) -> str:
    """The async pool set on the current device if RMM still has its default resource;
    what was done, in words."""
    if os.environ.get(POOL_VARIABLE, "1").strip() == "0":
        return f"RMM's resource kept ({POOL_VARIABLE}=0)"
    current = rmm.mr.get_current_device_resource()
    if type(current) is not rmm.mr.CudaMemoryResource:
        return f"RMM's resource kept ({type(current).__name__}, set before tabflow used the GPU)"
    try:
        pool = rmm.mr.CudaAsyncMemoryResource()
    except (RuntimeError, MemoryError) as err:  # a driver or platform without cudaMallocAsync
        return f"RMM's default resource kept: cudaMallocAsync is not available ({err})"
    rmm.mr.set_current_device_resource(pool)
    return "cudaMallocAsync pool (rmm.mr.CudaAsyncMemoryResource)"


def use_async_pool() -> str:
    """Give the current GPU a ``cudaMallocAsync`` pool if RMM still has its default resource.

    Called by the cuDF engine on first use; later calls return the first one's decision
    without looking again, so a resource the user sets afterwards is never replaced.

    Returns
    -------
    str
        What the process uses, in words (also logged once at INFO on ``tabflow``'s logger).
    """
    global _DECISION
    if _DECISION is not None:
        return _DECISION
    with _LOCK:
        if _DECISION is None:
            rmm = _rmm()
            decision = "RMM is not installed" if rmm is None else _switch(rmm)
            if rmm is not None:
                logger.info("GPU memory: %s", decision)
            _DECISION = decision
    return _DECISION


def reset_device_memory(managed_memory: bool = False) -> str:
    """RMM's resource rebuilt: CUDA unified memory with ``managed_memory``, else the engine's
    default (the async pool unless ``TABFLOW_GPU_ASYNC_POOL=0``); what is used, in words."""
    global _DECISION
    rmm = _rmm()
    if rmm is None:
        return "RMM is not installed"
    with _LOCK:
        rmm.reinitialize(managed_memory=managed_memory)
        _DECISION = "CUDA managed memory (rmm.reinitialize)" if managed_memory else _switch(rmm)
        return _DECISION
