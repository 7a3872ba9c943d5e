"""Column descriptions of generated datasets, and reading them from a description document.

Re-exported by :mod:`tabflow.tools.data_gen`, where NVTabular scripts find them.

Examples
--------
>>> from tabflow.tools.data_gen import CatCol
>>> CatCol("genre", "list<string>", 8, multi_max=3)
CatCol(name='genre', dtype='list<string>', cardinality=8, multi_max=3)
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, cast

from tabflow.tools._distributions import DISTRO_TYPES

__all__ = ["CatCol", "Col", "ColumnReps", "ContCol", "LabelCol", "_get_cols_from_schema"]


class Col:
    """A column of a generated dataset: its ``name``, ``dtype`` and ``distro`` (None: the
    generator's distribution). The subclasses say what kind of column it is.

    Examples
    --------
    >>> from tabflow.tools.data_gen import ContCol
    >>> ContCol("price", "float32", max_val=10)
    ContCol(name='price', dtype='float32', max_val=10)
    """

    def __init__(self, name: str, dtype: Any, distro: Any = None) -> None:
        self.name = name
        self.dtype = dtype
        self.distro = distro

    def __repr__(self) -> str:
        # The parameters that differ from their defaults, in the constructor's order.
        shown = []
        for parameter in inspect.signature(type(self)).parameters.values():
            value = getattr(self, parameter.name)
            if parameter.default is inspect.Parameter.empty or value != parameter.default:
                shown.append(f"{parameter.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


class ContCol(Col):
    """A continuous column: values between ``min_val`` and ``max_val``.

    ``mean`` and ``std`` describe the column (the inspector records them); the values follow
    the distribution and range, which fix their mean and spread. ``per_nan`` is the percentage
    of nulls. ``width > 1`` makes that many columns: ``name``, then ``name_1`` to
    ``name_<width-1>``. An integer ``dtype`` rounds the values; the default is float64.

    Examples
    --------
    >>> from tabflow.tools.data_gen import ContCol, DatasetGen, UniformDistro
    >>> df = DatasetGen(UniformDistro(), seed=0, cpu=True).create_conts(4, [ContCol("age", "int8", 18, 90, width=2)])
    >>> list(df.columns), df.dtypes.astype(str).tolist(), bool(df["age"].between(18, 90).all())
    (['age', 'age_1'], ['int8', 'int8'], True)
    """

    def __init__(
        self,
        name: str,
        dtype: Any,
        min_val: float = 0,
        max_val: float = 1,
        mean: float | None = None,
        std: float | None = None,
        per_nan: float | None = None,
        width: int = 1,
        distro: Any = None,
    ) -> None:
        super().__init__(name, dtype, distro)
        self.min_val = min_val
        self.max_val = max_val
        self.mean = mean
        self.std = std
        self.per_nan = per_nan
        self.width = width


class CatCol(Col):
    """A categorical column of ``cardinality`` distinct values.

    Values are codes ``min_val + 1`` to ``cardinality`` (``ceil`` of the distribution's draws
    on ``[min_val, cardinality]``; 0 stays free for "unknown", as in NVTabular), shuffled among
    themselves by ``permutate_index`` (so that the most frequent value is not the smallest).
    With ``entries=True`` each code becomes a random string of ``min_entry_size`` to
    ``max_entry_size`` letters and digits, averaging ``avg_entry_size``; a column whose
    ``dtype`` is an integer dtype keeps its codes. ``multi_min``/``multi_max`` make a list
    (multi-hot) column with lengths in that range averaging ``multi_avg``; ``per_nan`` is the
    percentage of null rows (null lists for a list column). Sizes default to 1 to 5
    characters; a list column without ``multi_min`` has lists of at least one value.

    Examples
    --------
    >>> from tabflow.tools.data_gen import CatCol, DatasetGen, UniformDistro
    >>> gen = DatasetGen(UniformDistro(), seed=0, cpu=True)
    >>> df = gen.create_cats(1000, [CatCol("city", None, 12, min_entry_size=3, max_entry_size=8)], entries=True)
    >>> df["city"].nunique(), int(df["city"].str.len().min()), int(df["city"].str.len().max())
    (12, 3, 8)
    """

    def __init__(
        self,
        name: str,
        dtype: Any,
        cardinality: int,
        min_entry_size: int | None = None,
        max_entry_size: int | None = None,
        avg_entry_size: float | None = None,
        per_nan: float | None = None,
        multi_min: int | None = None,
        multi_max: int | None = None,
        multi_avg: float | None = None,
        distro: Any = None,
        min_val: int = 0,
        permutate_index: bool = False,
    ) -> None:
        super().__init__(name, dtype, distro)
        self.cardinality = cardinality
        self.min_entry_size = min_entry_size
        self.max_entry_size = max_entry_size
        self.avg_entry_size = avg_entry_size
        self.per_nan = per_nan
        self.multi_min = multi_min
        self.multi_max = multi_max
        self.multi_avg = multi_avg
        self.min_val = min_val
        self.permutate_index = permutate_index


class LabelCol(Col):
    """A label (target) column: classes ``0`` to ``cardinality - 1``, int64 unless ``dtype``
    says otherwise, with ``per_nan`` percent nulls.

    Examples
    --------
    >>> from tabflow.tools.data_gen import DatasetGen, LabelCol, UniformDistro
    >>> labels = DatasetGen(UniformDistro(), seed=0, cpu=True).create_labels(100, [LabelCol("click", None, 2)])
    >>> str(labels["click"].dtype), sorted(labels["click"].unique().tolist())
    ('int64', [0, 1])
    """

    def __init__(self, name: str, dtype: Any, cardinality: int, per_nan: float | None = None, distro: Any = None) -> None:
        super().__init__(name, dtype, distro)
        self.cardinality = cardinality
        self.per_nan = per_nan


_SECTIONS = {"conts": ContCol, "cats": CatCol, "labels": LabelCol}


class ColumnReps(TypedDict, total=False):
    """The columns a generator draws, by kind: what :func:`_get_cols_from_schema` returns and
    ``DatasetGen.create_df`` takes (each kind may be left out)."""

    conts: Sequence[ContCol]
    cats: Sequence[CatCol]
    labels: Sequence[LabelCol]


def _get_cols_from_schema(schema: Mapping[str, Any], distros: Mapping[str, Mapping[str, Any]] | None = None) -> ColumnReps:
    """Column objects from a description document (the inspector's JSON, loaded).

    Parameters
    ----------
    schema : dict
        ``{"num_rows": N, "conts": {name: {dtype, min_val, max_val, mean, std, per_nan}},
        "cats": {name: {dtype, cardinality, min_entry_size, max_entry_size, avg_entry_size,
        per_nan, multi_min, multi_max, multi_avg, min_val, permutate_index}}, "labels":
        {name: {dtype, cardinality, per_nan}}}``; each entry's keys are the column class's
        parameters, and any section may be left out. ``num_rows`` is skipped.
    distros : dict, optional
        ``{name: {"name": "powerlaw" or "uniform", "params": {...}}}``: a distribution for
        some columns (the others use the generator's).

    Returns
    -------
    dict
        ``{"conts": [ContCol, ...], "cats": [CatCol, ...], "labels": [LabelCol, ...]}`` for the
        sections present.

    Examples
    --------
    >>> from tabflow.tools.data_gen import _get_cols_from_schema
    >>> cols = _get_cols_from_schema(
    ...     {"num_rows": 10, "cats": {"genre": {"dtype": "list<string>", "cardinality": 8, "multi_min": 1, "multi_max": 3}}},
    ...     distros={"genre": {"name": "powerlaw", "params": {"alpha": 0.3}}},
    ... )
    >>> cols["cats"][0].multi_max, cols["cats"][0].distro.alpha
    (3, 0.3)
    """
    cols: dict[str, list[Col]] = {}
    for section, columns in schema.items():
        if section == "num_rows":
            continue
        if section not in _SECTIONS:
            raise ValueError(f"unknown section {section!r} in the description; expected num_rows, {', '.join(_SECTIONS)}")
        cols[section] = []
        for name, spec in (columns or {}).items():
            arguments = {"name": name, **spec}
            if distros and name in distros:
                arguments["distro"] = _distribution(name, distros[name])
            cols[section].append(_SECTIONS[section](**arguments))
    # Each section holds the columns of the class _SECTIONS names for it.
    return cast(ColumnReps, cols)


def _distribution(column: str, spec: Mapping[str, Any]) -> Any:
    if spec.get("name") not in DISTRO_TYPES:
        raise ValueError(f"column {column!r}: unknown distribution {spec.get('name')!r}; expected one of {sorted(DISTRO_TYPES)}")
    return DISTRO_TYPES[spec["name"]](**spec.get("params", {}))
