"""The options both loaders share, as one object.

``TorchAsyncItr`` and ``Loader`` take the same nine options (NVTabular's names and meanings);
they are validated and resolved here once, and every part of the pipeline reads them from
the :class:`LoaderOptions` it is given. ``new(**overrides)``, ``state_dict()`` and
``load_state_dict()`` of the loaders are derived from it.

Examples
--------
>>> from tabflow.loader.options import LoaderOptions
>>> options = LoaderOptions(batch_size=64, shuffle=True)
>>> options.batch_size, options.global_rank, options.global_size, options.device
(64, 0, 1, device(type='cpu'))
>>> options.replace(drop_last=True).drop_last
True
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import torch

from tabflow.loader._ranks import resolve_ranks

__all__ = ["LoaderOptions", "resolve_device", "OPTIONS_DOC"]

#: The numpydoc of the options, shared by the loaders' docstrings.
OPTIONS_DOC = """
    batch_size : int
        Rows per batch (default 1, as in NVTabular). Every batch is full except possibly the
        last of an epoch.
    shuffle : bool
        Each epoch, shuffle the partition order and the rows inside each chunk.
    seed_fn : callable, optional
        Called once at the start of every epoch; returns a non-negative integer that is
        mixed with the epoch number into the epoch's seed (NumPy's
        ``SeedSequence(seed, spawn_key=(epoch,))``). So ``seed_fn=lambda: 1234`` gives a
        different order every epoch and the same orders in every run, and seeds returned
        for consecutive epochs may be consecutive numbers without repeating an order. In a
        data-parallel job it must return the same value on every rank, which then all cut
        their shares from the same global order. Without it, epoch ``e`` uses a fixed seed
        derived from ``e`` (reproducible, and identical on all ranks). An epoch resumed with
        ``load_state_dict`` keeps the seed saved with it; ``seed_fn`` is not called for it.
    parts_per_chunk : int
        Partitions concatenated (and shuffled together) per chunk. Memory holds up to about
        eight chunks' worth: one being cut into batches, two queued, one being shuffled (its
        converted partitions and their shuffled copy) and up to three partitions being read
        and converted ahead. Host memory of chunks is reused once no batch of it is
        referenced any more, and released by ``shutdown()``.
    device : str, int or torch.device, optional
        ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a CUDA index. Default: CPU for the pandas
        engine, the current CUDA device for cuDF. CUDA chunks are copied from pinned host
        memory asynchronously, in the loader thread, ahead of their use (cuDF columns go to
        CUDA through DLPack without a host copy).
    global_size, global_rank : int, optional
        Data-parallel world size and rank; default from ``torch.distributed`` when it is
        initialised, else 1 and 0. The epoch's global row order (partitions in the, possibly
        shuffled, epoch order) is cut into ``global_size`` contiguous shares of
        ``num_rows // global_size`` rows; rank ``r`` gets share ``r``. The last
        ``num_rows % global_size`` rows of that order (fewer than ``global_size``) are not
        used that epoch; with shuffling they differ from epoch to epoch. All ranks thus
        deliver disjoint rows and the same number of batches, and each reads only the
        partitions overlapping its share.
    drop_last : bool
        Drop the last, incomplete batch of each epoch."""


def resolve_device(device: Any, engine: str = "pandas") -> torch.device:
    """A ``torch.device`` from None (CPU for pandas, the current CUDA device for cuDF), an
    int (a CUDA index), a string or a device."""
    if device is None:
        device = "cuda" if engine == "cudf" else "cpu"
    if isinstance(device, int):
        device = torch.device("cuda", device)
    device = torch.device(device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"device {str(device)!r} was requested but torch sees no CUDA device")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
    return device


@dataclasses.dataclass(frozen=True)
class LoaderOptions:
    """Batching, shuffling, sharding and placement of a loader, validated and resolved.

    The fields are the loaders' arguments of the same names (see
    :class:`~tabflow.loader.torch.TorchAsyncItr`); after construction ``global_rank`` and
    ``global_size`` are integers (from ``torch.distributed`` when it is initialised and they
    were not given) and ``device`` is a ``torch.device``.

    Parameters
    ----------
    batch_size : int
    shuffle : bool
    seed_fn : callable, optional
    parts_per_chunk : int
    device : str, int or torch.device, optional
    global_size, global_rank : int, optional
    drop_last : bool
    engine : str
        The dataset's engine, which decides the default device; not a loader argument.
    """

    batch_size: int = 1
    shuffle: bool = False
    seed_fn: Callable[[], int] | None = None
    parts_per_chunk: int = 1
    device: Any = None
    global_size: int | None = None
    global_rank: int | None = None
    drop_last: bool = False
    engine: str = dataclasses.field(default="pandas", repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("batch_size", "parts_per_chunk"):
            value = getattr(self, name)
            try:
                number = int(value)
            except (TypeError, ValueError):
                number = 0
            if number < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.seed_fn is not None and not callable(self.seed_fn):
            raise TypeError(f"seed_fn must be a callable returning an integer, got {self.seed_fn!r}")
        rank, size = resolve_ranks(self.global_rank, self.global_size)
        resolved = dict(
            batch_size=int(self.batch_size), parts_per_chunk=int(self.parts_per_chunk), shuffle=bool(self.shuffle),
            drop_last=bool(self.drop_last), global_rank=rank, global_size=size,
            device=resolve_device(self.device, self.engine),
        )
        for name, value in resolved.items():
            object.__setattr__(self, name, value)  # frozen: resolved once, here

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The loader arguments held here (``engine`` comes from the dataset)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "engine")

    @classmethod
    def split(cls, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``arguments`` as (options, the rest)."""
        names = set(cls.names())
        return ({k: v for k, v in arguments.items() if k in names}, {k: v for k, v in arguments.items() if k not in names})

    def as_dict(self) -> dict[str, Any]:
        """The options as loader keyword arguments."""
        return {name: getattr(self, name) for name in self.names()}

    def replace(self, **changes: Any) -> "LoaderOptions":
        """These options with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ state
    #: Options a saved loader state must agree with to be loaded.
    STATE_KEYS = ("batch_size", "global_rank", "global_size")

    def state(self) -> dict[str, Any]:
        """What a loader state records of these options."""
        return {name: getattr(self, name) for name in self.STATE_KEYS}

    def check_state(self, state: Mapping[str, Any]) -> None:
        """Refuse a state saved under other batching or sharding."""
        for name in self.STATE_KEYS:
            if state[name] != getattr(self, name):
                raise ValueError(f"loader state has {name}={state[name]!r} but this loader has {name}={getattr(self, name)!r}")
