"""Training-loop helpers of NVTabular's PyTorch examples: ``process_epoch`` and batch converters.

tabflow has two batch forms, and both converters accept either:

- :class:`~tabflow.loader.torch.TorchAsyncItr` yields ``(x_cat, x_cont, y)``: int64
  ``[batch, n_cats]``, float32 ``[batch, n_conts]`` and the labels;
- :class:`~tabflow.loader.torch.Loader` yields ``(inputs, targets)``: a dict with one ``[batch]``
  (or ``[batch, 1]``) tensor per scalar column, ``name__values`` + ``name__offsets`` (or a padded
  or sparse tensor under ``name``) per list column, and the targets.

:class:`DictTransform` turns either into ``((x_single, multi_hot), x_cont, labels)`` for
:class:`~tabflow.framework_utils.torch.models.Model`; :class:`FastaiTransform` into the
``(x_cat long, x_cont, y long)`` triple of fastai's ``TabularModel`` (list columns are left
out). :func:`process_epoch` runs one training or evaluation pass.

Examples
--------
>>> import pandas as pd, torch
>>> import tabflow as nvt
>>> from tabflow.loader.torch import TorchAsyncItr
>>> from tabflow.framework_utils.torch.models import Model
>>> from tabflow.framework_utils.torch.utils import process_epoch
>>> df = pd.DataFrame({"c": [1, 2, 3, 4] * 8, "x": [0.5, 1.0, 1.5, 2.0] * 8})
>>> df["y"] = df["x"] * 2
>>> itr = TorchAsyncItr(nvt.Dataset(df), batch_size=8, cats=["c"], conts=["x"], labels=["y"])
>>> model = Model({"c": (5, 2)}, 1, 0.0, [8], [0.0])
>>> opt = torch.optim.Adam(model.parameters(), lr=0.01)
>>> loss, y_pred, y = process_epoch(itr, model, train=True, optimizer=opt)
Total batches: 4
>>> y_pred.shape, y.shape
(torch.Size([32]), torch.Size([32]))
>>> itr.shutdown()
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Callable, Mapping, Sequence

import torch

from tabflow.loader.keys import OFFSETS_SUFFIX, list_column, ragged_pair

__all__ = ["DictTransform", "FastaiTransform", "process_epoch"]

Batch = Any
Triple = tuple[Any, Any, Any]


def _iterator_of(dataloader: Any) -> Any:
    """The tabflow iterator behind ``dataloader`` (a ``DLDataLoader`` wraps it as ``dataset``)."""
    if isinstance(dataloader, torch.utils.data.DataLoader):
        return dataloader.dataset
    return dataloader


def _is_triple(batch: Batch) -> bool:
    return isinstance(batch, (tuple, list)) and len(batch) == 3


def _split_dict_batch(batch: Batch) -> tuple[Mapping[str, Any], Any]:
    if isinstance(batch, (tuple, list)) and len(batch) == 2 and isinstance(batch[0], Mapping):
        return batch[0], batch[1]
    raise TypeError(
        "expected a batch of TorchAsyncItr, (x_cat, x_cont, y), or of Loader, (dict of tensors, targets); "
        f"got {type(batch).__name__}" + (f" of {len(batch)} items" if isinstance(batch, (tuple, list)) else "")
    )


class DictTransform:
    """Split a loader batch into the ``(x_cat, x_cont, labels)`` that ``Model`` takes.

    Parameters
    ----------
    dataloader : TorchAsyncItr, Loader or DLDataLoader
        Provides ``cat_names``, ``cont_names`` and ``label_names`` (a ``DLDataLoader``'s
        iterator is used).

    Attributes
    ----------
    cats, conts, labels : list of str
        The loader's column roles.

    Notes
    -----
    :meth:`transform` returns ``(cats, conts, labels)``:

    - ``cats``: ``(x_single, multi_hot)``, where ``x_single`` is the single-hot columns stacked
      into ``[batch, n]`` in ``cats`` order (None when there are none) and ``multi_hot`` is
      ``{name: data}`` for list columns: ``(values, offsets)`` from ``name__values`` /
      ``name__offsets`` (``batch + 1`` offsets), or the padded / sparse tensor. None when the
      loader has no categorical columns.
    - ``conts``: the continuous columns stacked into ``[batch, n]`` (None when there are none);
      a list column among them is a ``ValueError`` naming it.
    - ``labels``: the batch's labels or targets, unchanged.

    A ``TorchAsyncItr`` batch is already stacked: ``(x_cat, x_cont, y)`` becomes
    ``((x_cat, {}), x_cont, y)``, with the same None rules.

    Examples
    --------
    >>> import pandas as pd, pyarrow as pa
    >>> import tabflow as nvt
    >>> from tabflow.loader.torch import Loader
    >>> from tabflow.framework_utils.torch.utils import DictTransform
    >>> df = pd.DataFrame({"a": [1, 2], "b": [3, 4], "x": [0.5, 1.5], "y": [0.0, 1.0]})
    >>> df["tags"] = pd.Series([[1, 2], [3]], dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    >>> loader = Loader(nvt.Dataset(df), batch_size=2, cats=["a", "tags", "b"], conts=["x"], labels=["y"])
    >>> (x_single, multi_hot), x_cont, y = DictTransform(loader).transform(next(iter(loader)))
    >>> x_single.tolist(), {k: [t.tolist() for t in v] for k, v in multi_hot.items()}, x_cont.tolist()
    ([[1, 3], [2, 4]], {'tags': [[1, 2, 3], [0, 2, 3]]}, [[0.5], [1.5]])
    >>> loader.shutdown()
    """

    def __init__(self, dataloader: Any) -> None:
        source = _iterator_of(dataloader)
        try:
            self.cats = list(source.cat_names)
            self.conts = list(source.cont_names)
            self.labels = list(source.label_names)
        except AttributeError:
            raise TypeError(
                f"{type(dataloader).__name__} has no cat_names/cont_names/label_names; pass the TorchAsyncItr, "
                "Loader or DLDataLoader the batches come from (process_epoch(..., transform=None) takes "
                "(x_cat, x_cont, y) batches from any iterable)"
            ) from None
        self._list_columns = _list_columns(source, self.cats + self.conts)

    def transform(self, batch: Batch) -> Triple:
        """``(cats, conts, labels)`` for one batch (see Notes of the class)."""
        if _is_triple(batch):
            x_cat, x_cont, labels = batch
            cats = None
            if self.cats:
                cats = x_cat if isinstance(x_cat, tuple) else (x_cat, {})
            conts = x_cont if self.conts and _width(x_cont) else None
            return cats, conts, labels
        inputs, labels = _split_dict_batch(batch)
        cats = self.create_stack(inputs, self.cats) if self.cats else None
        conts = None
        if self.conts:
            conts, lists = self.create_stack(inputs, self.conts)
            if lists:
                raise ValueError(
                    f"continuous column(s) {sorted(lists)} are list columns (a [batch, *shape] tensor or values "
                    "and offsets); x_cont stacks scalar columns only: load them as categorical (multi-hot) "
                    "columns, or flatten them into scalar columns before loading"
                )
        return cats, conts, labels

    def create_stack(self, batch: Mapping[str, Any], target_columns: Sequence[str]) -> tuple[torch.Tensor | None, dict]:
        """Stack the scalar columns of ``target_columns`` into ``[batch, n]``; collect list columns.

        Returns ``(stacked or None, {name: multi-hot data})``.
        """
        scalars, multi_hot = [], {}
        for name in target_columns:
            if name in batch:
                column = batch[name]
                if isinstance(column, (tuple, list)) or _is_list_tensor(column, name in self._list_columns):
                    multi_hot[name] = column
                else:
                    scalars.append(column.unsqueeze(1) if column.dim() == 1 else column)
            elif ragged_pair(batch, name) is not None:
                multi_hot[name] = ragged_pair(batch, name)
            else:
                raise KeyError(f"the batch has no column {name!r}; its keys are {sorted(batch)}")
        stacked = None
        if scalars:
            stacked = torch.cat(scalars, dim=1) if len(scalars) > 1 else scalars[0]
        return stacked, multi_hot


class FastaiTransform:
    """Turn a loader batch into fastai's ``(x_cat, x_cont, y)``, with int64 ``x_cat`` and ``y``.

    Use ``FastaiTransform(itr).transform`` as the ``collate_fn`` of a ``DLDataLoader`` feeding
    a fastai ``TabularModel`` trained with ``CrossEntropyLoss``.

    Parameters
    ----------
    dataloader : TorchAsyncItr, Loader or DLDataLoader

    Attributes
    ----------
    data : DictTransform
        The column roles (``data.cats``, ``data.conts``, ``data.labels``).

    Notes
    -----
    ``x_cat`` is ``[batch, n_cats]`` int64 and ``x_cont`` ``[batch, n_conts]`` (``[batch, 0]``
    when there are none), both in the loader's column order; list columns are left out
    (``TabularModel`` has no multi-hot input). ``y`` is the labels as int64: ``[batch]`` for
    one label, ``[batch, n]`` (in ``label_names`` order) for several. Tensors stay on the
    device the loader put them on.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow.loader.torch import DLDataLoader, TorchAsyncItr
    >>> from tabflow.framework_utils.torch.utils import FastaiTransform
    >>> df = pd.DataFrame({"c": [1, 2, 3], "x": [0.1, 0.2, 0.3], "label": [0, 1, 1]})
    >>> itr = TorchAsyncItr(nvt.Dataset(df), batch_size=3, cats=["c"], conts=["x"], labels=["label"])
    >>> dl = DLDataLoader(itr, collate_fn=FastaiTransform(itr).transform, batch_size=None)
    >>> x_cat, x_cont, y = next(iter(dl))
    >>> x_cat.dtype, x_cont.dtype, y.tolist()
    (torch.int64, torch.float32, [0, 1, 1])
    >>> itr.shutdown()
    """

    def __init__(self, dataloader: Any) -> None:
        self.data = DictTransform(dataloader)

    def transform(self, batch: Batch) -> Triple:
        """``(x_cat int64, x_cont, y int64)`` for one batch."""
        if _is_triple(batch):
            x_cat, x_cont, labels = batch
            if isinstance(x_cat, tuple):  # (single-hot, multi-hot): fastai takes the single-hot part
                x_cat = x_cat[0]
            return x_cat.long(), x_cont, self._long_labels(labels)
        inputs, labels = _split_dict_batch(batch)
        rows = _batch_rows(inputs, labels)
        x_cat, _ = self.data.create_stack(inputs, self.data.cats)
        x_cont, _ = self.data.create_stack(inputs, self.data.conts)
        device = _first_device(inputs, labels)
        if x_cat is None:
            x_cat = torch.zeros(rows, 0, dtype=torch.int64, device=device)
        if x_cont is None:
            x_cont = torch.zeros(rows, 0, dtype=torch.float32, device=device)
        return x_cat.long(), x_cont, self._long_labels(labels)

    def _long_labels(self, labels: Any) -> torch.Tensor:
        if labels is None:
            raise ValueError("FastaiTransform needs labels, but the batch has none; give the loader labels=[...]")
        if isinstance(labels, Mapping):
            order = [name for name in self.data.labels if name in labels] or list(labels)
            labels = torch.stack([labels[name].reshape(-1) for name in order], dim=1)
        return labels.long()


def process_epoch(
    dataloader: Any,
    model: torch.nn.Module,
    train: bool = False,
    optimizer: torch.optim.Optimizer | None = None,
    loss_func: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = torch.nn.MSELoss(),
    transform: Any = DictTransform,
    amp: bool = True,
    device: Any = None,
) -> tuple[float, torch.Tensor, torch.Tensor]:
    """Run ``model`` over one epoch of ``dataloader``, training it when ``train`` is True.

    Every batch becomes ``(x_cat, x_cont, y)`` through ``transform``; the model is called as
    ``model(x_cat, x_cont)`` and ``loss_func(y_pred, y)`` is minimised with ``optimizer``
    (``zero_grad``, ``backward``, ``step`` per batch). Prints ``Total batches: <n>``.

    Parameters
    ----------
    dataloader : iterable
        A ``TorchAsyncItr``, ``Loader``, or a ``DLDataLoader`` around one; each ``iter()``
        is one epoch.
    model : torch.nn.Module
        Put in training mode when ``train`` is True, evaluation mode otherwise.
    train : bool, default False
        Compute gradients and step ``optimizer``; otherwise evaluate without gradients.
    optimizer : torch.optim.Optimizer, optional
        Required when ``train`` is True.
    loss_func : callable, default ``torch.nn.MSELoss()``
    transform : class, object or callable, default DictTransform
        A class is built with the loader (``transform(loader).transform`` converts batches);
        an object with a ``transform`` method (``DictTransform(loader)``) or any callable
        (``DictTransform(loader).transform``) is used as is; None takes batches as
        ``(x_cat, x_cont, y)`` unchanged.
    amp : bool, default True
        Run the forward pass and loss under CUDA automatic mixed precision when the batch is
        on a CUDA device (no effect on CPU batches).
    device : str or torch.device, optional
        Move every batch (tensors nested in tuples and dicts included) there first.

    Returns
    -------
    loss : float
        ``loss_func`` over the whole epoch's predictions and labels.
    y_pred : torch.Tensor
        Predictions of every batch, concatenated (detached).
    y : torch.Tensor
        Labels of every batch, concatenated.

    Examples
    --------
    >>> import pandas as pd, torch
    >>> import tabflow as nvt
    >>> from tabflow.loader.torch import Loader
    >>> from tabflow.framework_utils.torch.models import Model
    >>> from tabflow.framework_utils.torch.utils import process_epoch
    >>> df = pd.DataFrame({"c": [1, 2] * 6, "x": [0.0, 1.0] * 6, "y": [0.0, 2.0] * 6})
    >>> loader = Loader(nvt.Dataset(df), batch_size=4, cats=["c"], conts=["x"], labels=["y"])
    >>> model = Model({"c": (3, 2)}, 1, 0.0, [4], [0.0])
    >>> loss, y_pred, y = process_epoch(loader, model)   # evaluation: no optimizer needed
    Total batches: 3
    >>> isinstance(loss, float), y.tolist()[:4]
    (True, [0.0, 2.0, 0.0, 2.0])
    >>> loader.shutdown()
    """
    if train and optimizer is None:
        raise ValueError("process_epoch(train=True) needs an optimizer")
    to_triple = _resolve_transform(transform, dataloader)
    model.train(mode=train)
    labels_seen, predictions = [], []
    with torch.set_grad_enabled(train):
        for batch in dataloader:
            x_cat, x_cont, y = to_triple(batch)
            if device is not None:
                x_cat, x_cont, y = (_to_device(part, device) for part in (x_cat, x_cont, y))
            labels_seen.append(y.detach())
            with _autocast(amp, y):
                y_pred = model(x_cat, x_cont)
                loss = loss_func(y_pred, y)
            predictions.append(y_pred.detach())
            if train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    print(f"Total batches: {len(labels_seen)}")
    if not labels_seen:
        raise ValueError("the dataloader yielded no batches: nothing to compute a loss over")
    y_all, y_pred_all = torch.cat(labels_seen), torch.cat(predictions)
    return loss_func(y_pred_all, y_all).item(), y_pred_all, y_all


# ------------------------------------------------------------------------------ helpers


def _resolve_transform(transform: Any, dataloader: Any) -> Callable[[Batch], Triple]:
    if transform is None:
        return _as_triple
    if isinstance(transform, type):
        return transform(_iterator_of(dataloader)).transform
    method = getattr(transform, "transform", None)
    if callable(method):
        return method
    if callable(transform):
        return transform
    raise TypeError(f"transform must be a class, an object with .transform, a callable or None; got {transform!r}")


def _as_triple(batch: Batch) -> Triple:
    if not _is_triple(batch):
        raise TypeError(
            "with transform=None every batch must be (x_cat, x_cont, y); this loader yields "
            f"{type(batch).__name__} batches: use transform=DictTransform"
        )
    return tuple(batch)


def _to_device(part: Any, device: Any) -> Any:
    if isinstance(part, torch.Tensor):
        return part.to(device)
    if isinstance(part, Mapping):
        return {name: _to_device(value, device) for name, value in part.items()}
    if isinstance(part, (tuple, list)):
        return type(part)(_to_device(value, device) for value in part)
    return part


def _autocast(amp: bool, y: Any) -> Any:
    # AMP is CUDA-only here, as in NVTabular; CPU autocast would change results to bfloat16.
    device = _first_device(y)
    if amp and device is not None and device.type == "cuda":
        return torch.autocast(device_type="cuda")
    return nullcontext()


def _first_device(*parts: Any) -> torch.device | None:
    for part in parts:
        if isinstance(part, torch.Tensor):
            return part.device
        if isinstance(part, Mapping):
            found = _first_device(*part.values())
        elif isinstance(part, (tuple, list)):
            found = _first_device(*part)
        else:
            found = None
        if found is not None:
            return found
    return None


def _batch_rows(inputs: Mapping[str, Any], labels: Any) -> int:
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and list_column(name) is None:
            return int(value.shape[0])
        if name.endswith(OFFSETS_SUFFIX):
            return int(value.shape[0]) - 1
    if isinstance(labels, torch.Tensor):
        return int(labels.shape[0])
    if isinstance(labels, Mapping) and labels:
        return int(next(iter(labels.values())).shape[0])
    raise ValueError("cannot tell the batch size: the batch has no tensors")


def _width(x: Any) -> int:
    if x is None:
        return 0
    return 1 if x.dim() == 1 else int(x.shape[-1])


def _is_list_tensor(column: torch.Tensor, declared_list: bool) -> bool:
    """A list column given as one tensor: sparse, padded ``[batch, width > 1]``, or declared so."""
    return bool(column.is_sparse or declared_list or (column.dim() == 2 and column.shape[1] != 1))


def _list_columns(source: Any, names: Sequence[str]) -> set[str]:
    """Columns the loader's dataset schema marks as lists (a padded width-1 list is still a list)."""
    schema = getattr(getattr(source, "dataset", None), "schema", None)
    if schema is None:
        return set()
    return {name for name in names if name in schema and schema[name].is_list}
