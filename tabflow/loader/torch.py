"""PyTorch data loading: ``TorchAsyncItr`` (fastai-style tuples), ``Loader`` (dicts) and
``DLDataLoader`` (a ``torch.utils.data.DataLoader`` that fastai's ``Learner`` accepts).

Both iterators read a :class:`tabflow.Dataset` a few partitions at a time in a background
thread, convert each column to a tensor once per chunk and deliver batches as views of the
chunk tensors. Rows are split between data-parallel ranks, shuffled per epoch with a
reproducible seed, and an epoch can be resumed mid-way from :meth:`TorchAsyncItr.state_dict`.
The parts they are made of live in :mod:`tabflow.loader._pipeline`.

Embedding tables and models moved to :mod:`tabflow.framework_utils.torch`; importing them
from here raises an ``ImportError`` that gives the new import.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.loader.torch import TorchAsyncItr
>>> df = pd.DataFrame({"c": [1, 2, 3, 4, 5], "x": [0.1, 0.2, 0.3, 0.4, 0.5], "y": [0, 1, 0, 1, 1]})
>>> with TorchAsyncItr(nvt.Dataset(df), batch_size=2, cats=["c"], conts=["x"], labels=["y"]) as itr:
...     [tuple(x_cat.shape) for x_cat, x_cont, y in itr]
[(2, 1), (2, 1), (1, 1)]
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import torch

from tabflow.loader._columns import DictColumns, async_itr_columns
from tabflow.loader._loader import LoaderBase, arguments_of
from tabflow.loader.options import OPTIONS_DOC

__all__ = ["TorchAsyncItr", "Loader", "DLDataLoader"]

# Names that lived here before torch modules got one home: a loader only moves data.
_MOVED = {
    "EmbeddingTables": "from tabflow.framework_utils.torch import EmbeddingTables",
    "EmbeddingFeature": "from tabflow.framework_utils.torch import EmbeddingFeature",
    "embedding_config": "from tabflow.framework_utils.torch import embedding_config",
    "sparse_and_dense_parameters": "from tabflow.framework_utils.torch import sparse_and_dense_parameters",
    "DLRM": "from tabflow.framework_utils.torch import DLRM",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        raise ImportError(f"{name} moved to tabflow.framework_utils.torch: {_MOVED[name]}", name=name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TorchAsyncItr(LoaderBase):
    """Batches ``(x_cat, x_cont, y)`` ready for fastai's ``TabularModel``.

    ``x_cat`` is int64 ``[bs, len(cats)]``, ``x_cont`` float32 ``[bs, len(conts)]``, in the
    given column order; ``y`` is float32 ``[bs]`` for one label (``y.long()`` gives the class
    indices ``CrossEntropyLoss`` expects) or ``[bs, len(labels)]`` for several. A null in a
    continuous column becomes NaN; a null in a categorical or label column is an error that
    names the column.

    With a list (multi-hot) column among ``cats`` or ``conts``, or any of ``sparse_names``,
    ``sparse_max``, ``sparse_as_dense``, the batches take the form NVTabular 23.08's
    ``TorchAsyncItr`` gave: ``(inputs, targets)`` with ``inputs`` a dict of the ``cats`` and
    ``conts`` columns laid out as :class:`Loader` lays them out (``name__values`` /
    ``name__offsets``, a dense ``[bs, *shape]`` tensor for a column whose schema fixes its
    shape, padded or sparse tensors), and targets in their own dtypes.

    The arguments are in NVTabular's order (``dataset, cats, conts, labels, batch_size, ...``).

    Parameters
    ----------
    dataset : tabflow.Dataset
    cats, conts, labels : list of str, optional
        Column roles; each defaults to the dataset schema's columns tagged CATEGORICAL,
        CONTINUOUS or TARGET. A role with no columns gives a ``[bs, 0]`` tensor. List
        (multi-hot) columns give the dict form above; targets are scalar columns.
    batch_size, shuffle, seed_fn, parts_per_chunk, device, global_size, global_rank, drop_last :
        See below; held together in ``options``
        (:class:`~tabflow.loader.options.LoaderOptions`).
    sparse_names, sparse_max, sparse_as_dense :
        As :class:`Loader`'s (and they give the dict form).
    {shared}

    Attributes
    ----------
    options : LoaderOptions
    cat_names, cont_names, label_names : list of str
    input_schema, output_schema : Schema
        The schema columns are chosen from (settable before iterating), and the delivered
        columns with their tensor dtypes.
    num_rows_processed : int
        Rows delivered so far in the current epoch.

    Notes
    -----
    As merlin's loaders: ``next(itr)`` starts an epoch when none is in progress,
    :meth:`peek` returns the next batch without consuming it, ``itr[i]`` the next batch,
    :meth:`map` applies a function to every batch, :meth:`epochs` iterates several epochs
    per ``iter()`` and :meth:`stop` is :meth:`shutdown`.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow.loader.torch import TorchAsyncItr
    >>> ds = nvt.Dataset(pd.DataFrame({{"c": [3, 1, 2], "x": [1.0, None, 2.0], "y": [1, 0, 1]}}))
    >>> itr = TorchAsyncItr(ds, batch_size=3, cats=["c"], conts=["x"], labels=["y"])
    >>> x_cat, x_cont, y = next(iter(itr))
    >>> x_cat.dtype, x_cont[:, 0].tolist(), y.long().tolist(), len(itr)
    (torch.int64, [1.0, nan, 2.0], [1, 0, 1], 1)
    >>> itr.shutdown()

    A list column gives NVTabular 23.08's dict form:

    >>> import pyarrow as pa
    >>> df = pd.DataFrame({{"c": [1, 2], "y": [0, 1]}})
    >>> df["genres"] = pd.Series([[1, 2], [3]], dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    >>> with TorchAsyncItr(nvt.Dataset(df), cats=["c", "genres"], labels=["y"], batch_size=2) as itr:
    ...     inputs, y = next(iter(itr))
    >>> sorted(inputs), inputs["genres__offsets"].tolist(), y.tolist()
    (['c', 'genres__offsets', 'genres__values'], [0, 2, 3], [0, 1])
    """

    def __init__(
        self,
        dataset: Any,
        cats: Sequence[str] | None = None,
        conts: Sequence[str] | None = None,
        labels: Sequence[str] | None = None,
        batch_size: int = 1,
        shuffle: bool = False,
        seed_fn: Callable[[], int] | None = None,
        parts_per_chunk: int = 1,
        device: Any = None,
        global_size: int | None = None,
        global_rank: int | None = None,
        drop_last: bool = False,
        sparse_names: Sequence[str] | None = None,
        sparse_max: Mapping[str, int] | None = None,
        sparse_as_dense: bool = False,
    ) -> None:
        super().__init__(dataset, arguments_of(locals()), async_itr_columns)


class Loader(LoaderBase):
    """Batches ``(inputs, targets)`` with ``inputs`` a dict of named tensors.

    Scalar columns are ``[bs]`` tensors under their own name. A list (multi-hot) column
    ``name`` is, by default, two tensors: ``name__values`` (all elements of the batch's rows)
    and ``name__offsets`` (int64, ``bs + 1`` entries, row ``i`` is
    ``values[offsets[i]:offsets[i + 1]]``, the layout ``nn.EmbeddingBag`` takes with
    ``include_last_offset=True``); :mod:`tabflow.loader.keys` spells these keys. With
    ``sparse_as_dense=True`` every list column is instead a zero-padded
    ``[bs, sparse_max[name]]`` tensor; a column listed in ``sparse_names`` (and not made
    dense) is a ``torch.sparse_coo_tensor`` of shape
    ``[bs, sparse_max.get(name, longest row in the batch)]``. A row longer than its
    ``sparse_max`` is an error naming the column and the length; rows are never truncated.

    ``targets`` is one tensor for one target column, a dict for several (multi-task), None
    for none.

    Parameters
    ----------
    dataset : tabflow.Dataset
    batch_size, shuffle, seed_fn, parts_per_chunk, device, global_size, global_rank, drop_last :
        See below; held together in ``options``
        (:class:`~tabflow.loader.options.LoaderOptions`).
    cats, conts, labels : list of str, optional
        Categorical columns become int64, continuous float32 (nulls -> NaN). ``labels``
        defaults to the columns tagged TARGET. When ``cats`` and ``conts`` are both omitted,
        every other column is an input, with int64 for integers and float32 for floats.
    transforms : op, node, Workflow, callable, or a list of them, optional
        tabflow ops and nodes (or one fitted ``Workflow``) act on the input columns, as
        merlin's operators do: ``[ops.Rename(postfix="_x")]`` chains ops after all inputs, a
        node (``["a"] >> ops.LogOp()``) selects its own; its outputs become the inputs.
        They run on each partition before it becomes tensors, must keep every row, and
        statistics ops must be fitted. Callables follow, in order: each takes the
        ``(inputs, targets)`` pair of a batch and returns a new pair.
    sparse_names : list of str, optional
        List columns to deliver as sparse COO tensors.
    sparse_max : dict, optional
        Maximum row length of list columns (the dense / sparse width).
    sparse_as_dense : bool
        Deliver all list columns padded dense (each needs a ``sparse_max`` entry).
    {shared}

    Attributes
    ----------
    options : LoaderOptions
    cat_names, cont_names, label_names, input_names : list of str
    input_schema, output_schema : Schema
    num_rows_processed : int

    Examples
    --------
    >>> import pandas as pd, pyarrow as pa
    >>> import tabflow as nvt
    >>> from tabflow.loader.torch import Loader
    >>> df = pd.DataFrame({{"item": [1, 2], "y": [0.0, 1.0]}})
    >>> df["tags"] = pd.Series([[1, 2], [3]], dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    >>> with Loader(nvt.Dataset(df), batch_size=2, labels=["y"]) as loader:
    ...     inputs, y = next(iter(loader))
    >>> sorted(inputs), inputs["tags__offsets"].tolist(), y.tolist()
    (['item', 'tags__offsets', 'tags__values'], [0, 2, 3], [0.0, 1.0])
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int = 1,
        shuffle: bool = False,
        seed_fn: Callable[[], int] | None = None,
        parts_per_chunk: int = 1,
        device: Any = None,
        global_size: int | None = None,
        global_rank: int | None = None,
        drop_last: bool = False,
        cats: Sequence[str] | None = None,
        conts: Sequence[str] | None = None,
        labels: Sequence[str] | None = None,
        transforms: Any = None,
        sparse_names: Sequence[str] | None = None,
        sparse_max: Mapping[str, int] | None = None,
        sparse_as_dense: bool = False,
    ) -> None:
        super().__init__(dataset, arguments_of(locals()), DictColumns)

    @property
    def input_names(self) -> list[str]:
        """The columns of ``inputs`` (a list column as its ``__values`` / ``__offsets`` pair)."""
        return self._columns.input_names

    @property
    def transforms(self) -> Any:
        """``transforms`` as given."""
        return self._arguments["transforms"]


def _identity(batch: Any) -> Any:
    return batch


def _only(batches: Sequence[Any]) -> Any:
    return batches[0]


class DLDataLoader(torch.utils.data.DataLoader):
    """A ``torch.utils.data.DataLoader`` over a :class:`TorchAsyncItr` or :class:`Loader`.

    The iterator already yields whole batches; as in NVTabular (a plain DataLoader subclass),
    ``batch_size`` says what ``collate_fn`` receives:

    - ``batch_size=1`` (the default, DataLoader's): a list holding one batch, ``[batch]``,
      which is why NVTabular scripts write ``collate_fn=lambda b: b[0]``;
    - ``batch_size=None``: the batch itself (``collate_fn=lambda x: x`` passes it on).

    Without a ``collate_fn`` the batch is delivered as the iterator made it, in both modes
    (a DataLoader's default collate would add a leading dimension of 1 to every tensor).
    Loading happens in the iterator's own thread (``num_workers=0``). Besides the DataLoader
    API it offers what fastai's ``Learner`` uses: ``device``, ``to()``, ``one_batch()``,
    ``new()``, ``n_inp``, ``bs`` and ``n``, so ``DataLoaders(train_dl, valid_dl)`` (or
    fastai's ``TabularDataLoaders``) can drive ``fit``, ``validate``, ``get_preds``,
    ``summary`` and ``lr_find``.

    Parameters
    ----------
    dataset : TorchAsyncItr or Loader
    batch_size : 1 or None
    collate_fn : callable, optional
        Applied to what ``batch_size`` says, e.g. ``lambda b: (b[0], b[1], b[2].long())``
        with ``batch_size=None``.
    pin_memory : bool
    num_workers : int
        Must be 0.
    **kwargs
        Passed to ``torch.utils.data.DataLoader``.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow.loader.torch import DLDataLoader, TorchAsyncItr
    >>> ds = nvt.Dataset(pd.DataFrame({"c": [1, 2, 3], "x": [1.0, 2.0, 3.0], "y": [0, 1, 1]}))
    >>> itr = TorchAsyncItr(ds, batch_size=2, cats=["c"], conts=["x"], labels=["y"])
    >>> dl = DLDataLoader(itr, collate_fn=lambda b: (b[0], b[1], b[2].long()), batch_size=None)
    >>> len(dl), dl.device, [b[2].tolist() for b in dl]
    (2, device(type='cpu'), [[0, 1], [1]])
    >>> [len(b) for b in DLDataLoader(itr, collate_fn=lambda b: b)]  # batch_size=1: a list of one batch
    [1, 1]
    """

    def __init__(
        self,
        dataset: LoaderBase,
        batch_size: int | None = 1,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        num_workers: int = 0,
        **kwargs: Any,
    ) -> None:
        if batch_size is not None and (isinstance(batch_size, bool) or batch_size != 1):
            raise ValueError(
                f"DLDataLoader: the iterator makes the batches (batch_size={getattr(dataset, 'batch_size', '?')}); "
                f"pass batch_size=None (collate_fn gets each batch) or 1 (collate_fn gets [batch]), not {batch_size!r}"
            )
        if num_workers:
            raise ValueError(
                "DLDataLoader: num_workers must be 0; the iterator reads ahead in its own thread "
                "(worker processes would each read the whole dataset)"
            )
        self._user_collate = collate_fn
        self._n_inp: int | None = None
        default = _identity if batch_size is None else _only
        super().__init__(
            dataset, batch_size=batch_size, collate_fn=collate_fn or default, pin_memory=pin_memory, num_workers=0, **kwargs
        )

    @property
    def device(self) -> torch.device:
        return self.dataset.device

    def to(self, device: Any) -> "DLDataLoader":
        """Deliver later epochs' batches on ``device``."""
        self.dataset.device = device
        return self

    def __len__(self) -> int:
        return len(self.dataset)

    def _collate(self, batch: Any) -> Any:
        return self.collate_fn(batch if self.batch_size is None else [batch])

    @property
    def n_inp(self) -> int:
        """How many leading batch elements are model inputs (fastai splits batches with it).

        fastai's rule: every element of a tuple batch but the last. Without a ``collate_fn``
        that is 2 for ``TorchAsyncItr`` and 1 for ``Loader``; with one (say
        ``FastaiTransform(loader).transform``, which makes ``Loader`` batches 3-tuples) it
        is read off one collated batch, once.
        """
        if self._n_inp is None:
            if self._user_collate is None:
                self._n_inp = self.dataset._columns.n_inp
            else:
                batch = self.one_batch()
                self._n_inp = len(batch) - 1 if isinstance(batch, (tuple, list)) and len(batch) > 1 else 1
        return self._n_inp

    @property
    def bs(self) -> int:
        return self.dataset.batch_size

    @property
    def n(self) -> int:
        """Rows per epoch on this rank."""
        return self.dataset.rows_per_epoch

    def one_batch(self) -> Any:
        """The first batch of an unshuffled epoch, collated; the loader's own state is untouched."""
        probe = self.dataset.new(shuffle=False)
        try:
            batch = next(iter(probe))
        finally:
            probe.shutdown()
        return self._collate(batch)

    def new(self, dataset: LoaderBase | None = None, **kwargs: Any) -> "DLDataLoader":
        """A DLDataLoader like this one; ``kwargs`` (``shuffle``, ``drop_last``, ...) go to the iterator."""
        if dataset is None:
            dataset = self.dataset.new(**kwargs)
        return type(self)(dataset, batch_size=self.batch_size, collate_fn=self._user_collate, pin_memory=self.pin_memory)

    def state_dict(self) -> dict[str, Any]:
        """The iterator's :meth:`TorchAsyncItr.state_dict` (for mid-epoch checkpoints)."""
        return self.dataset.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.dataset.load_state_dict(state)

    def shutdown(self) -> None:
        """Stop the iterator's background thread."""
        self.dataset.shutdown()

    def __enter__(self) -> "DLDataLoader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


for _cls in (TorchAsyncItr, Loader):
    if _cls.__doc__:  # None under python -OO
        _cls.__doc__ = _cls.__doc__.format(shared=OPTIONS_DOC)
del _cls
