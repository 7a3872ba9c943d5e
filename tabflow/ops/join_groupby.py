"""JoinGroupby: per-category statistics of continuous columns, joined back onto each row."""

from __future__ import annotations

from typing import Any, Sequence

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.columns import input_dtype
from tabflow.graph.node import Node
from tabflow.graph.operator import keeping_update_state
from tabflow.graph.selector import ColumnSelector
from tabflow.ops import _groupstats as gs
from tabflow.ops._numeric import require_numeric
from tabflow.ops._schema_hooks import SchemaFromColumns
from tabflow.ops.operator import StatOperator
from tabflow.schema import ColumnSchema, Schema, Tags
from tabflow.schema.dtypes import nullable_dtype

__all__ = ["JoinGroupby"]

_STATS = ("count", "sum", "mean", "std", "var", "min", "max")


class JoinGroupby(SchemaFromColumns, StatOperator):
    """Add, to every row, statistics of ``cont_cols`` over all rows sharing its category.

    Each selected column (or column group, whose values form one joint key) is a key. Output
    columns are ``<key>_count`` (rows in the group) and ``<key>_<cont>_<stat>`` for the other
    statistics, where a group's key name joins its columns with ``name_sep``. The op outputs
    only these new columns. Null keys form a group of their own. A key value not seen during
    ``fit`` gets count 0 and null statistics. ``std`` and ``var`` are sample statistics
    (ddof=1, null for groups with fewer than two values); a group whose values are all null
    has sum 0 and null mean/std/var/min/max.

    Output dtypes are NVTabular 23.08's: counts int32, ``mean``/``std``/``var`` float32, and
    ``sum``/``min``/``max`` the dtype of the continuous column, in its nullable form for
    integers (``Int64`` for ``int64``), since unseen keys have no statistics.

    Updates (:meth:`tabflow.Workflow.partial_fit`) merge each group's counts, sums, extremes
    and M2 with the new data's (Chan's parallel formula): the statistics of all the data
    seen. A workflow started with ``partial_fit`` keeps these per-group moments
    (``group_stats_``, saved with it); one fitted by ``fit`` does not, and cannot be updated.

    Parameters
    ----------
    cont_cols : str, list of str or ColumnSelector
        Continuous columns to summarise; they are read as dependencies and need not be
        selected.
    stats : sequence of str, default ("count",)
        Among "count", "sum", "mean", "std", "var", "min", "max".
    name_sep : str, default "_"
        Joins the names of a column group and the parts of output names.

    Attributes
    ----------
    stats_ : dict of str to DataFrame
        Per key (or key group name): the keys and one column per output statistic, saved as
        parquet with the workflow. Also readable as NVTabular's ``categories`` (which held
        the paths of such tables written as parquet files).

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"user": ["a", "b", "a"], "price": [1.0, 5.0, 3.0]})
    >>> wf = nvt.Workflow(["user"] >> ops.JoinGroupby(cont_cols=["price"], stats=["count", "mean"]))
    >>> out = wf.fit_transform(df)
    >>> out.columns.tolist(), out["user_price_mean"].tolist()
    (['user_count', 'user_price_mean'], [2.0, 5.0, 2.0])
    >>> out.dtypes.astype(str).tolist()
    ['int32', 'float32']
    """

    row_wise = True

    def __init__(
        self,
        cont_cols: Any = None,
        stats: Sequence[str] = ("count",),
        split_out: Any = None,
        split_every: Any = None,
        cat_cache: Any = "host",
        out_path: str | None = None,
        on_host: bool = True,
        name_sep: str = "_",
        tree_width: Any = None,
    ) -> None:
        self.cont_cols = cont_cols
        self.stats = stats
        self.split_out = split_out
        self.split_every = split_every
        self.cat_cache = cat_cache
        self.out_path = out_path
        self.on_host = on_host
        self.name_sep = name_sep
        self.tree_width = tree_width

    @property
    def dependencies(self) -> list[Any] | None:
        if self.cont_cols is None:
            return None
        if isinstance(self.cont_cols, Node) or len(gs.as_names(self.cont_cols)):
            return [self.cont_cols]
        return None

    def _stats(self) -> list[str]:
        return [self.stats] if isinstance(self.stats, str) else list(self.stats)

    def _conts(self, col_selector: ColumnSelector, columns: Sequence[str]) -> list[str]:
        """The continuous columns; ``columns`` are those the op receives (keys plus conts).

        ``cont_cols`` may be a node (``JoinGroupby(cont_cols=other_node)``): its columns are
        known once the graph is resolved, and are the received columns beyond the keys.
        """
        if not any(s != "count" for s in self._stats()):
            return []
        if isinstance(self.cont_cols, Node) and self.cont_cols.output_schema is None:
            keys = set(col_selector.names)
            return [c for c in columns if c not in keys]
        return gs.as_names(self.cont_cols)

    def _names(self, keys: Sequence[str], conts: Sequence[str]) -> dict:
        key = gs.group_name(keys, self.name_sep)
        names: dict = {("count", None): f"{key}{self.name_sep}count"}
        for c in conts:
            for stat in self._stats():
                names[(stat, c)] = self.name_sep.join([key, c, stat])
        return names

    def _outputs(self, keys: Sequence[str], conts: Sequence[str]) -> dict[str, list[str]]:
        """``{output name: input columns}`` for one key group, in output order."""
        names = self._names(keys, conts)
        out = {names[("count", None)]: list(keys)} if "count" in self._stats() else {}
        out.update({names[(s, c)]: [*keys, c] for c in conts for s in self._stats() if s != "count"})
        return out

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        unknown = [s for s in self._stats() if s not in _STATS]
        if unknown or not self._stats():
            raise ValueError(f"JoinGroupby stats must be among {list(_STATS)}, got {list(self._stats())}")
        conts = self._conts(col_selector, input_schema.column_names)
        if any(s != "count" for s in self._stats()) and not conts:
            raise ValueError(f"JoinGroupby needs cont_cols to compute {[s for s in self._stats() if s != 'count']}")
        gs.require_columns(input_schema, conts, "cont_cols", "JoinGroupby")
        require_numeric(input_schema, ColumnSelector(conts), "JoinGroupby")

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, tuple]:
        conts = self._conts(col_selector, list(df.columns))
        return {
            gs.group_name(k, self.name_sep): (k, conts, gs.partial_stats(df, list(k), conts))
            for k in gs.key_groups(col_selector)
        }

    def combine_partials(self, partials: list[dict[str, tuple]]) -> dict[str, tuple]:
        combined = {}
        for name, (keys, conts, _) in partials[0].items():
            combined[name] = (keys, conts, gs.combine_stats([p[name][2] for p in partials], list(keys), conts))
        return combined

    def fit_finalize(self, partial: dict[str, tuple]) -> None:
        if keeping_update_state():
            # Counts, sums, extremes and M2 per group: what the next update merges with (the
            # output statistics alone lose the moments).
            self.group_stats_ = {
                name: {"keys": list(keys), "conts": list(conts), "partial": frame} for name, (keys, conts, frame) in partial.items()
            }
        self.stats_ = {
            name: gs.finalize_stats(frame, list(keys), conts, self._stats(), self._names(keys, conts))
            for name, (keys, conts, frame) in partial.items()
        }

    update_needs = {
        "group_stats_": (
            "its statistics merge through each group's counts, sums and moments, which Workflow.fit does not keep; fit "
            "the workflow with Workflow.partial_fit, which keeps them, to update it later"
        ),
    }

    def fitted_partial(self) -> dict[str, tuple]:
        """The merged per-group statistics the fitted tables were finalized from."""
        self.check_updatable()
        return {name: (tuple(g["keys"]), list(g["conts"]), g["partial"]) for name, g in self.group_stats_.items()}

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        self.check_is_fitted()
        backend = backend_for(df)
        conts = self._conts(col_selector, list(df.columns))
        out = {}
        for keys in gs.key_groups(col_selector):
            table = self.stats_[gs.group_name(keys, self.name_sep)]
            table = table if backend_for(table) is backend else backend.from_host(table)
            joined = backend.merge_keep_order(df[list(keys)], table, list(keys), list(keys), how="left")
            count_name = self._names(keys, conts)[("count", None)]
            dtypes = self._dtypes(keys, conts, {c: input_dtype(df, c) for c in conts})
            for name in self._outputs(keys, conts):
                column = joined[name]
                if name == count_name:
                    # Unseen keys: no rows were counted, but their statistics are unknown (null).
                    column = column.fillna(0)
                out[name] = backend.astype(column, dtypes[name])
        return backend.frame_from_dict(out, index=df.index)

    def _dtypes(self, keys: Sequence[str], conts: Sequence[str], cont_dtypes: dict[str, str]) -> dict[str, str]:
        """NVTabular 23.08's output dtypes: count int32, mean/std/var float32, sum/min/max the
        continuous column's dtype (nullable for integers: unseen keys have no statistics)."""
        names = self._names(keys, conts)
        dtypes = {names[("count", None)]: "int32"}
        for c in conts:
            for stat in self._stats():
                if stat in ("mean", "std", "var"):
                    dtypes[names[(stat, c)]] = "float32"
                elif stat != "count":
                    dtypes[names[(stat, c)]] = nullable_dtype(cont_dtypes[c])
        return dtypes

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        conts = self._conts(col_selector, [])
        return {name: inputs for keys in gs.key_groups(col_selector) for name, inputs in self._outputs(keys, conts).items()}

    def compute_output_schema(self, input_schema: Schema, col_selector: ColumnSelector, prev_output_schema: Any = None) -> Schema:
        conts = self._conts(col_selector, input_schema.column_names)
        cont_dtypes = {c: str(input_schema[c].dtype) for c in conts}
        columns = []
        for keys in gs.key_groups(col_selector):
            dtypes = self._dtypes(keys, conts, cont_dtypes)
            for name in self._outputs(keys, conts):
                columns.append(ColumnSchema(name, dtype=dtypes[name], tags={Tags.CONTINUOUS}))
        return Schema(columns)
