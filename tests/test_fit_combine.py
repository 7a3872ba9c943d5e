"""How a workflow merges the per-partition statistics of its ops: as a tree of
``combine_partials`` calls, or, for ops whose merge is exact (``exact_combine``), folded into
one running total so that the fit's memory does not grow with the number of partitions."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops


class _Seen(ops.StatOperator):
    """Records the sizes of the partials each merge gets: a partial is the set of row ids seen."""

    def __init__(self, exact: bool = False):
        self.exact = exact

    @property
    def exact_combine(self) -> bool:  # per instance, to put both kinds in one workflow
        return self.exact

    def fit_partition(self, col_selector, df):
        return frozenset(df[col_selector.names[0]].tolist())

    def combine_partials(self, partials):
        from tabflow.graph.executor import combining_last

        self.calls.append(sorted(len(p) for p in partials))
        self.last.append(combining_last())
        return frozenset().union(*partials)

    def fit_finalize(self, partial):
        self.ids_ = sorted(partial)

    def transform(self, col_selector, df):
        return df[col_selector.names]

    def clear(self):
        self.calls, self.last = [], []
        self.__dict__.pop("ids_", None)


def _ids(partitions: int, rows_per: int = 10) -> dd.DataFrame:
    frame = pd.DataFrame({"i": np.arange(partitions * rows_per), "j": np.arange(partitions * rows_per)})
    return dd.from_pandas(frame, npartitions=partitions, sort=False)


def test_an_exact_op_folds_its_partials_into_a_running_total_beside_a_tree_of_the_others():
    folded, tree = _Seen(exact=True), _Seen(exact=False)
    workflow = nvt.Workflow((["i"] >> folded) + (["j"] >> tree))
    workflow.fit(_ids(20))
    assert folded.ids_ == tree.ids_ == list(range(200))
    # Running total: 8 partitions, then the total (80 ids) with 7 more, then with the last 5.
    assert folded.calls == [[10] * 8, [10] * 7 + [80], [10] * 5 + [150]]
    # Tree: groups of 8 partitions (in any order), then one merge of the three groups' results.
    assert sorted(tree.calls[:3]) == [[10] * 4, [10] * 8, [10] * 8] and tree.calls[3] == [40, 80, 80]
    # Only the fold's last merge has every partition in it (an op may then use every core).
    assert folded.last == [False, False, True] and not any(tree.last)


@pytest.mark.parametrize(("partitions", "merges"), [(1, 0), (2, 1), (8, 1), (9, 2), (15, 2), (16, 3)])
def test_the_fold_merges_every_partition_once(partitions, merges):
    op = _Seen(exact=True)
    nvt.Workflow(["i"] >> op).fit(_ids(partitions, rows_per=3))
    assert op.ids_ == list(range(partitions * 3))
    assert len(op.calls) == merges
    assert op.last == [False] * (merges - 1) + [True] * (merges > 0)
    assert all(len(call) <= 8 for call in op.calls)
    # Each merge after the first takes the running total and partitions not merged before.
    assert sum(len(call) for call in op.calls) - max(merges - 1, 0) == (partitions if merges else 0)


def test_categorify_folded_over_many_partitions_matches_pandas_value_counts():
    rng = np.random.default_rng(3)
    values = pd.array([f"id{k}" for k in rng.zipf(1.3, size=6000) % 700], dtype="str")
    values[rng.random(6000) < 0.05] = None
    frame = pd.DataFrame({"c": values, "n": rng.integers(0, 5, size=6000)})
    # 23 partitions, three of them empty: several fold steps, empty count tables among them.
    parts = [frame.iloc[i * 300 : (i + 1) * 300] for i in range(20)] + [frame.iloc[:0]] * 3
    ddf = dd.concat([dd.from_pandas(part, npartitions=1) for part in parts])
    op = ops.Categorify()
    workflow = nvt.Workflow((["c"] >> op) + (["n"] >> ops.Normalize()))
    workflow.fit(nvt.Dataset(ddf))
    counts = frame["c"].value_counts()
    expected = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    vocab = op.vocabs_["c"]
    assert list(zip(vocab["value"].tolist(), vocab["count"].tolist())) == expected
    assert op.null_counts_["c"] == int(frame["c"].isna().sum())
    codes = workflow.transform(frame)["c"].to_numpy()
    position = {value: k for k, (value, _) in enumerate(expected)}
    reference = [1 if pd.isna(v) else 3 + position[v] for v in frame["c"].tolist()]
    np.testing.assert_array_equal(codes, reference)


def test_every_fit_task_starts_with_the_registered_hooks(monkeypatch):
    from tabflow.graph import executor

    monkeypatch.setattr(executor, "_FIT_TASK_HOOKS", [])
    started, merging = [], []
    hook = executor.register_fit_task_hook(lambda: started.append(1))
    assert executor.register_fit_task_hook(hook) is hook and len(executor._FIT_TASK_HOOKS) == 1  # once
    executor.register_fit_task_hook(lambda: merging.append(1), merges_only=True)
    folded, tree = _Seen(exact=True), _Seen(exact=False)
    nvt.Workflow((["i"] >> folded) + (["j"] >> tree)).fit(_ids(20))
    # One task per partition's statistics, and one per merge of each op's partials.
    assert len(started) == 20 + len(folded.calls) + len(tree.calls)
    assert len(merging) == len(folded.calls) + len(tree.calls) > 0


def test_the_allocator_releases_are_registered_for_fit_tasks():
    from tabflow.graph.executor import _FIT_TASK_HOOKS
    from tabflow.io.memory import release_arrow_memory, release_freed_memory

    assert (release_freed_memory, False) in _FIT_TASK_HOOKS and (release_arrow_memory, True) in _FIT_TASK_HOOKS
