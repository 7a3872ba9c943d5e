"""What both loaders do with their parts: epochs, iteration, peeking, state and shutdown.

A loader is three things passed in: its :class:`~tabflow.loader.options.LoaderOptions`,
a *columns* object (:mod:`tabflow.loader._columns`: what to read, how to convert it, what a
batch looks like) and the :class:`~tabflow.loader._pipeline.Pipeline` built from them.
``TorchAsyncItr`` and ``Loader`` differ only in their signature and columns type.

Every ``iter()`` starts an epoch (or the resumed one): an epoch left after a ``break`` is
abandoned, as in NVTabular, whose training scripts loop ``for batch in itr`` per epoch.
``next()`` without ``iter()`` starts one too, as merlin's loader does for Keras.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.loader.torch import Loader
>>> loader = Loader(nvt.Dataset(pd.DataFrame({"a": [1, 2, 3], "y": [0, 1, 0]})), batch_size=2, labels=["y"])
>>> inputs, y = next(loader)  # no iter() needed
>>> loader.peek()[1].tolist(), loader.state_dict()["batches"], len(list(loader))
([0], 1, 2)
>>> loader.stop()
"""

from __future__ import annotations

import atexit
import math
import weakref
from typing import Any, Callable, Mapping

import torch

from tabflow.loader._memory import ArrayPool
from tabflow.loader._pipeline import Pipeline
from tabflow.loader._plan import rank_share
from tabflow.loader.options import LoaderOptions, resolve_device
from tabflow.schema import Schema

__all__ = ["LoaderBase", "arguments_of"]

_STATE_VERSION = 1

# Loaders with an epoch in progress, stopped at interpreter exit (see _stop_running_loaders).
_RUNNING: weakref.WeakSet[LoaderBase] = weakref.WeakSet()


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
        pipeline = loader._pipeline
        if pipeline is not None:
            pipeline.stop_threads()


def arguments_of(local_variables: Mapping[str, Any]) -> dict[str, Any]:
    """A loader's arguments from the ``locals()`` of its ``__init__`` (all but the dataset)."""
    return {k: v for k, v in local_variables.items() if k not in ("self", "dataset", "__class__")}


def _option(name: str) -> property:
    # merlin's loaders keep these as plain attributes that scripts assign between epochs
    # (``loader.batch_size = 4096``); here an assignment validates the value and rebuilds the
    # pipeline at the next epoch, as ``device`` does.
    def set_option(self: "LoaderBase", value: Any) -> None:
        self.options = self.options.replace(**{name: value})
        self._stale = True

    return property(
        lambda self: getattr(self.options, name), set_option,
        doc=f"``options.{name}``; setting it takes effect from the next epoch.",
    )


class LoaderBase(torch.utils.data.IterableDataset):
    """Iteration over a pipeline; see the module docstring.

    Parameters
    ----------
    dataset : tabflow.Dataset
    arguments : dict
        The loader's arguments: the :class:`LoaderOptions` fields and the columns type's own.
    columns_type : type
        Builds the columns object from ``(input_schema, **own arguments)``.
    """

    def __init__(self, dataset: Any, arguments: Mapping[str, Any], columns_type: Callable[..., Any]) -> None:
        options, own = LoaderOptions.split(arguments)
        self.dataset = dataset
        self.options = LoaderOptions(**options, engine=getattr(dataset, "engine", "pandas"))
        self._arguments = own
        self._columns_type = columns_type
        self._input_schema: Schema = dataset.schema
        self._schema_set = False
        self._columns = columns_type(self._input_schema, **own)
        self.num_rows_processed = 0
        # Host memory of chunks, recycled once the consumer has dropped every batch of them.
        # Pinned when bound for a GPU: columns are converted straight into memory that the
        # copy engine reads asynchronously.
        self._memory = ArrayPool(pin_memory=self.options.device.type == "cuda")
        self._map_fns: list[Callable] = []
        self._epochs_per_iter = 1
        self._epochs_left = 0
        self._pipeline: Pipeline | None = None
        self._stale = False
        self._running = False
        self._next_epoch = 0
        self._resume: dict[str, Any] | None = None
        self._peeked: tuple[Any, int] | None = None
        self._delivered = 0

    batch_size = _option("batch_size")
    shuffle = _option("shuffle")
    seed_fn = _option("seed_fn")
    parts_per_chunk = _option("parts_per_chunk")
    global_size = _option("global_size")
    global_rank = _option("global_rank")
    drop_last = _option("drop_last")

    @property
    def device(self) -> torch.device:
        """Where batches are delivered; setting it takes effect from the next epoch."""
        return self.options.device

    @device.setter
    def device(self, device: Any) -> None:
        self.options = self.options.replace(device=resolve_device(device, self.options.engine))
        self._stale = True

    # ------------------------------------------------------------------ columns
    @property
    def cat_names(self) -> list[str]:
        return self._columns.cat_names

    @property
    def cont_names(self) -> list[str]:
        return self._columns.cont_names

    @property
    def label_names(self) -> list[str]:
        return self._columns.label_names

    @property
    def input_schema(self) -> Schema:
        """The schema the columns are chosen from (the dataset's unless set, before iterating)."""
        return self._input_schema

    @input_schema.setter
    def input_schema(self, schema: Schema) -> None:
        if self._running:
            raise RuntimeError("input_schema cannot change while an epoch is in progress; set it before iterating")
        if not isinstance(schema, Schema):
            raise TypeError(f"input_schema must be a tabflow.schema.Schema, got {type(schema).__name__}")
        self._columns = self._columns_type(schema, **self._arguments)
        self._input_schema = schema
        self._schema_set = True
        self._stale = True

    @property
    def output_schema(self) -> Schema:
        """The columns the batches hold, with the dtypes of their tensors."""
        return self._columns.output_schema

    # ------------------------------------------------------------------ sizes
    @property
    def rows_per_epoch(self) -> int:
        """Rows this rank receives per epoch (before ``drop_last``)."""
        return rank_share(self.dataset.num_rows, self.options.global_size)

    def _epoch_len(self) -> int:
        rows, size = self.rows_per_epoch, self.options.batch_size
        return rows // size if self.options.drop_last else math.ceil(rows / size)

    def __len__(self) -> int:
        return self._epoch_len() * self._epochs_per_iter

    # -------------------------------------------------------------- iteration
    def __iter__(self) -> "LoaderBase":
        self._stop_epoch()
        self._epochs_left = self._epochs_per_iter
        self._begin()
        return self

    def _begin(self) -> None:
        if self._pipeline is None or self._stale:
            if self._pipeline is not None:
                self._pipeline.shutdown()
            columns = self._columns
            self._pipeline = Pipeline(self.dataset, columns.read, columns.builder, self.options, self._memory)
            self._stale = False
        state = self._resume if self._resume is not None else {"epoch": self._next_epoch}
        self._pipeline.reset(state)
        self._resume = None
        at = self._pipeline.get_state()
        self._next_epoch = at["epoch"] + 1
        self._delivered = at["batches"]
        self.num_rows_processed = self._delivered * self.options.batch_size
        self._running = True
        _RUNNING.add(self)

    def __next__(self) -> Any:
        batch, rows = self._peeked if self._peeked is not None else self._pull()
        self._peeked = None
        self._delivered += 1
        self.num_rows_processed += rows
        return batch

    def _pull(self) -> tuple[Any, int]:
        if not self._running:
            self._epochs_left = self._epochs_per_iter
            self._begin()
        assert self._pipeline is not None
        while True:
            try:
                batch, rows = self._pipeline.next()
            except StopIteration:
                self._stop_epoch()
                if self._epochs_left > 1:
                    self._epochs_left -= 1
                    self._begin()
                    continue
                raise
            except BaseException:
                self._stop_epoch()
                raise
            return self._deliver(batch), rows

    def _deliver(self, batch: Mapping[str, Any]) -> Any:
        out = self._columns.format(batch)
        for fn in self._map_fns:
            out = fn(*out)
        return out

    def peek(self) -> Any:
        """The next batch, without consuming it (starts an epoch if none is in progress)."""
        if self._peeked is None:
            self._peeked = self._pull()
        return self._peeked[0]

    def __getitem__(self, index: int) -> Any:
        """The next batch, as merlin's loader returns it (``index`` is not used). When the
        epoch in progress has ended, the next epoch starts: ``loader[i]`` never raises
        ``StopIteration``."""
        try:
            return next(self)
        except StopIteration:
            pass
        try:
            return next(self)
        except StopIteration:
            raise IndexError("the loader yields no batches") from None

    def map(self, fn: Callable[..., Any]) -> "LoaderBase":
        """Apply ``fn(*batch)`` to every batch from now on (after ``transforms``); returns self.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow.loader.torch import Loader
        >>> df = pd.DataFrame({"a": [1, 2], "w": [0.5, 2.0], "y": [0, 1]})
        >>> loader = Loader(nvt.Dataset(df), batch_size=2, labels=["y"]).map(lambda x, y: (x, y, x.pop("w")))
        >>> [len(batch) for batch in loader]
        [3]
        """
        self._map_fns.append(fn)
        return self

    def epochs(self, epochs: int = 1) -> "LoaderBase":
        """A loader like this one whose every ``iter()`` runs ``epochs`` epochs, back to back.

        Each epoch is shuffled and split between ranks as usual (its last batch may be
        short); ``len()`` counts the batches of all of them. ``epochs(1)`` on a one-epoch
        loader returns the loader itself.
        """
        epochs = int(epochs)
        if epochs < 1:
            raise ValueError(f"epochs must be a positive integer, got {epochs}")
        if epochs == self._epochs_per_iter:
            return self
        clone = self.new()
        clone._epochs_per_iter = epochs
        return clone

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Where the loader stands: the epoch, its seed and the batches already delivered.

        ``seed`` is the seed the epoch's order was drawn from (``seed_fn``'s value already
        mixed with the epoch), or None between epochs, where the next epoch's seed is not
        drawn yet. Loading the state into a new loader over the same data continues at the
        next batch, with the order an uninterrupted run would have had.
        """
        options = self.options
        if self._running and self._pipeline is not None:
            at = self._pipeline.get_state()
            epoch, seed, done = at["epoch"], at["seed"], self._delivered
            # An option set during the epoch applies from the next one: record this one's.
            options = self._pipeline.options
        elif self._resume is not None:
            epoch, seed, done = self._resume["epoch"], self._resume["seed"], self._resume["batches"]
        else:
            epoch, seed, done = self._next_epoch, None, 0
        state = {"version": _STATE_VERSION, "epoch": epoch, "seed": seed, "batches": done}
        return {**state, **options.state(), "num_rows": self.dataset.num_rows}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`; the next ``iter()`` resumes that epoch at the next batch."""
        if state.get("version") != _STATE_VERSION:
            raise ValueError(f"unsupported loader state version {state.get('version')!r}")
        self.options.check_state(state)
        if state["num_rows"] != self.dataset.num_rows:
            raise ValueError(f"loader state has num_rows={state['num_rows']!r} but this loader has num_rows={self.dataset.num_rows!r}")
        self._stop_epoch()
        epoch, done = int(state["epoch"]), int(state["batches"])
        if done >= self._epoch_len():
            self._next_epoch, self._resume = epoch + 1, None
        else:
            seed = None if state["seed"] is None else int(state["seed"])
            self._next_epoch, self._resume = epoch, {"epoch": epoch, "seed": seed, "batches": done}

    # ---------------------------------------------------------------- shutdown
    def _stop_epoch(self) -> None:
        self._running = False
        self._peeked = None
        if self._pipeline is not None:
            self._pipeline.shutdown()
        _RUNNING.discard(self)

    def shutdown(self) -> None:
        """Stop the background thread of the epoch in progress (if any), wait for it, and
        release the host memory kept for recycling. The loader can iterate again."""
        self._stop_epoch()
        self._memory.clear()

    def stop(self) -> None:
        """NVTabular's and merlin's name of :meth:`shutdown`."""
        self.shutdown()

    def __enter__(self) -> "LoaderBase":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    def __del__(self) -> None:
        try:
            self._stop_epoch()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn down modules
            pass

    # ------------------------------------------------------------------- misc
    def new(self, **overrides: Any) -> "LoaderBase":
        """A loader with the same arguments (and ``map`` functions) except ``overrides``;
        it has its own epoch counter."""
        arguments = {**self.options.as_dict(), **self._arguments, **overrides}
        clone = type(self)(self.dataset, **arguments)
        if self._schema_set:
            clone.input_schema = self._input_schema
        clone._map_fns = list(self._map_fns)
        clone._epochs_per_iter = self._epochs_per_iter
        return clone
