"""Per-group statistics as a map / combine / finalize, shared by the joining ops.

A partial is a frame with the key columns and, per value column ``c``: the number of rows
of the group (``__rows``), and for ``c`` the non-null count, sum, sum of squared deviations
from the group mean (M2), min and max. Partials merge exactly (Chan et al.'s parallel
update), so statistics fitted on many partitions equal those fitted on one, and variances
never suffer from the cancellation of a sum-of-squares formula.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from tabflow.backends import backend_for
from tabflow.graph.node import Node
from tabflow.graph.selector import ColumnSelector

ROWS = "__rows"


def key_groups(col_selector: ColumnSelector) -> list[tuple[str, ...]]:
    """The selector's key columns: one tuple per plain column or column group."""
    return [(g,) if isinstance(g, str) else tuple(g) for g in col_selector.grouped_names]


def group_name(keys: Sequence[str], sep: str) -> str:
    return sep.join(keys)


def _col(kind: str, column: str) -> str:
    return f"__{kind}__{column}"


def partial_stats(df: Any, keys: list[str], values: Sequence[str]) -> Any:
    """Per-group partial statistics of ``values`` in one partition (keys as columns).

    One group-by computes everything, so no two results need lining up by group: cuDF gives
    groups in no particular order, and two group-bys of one frame need not agree on it.
    Missing values (nulls, NaN) are skipped on both engines (``Backend.to_float``).
    """
    backend = backend_for(df)
    work = {k: df[k] for k in keys}
    # The row count is a sum of ones: cuDF has no ``size`` aggregation of string columns.
    work[ROWS] = backend.series(backend.xp.ones(len(df), dtype=backend.xp.int64), name=ROWS, index=df.index)
    for c in values:
        work[_col("x", c)] = backend.to_float(df[c], "float64")
    work = backend.frame_from_dict(work, index=df.index)
    if values:
        # Two passes (mean first, then squared deviations) keep M2 accurate for large values.
        xs = [_col("x", c) for c in values]
        means = work.groupby(keys, dropna=False, sort=False)[xs].transform("mean")
        work = work.assign(**{_col("d2", c): (work[_col("x", c)] - means[_col("x", c)]) ** 2 for c in values})
    aggs: dict[str, tuple[str, str]] = {ROWS: (ROWS, "sum")}
    for c in values:
        x = _col("x", c)
        aggs.update({
            _col("n", c): (x, "count"), _col("s", c): (x, "sum"), _col("min", c): (x, "min"), _col("max", c): (x, "max"),
            _col("m2", c): (_col("d2", c), "sum"),
        })
    return work.groupby(keys, dropna=False, sort=False).agg(**aggs).reset_index()


def on_one_engine(frames: Sequence[Any]) -> list[Any]:
    """``frames`` on the engine of the last one: a fitted table (on the host once loaded)
    merged with the new data's partial (on the engine that read it).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.ops._groupstats import on_one_engine
    >>> len(on_one_engine([pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [2]})]))
    2
    """
    engine = backend_for(frames[-1])
    return [f if backend_for(f) is engine else engine.from_host(backend_for(f).to_host(f)) for f in frames]


def combine_stats(partials: Iterable[Any], keys: list[str], values: Sequence[str]) -> Any:
    """Merge partial statistics frames (associative; the result is again a partial)."""
    partials = on_one_engine(list(partials))
    non_empty = [p for p in partials if len(p)] or partials[:1]
    backend = backend_for(non_empty[0])
    frame = backend.concat_rows(non_empty)
    grouped = frame.groupby(keys, dropna=False, sort=False)
    shifted = {}
    for c in values:
        # Chan et al.: each part's M2 plus n * (its mean - the total mean)^2, summed.
        n, s, m2 = frame[_col("n", c)], frame[_col("s", c)], frame[_col("m2", c)]
        total_mean = grouped[_col("s", c)].transform("sum") / grouped[_col("n", c)].transform("sum")
        shift = (s / n - total_mean).fillna(0.0)
        shifted[_col("m2", c)] = m2.fillna(0.0) + n * shift * shift
    frame = frame.assign(**shifted)
    aggs: dict[str, tuple[str, str]] = {ROWS: (ROWS, "sum")}
    for c in values:
        aggs.update({
            _col("n", c): (_col("n", c), "sum"), _col("s", c): (_col("s", c), "sum"),
            _col("min", c): (_col("min", c), "min"), _col("max", c): (_col("max", c), "max"),
            _col("m2", c): (_col("m2", c), "sum"),
        })
    return frame.groupby(keys, dropna=False, sort=False).agg(**aggs).reset_index()


def finalize_stats(partial: Any, keys: list[str], values: Sequence[str], stats: Sequence[str], names: dict) -> Any:
    """Final table: the keys plus one column per requested statistic, named by ``names``.

    ``names[("count", None)]`` and ``names[(stat, column)]`` give the output column names.
    Rows are sorted by the keys (nulls last), so that the fitted table is the same whatever
    order the engine grouped in and however the data was partitioned.
    """
    backend = backend_for(partial)
    partial = partial.sort_values(list(keys), na_position="last") if len(partial) > 1 else partial
    out = {k: partial[k] for k in keys}
    if "count" in stats:
        out[names[("count", None)]] = partial[ROWS].astype("int64")
    for c in values:
        n, s, m2 = partial[_col("n", c)], partial[_col("s", c)].fillna(0.0), partial[_col("m2", c)]
        mean = s / n.where(n > 0)
        var = m2 / (n - 1).where(n > 1)
        computed = {"sum": s, "mean": mean, "var": var, "std": var ** 0.5, "min": partial[_col("min", c)], "max": partial[_col("max", c)]}
        for stat in stats:
            if stat != "count":
                out[names[(stat, c)]] = computed[stat].astype("float64")
    return backend.frame_from_dict(out).reset_index(drop=True)


def as_names(columns: Any) -> list[str]:
    """Column names from a name, a list of names, a selector or a resolved node."""
    if columns is None:
        return []
    if isinstance(columns, str):
        return [columns]
    if isinstance(columns, Node):
        return columns.output_columns.names
    if isinstance(columns, ColumnSelector):
        return columns.names
    return [c for c in columns]


def require_columns(input_schema: Any, names: Iterable[str], role: str, op_name: str) -> None:
    missing = [n for n in names if n not in input_schema]
    if missing:
        raise KeyError(f"{op_name}: {role} column(s) {missing} are not in the input ({input_schema.column_names})")

