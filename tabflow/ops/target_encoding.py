"""TargetEncoding: replace categories by the smoothed mean of a target, out-of-fold on training data."""

from __future__ import annotations

import shutil
import tempfile
import weakref
from typing import Any, Sequence

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.node import Node
from tabflow.graph.selector import ColumnSelector
from tabflow.ops import _folds, _vocab_files
from tabflow.ops import _groupstats as gs
from tabflow.ops._numeric import dtype_name
from tabflow.ops._schema_hooks import SchemaFromColumns
from tabflow.ops.operator import StatOperator
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["TargetEncoding"]

FOLD = "__fold__"
#: Folds when ``kfold`` is None, as in NVTabular 23.08.
DEFAULT_KFOLD = 3
# Rows of each key (and fold) in the fitted statistics; the targets' counts skip null targets.
ROWS = "__rows__"


class TargetEncoding(SchemaFromColumns, StatOperator):
    """Encode each category (or column group) by the smoothed mean of one or more targets.

    The encoding of a key is ``(sum + p_smooth * mean) / (count + p_smooth)`` where ``sum``
    and ``count`` are over the rows of the key with a non-null target and ``mean`` is the
    global target mean (or ``target_mean``). Keys unseen during ``fit`` get ``mean``; null
    keys form a group of their own. Output columns are ``TE_<key>_<target>``.

    **Out-of-fold encoding of the training data.** Encoding the rows a statistic was
    computed from leaks their own target into their feature. With ``kfold > 1`` the op
    splits every fitted partition into ``kfold`` balanced folds (a permutation seeded by
    ``fold_seed`` and a hash of the partition's content, see below) and, when it transforms
    the *training data*, encodes each row with statistics of the other folds only: a row's
    own target, and those of its fold, never contribute to its encoding (the global prior
    ``mean`` is still the full-data mean). Any other data (validation, test, serving) is
    encoded with the full statistics. The training data is recognised by content: a frame
    is training data when it equals, row for row, one partition seen by ``fit`` or all of
    them in order (the whole in-memory frame passed to ``fit``). Transform the same
    ``Dataset`` (same files, same partitioning) that was fitted; a re-partitioned or
    shuffled copy is not recognised and gets full statistics, which leaks.

    The output columns are tagged continuous (the target's own tags, such as ``target``,
    are not carried over, so a loader never takes an encoding for a label).

    **Updates.** :meth:`tabflow.Workflow.partial_fit` adds the new data's sums and counts to
    the fitted ones, per key and fold: the encodings are those of all the data seen. Every
    row seen keeps its fold (a partition's folds depend only on its content and
    ``fold_seed``), the new partitions get theirs as a fit would give them, and all of them
    are recognised as training data afterwards, each row encoded without its fold's
    statistics over every day seen. The prior ``mean`` is the mean of all the data seen.

    Parameters
    ----------
    target : str, list of str, ColumnSelector or Node
        Continuous or binary target column(s); read as dependencies. A node (e.g. labels
        made by a LambdaOp) encodes its output columns.
    target_mean : float or dict, optional
        Prior mean (per target for a dict); default the mean of the fitted data.
    kfold : int, optional
        Number of folds (None means 3, as in NVTabular); 1 disables out-of-fold encoding.
    fold_seed : int, default 42
    p_smooth : float, default 20
        Weight of the prior, in rows.
    out_col : str or list of str, optional
        Output names (one per key group and target, key-major) instead of ``TE_<key>_<target>``.
    out_dtype : str or numpy dtype, default float32
    name_sep : str, default "_"
    out_path : str or path, optional
        Directory where the fitted statistics are also written as NVTabular wrote them
        (:attr:`stats`); without it nothing is written there.
    drop_folds : bool, default True
        False adds a ``__fold__`` column when ``kfold > 1`` (as NVTabular): the row's fold for
        training data, -1 elsewhere.

    Attributes
    ----------
    means_ : dict of str to float
        The prior mean of each target (also readable as NVTabular's ``means``).
    encodings_ : dict of str to DataFrame
        Per key (or key group name): the keys and the full-data encoding of each target.
    statistics_ : dict of str to DataFrame
        Per key (or key group name): the keys, their rows (``__rows__``) and, per target, the
        count of non-null targets (``n_<target>``) and their sum (``s_<target>``).
    fold_statistics_ : dict of str to DataFrame
        With ``kfold > 1``: the same per fold, one row per fold and key seen in it (the keys,
        then ``__fold__``).

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> train = pd.DataFrame({"c": ["a", "a", "b"], "y": [1.0, 0.0, 1.0]})
    >>> wf = nvt.Workflow(["c"] >> ops.TargetEncoding("y", p_smooth=1, kfold=1)).fit(train)
    >>> wf.transform(pd.DataFrame({"c": ["a", "z"], "y": [0.0, 0.0]}))["TE_c_y"].round(4).tolist()
    [0.5556, 0.6667]
    """

    _derived_attributes = ("_stats_files",)

    def __init__(
        self,
        target: Any,
        target_mean: float | dict | None = None,
        kfold: int | None = None,
        fold_seed: int | None = 42,
        p_smooth: float = 20,
        out_col: str | Sequence[str] | None = None,
        out_dtype: Any = None,
        split_out: Any = None,
        split_every: Any = None,
        cat_cache: Any = "host",
        out_path: str | None = None,
        on_host: bool = True,
        name_sep: str = "_",
        drop_folds: bool = True,
        tree_width: Any = None,
    ) -> None:
        self.target = target
        self.target_mean = target_mean
        self.kfold = kfold
        self.fold_seed = fold_seed
        self.p_smooth = p_smooth
        self.out_col = out_col
        self.out_dtype = out_dtype
        self.split_out = split_out
        self.split_every = split_every
        self.cat_cache = cat_cache
        self.out_path = out_path
        self.on_host = on_host
        self.name_sep = name_sep
        self.drop_folds = drop_folds
        self.tree_width = tree_width

    @property
    def dependencies(self) -> list[Any]:
        return [self.target]

    @property
    def _kfold(self) -> int:
        return DEFAULT_KFOLD if self.kfold is None else self.kfold

    @property
    def _keeps_folds(self) -> bool:
        # Without folds (kfold=1) there is no fold column to keep, as in NVTabular.
        return not self.drop_folds and self._kfold > 1

    @property
    def _dtype(self) -> str:
        return dtype_name(self.out_dtype) if self.out_dtype is not None else "float32"

    @property
    def output_dtype(self) -> str:
        """The dtype of the encoded columns (``out_dtype``, float32 by default), as NVTabular's."""
        return self._dtype

    def _targets(self, col_selector: ColumnSelector | None = None, columns: Sequence[str] = ()) -> list[str]:
        """The target columns; ``columns`` are those the op receives (keys plus targets).

        A node target's columns are known once the graph is resolved; before that (while it
        is being resolved) they are the received columns beyond the keys.
        """
        if isinstance(self.target, Node) and self.target.output_schema is None:
            keys = set(col_selector.names) if col_selector is not None else set()
            return [c for c in columns if c not in keys]
        return gs.as_names(self.target)

    def _names(self, col_selector: ColumnSelector, columns: Sequence[str] = ()) -> dict[tuple, str]:
        pairs = [(keys, t) for keys in gs.key_groups(col_selector) for t in self._targets(col_selector, columns)]
        given = [self.out_col] if isinstance(self.out_col, str) else self.out_col
        if given is not None:
            return dict(zip(pairs, given))
        return {(keys, t): self.name_sep.join(["TE", gs.group_name(keys, self.name_sep), t]) for keys, t in pairs}

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if not isinstance(self._kfold, int) or isinstance(self._kfold, bool) or self._kfold < 1:
            raise ValueError(f"TargetEncoding kfold must be an integer >= 1 (or None for 3), got {self.kfold!r}")
        if self.p_smooth < 0:
            raise ValueError(f"TargetEncoding p_smooth must be >= 0, got {self.p_smooth!r}")
        targets = self._targets(col_selector, input_schema.column_names)
        if not targets:
            raise ValueError(f"TargetEncoding needs at least one target column, got target={self.target!r}")
        gs.require_columns(input_schema, targets, "target", "TargetEncoding")
        for t in targets:
            dtype = input_schema[t].dtype
            if not (dtype.lower().startswith(("int", "uint", "float")) or dtype in ("bool", "boolean")):
                raise TypeError(f"TargetEncoding target {t!r} must be numeric or boolean, got dtype {dtype}")
        pairs = len(gs.key_groups(col_selector)) * len(targets)
        given = [self.out_col] if isinstance(self.out_col, str) else self.out_col
        if given is not None and len(given) != pairs:
            raise ValueError(f"TargetEncoding out_col has {len(given)} name(s) for {pairs} key/target pair(s)")

    # ----------------------------------------------------------------- fitting
    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, Any]:
        backend = backend_for(df)
        kfold = self._kfold
        fp = _folds.fingerprint(_folds.row_hashes(df)) if kfold > 1 else 0
        folds = _folds.assign_folds(fp, len(df), kfold, self.fold_seed) if kfold > 1 else np.zeros(len(df), np.int64)
        targets = self._targets(col_selector, list(df.columns))
        tables = {}
        for keys in gs.key_groups(col_selector):
            work = {k: df[k] for k in keys}
            work[FOLD] = folds
            for t in targets:
                work[f"x_{t}"] = backend.to_float(df[t], "float64")
            frame = backend.frame_from_dict(work, index=df.index)
            aggs = {ROWS: (f"x_{targets[0]}", "size")}
            aggs.update({f"{s}_{t}": (f"x_{t}", agg) for t in targets for s, agg in (("n", "count"), ("s", "sum"))})
            tables[gs.group_name(keys, self.name_sep)] = (keys, frame.groupby([*keys, FOLD], dropna=False, sort=False).agg(**aggs).reset_index())
        return {"tables": tables, "partitions": [[len(df), fp]], "targets": targets}

    def combine_partials(self, partials: list[dict[str, Any]]) -> dict[str, Any]:
        tables = {}
        for name, (keys, _) in partials[0]["tables"].items():
            frames = gs.on_one_engine([p["tables"][name][1] for p in partials])
            frames = [f for f in frames if len(f)] or frames[:1]
            stacked = backend_for(frames[0]).concat_rows(frames)
            tables[name] = (keys, stacked.groupby([*keys, FOLD], dropna=False, sort=False).sum().reset_index())
        return {"tables": tables, "partitions": [q for p in partials for q in p["partitions"]], "targets": partials[0]["targets"]}

    def fit_finalize(self, partial: dict[str, Any]) -> None:
        targets = partial["targets"]
        first = next(iter(partial["tables"].values()))[1]
        means = {t: self._prior(t, float(first[f"s_{t}"].sum()), float(first[f"n_{t}"].sum())) for t in targets}
        partitions = [[int(n), int(fp)] for n, fp in partial["partitions"]] if self._kfold > 1 else []
        encodings, oof_encodings, statistics, fold_statistics = {}, {}, {}, {}
        for name, (keys, table) in partial["tables"].items():
            backend = backend_for(table)
            full = table.drop(columns=[FOLD]).groupby(list(keys), dropna=False, sort=False).sum().reset_index()
            statistics[name] = _sorted(full, list(keys))
            encodings[name] = self._encode(full, list(keys), means)
            if self._kfold > 1:
                fold_statistics[name] = _sorted(table, [*keys, FOLD])
                # Every (key, fold) pair, including folds where the key never occurs.
                crossed = backend.concat_rows([full.assign(**{FOLD: f}) for f in range(self._kfold)])
                in_fold = backend.merge_keep_order(crossed[[*keys, FOLD]], table, [*keys, FOLD], [*keys, FOLD], how="left")
                stats = [c for c in full.columns if c not in keys]
                crossed = crossed.assign(**{c: crossed[c] - in_fold[c].fillna(0) for c in stats})
                oof_encodings[name] = self._encode(crossed, [*keys, FOLD], means)
        if self.out_path is not None:
            # Written before any fitted state is set: a failed write leaves the op unfitted.
            _vocab_files.write_statistics(self.out_path, self._nvtabular_tables(statistics, fold_statistics, targets))
        self.means_, self.partitions_, self.encodings_, self.oof_encodings_ = means, partitions, encodings, oof_encodings
        self.statistics_, self.fold_statistics_ = statistics, fold_statistics

    update_needs = {
        "statistics_": (
            "it was fitted by a tabflow that kept no statistics tables (a workflow saved by an earlier release); "
            "fit it again"
        ),
    }

    def fitted_partial(self) -> dict[str, Any]:
        """The fitted statistics per key and fold (fold 0 without folds) and the fitted
        partitions' fingerprints: an update adds the new data's rows to the same keys and
        folds, and the new partitions to the training data it recognises."""
        self.check_updatable()
        targets = list(self.means_)
        stats = {ROWS, *(f"{p}_{t}" for t in targets for p in "ns")}
        tables = {}
        for name, full in self.statistics_.items():
            keys = tuple(c for c in full.columns if c not in stats)
            table = self.fold_statistics_[name] if self._kfold > 1 else full.assign(**{FOLD: 0})
            tables[name] = (keys, table[[*keys, FOLD, *(c for c in table.columns if c in stats)]])
        return {"tables": tables, "partitions": [list(p) for p in self.partitions_], "targets": targets}

    def _prior(self, target: str, total: float, count: float) -> float:
        if isinstance(self.target_mean, dict):
            return float(self.target_mean[target])
        if self.target_mean is not None:
            return float(self.target_mean)
        return total / count if count else 0.0

    def _encode(self, stats: Any, keys: list[str], means: dict[str, float]) -> Any:
        """The encoding table of summed statistics, sorted by its keys (nulls last): the
        fitted table is the same whatever order the engine grouped in (cuDF's is none)."""
        out = {k: stats[k] for k in keys}
        for t in means:
            n, s = stats[f"n_{t}"], stats[f"s_{t}"].fillna(0.0)
            denominator = (n + self.p_smooth).where(n + self.p_smooth > 0)
            out[t] = ((s + self.p_smooth * means[t]) / denominator).fillna(means[t]).astype("float64")
        return _sorted(backend_for(stats).frame_from_dict(out), keys)

    # ------------------------------------------------------- NVTabular's files
    @property
    def stats(self) -> dict[str, str]:
        """NVTabular's fitted ``stats``: per statistics table, the path of its
        ``cat_stats.<name>.parquet`` file, which NVTabular scripts read with
        ``pd.read_parquet``. Empty before fitting, as NVTabular's was.

        Tables are named as NVTabular named them: per key column or group (``"a"``,
        ``"a_b"``) the full-data statistics, and with ``kfold > 1`` also ``"__fold___a"``,
        the statistics of each fold (columns ``__fold__`` and the keys). Each file has the
        key columns, ``<name>_count`` (rows of the key) and ``<name>_<target>_sum`` per
        target. With ``out_path`` the files are the ones written there while fitting;
        without it they are written on first use under a private temporary directory, once
        per fit, and removed with the op (or when Python exits).

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> op = ops.TargetEncoding("y", kfold=2)
        >>> _ = nvt.Workflow(["c"] >> op).fit(pd.DataFrame({"c": ["a", "b", "a", "a"], "y": [1.0, 0.0, 1.0, 0.0]}))
        >>> sorted(op.stats)
        ['__fold___c', 'c']
        >>> pd.read_parquet(op.stats["c"])
           c  c_count  c_y_sum
        0  a        3      2.0
        1  b        1      0.0
        """
        if not self.fitted:
            return {}
        if not hasattr(self, "statistics_"):
            raise AttributeError(
                "this TargetEncoding was fitted by a tabflow that kept no statistics tables (a workflow saved by "
                "an earlier release): fit the workflow again to read its statistics files"
            )

        def paths() -> dict[str, str]:
            names = self._table_names(self.statistics_, self.fold_statistics_)
            if self.out_path is not None:
                return {name: _vocab_files.stats_path(self.out_path, name) for name in names}
            directory = tempfile.mkdtemp(prefix="tabflow-target-encoding-")
            weakref.finalize(self, shutil.rmtree, directory, True)
            targets = list(self.means_)
            return dict(_vocab_files.write_statistics(directory, self._nvtabular_tables(self.statistics_, self.fold_statistics_, targets)))

        return dict(self._derived("_stats_files", "paths", paths))

    def _table_names(self, statistics: dict[str, Any], fold_statistics: dict[str, Any]) -> list[str]:
        return [*statistics, *(self.name_sep.join([FOLD, name]) for name in fold_statistics)]

    def _nvtabular_tables(self, statistics: dict[str, Any], fold_statistics: dict[str, Any], targets: list[str]) -> dict[str, Any]:
        """The statistics as NVTabular laid out its files, as pandas frames."""
        names = self._table_names(statistics, fold_statistics)
        tables = [*statistics.values(), *fold_statistics.values()]
        out = {}
        for name, table in zip(names, tables):
            table = backend_for(table).to_host(table)
            host = backend_for(table)
            keys = [c for c in table.columns if c not in {ROWS, *(f"{p}_{t}" for t in targets for p in "ns")}]
            if FOLD in keys:  # NVTabular's fold tables start with the fold
                keys = [FOLD, *(k for k in keys if k != FOLD)]
            columns = {k: table[k] for k in keys}
            columns[self.name_sep.join([name, "count"])] = host.astype(table[ROWS], "int64")
            for t in targets:
                columns[self.name_sep.join([name, t, "sum"])] = host.astype(table[f"s_{t}"], "float64")
            out[name] = host.frame_from_dict(columns)
        return out

    # --------------------------------------------------------------- transform
    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        self.check_is_fitted()
        backend = backend_for(df)
        kfold = self._kfold
        folds = _folds.training_folds(df, self.partitions_, kfold, self.fold_seed) if kfold > 1 else None
        names = self._names(col_selector, list(df.columns))
        dtype = self._dtype
        out = {}
        for keys in gs.key_groups(col_selector):
            name = gs.group_name(keys, self.name_sep)
            if folds is None:
                left, table, on = df[list(keys)], self.encodings_[name], list(keys)
            else:
                left = backend.frame_from_dict({**{k: df[k] for k in keys}, FOLD: folds}, index=df.index)
                table, on = self.oof_encodings_[name], [*keys, FOLD]
            table = table if backend_for(table) is backend else backend.from_host(table)
            joined = backend.merge_keep_order(left, table, on, on, how="left")
            for t in self._targets(col_selector, list(df.columns)):
                out[names[(keys, t)]] = backend.astype(joined[t].fillna(self.means_[t]), dtype)
        if self._keeps_folds:
            out[FOLD] = backend.series(folds if folds is not None else np.full(len(df), -1, np.int64), index=df.index)
        return backend.frame_from_dict(out, index=df.index)

    @staticmethod
    def _carried_tags(input_schema: Schema, target: str) -> list[Any]:
        """The target's own tags, which NVTabular gives its encodings; tabflow's standard tags
        stay behind (an encoding is no target, category or id)."""
        if target not in input_schema:
            return []
        return [tag for tag in input_schema[target].tags if not isinstance(tag, Tags)]

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        mapping = {name: [*keys, t] for (keys, t), name in self._names(col_selector).items()}
        if self._keeps_folds:
            mapping[FOLD] = list(col_selector.names)
        return mapping

    def compute_output_schema(self, input_schema: Schema, col_selector: ColumnSelector, prev_output_schema: Any = None) -> Schema:
        names = self._names(col_selector, input_schema.column_names)
        columns = [
            ColumnSchema(name, dtype=self._dtype, tags={*self._carried_tags(input_schema, target), Tags.CONTINUOUS})
            for (_, target), name in names.items()
        ]
        if self._keeps_folds:
            columns.append(ColumnSchema(FOLD, dtype="int64"))
        return Schema(columns)


def _sorted(table: Any, keys: list[str]) -> Any:
    """``table`` sorted by ``keys`` (nulls last): fitted tables never follow the order the
    engine grouped in (cuDF's is none)."""
    return (table.sort_values(keys, na_position="last") if len(table) > 1 else table).reset_index(drop=True)
