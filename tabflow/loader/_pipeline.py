"""The engine-neutral chunk pipeline shared by ``TorchAsyncItr`` and ``Loader``.

Per epoch: plan the chunks of this rank (:mod:`tabflow.loader._plan`). Reading threads fetch
the partitions a few ahead and, for dense columns, convert every column to a tensor once as
soon as its partition is read (a *chunk builder* decides how). A loader thread joins each
chunk's partitions, trims them, permutes their rows when shuffling (one row gather per
stacked tensor; chunks with list columns are permuted as frames, then converted) and moves
the chunk to the target device. The consuming thread cuts batches as views of the chunk
tensors; rows left at the end of a chunk are joined with the start of the next one, so every
batch is full except possibly the last. Host memory of chunks is recycled
(:mod:`tabflow.loader._memory`) once the consumer holds no batch of them.

Bound for a GPU, columns are converted into pinned host memory, each chunk is copied to the
device once, asynchronously on the loader thread's own CUDA stream, and its rows are permuted
there; the stream is synchronised before the chunk is queued, and the consumer's stream is
recorded on the chunk's tensors so their memory is not reused while its kernels still read
them.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import math
import weakref
from typing import Any, Callable, Iterator, Mapping, Sequence

import torch

from tabflow.backends import backend_for
from tabflow.loader._memory import ArrayPool
from tabflow.loader._plan import (
    ChunkSpec,
    chunk_permutation,
    default_epoch_seed,
    epoch_seed,
    plan_epoch,
    rank_share,
    skip_rows,
)
from tabflow.loader._prefetch import Prefetcher
from tabflow.loader._ranks import resolve_ranks
from tabflow.loader._tensors import (
    cat_chunks,
    chunk_to_device,
    record_stream,
    slice_chunk,
    take_rows,
)

__all__ = ["ChunkLoader", "resolve_device"]

_QUEUE_CHUNKS = 2
_STATE_VERSION = 1

# Loaders with an epoch in progress, stopped at interpreter exit (see _stop_running_loaders).
_RUNNING: weakref.WeakSet[ChunkLoader] = weakref.WeakSet()


@atexit.register
def _stop_running_loaders() -> None:
    """Stop the loader threads of epochs never finished nor shut down, before finalisation.

    The loader thread is a daemon, so the interpreter does not wait for it and starts
    finalising while it may be inside a torch op that released the GIL. When the op returns,
    the thread takes the GIL back from the destructor of torch's GIL guard; during
    finalisation CPython ends such a thread on the spot (``pthread_exit``), which cannot
    unwind a C++ destructor: the process aborts with "terminate called without an active
    exception". atexit functions run while the interpreter is still whole, and this one is
    registered after torch is imported, so it runs before the exit functions torch registers
    on import. Only the threads are stopped: a daemon thread of the user's may still be
    inside the loader's batch generator, which cannot be closed from here.
    """
    for loader in list(_RUNNING):
        prefetcher = loader._prefetcher
        if prefetcher is not None:
            prefetcher.shutdown()


def resolve_device(device: Any, engine: str) -> torch.device:
    """A ``torch.device`` from None, an int (CUDA index), a string or a device."""
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


def _produce(dataset: Any, columns: Sequence[str], plan: Sequence[ChunkSpec], builder: Callable, shuffle: bool,
             seed: int, rank: int, device: torch.device, memory: ArrayPool) -> Iterator[tuple[dict, int]]:
    """Runs in the loader thread; holds no reference to the loader so it can be collected."""
    if not plan:
        return
    order = [p for spec in plan for p in spec.partitions]
    # Chunks of dense columns are converted to tensors by the threads that read ahead, and
    # shuffled as tensors (one row gather per stacked tensor). Chunks with list columns are
    # shuffled as frames, which keeps each row's list together, then converted here.
    dense = getattr(builder, "dense_only", False)
    convert = functools.partial(_convert, builder, allocate=memory.empty, device=device) if dense else None
    source = dataset.to_iter(columns=list(columns), indices=order, prefetch=2, convert=convert)
    # The GPU work of this thread (copies, joins, the shuffle) runs on a stream of its own, so
    # it overlaps with the consumer's kernels on theirs.
    stream = torch.cuda.Stream(device) if device.type == "cuda" else None
    try:
        for spec in plan:
            parts = [next(source) for _ in spec.partitions]
            rows = spec.start + chunk_permutation(seed, rank, spec)[spec.skip :] if shuffle else None
            with _on_stream(stream):
                if dense:
                    chunk = cat_chunks(parts, allocate=memory.empty)
                    if device.type == "cuda":
                        # One copy of the unshuffled chunk to the GPU, then the row gather
                        # there: the host never makes the shuffled copy.
                        chunk = chunk_to_device(chunk, device)
                    if rows is None:
                        chunk = slice_chunk(chunk, spec.start + spec.skip, spec.stop)
                    else:
                        chunk = take_rows(chunk, rows, allocate=memory.empty)
                    chunk = chunk_to_device(chunk, device)
                else:
                    backend = backend_for(parts[0])
                    frame = backend.concat_rows(parts) if len(parts) > 1 else parts[0]
                    if rows is None:
                        chunk = builder(backend.slice_rows(frame, spec.start + spec.skip, spec.stop))
                    else:
                        chunk = builder(backend.take_rows(frame, rows))
                    chunk = chunk_to_device(chunk, device)
            del parts  # the unshuffled tensors go back to the pool as soon as possible
            if stream is not None:
                # Complete before the consumer's stream reads it (and before pinned host
                # buffers of this chunk can be handed out again).
                stream.synchronize()
            yield chunk, spec.num_rows
    finally:
        source.close()


def _convert(builder: Callable, frame: Any, allocate: Callable, device: torch.device) -> dict:
    """Run ``builder`` in a reading thread; tensors it makes on a GPU are complete on return.

    A cuDF frame's columns reach torch through DLPack, on the stream current in this thread;
    the tensors are then used by the loader thread on another stream, so the work is
    finished here rather than ordered by events across threads.
    """
    if device.type != "cuda":
        return builder(frame, allocate=allocate)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        chunk = builder(frame, allocate=allocate)
    stream.synchronize()
    return chunk


def _on_stream(stream: Any) -> Any:
    return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()


class ChunkLoader(torch.utils.data.IterableDataset):
    """Base of the loaders: epochs, ranks, shuffling, batching, state and shutdown.

    Subclasses set ``self._builder`` (frame -> dict of tensors) and ``self._columns`` (what to
    read) and implement ``_format(batch)``.
    """

    _builder: Callable[[Any], dict]
    _columns: list[str]

    def _setup(
        self,
        dataset: Any,
        batch_size: int,
        shuffle: bool,
        seed_fn: Callable[[], int] | None,
        parts_per_chunk: int,
        device: Any,
        global_size: int | None,
        global_rank: int | None,
        drop_last: bool,
    ) -> None:
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if int(parts_per_chunk) < 1:
            raise ValueError(f"parts_per_chunk must be a positive integer, got {parts_per_chunk!r}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed_fn = seed_fn
        self.parts_per_chunk = int(parts_per_chunk)
        self.drop_last = bool(drop_last)
        self.global_rank, self.global_size = resolve_ranks(global_rank, global_size)
        self.device = resolve_device(device, getattr(dataset, "engine", "pandas"))
        self.num_rows_processed = 0
        self._epoch = 0  # the next epoch to start
        self._resume: tuple[int, int | None, int] | None = None
        self._current: tuple[int, int] | None = None  # (epoch, seed) of the epoch in progress
        self._batches_done = 0
        self._prefetcher: Prefetcher | None = None
        self._stream: Iterator[dict] | None = None
        # Host memory of chunks, recycled once the consumer has dropped every batch of them.
        # Pinned when bound for a GPU: columns are converted straight into memory that the
        # copy engine reads asynchronously.
        self._memory = ArrayPool(pin_memory=self.device.type == "cuda")

    # ------------------------------------------------------------------ sizes
    @property
    def rows_per_epoch(self) -> int:
        """Rows this rank receives per epoch (before ``drop_last``)."""
        return rank_share(self.dataset.num_rows, self.global_size)

    def __len__(self) -> int:
        rows = self.rows_per_epoch
        return rows // self.batch_size if self.drop_last else math.ceil(rows / self.batch_size)

    # -------------------------------------------------------------- iteration
    def _epoch_seed(self, epoch: int) -> int:
        # The epoch is mixed into the user's seed so that a constant seed_fn (the usual way to
        # make ranks agree) still gives a new order every epoch.
        return epoch_seed(self.seed_fn(), epoch) if self.seed_fn is not None else default_epoch_seed(epoch)

    def __iter__(self) -> "ChunkLoader":
        # Every iter() starts an epoch (or the resumed one): an epoch left after a `break` is
        # abandoned, as in NVTabular, whose training scripts loop `for batch in itr` per epoch.
        self._stop_epoch()
        if self._resume is not None:
            epoch, seed, done = self._resume
            self._resume = None
        else:
            epoch, seed, done = self._epoch, None, 0
        # A resumed epoch keeps the seed saved with it (already mixed with its epoch), so it
        # continues in the saved order whatever seed_fn returns now.
        seed = self._epoch_seed(epoch) if seed is None else seed
        self._epoch = epoch + 1
        self._current = (epoch, seed)
        self._batches_done = done
        self.num_rows_processed = done * self.batch_size
        lengths = self.dataset.partition_lengths()
        plan = plan_epoch(lengths, seed, self.shuffle, self.global_rank, self.global_size, self.parts_per_chunk)
        plan = skip_rows(plan, done * self.batch_size)
        args = (self.dataset, self._columns, plan, self._builder, self.shuffle, seed, self.global_rank, self.device, self._memory)
        self._prefetcher = Prefetcher(lambda: _produce(*args), depth=_QUEUE_CHUNKS)
        self._stream = self._batches(self._prefetcher)
        _RUNNING.add(self)
        return self

    def __next__(self) -> Any:
        if self._stream is None:
            raise StopIteration
        try:
            batch, rows = next(self._stream)
        except StopIteration:
            self._stop_epoch()
            raise
        except BaseException:
            self._stop_epoch()
            raise
        self._batches_done += 1
        self.num_rows_processed += rows
        return self._format(batch)

    def _batches(self, prefetcher: Prefetcher) -> Iterator[tuple[dict, int]]:
        size = self.batch_size
        carry: list[dict] = []
        carried = 0
        while True:
            item = prefetcher.get()
            if item is None:
                break
            chunk, rows = item
            record_stream(chunk)
            position = 0
            if carried:
                need = size - carried
                if rows < need:
                    carry.append(chunk)
                    carried += rows
                    continue
                yield cat_chunks([*carry, slice_chunk(chunk, 0, need)]), size
                carry, carried, position = [], 0, need
            while position + size <= rows:
                yield slice_chunk(chunk, position, position + size), size
                position += size
            if position < rows:
                carry, carried = [slice_chunk(chunk, position, rows)], rows - position
        if carried and not self.drop_last:
            yield cat_chunks(carry), carried

    def _format(self, batch: dict) -> Any:
        raise NotImplementedError

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Where the loader stands: the epoch, its seed and the batches already delivered.

        ``seed`` is the seed the epoch's order was drawn from (``seed_fn``'s value already
        mixed with the epoch), or None between epochs, where the next epoch's seed is not
        drawn yet. Loading the state into a new loader over the same data continues at the
        next batch, with the order an uninterrupted run would have had.
        """
        if self._stream is not None and self._current is not None:
            epoch, seed = self._current
            done = self._batches_done
        elif self._resume is not None:
            epoch, seed, done = self._resume
        else:
            epoch, seed, done = self._epoch, None, 0
        return {
            "version": _STATE_VERSION,
            "epoch": epoch,
            "seed": seed,
            "batches": done,
            "batch_size": self.batch_size,
            "global_rank": self.global_rank,
            "global_size": self.global_size,
            "num_rows": self.dataset.num_rows,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`; the next ``iter()`` resumes that epoch at the next batch."""
        if state.get("version") != _STATE_VERSION:
            raise ValueError(f"unsupported loader state version {state.get('version')!r}")
        for key, mine in (("batch_size", self.batch_size), ("global_size", self.global_size),
                          ("global_rank", self.global_rank), ("num_rows", self.dataset.num_rows)):
            if state[key] != mine:
                raise ValueError(f"loader state has {key}={state[key]!r} but this loader has {key}={mine!r}")
        self._stop_epoch()
        done = int(state["batches"])
        if done >= len(self):
            self._epoch, self._resume = int(state["epoch"]) + 1, None
        else:
            seed = None if state["seed"] is None else int(state["seed"])
            self._resume = (int(state["epoch"]), seed, done)
            self._epoch = int(state["epoch"])

    # ---------------------------------------------------------------- shutdown
    def _stop_epoch(self) -> None:
        prefetcher, self._prefetcher = self._prefetcher, None
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()
        if prefetcher is not None:
            prefetcher.shutdown()
        _RUNNING.discard(self)

    def shutdown(self) -> None:
        """Stop the background thread of the epoch in progress (if any), wait for it, and
        release the host memory kept for recycling."""
        self._stop_epoch()
        self._memory.clear()

    def __enter__(self) -> "ChunkLoader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    def __del__(self) -> None:
        try:
            self._stop_epoch()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn down modules
            pass

    # ------------------------------------------------------------------- misc
    def _params(self) -> dict[str, Any]:
        raise NotImplementedError

    def new(self, **overrides: Any) -> "ChunkLoader":
        """A loader with the same arguments except ``overrides`` (its own epoch counter)."""
        return type(self)(**{**self._params(), **overrides})
