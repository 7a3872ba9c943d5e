"""The graph runner a dask graph shares between its tasks: how it travels between processes.

A runner is serialised once; later copies (each partition's submission, one worker handing it
to another) send the same bytes and never read the live graph, which ops and pandas mutate
while tasks run on it.
"""

from __future__ import annotations

import copy
import pickle
import threading

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.graph.executor import GraphRunner


def _frame(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strings = pd.array([f"v{k}" for k in rng.integers(0, 500, size=rows)], dtype="str")
    strings[rng.random(rows) < 0.1] = None
    return pd.DataFrame({"s": strings, "x": rng.normal(size=rows)})


def _fitted_runner() -> tuple[GraphRunner, nvt.Workflow]:
    workflow = nvt.Workflow((["s"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
    workflow.fit(_frame(2000, seed=0))
    return GraphRunner([workflow.output_node], workflow.input_schema), workflow


def _categorify(runner: GraphRunner) -> ops.Categorify:
    (op,) = [node.op for node in _nodes(runner.targets[0]) if isinstance(node.op, ops.Categorify)]
    return op


def _nodes(node):
    yield node
    for parent in node.parents + node.dependencies:
        yield from _nodes(parent)


def test_a_copied_runner_sends_the_bytes_it_arrived_as_without_reading_its_live_graph():
    runner, workflow = _fitted_runner()
    sent = pickle.dumps(runner)
    arrived = pickle.loads(sent)
    # What running a task does to the live graph: an op builds its engine tables ...
    expected = workflow.transform(_frame(300, seed=1))
    pd.testing.assert_frame_equal(arrived.transform(_frame(300, seed=1)), expected)
    assert _categorify(arrived).__dict__["_tables"]
    # ... and state that cannot be pickled at all would not matter either.
    _categorify(arrived).unpicklable = threading.Lock()
    assert pickle.dumps(arrived) == sent
    pd.testing.assert_frame_equal(pickle.loads(pickle.dumps(arrived)).transform(_frame(300, seed=1)), expected)


def test_a_copy_rebuilds_the_graph_only_when_it_first_runs():
    """The dask scheduler passes runners on without running them: it never rebuilds one."""
    runner, workflow = _fitted_runner()
    copied = pickle.loads(pickle.dumps(runner))
    assert copied.__dict__["_graph"] is None
    assert pickle.loads(pickle.dumps(copied)).__dict__["_graph"] is None
    pd.testing.assert_frame_equal(copied.transform(_frame(100, seed=6)), workflow.transform(_frame(100, seed=6)))
    assert copied.__dict__["_graph"] is not None
    assert [node.output_schema for node in copied.targets] == [node.output_schema for node in runner.targets]
    assert copied.input_schema == workflow.input_schema


def test_protocol_5_hands_the_bytes_over_out_of_band():
    """dask pickles with protocol 5 and sends buffers as they are: no copy per submission."""
    runner, workflow = _fitted_runner()
    buffers: list = []
    message = pickle.dumps(runner, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(message) < 200
    arrived = pickle.loads(message, buffers=[memoryview(buffer) for buffer in buffers])
    pd.testing.assert_frame_equal(arrived.transform(_frame(100, seed=7)), workflow.transform(_frame(100, seed=7)))
    assert pickle.dumps(arrived, protocol=4) == pickle.dumps(runner, protocol=4)


def test_a_runner_is_serialised_once_from_the_state_it_had_then():
    runner, workflow = _fitted_runner()
    first = pickle.dumps(runner)
    runner.transform(_frame(300, seed=2))  # fills the ops' engine tables and pandas' caches
    assert pickle.dumps(runner) == first
    clone = copy.deepcopy(runner)
    assert clone is not runner and clone.targets[0] is not runner.targets[0]
    pd.testing.assert_frame_equal(clone.transform(_frame(50, seed=3)), workflow.transform(_frame(50, seed=3)))


def test_pickling_a_runner_while_another_thread_transforms_with_it():
    """A worker serialises the runner for a peer while its own task runs on it."""
    runner = pickle.loads(pickle.dumps(_fitted_runner()[0]))
    frames = [_frame(2000, seed=10 + k) for k in range(4)]
    stop, errors = threading.Event(), []

    def transform_repeatedly():
        try:
            while not stop.is_set():
                for frame in frames:
                    runner.transform(frame)
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    worker = threading.Thread(target=transform_repeatedly)
    worker.start()
    try:
        copies = {pickle.dumps(runner) for _ in range(300)}
    finally:
        stop.set()
        worker.join()
    assert not errors and len(copies) == 1


def test_lambda_ops_and_locally_defined_classes_travel_with_the_runner():
    class Doubled(ops.Operator):
        def transform(self, col_selector, df):
            return df[col_selector.names] * 2

    workflow = nvt.Workflow(["x"] >> ops.LambdaOp(lambda col: col + 1) >> Doubled())
    workflow.fit(_frame(10, seed=0))
    runner = pickle.loads(pickle.dumps(GraphRunner([workflow.output_node], workflow.input_schema)))
    frame = _frame(20, seed=4)
    np.testing.assert_array_equal(runner.transform(frame)["x"].to_numpy(), (frame["x"].to_numpy() + 1) * 2)


@pytest.mark.parametrize("make", [ops.Categorify, lambda: ops.Categorify(single_table=True)])
def test_categorify_pickles_without_its_engine_tables(make):
    workflow = nvt.Workflow(["s"] >> make())
    workflow.fit(_frame(5000, seed=0))
    (op,) = workflow.ops
    before = len(pickle.dumps(op))
    expected = GraphRunner([workflow.output_node], workflow.input_schema).transform(_frame(500, seed=5))
    assert op.__dict__["_tables"]  # built by the transform
    copied = pickle.loads(pickle.dumps(workflow))
    (copied_op,) = copied.ops
    assert "_tables" not in copied_op.__dict__ and len(pickle.dumps(op)) == before
    # The copy builds its own tables and encodes the same way.
    pd.testing.assert_frame_equal(GraphRunner([copied.output_node], copied.input_schema).transform(_frame(500, seed=5)), expected)
    assert copied_op.__dict__["_tables"]


class _Counted(nvt.ops.Operator):
    """Adds one to its columns, recording which earlier outputs of the same log are still
    alive when it runs (``log``: weak references to the outputs' arrays, in the order made)."""

    def __init__(self, log: list) -> None:
        self.log = log

    def transform(self, col_selector, df):
        import weakref

        alive = [i for i, (_, ref) in enumerate(self.log) if ref() is not None]
        # An array of its own, watched: the frames the graph passes on wrap it, not copy it.
        values = df[col_selector.names].to_numpy(dtype=np.float64) + 1
        self.log.append((alive, weakref.ref(values)))
        return pd.DataFrame(values, columns=col_selector.names, index=df.index, copy=False)


def test_a_chain_of_ops_holds_the_output_it_reads_not_all_before_it():
    log: list = []
    chain = ["x"]
    for _ in range(4):
        chain = chain >> _Counted(log)
    workflow = nvt.Workflow(chain)
    frame = pd.DataFrame({"x": np.arange(5.0)})
    # A Dataset: transformed partition by partition by the graph runner (a small in-memory
    # frame takes the serving plan instead).
    out = workflow.fit_transform(nvt.Dataset(frame)).compute()
    assert out["x"].tolist() == (frame["x"] + 4).tolist()
    # Each op sees only its own input alive: the outputs before it were let go.
    assert [alive for alive, _ in log[-4:]] == [[], [len(log) - 4], [len(log) - 3], [len(log) - 2]]


def test_an_output_read_by_two_ops_is_held_until_both_have_run():
    log: list = []
    shared = ["x"] >> _Counted(log)
    workflow = nvt.Workflow((shared >> _Counted(log) >> nvt.ops.Rename(postfix="_a")) + (shared >> _Counted(log) >> nvt.ops.Rename(postfix="_b")))
    frame = pd.DataFrame({"x": np.arange(5.0)})
    out = workflow.fit_transform(nvt.Dataset(frame)).compute()
    assert out["x_a"].tolist() == out["x_b"].tolist() == (frame["x"] + 2).tolist()
    first, second, third = log[-3:]
    start = len(log) - 3
    assert start in second[0] and start in third[0]  # the shared output, alive for both readers


def test_consumer_counts_count_every_edge_read():
    from tabflow.graph.executor import consumer_counts

    shared = ["x"] >> nvt.ops.LogOp()
    top = (shared >> nvt.ops.Rename(postfix="_a")) + (shared >> nvt.ops.Rename(postfix="_b"))
    counts = consumer_counts([top], inputs_only=False)
    assert counts[shared.id] == 2
    assert counts == consumer_counts([top], inputs_only=False)  # a fresh count each call
    assert top.id not in counts  # the root's output is the caller's
    assert consumer_counts([top], inputs_only=True)[top.parents[0].id] == 1
