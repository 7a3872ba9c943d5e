"""NVTabular arguments and attribute names that ops accept only so that NVTabular scripts run.

NVTabular 23.08's ops take arguments that choose its own storage and lookup strategies
(``cat_cache``, ``on_host``, ``search_sorted``, ...). tabflow has one strategy for each, so
these arguments change nothing. The ops store them as they store every parameter, and this
module holds the rest, per op, with the reason: the op's docstring lists them under *Other
Parameters* (its own parameters come first), and setting one to anything but its default
warns when the op is built (as NVTabular warned about ``tree_width``), naming the argument
and why. The warning is an ordinary Python warning, so Python's filters decide how often it
shows (by default once per line of code that builds such an op; ``pytest.warns`` sees it
every time). Ops rebuilt from parameters an op already had (``Workflow.load``, ``clone``) do
not warn again. Left at its default, an argument never warns.

NVTabular's names of fitted statistics (``Normalize.means`` for ``means_``) are read-only
aliases: an empty dict before fitting, as NVTabular's attributes were, and NVTabular's
layout where it differed.

Both reach the ops through the graph's hooks (:func:`~tabflow.graph.operator.register_construction_check`,
:func:`~tabflow.graph.operator.register_attribute_alias`), registered when this module is
imported (``import tabflow`` does), so the ops' own modules carry none of it.

Examples
--------
>>> import warnings
>>> from tabflow import ops
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     op = ops.JoinGroupby(cont_cols=["x"], on_host=False)
...     copy = op.clone()
>>> [str(w.message) for w in caught]
['JoinGroupby(on_host=False) has no effect in tabflow: statistics are always kept in host memory']
>>> ops.Normalize().means
{}
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

from tabflow import ops
from tabflow.graph.operator import register_attribute_alias, register_construction_check

__all__ = ["InertArgument", "INERT_ARGUMENTS", "EXTRA_KEYWORDS"]


@dataclass(frozen=True)
class InertArgument:
    """An accepted NVTabular argument: its default, why it has no effect, the warning class."""

    default: Any
    why: str
    category: type[Warning] = UserWarning


_TREE = "statistics are always merged as a tree of at most 8 partials per task"
_STATS_ON_HOST = "statistics are kept in host memory and moved to the data's engine once"
_IN_MEMORY = "the statistics are in-memory tables kept (and saved) with the workflow, one file per table under out_path"
_FIXED_TAGS = InertArgument(None, "the op's tags are fixed (NVTabular 23.08 ignored this argument too)")

#: Per op class, its NVTabular-only arguments (subclasses inherit them).
INERT_ARGUMENTS: dict[type, dict[str, InertArgument]] = {
    ops.Categorify: {
        "search_sorted": InertArgument(False, "values are always looked up in a hash table kept in memory"),
        "cat_cache": InertArgument("host", "vocabularies are kept in host memory and moved to the data's engine once"),
        "on_host": InertArgument(True, "vocabularies are always kept in host memory"),
        "tree_width": InertArgument(
            None, "deprecated in NVTabular 23.08 too; use split_every (fan-in of the count merge) and split_out "
            "(files per vocabulary)", FutureWarning,
        ),
    },
    ops.JoinGroupby: {
        "split_out": InertArgument(None, "the statistics of each key are one in-memory table, not files"),
        "split_every": InertArgument(None, _TREE),
        "tree_width": InertArgument(None, _TREE),
        "cat_cache": InertArgument("host", _STATS_ON_HOST),
        "out_path": InertArgument(None, "statistics are kept with the workflow (saved by Workflow.save), not written apart"),
        "on_host": InertArgument(True, "statistics are always kept in host memory"),
    },
    ops.TargetEncoding: {
        "split_out": InertArgument(None, _IN_MEMORY),
        "split_every": InertArgument(None, _TREE),
        "cat_cache": InertArgument("host", _STATS_ON_HOST),
        "on_host": InertArgument(True, "statistics are always kept in host memory"),
        "tree_width": InertArgument(None, _TREE),
    },
    ops.JoinExternal: {
        "cache": InertArgument("host", "the table is held in host memory and moved to the data's engine once per process"),
    },
    ops.TagAsUserID: {"tags": _FIXED_TAGS},
    ops.TagAsItemID: {"tags": _FIXED_TAGS},
    ops.TagAsUserFeatures: {"tags": _FIXED_TAGS},
    ops.TagAsItemFeatures: {"tags": _FIXED_TAGS},
}

#: Ops that took any further keyword through ``**kwargs`` (kept in ``op.kwargs``), and why
#: those have no effect.
EXTRA_KEYWORDS: dict[type, str] = {ops.JoinExternal: "NVTabular 23.08 stored them without using them"}

# NVTabular's names of fitted statistics: (class, name, fitted attribute, NVTabular's layout).
_FITTED_ALIASES: list[tuple[type, str, str, Callable[[Any], Any] | None]] = [
    (ops.Normalize, "means", "means_", None),
    (ops.Normalize, "stds", "stds_", None),
    (ops.NormalizeMinMax, "mins", "mins_", None),
    (ops.NormalizeMinMax, "maxs", "maxs_", None),
    (ops.FillMedian, "medians", "medians_", None),
    (ops.JoinGroupby, "categories", "stats_", None),
    (ops.TargetEncoding, "means", "means_", None),
    # {column: {"value_count": {"min", "max"}}}
    (ops.ValueCount, "stats", "stats_", lambda stats: {name: {"value_count": dict(bounds)} for name, bounds in stats.items()}),
    (ops.ReduceDtypeSize, "ranges", "ranges_", lambda ranges: {name: tuple(bounds) for name, bounds in ranges.items()}),
    (ops.ReduceDtypeSize, "dtypes", "dtypes_", None),
]


def _inert_arguments(op_class: type) -> dict[str, InertArgument]:
    return next((INERT_ARGUMENTS[owner] for owner in op_class.__mro__ if owner in INERT_ARGUMENTS), {})


def _warn_on_construction(op: Any) -> None:
    """Warn about inert arguments set to a non-default value and extra keywords; called by
    the graph after the op's ``__init__`` (``stacklevel=3``: the line that built the op)."""
    for name, argument in _inert_arguments(type(op)).items():
        value = getattr(op, name, argument.default)
        if _same(value, argument.default):
            continue
        warnings.warn(
            f"{type(op).__name__}({name}={value!r:.40}) has no effect in tabflow: {argument.why}",
            argument.category,
            stacklevel=3,
        )
    why = next((EXTRA_KEYWORDS[owner] for owner in type(op).__mro__ if owner in EXTRA_KEYWORDS), None)
    extra = getattr(op, "kwargs", None) if why is not None else None
    if extra:
        warnings.warn(f"{type(op).__name__}({', '.join(sorted(extra))}) has no effect in tabflow: {why}", UserWarning, stacklevel=3)


def _same(value: Any, default: Any) -> bool:
    try:
        return bool(value == default)
    except Exception:  # noqa: BLE001 - e.g. an array compared with a scalar
        return False


def _with_other_parameters(doc: str, arguments: dict[str, InertArgument]) -> str:
    lines = ["    Other Parameters", "    ----------------"]
    for name, argument in arguments.items():
        lines.append(f"    {name} : optional, default {argument.default!r}")
        lines.append(f"        Accepted for NVTabular compatibility, no effect: {argument.why}")
    section = "\n".join(lines) + "\n\n"
    for heading in ("    Raises\n", "    Attributes\n", "    Notes\n", "    Examples\n"):
        position = doc.find(heading)
        if position != -1:
            return doc[:position] + section + doc[position:]
    return doc.rstrip() + "\n\n" + section


def _fitted_alias(target: str, convert: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    def read(op: Any) -> Any:
        value = getattr(op, target, None)
        if value is None:
            return {}
        return convert(value) if convert is not None else value

    return read


for _op_class, _arguments in INERT_ARGUMENTS.items():
    if _op_class.__doc__ and "Other Parameters" not in _op_class.__doc__:
        _op_class.__doc__ = _with_other_parameters(_op_class.__doc__, _arguments)
for _op_class, _name, _target, _convert in _FITTED_ALIASES:
    register_attribute_alias(_op_class, _name, _fitted_alias(_target, _convert))
register_construction_check(_warn_on_construction)
