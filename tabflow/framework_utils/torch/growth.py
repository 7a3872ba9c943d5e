"""Growing a trained model's embedding tables to a workflow's new cardinalities.

After :meth:`tabflow.Workflow.partial_fit` a vocabulary keeps every index it had and adds
new ones after them, so a model trained on yesterday's indices stays valid for every known
value: its tables only need rows for the new ones. :func:`grow_embeddings` appends those
rows to each ``nn.Embedding`` / ``nn.EmbeddingBag`` in place (the parameter objects stay the
same, so optimizers keep referring to them), initialised as the model's own tables are, and
grows the optimizer state kept per row (Adam's moments, SGD's momentum, Adagrad's sums,
fastai's averages) with the values a fresh row would have.

Examples
--------
>>> import torch
>>> from torch import nn
>>> from tabflow.framework_utils.torch import grow_embeddings
>>> model = nn.ModuleDict({"user": nn.Embedding(5, 3), "head": nn.Linear(3, 1)})
>>> opt = torch.optim.Adam(model.parameters(), lr=0.1)
>>> before = model["user"].weight.detach().clone()
>>> model["user"](torch.tensor([4])).sum().backward(); opt.step()
>>> grown = grow_embeddings(model, {"user": 8}, opt)
>>> grown, tuple(model["user"].weight.shape), tuple(opt.state[model["user"].weight]["exp_avg"].shape)
({'user': (5, 8)}, (8, 3), (8, 3))
>>> bool(torch.equal(model["user"].weight[:4], before[:4]))  # rows that got no gradient stay as trained
True
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Iterable, Mapping, Sequence

import torch
from torch import nn

from tabflow.framework_utils.torch.layers.embeddings import ConcatenatedEmbeddings, MultiHotEmbeddings
from tabflow.framework_utils.torch.layers.tables import EmbeddingTables

__all__ = ["grow_embeddings"]

_TABLES = (nn.Embedding, nn.EmbeddingBag)


def grow_embeddings(model: nn.Module, sizes: Any, optimizer: Any = None) -> dict[str, tuple[int, int]]:
    """Give the embedding tables of ``model`` the rows ``sizes`` asks for, keeping every
    learned row.

    Parameters
    ----------
    model : torch.nn.Module
        Any module holding ``nn.Embedding`` or ``nn.EmbeddingBag`` tables: tabflow's
        :class:`~tabflow.framework_utils.torch.EmbeddingTables` (and so ``DLRM``),
        ``ConcatenatedEmbeddings`` and ``MultiHotEmbeddings`` (and so ``Model``), fastai's
        ``TabularModel``, or a user's own modules.
    sizes : dict, tuple of two dicts, or list
        The new number of rows of each table, as ``{name: cardinality}`` or
        ``{name: (cardinality, dim)}`` (what :func:`tabflow.ops.get_embedding_sizes` gives
        for a workflow after :meth:`~tabflow.Workflow.partial_fit`, its ``(single_hot,
        multi_hot)`` pair included). A name is a column of tabflow's embedding layers (for
        ``EmbeddingTables``, a feature or a table name) or, for any other table, its path in
        ``model.named_modules()`` (``"embeds.0"``). A list gives the sizes of the model's
        tables in the order ``named_modules`` meets them (fastai's ``emb_szs`` order for a
        ``TabularModel``). A dim, when given, is ignored: a table keeps the width the model
        gave it (``get_embedding_sizes`` suggests a wider one as a vocabulary grows).
    optimizer : torch.optim.Optimizer, fastai Learner or Optimizer, or a list of them, optional
        Their per-parameter state tensors shaped as a grown table (Adam's ``exp_avg`` and
        ``exp_avg_sq``, SGD's ``momentum_buffer``, Adagrad's ``sum``, fastai's
        ``grad_avg`` and ``sqr_avg``) get rows for the new indices: zeros, or Adagrad's
        ``initial_accumulator_value``, as a parameter that never had a gradient has. Scalar
        state (Adam's ``step``) is the parameter's and stays.

    Returns
    -------
    dict
        ``{name: (rows before, rows after)}`` of the tables that grew.

    Notes
    -----
    New rows are initialised as the model's tables are: ``EmbeddingTables`` draws them
    uniform in ``±1/sqrt(rows)`` of the grown table, as it draws a new table's; any other
    table takes them from a new module of its own class (``nn.Embedding``'s normal
    distribution, fastai's truncated normal), made for the new rows alone. A table never
    shrinks: fewer rows than it has is an error, as is a name that matches no table. The
    padding row (0) keeps its zeros. Gradients of a grown table are dropped (they had the
    old shape); call it between optimizer steps.

    Adam's bias correction counts steps per parameter, not per row: a new row's first
    updates are not damped as a fresh table's would be. With many new rows, a few steps at
    a lower learning rate (or fastai's ``fit_one_cycle`` warm-up) let them settle.
    """
    tables = _named_tables(model)
    wanted = _wanted_rows(sizes, tables)
    optimizers = _optimizers(optimizer)
    grown: dict[str, tuple[int, int]] = {}
    for name, rows in wanted.items():
        owner, module = tables[name]
        before = module.weight.shape[0]
        if rows < before:
            raise ValueError(
                f"embedding table {name!r} has {before} rows, more than the {rows} asked for: a table only grows "
                "(an update keeps every index a vocabulary had)"
            )
        if rows == before:
            continue
        added = _new_rows(owner, module, rows)
        weight = module.weight
        with torch.no_grad():
            weight.data = torch.cat([weight.data, added.to(dtype=weight.dtype, device=weight.device)])
        weight.grad = None
        module.num_embeddings = rows
        for opt in optimizers:
            _grow_state(opt, weight, before, rows)
        if isinstance(owner, EmbeddingTables):
            owner.features = [f if f.table != name else replace(f, cardinality=rows) for f in owner.features]
        grown[name] = (before, rows)
    return grown


def _named_tables(model: nn.Module) -> dict[str, tuple[nn.Module | None, nn.Module]]:
    """``{name: (tabflow layer holding it or None, table)}``, in ``named_modules`` order;
    a table of a tabflow layer is named by its column (and for ``EmbeddingTables`` also by
    its table name), any other by its path."""
    owned: dict[int, tuple[list[str], nn.Module]] = {}
    for module in model.modules():
        if isinstance(module, EmbeddingTables):
            for table, layer in module.tables.items():
                names = [table, *(f.name for f in module.features if f.table == table and f.name != table)]
                owned[id(layer)] = (names, module)
        elif isinstance(module, (ConcatenatedEmbeddings, MultiHotEmbeddings)):
            for column, layer in zip(module.embedding_names, module.embedding_layers):
                owned[id(layer)] = ([column], module)
    found: dict[str, tuple[nn.Module | None, nn.Module]] = {}
    for path, module in model.named_modules():
        if not isinstance(module, _TABLES):
            continue
        names, owner = owned.get(id(module), ([path], None))
        for name in names:
            found.setdefault(name, (owner, module))
    return found


def _wanted_rows(sizes: Any, tables: dict[str, tuple[nn.Module | None, nn.Module]]) -> dict[str, int]:
    """``{table name: rows}``, one entry per distinct table."""
    if isinstance(sizes, tuple) and len(sizes) == 2 and all(isinstance(s, Mapping) for s in sizes):
        sizes = {**sizes[0], **sizes[1]}  # get_embedding_sizes' (single_hot, multi_hot)
    if isinstance(sizes, Mapping):
        pairs = list(sizes.items())
    elif isinstance(sizes, Sequence) and not isinstance(sizes, str):
        distinct = list({id(module): name for name, (_, module) in tables.items()}.values())
        if len(sizes) != len(distinct):
            raise ValueError(f"{len(sizes)} sizes for the model's {len(distinct)} embedding tables ({distinct})")
        pairs = list(zip(distinct, sizes))
    else:
        raise TypeError(f"sizes must be a dict of table name to cardinality or a list of them, got {type(sizes).__name__}")
    wanted: dict[str, int] = {}
    seen: dict[int, str] = {}
    for name, size in pairs:
        if name not in tables:
            raise KeyError(f"the model has no embedding table {name!r}; its tables are {sorted(tables)}")
        rows = _rows(name, size)
        module = tables[name][1]
        first = seen.setdefault(id(module), str(name))
        if first in wanted and wanted[first] != rows:
            raise ValueError(f"{first!r} and {name!r} share a table but ask for {wanted[first]} and {rows} rows")
        wanted[first] = rows
    return wanted


def _rows(name: str, size: Any) -> int:
    if isinstance(size, Sequence) and not isinstance(size, str) and len(size) == 2:
        return int(size[0])  # (cardinality, dim): the width stays the model's
    try:
        return int(size)
    except (TypeError, ValueError):
        raise TypeError(f"size of {name!r} must be a cardinality or (cardinality, dim), got {size!r:.60}") from None


def _new_rows(owner: nn.Module | None, module: nn.Module, rows: int) -> torch.Tensor:
    """Weights for rows ``len(weight) .. rows - 1``, drawn as the table's own were."""
    added, dim = rows - module.weight.shape[0], module.weight.shape[1]
    if isinstance(owner, EmbeddingTables):
        bound = 1.0 / math.sqrt(rows)  # EmbeddingTables' rule, for the grown table
        return torch.empty(added, dim).uniform_(-bound, bound)
    try:
        # The class's own initialisation (a subclass such as fastai's Embedding sets it in
        # __init__), for the new rows alone: no copy of the whole table is made.
        fresh = type(module)(added, dim)
    except TypeError:  # a subclass with another signature: nn.Embedding's initialisation
        fresh = nn.Embedding(added, dim)
    return fresh.weight.detach()


def _optimizers(optimizer: Any) -> list[Any]:
    if optimizer is None:
        return []
    if isinstance(optimizer, (list, tuple)):
        return [o for item in optimizer for o in _optimizers(item)]
    if hasattr(optimizer, "opt") and hasattr(optimizer, "model"):  # a fastai Learner
        return [] if optimizer.opt is None else [optimizer.opt]
    if not hasattr(optimizer, "state"):
        raise TypeError(f"optimizer must be a torch optimizer or a fastai Learner or Optimizer, got {type(optimizer).__name__}")
    return [optimizer]


def _grow_state(optimizer: Any, parameter: nn.Parameter, before: int, rows: int) -> None:
    """Rows for the new indices in the state ``optimizer`` keeps for ``parameter``."""
    state = optimizer.state.get(parameter) if hasattr(optimizer.state, "get") else None
    if not state:
        return
    fill = 0.0
    for group in _param_groups(optimizer):
        if any(p is parameter for p in _group_params(group)):
            fill = float(group.get("initial_accumulator_value", 0.0)) if hasattr(group, "get") else 0.0
    for key, value in list(state.items()):
        if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == before and value.shape[1:] == parameter.shape[1:]:
            extra = torch.full((rows - before, *value.shape[1:]), fill if key == "sum" else 0.0, dtype=value.dtype, device=value.device)
            state[key] = torch.cat([value, extra])


def _param_groups(optimizer: Any) -> Iterable[Any]:
    # torch: param_groups of dicts; fastai: hypers beside param_lists.
    if hasattr(optimizer, "param_groups") and isinstance(optimizer.param_groups, list):
        return optimizer.param_groups
    return []


def _group_params(group: Any) -> Iterable[Any]:
    return group.get("params", []) if hasattr(group, "get") else []
