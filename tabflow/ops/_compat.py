"""NVTabular arguments that ops accept only so that NVTabular scripts run unchanged.

NVTabular 23.08's ops take arguments that choose its own storage and lookup strategies
(``cat_cache``, ``on_host``, ``search_sorted``, ...). tabflow has one strategy for each, so
these arguments change nothing. They are declared here, per op, with the reason, instead of
being spread through each op: the op's docstring lists them under *Other Parameters* (its
own parameters come first), and setting one to anything but its default warns when the op
is built (as NVTabular warned about ``tree_width``), naming the argument and why. The warning
is an ordinary Python warning, so Python's filters decide how often it shows (by default
once per line of code that builds such an op; ``pytest.warns`` sees it every time). Ops
rebuilt from parameters an op already had (``Workflow.load``, ``clone``) do not warn
again. Left at its default, an argument never warns.

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
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

from tabflow.graph.operator import is_rebuilding

__all__ = ["InertArgument", "inert_arguments", "warn_inert_arguments", "warn_extra_keywords", "FittedAlias"]


@dataclass(frozen=True)
class InertArgument:
    """An accepted NVTabular argument: its default, why it has no effect, the warning class."""

    default: Any
    why: str
    category: type[Warning] = UserWarning


def inert_arguments(**arguments: InertArgument) -> Callable[[type], type]:
    """Class decorator: declare an op's inert NVTabular arguments and document them."""

    def decorate(cls: type) -> type:
        cls._inert_arguments = dict(arguments)
        if cls.__doc__:
            cls.__doc__ = _with_other_parameters(cls.__doc__, arguments)
        return cls

    return decorate


def warn_inert_arguments(op: Any) -> None:
    """Warn about inert arguments set to a non-default value; called at the end of the op's
    ``__init__``, so the warning points at the line that built the op."""
    if is_rebuilding():
        return
    for name, argument in getattr(type(op), "_inert_arguments", {}).items():
        value = getattr(op, name, argument.default)
        if _same(value, argument.default):
            continue
        warnings.warn(
            f"{type(op).__name__}({name}={value!r:.40}) has no effect in tabflow: {argument.why}",
            argument.category,
            stacklevel=3,
        )


def warn_extra_keywords(op: Any, kwargs: dict[str, Any], why: str) -> None:
    """Warn that keyword arguments an NVTabular op took through ``**kwargs`` (and did not use)
    have no effect; called at the end of the op's ``__init__``."""
    if kwargs and not is_rebuilding():
        warnings.warn(
            f"{type(op).__name__}({', '.join(sorted(kwargs))}) has no effect in tabflow: {why}",
            UserWarning,
            stacklevel=3,
        )


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


class FittedAlias:
    """NVTabular's name for a fitted attribute (``Normalize.means`` for ``means_``), read-only.

    Before fitting it is an empty dict, as NVTabular's attributes were; ``convert`` reshapes
    the value where NVTabular's layout differed.
    """

    def __init__(self, target: str, convert: Callable[[Any], Any] | None = None) -> None:
        self.target = target
        self.convert = convert

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, op: Any, owner: type | None = None) -> Any:
        if op is None:
            return self
        value = getattr(op, self.target, None)
        if value is None:
            return {}
        return self.convert(value) if self.convert is not None else value
