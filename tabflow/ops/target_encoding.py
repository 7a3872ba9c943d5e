"""TargetEncoding: replace categories by the smoothed mean of a target, out-of-fold on training data."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tabflow.backends import backend_for
from tabflow.graph.selector import ColumnSelector
from tabflow.ops import _folds
from tabflow.ops import _groupstats as gs
from tabflow.ops.operator import StatOperator
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["TargetEncoding"]

FOLD = "__fold__"


class TargetEncoding(StatOperator):
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

    Parameters
    ----------
    target : str, list of str or ColumnSelector
        Continuous or binary target column(s); read as dependencies.
    target_mean : float or dict, optional
        Prior mean (per target for a dict); default the mean of the fitted data.
    kfold : int, default 3
        Number of folds; 1 disables out-of-fold encoding.
    fold_seed : int, default 42
    p_smooth : float, default 20
        Weight of the prior, in rows.
    out_col : str or list of str, optional
        Output names (one per key group and target, key-major) instead of ``TE_<key>_<target>``.
    out_dtype : str, default "float32"
    drop_folds : bool, default True
        False adds a ``__fold__`` column: the row's fold for training data, -1 elsewhere.
    name_sep : str, default "_"

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

    def __init__(
        self,
        target: Any,
        target_mean: float | dict | None = None,
        kfold: int = 3,
        fold_seed: int | None = 42,
        p_smooth: float = 20,
        out_col: str | Sequence[str] | None = None,
        out_dtype: str | None = None,
        drop_folds: bool = True,
        name_sep: str = "_",
    ) -> None:
        self.target = target
        self.target_mean = target_mean
        self.kfold = kfold
        self.fold_seed = fold_seed
        self.p_smooth = p_smooth
        self.out_col = out_col
        self.out_dtype = out_dtype
        self.drop_folds = drop_folds
        self.name_sep = name_sep

    @property
    def dependencies(self) -> list[Any]:
        return [self.target]

    def _targets(self) -> list[str]:
        return gs.as_names(self.target)

    def _names(self, col_selector: ColumnSelector) -> dict[tuple, str]:
        pairs = [(keys, t) for keys in gs.key_groups(col_selector) for t in self._targets()]
        given = [self.out_col] if isinstance(self.out_col, str) else self.out_col
        if given is not None:
            return dict(zip(pairs, given))
        return {(keys, t): self.name_sep.join(["TE", gs.group_name(keys, self.name_sep), t]) for keys, t in pairs}

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if not isinstance(self.kfold, int) or self.kfold < 1:
            raise ValueError(f"TargetEncoding kfold must be an integer >= 1, got {self.kfold!r}")
        if self.p_smooth < 0:
            raise ValueError(f"TargetEncoding p_smooth must be >= 0, got {self.p_smooth!r}")
        gs.require_columns(input_schema, self._targets(), "target", "TargetEncoding")
        for t in self._targets():
            dtype = input_schema[t].dtype
            if not (dtype.lower().startswith(("int", "uint", "float")) or dtype in ("bool", "boolean")):
                raise TypeError(f"TargetEncoding target {t!r} must be numeric or boolean, got dtype {dtype}")
        pairs = len(gs.key_groups(col_selector)) * len(self._targets())
        given = [self.out_col] if isinstance(self.out_col, str) else self.out_col
        if given is not None and len(given) != pairs:
            raise ValueError(f"TargetEncoding out_col has {len(given)} name(s) for {pairs} key/target pair(s)")

    # ----------------------------------------------------------------- fitting
    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, Any]:
        backend = backend_for(df)
        fp = _folds.fingerprint(_folds.row_hashes(df)) if self.kfold > 1 else 0
        folds = _folds.assign_folds(fp, len(df), self.kfold, self.fold_seed) if self.kfold > 1 else np.zeros(len(df), np.int64)
        tables = {}
        for keys in gs.key_groups(col_selector):
            work = {k: df[k] for k in keys}
            work[FOLD] = folds
            for t in self._targets():
                work[f"x_{t}"] = backend.to_float(df[t], "float64")
            frame = backend.frame_from_dict(work, index=df.index)
            aggs = {f"{s}_{t}": (f"x_{t}", agg) for t in self._targets() for s, agg in (("n", "count"), ("s", "sum"))}
            tables[gs.group_name(keys, self.name_sep)] = (keys, frame.groupby([*keys, FOLD], dropna=False, sort=False).agg(**aggs).reset_index())
        return {"tables": tables, "partitions": [[len(df), fp]]}

    def combine_partials(self, partials: list[dict[str, Any]]) -> dict[str, Any]:
        tables = {}
        for name, (keys, _) in partials[0]["tables"].items():
            frames = [p["tables"][name][1] for p in partials]
            frames = [f for f in frames if len(f)] or frames[:1]
            stacked = backend_for(frames[0]).concat_rows(frames)
            tables[name] = (keys, stacked.groupby([*keys, FOLD], dropna=False, sort=False).sum().reset_index())
        return {"tables": tables, "partitions": [q for p in partials for q in p["partitions"]]}

    def fit_finalize(self, partial: dict[str, Any]) -> None:
        targets = self._targets()
        first = next(iter(partial["tables"].values()))[1]
        self.means_ = {t: self._prior(t, float(first[f"s_{t}"].sum()), float(first[f"n_{t}"].sum())) for t in targets}
        self.partitions_ = [[int(n), int(fp)] for n, fp in partial["partitions"]] if self.kfold > 1 else []
        self.encodings_, self.oof_encodings_ = {}, {}
        for name, (keys, table) in partial["tables"].items():
            backend = backend_for(table)
            full = table.drop(columns=[FOLD]).groupby(list(keys), dropna=False, sort=False).sum().reset_index()
            self.encodings_[name] = self._encode(full, list(keys))
            if self.kfold > 1:
                # Every (key, fold) pair, including folds where the key never occurs.
                crossed = backend.concat_rows([full.assign(**{FOLD: f}) for f in range(self.kfold)])
                in_fold = backend.merge_keep_order(crossed[[*keys, FOLD]], table, [*keys, FOLD], [*keys, FOLD], how="left")
                stats = [c for c in full.columns if c not in keys]
                crossed[stats] = crossed[stats] - in_fold[stats].fillna(0)
                self.oof_encodings_[name] = self._encode(crossed, [*keys, FOLD])

    def _prior(self, target: str, total: float, count: float) -> float:
        if isinstance(self.target_mean, dict):
            return float(self.target_mean[target])
        if self.target_mean is not None:
            return float(self.target_mean)
        return total / count if count else 0.0

    def _encode(self, stats: Any, keys: list[str]) -> Any:
        out = {k: stats[k] for k in keys}
        for t in self._targets():
            n, s = stats[f"n_{t}"], stats[f"s_{t}"]
            denominator = (n + self.p_smooth).where(n + self.p_smooth > 0)
            out[t] = ((s + self.p_smooth * self.means_[t]) / denominator).fillna(self.means_[t]).astype("float64")
        return backend_for(stats).frame_from_dict(out).reset_index(drop=True)

    # --------------------------------------------------------------- transform
    def transform(self, col_selector: ColumnSelector, df: Any) -> Any:
        self.check_is_fitted()
        backend = backend_for(df)
        folds = _folds.training_folds(df, self.partitions_, self.kfold, self.fold_seed) if self.kfold > 1 else None
        names = self._names(col_selector)
        dtype = self.out_dtype or "float32"
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
            for t in self._targets():
                out[names[(keys, t)]] = joined[t].fillna(self.means_[t]).astype(dtype)
        if not self.drop_folds:
            out[FOLD] = backend.series(folds if folds is not None else np.full(len(df), -1, np.int64), index=df.index)
        return backend.frame_from_dict(out, index=df.index)

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        mapping = {name: [*keys, t] for (keys, t), name in self._names(col_selector).items()}
        if not self.drop_folds:
            mapping[FOLD] = list(col_selector.names)
        return mapping

    def compute_output_schema(self, input_schema: Schema, col_selector: ColumnSelector) -> Schema:
        dtype = self.out_dtype or "float32"
        columns = [ColumnSchema(name, dtype=dtype, tags={Tags.CONTINUOUS}) for name in self._names(col_selector).values()]
        if not self.drop_folds:
            columns.append(ColumnSchema(FOLD, dtype="int64"))
        return Schema(columns)
