"""``nvtabular.utils`` names: memory-size helpers, and the cluster context managers
(:class:`Distributed`, :class:`Serial`, whose home is :mod:`tabflow.io.cluster`).

NVTabular notebooks size Dask workers, RMM pools and dataset partitions from the memory of
the device they run on, e.g. ``part_size = int(0.1 * device_mem_size(kind="total"))``.
:func:`device_mem_size` answers for the current CUDA device when CuPy (the GPU engine's
array library) or NVML sees one, and for host memory otherwise (or with ``cpu=True``), so the
same notebook sizes itself sensibly on a laptop CPU. Nothing here imports a GPU library or
touches the GPU at import time.

Examples
--------
>>> from tabflow.utils import device_mem_size, get_rmm_size
>>> host_total = device_mem_size(kind="total", cpu=True)
>>> 0 < device_mem_size(kind="free", cpu=True) <= host_total
True
>>> get_rmm_size(1000)
768
"""

from __future__ import annotations

import os
from typing import Any, Callable

import dask

from tabflow.backends import cuda_memory_info, gpu_available
from tabflow.io.cluster import Distributed, Serial, global_dask_client, set_dask_client
from tabflow.io.download import download_file

__all__ = [
    "device_mem_size",
    "get_rmm_size",
    "pynvml_mem_size",
    "Distributed",
    "Serial",
    "global_dask_client",
    "set_dask_client",
    "run_on_worker",
    "download_file",
    "HAS_GPU",  # noqa: F822  (computed when first read, see __getattr__)
]


def __getattr__(name: str) -> Any:
    # merlin's ``HAS_GPU``, known only by looking for a GPU: done when first read, not at import.
    if name == "HAS_GPU":
        return gpu_available()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_on_worker(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)``, run on a Dask worker when a Dask client is active (the one
    :class:`Distributed` or :func:`set_dask_client` set), else here.

    Examples
    --------
    >>> from tabflow.utils import run_on_worker
    >>> run_on_worker(pow, 2, 10)
    1024
    """
    if global_dask_client() is not None:
        return dask.delayed(func)(*args, **kwargs).compute()
    return func(*args, **kwargs)

MEMORY_KINDS = ("total", "free")
#: RMM pool sizes must be a multiple of its 256-byte allocation alignment.
RMM_ALIGNMENT = 256
_MEMINFO_FIELDS = {"total": "MemTotal", "free": "MemFree"}


def _check_kind(kind: str) -> None:
    if kind not in MEMORY_KINDS:
        raise ValueError(f"{kind!r} is not a supported memory kind; use one of {MEMORY_KINDS}")


def device_mem_size(kind: str = "total", cpu: bool = False) -> int:
    """Total or free memory, in bytes, of the current CUDA device, or of the host.

    Parameters
    ----------
    kind : {"total", "free"}, default "total"
    cpu : bool, default False
        Report host memory. Host memory is also reported when neither CuPy nor ``pynvml``
        is installed, or when they see no CUDA device.

    Returns
    -------
    int
        For a GPU, what ``cudaMemGetInfo`` reports for the current device (through CuPy;
        through NVML for device 0 where CuPy is not installed). Free memory is device-wide
        and does not count memory cached by an allocator (CuPy's pool, PyTorch's) as free.
        For the host, ``MemTotal`` or ``MemFree`` of ``/proc/meminfo`` (via
        ``psutil`` where installed, which reads the same numbers), or the physical page
        count from ``os.sysconf`` elsewhere.

    Raises
    ------
    ValueError
        For an unknown ``kind``.

    Examples
    --------
    >>> from tabflow.utils import device_mem_size
    >>> device_mem_size("total", cpu=True) >= device_mem_size("free", cpu=True) > 0
    True
    >>> device_mem_size("used")
    Traceback (most recent call last):
    ...
    ValueError: 'used' is not a supported memory kind; use one of ('total', 'free')
    """
    _check_kind(kind)
    if not cpu:
        sizes = cuda_memory_info()
        if sizes is not None:
            free, total = sizes
            return int(total if kind == "total" else free)
    return _host_mem_size(kind)


def _host_mem_size(kind: str) -> int:
    """Total or free host memory in bytes (``MemTotal`` / ``MemFree``)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        memory = psutil.virtual_memory()
        return int(memory.total if kind == "total" else memory.free)
    meminfo = _read_meminfo()
    if _MEMINFO_FIELDS[kind] in meminfo:
        return meminfo[_MEMINFO_FIELDS[kind]]
    name = "SC_PHYS_PAGES" if kind == "total" else "SC_AVPHYS_PAGES"
    try:
        return int(os.sysconf(name) * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        raise RuntimeError(f"cannot read the {kind} host memory on this platform; install psutil") from None


def get_rmm_size(size: int | float) -> int:
    """``size`` rounded down to a multiple of 256 bytes, as an RMM memory pool requires.

    Examples
    --------
    >>> from tabflow.utils import get_rmm_size
    >>> get_rmm_size(1000), get_rmm_size(0.8 * 1024), get_rmm_size(255)
    (768, 768, 0)
    """
    if size < 0:
        raise ValueError(f"a memory size cannot be negative, got {size}")
    return int(size // RMM_ALIGNMENT) * RMM_ALIGNMENT


def pynvml_mem_size(kind: str = "total", index: int = 0) -> int:
    """Total or free memory, in bytes, of GPU ``index`` as NVML reports it.

    Needs the ``pynvml`` module (``pip install nvidia-ml-py``); without it the same
    numbers come from CuPy (``cudaMemGetInfo`` on CUDA device ``index``) where CuPy sees the GPU.

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    RuntimeError
        When neither NVML nor CuPy can see GPU ``index``.

    Examples
    --------
    >>> from tabflow.utils import pynvml_mem_size
    >>> pynvml_mem_size("largest")
    Traceback (most recent call last):
    ...
    ValueError: 'largest' is not a supported memory kind; use one of ('total', 'free')
    """
    _check_kind(kind)
    try:
        import pynvml
    except ImportError:
        pynvml = None
    if pynvml is not None:
        pynvml.nvmlInit()
        try:
            info = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(index))
        finally:
            pynvml.nvmlShutdown()
        return int(info.total if kind == "total" else info.free)
    sizes = cuda_memory_info(index)
    if sizes is None:
        raise RuntimeError(
            f"no GPU {index} visible: pynvml is not installed (pip install nvidia-ml-py) "
            "and CuPy sees no such CUDA device"
        )
    free, total = sizes
    return int(total if kind == "total" else free)


#: NVTabular's private name, imported by some of its notebooks.
_pynvml_mem_size = pynvml_mem_size


def _read_meminfo(path: str = "/proc/meminfo") -> dict[str, int]:
    """``{field: bytes}`` from ``/proc/meminfo`` (empty where the file does not exist)."""
    fields: dict[str, int] = {}
    try:
        with open(path, encoding="ascii") as handle:
            for line in handle:
                name, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    scale = 1024 if parts[1:2] == ["kB"] else 1
                    fields[name.strip()] = int(parts[0]) * scale
    except OSError:
        pass
    return fields
