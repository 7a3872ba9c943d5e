"""Saving loses nothing: Workflow.save and Dataset.to_parquet over every kind of existing target."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.io import atomic
from tabflow.serialize import SaveError


def _save_workflow(path, overwrite=False):
    frame = pd.DataFrame({"x": [1.0, 2.0, 4.0]})
    nvt.Workflow(["x"] >> ops.Normalize()).fit(frame).save(str(path), overwrite=overwrite)


def _save_dataset(path, overwrite=False):
    nvt.Dataset(pd.DataFrame({"x": range(10)}), npartitions=2).to_parquet(str(path), overwrite=overwrite)


WRITERS = {"workflow": (_save_workflow, "workflow.json"), "dataset": (_save_dataset, "_schema.json")}


@pytest.fixture(params=sorted(WRITERS))
def writer(request):
    return WRITERS[request.param]


def _project(root):
    """A directory that looks like someone's work: files and a subfolder."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.py").write_text("print('hello')\n")
    (root / "notes").mkdir()
    (root / "notes" / "todo.md").write_text("- ship it\n")
    return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _contents(root):
    return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_new_path_with_missing_parents(writer, tmp_path):
    save, marker = writer
    save(tmp_path / "a" / "b" / "out")
    assert (tmp_path / "a" / "b" / "out" / marker).is_file()
    assert os.listdir(tmp_path / "a" / "b") == ["out"]


def test_empty_directory_is_used(writer, tmp_path):
    save, marker = writer
    (tmp_path / "out").mkdir()
    save(tmp_path / "out")
    assert (tmp_path / "out" / marker).is_file()


def test_previous_output_of_the_same_kind_is_replaced_as_a_whole(writer, tmp_path):
    save, marker = writer
    save(tmp_path / "out")
    first = _contents(tmp_path / "out")
    save(tmp_path / "out")
    assert (tmp_path / "out" / marker).is_file() and set(_contents(tmp_path / "out")) == set(first)
    assert os.listdir(tmp_path) == ["out"]


def test_a_file_added_to_a_previous_output_is_kept(writer, tmp_path):
    save, marker = writer
    save(tmp_path / "out")
    (tmp_path / "out" / "notes.md").write_text("added by hand")
    save(tmp_path / "out")
    assert (tmp_path / "out" / "notes.md").read_text() == "added by hand"
    assert (tmp_path / "out" / marker).is_file() and os.listdir(tmp_path) == ["out"]


def test_a_project_folder_gets_the_output_beside_its_files(writer, tmp_path):
    save, marker = writer
    before = _project(tmp_path / "project")
    save(tmp_path / "project")
    after = _contents(tmp_path / "project")
    assert {k: after[k] for k in before} == before  # every neighbour untouched
    assert (tmp_path / "project" / marker).is_file()
    assert os.listdir(tmp_path) == ["project"]  # nothing beside the directory either
    kind = "workflow" if marker == "workflow.json" else "dataset"
    owned = set(atomic.owned_files(str(tmp_path / "project"), kind))
    assert {str(k) for k in after} == owned | {str(k) for k in before} | {atomic.MANIFESTS[kind]}
    assert not any(name.startswith(".tabflow-tmp-") for name in os.listdir(tmp_path / "project"))


def test_a_file_is_refused_and_untouched(writer, tmp_path):
    save, marker = writer
    (tmp_path / "out").write_text("precious")
    with pytest.raises(SaveError, match="is a file"):
        save(tmp_path / "out")
    assert (tmp_path / "out").read_text() == "precious" and os.listdir(tmp_path) == ["out"]
    save(tmp_path / "out", overwrite=True)
    assert (tmp_path / "out" / marker).is_file() and os.listdir(tmp_path) == ["out"]


def test_the_two_kinds_of_output_share_a_directory(tmp_path):
    _save_dataset(tmp_path / "both")
    _save_workflow(tmp_path / "both")
    _save_dataset(tmp_path / "both")  # replaces the dataset's files only
    assert sorted(nvt.Dataset(str(tmp_path / "both")).to_ddf().compute()["x"]) == list(range(10))
    loaded = nvt.Workflow.load(str(tmp_path / "both"))
    assert loaded.transform(pd.DataFrame({"x": [2.0]}))["x"].tolist() == pytest.approx([-0.218217890])
    assert os.listdir(tmp_path) == ["both"]


def test_overwrite_replaces_a_foreign_directory(writer, tmp_path):
    save, marker = writer
    _project(tmp_path / "project")
    save(tmp_path / "project", overwrite=True)
    assert (tmp_path / "project" / marker).is_file() and not (tmp_path / "project" / "train.py").exists()
    assert os.listdir(tmp_path) == ["project"]


@pytest.mark.parametrize("target", [".", ".."])
def test_the_current_directory_and_its_parents_are_never_replaced(writer, tmp_path, monkeypatch, target):
    save, marker = writer
    before = _project(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project" / "notes" if target == ".." else tmp_path / "project")
    with pytest.raises(SaveError, match="current directory"):
        save(target, overwrite=True)
    assert _contents(tmp_path / "project") == before
    save(target)  # added beside its files: the directory itself stays
    after = _contents(tmp_path / "project")
    assert {k: after[k] for k in before} == before and (tmp_path / "project" / marker).is_file()
    assert os.listdir(tmp_path) == ["project"]


def test_replacement_without_an_atomic_exchange(writer, tmp_path, monkeypatch):
    save, marker = writer
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    save(tmp_path / "out")
    save(tmp_path / "out")
    assert (tmp_path / "out" / marker).is_file() and os.listdir(tmp_path) == ["out"]


def _env():
    """The environment of a writer subprocess: it imports this tabflow."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(nvt.__file__)))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}


def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_temporaries_of_dead_writers_are_removed_others_kept(writer, tmp_path):
    save, _ = writer
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = __import__("socket").gethostname()
        dead = tmp_path / "out.tmp-0123456789ab"
        dead.mkdir()
        (dead / ".tabflow-writing").write_text(f"{host}\n{_dead_pid()}\n")
        alive = tmp_path / "out.tmp-abcdefabcdef"
        alive.mkdir()
        (alive / ".tabflow-writing").write_text(f"{host}\n{sleeper.pid}\n")
        unmarked = tmp_path / "out.tmp-111111111111"
        unmarked.mkdir()
        other_output = tmp_path / "other.tmp-222222222222"
        other_output.mkdir()
        (other_output / ".tabflow-writing").write_text(f"{host}\n{_dead_pid()}\n")
        crashed_replace = tmp_path / "out.old-333333333333"
        crashed_replace.mkdir()
        (crashed_replace / ".tabflow-replaced").write_text(f"{host}\n{_dead_pid()}\n")
        save(tmp_path / "out")
        assert sorted(os.listdir(tmp_path)) == sorted(
            ["out", "out.tmp-abcdefabcdef", "out.tmp-111111111111", "other.tmp-222222222222"]
        )
    finally:
        sleeper.kill()
        sleeper.wait()


_SLOW_WRITER = """
import sys, time
import pandas as pd
import tabflow as nvt

def slow(frame):
    time.sleep(0.5)
    return frame

ddf = nvt.Dataset(pd.DataFrame({"x": range(400)}), npartitions=40).to_ddf().map_partitions(slow)
print("writing", flush=True)
nvt.Dataset(ddf).to_parquet(sys.argv[1])
"""


def test_a_killed_writer_leaves_the_previous_output_whole(tmp_path):
    _save_dataset(tmp_path / "out")
    before = _contents(tmp_path / "out")
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(_SLOW_WRITER))
    process = subprocess.Popen([sys.executable, str(script), str(tmp_path / "out")], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "writing"
    deadline = time.monotonic() + 60
    while not any(name.startswith("out.tmp-") for name in os.listdir(tmp_path)):
        assert time.monotonic() < deadline, "the writer never started"
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert _contents(tmp_path / "out") == before  # the old dataset, complete
    assert any(name.startswith("out.tmp-") for name in os.listdir(tmp_path))
    assert nvt.Dataset(str(tmp_path / "out")).num_rows == 10
    _save_dataset(tmp_path / "out")  # the next write cleans up after the killed one
    assert sorted(os.listdir(tmp_path)) == ["out", "writer.py"]
    assert nvt.Dataset(str(tmp_path / "out")).num_rows == 10


# ------------------------------------------------ beside other files (inputs, notebooks)


def _inputs(directory):
    """Two input files with nulls, in the directory the output goes to (as NVTabular's tests
    and notebooks have them)."""
    directory.mkdir(parents=True, exist_ok=True)
    frames = [
        pd.DataFrame({"x": [1.0, None, 3.0, 4.0], "c": ["a", None, "b", "a"]}),
        pd.DataFrame({"x": [None, 6.0], "c": ["z", "b"]}),
    ]
    for k, frame in enumerate(frames):
        frame.to_parquet(directory / f"input-{k}.parquet")
    (directory / "notebook.ipynb").write_text("{}")
    return pd.concat(frames, ignore_index=True)


def _workflow():
    return nvt.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing(fill_val=0.0)))


def test_transform_of_inputs_written_beside_them(tmp_path):
    d = tmp_path / "work"
    frame = _inputs(d)
    before = _contents(d)
    dataset = nvt.Dataset(str(d / "*.parquet"), part_size="1KB")
    workflow = _workflow().fit(dataset)
    assert dataset.npartitions >= 2
    # An empty partition among the written ones: partition 1 keeps no rows.
    transformed = workflow.transform(dataset).to_ddf()
    transformed = transformed.map_partitions(lambda part, partition_info=None: part.iloc[:0] if partition_info and partition_info["number"] == 1 else part)
    nvt.Dataset(transformed).to_parquet(str(d), output_files=3)
    after = _contents(d)
    assert {k: after[k] for k in before} == before
    assert {str(k) for k in after if str(k).startswith("part_")} == {"part_0.parquet", "part_1.parquet", "part_2.parquet"}
    read = nvt.Dataset(str(d)).to_ddf().compute().reset_index(drop=True)
    reference = transformed.compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(read, reference, check_dtype=False)
    # the user's glob still reads the user's files, with their own columns and dtypes
    again = nvt.Dataset(str(d / "input-*.parquet")).to_ddf().compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(again[["x", "c"]], frame, check_dtype=False)
    # against pandas: the rows written are the transform of the input's rows
    full = workflow.transform(frame)
    assert read["x"].notna().all() and set(read["x"]) <= set(frame["x"].fillna(0.0))
    assert len(read) < len(full) and set(map(tuple, read.values.tolist())) <= set(map(tuple, full[read.columns].values.tolist()))


def test_rewriting_beside_replaces_only_the_previous_output(tmp_path):
    d = tmp_path / "work"
    _inputs(d)
    dataset = nvt.Dataset(str(d / "*.parquet"))
    workflow = _workflow().fit(dataset)
    workflow.transform(dataset).to_parquet(str(d), output_files=3)
    neighbours = {k: v for k, v in _contents(d).items() if not str(k).startswith(("part_", "_", ".merlin", ".tabflow"))}
    # the inputs of this write are in the same directory, read lazily while it writes
    nvt.Dataset(str(d / "input-*.parquet")).to_parquet(str(d), output_files=1)
    names = {str(k) for k in _contents(d)}
    assert "part_1.parquet" not in names and "part_2.parquet" not in names  # the previous output's files went
    assert {k: v for k, v in _contents(d).items() if k in neighbours} == neighbours
    assert nvt.Dataset(str(d)).num_rows == 6
    assert not [n for n in os.listdir(d) if n.startswith((".tabflow-tmp-", ".tabflow-publishing"))]


def test_an_output_name_over_a_foreign_file_is_refused_before_any_work(writer, tmp_path):
    d = tmp_path / "work"
    _inputs(d)
    (d / "part_0.parquet").write_bytes((d / "input-0.parquet").read_bytes())
    before = _contents(d)
    with pytest.raises(SaveError, match=r"work/part_0\.parquet exists and was not written by tabflow.*output_files="):
        nvt.Dataset(str(d / "input-*.parquet")).to_parquet(str(d))
    assert _contents(d) == before and sorted(os.listdir(tmp_path)) == ["work"]
    assert not [n for n in os.listdir(d) if n.startswith(".tabflow")]
    # the fix the message names: other file names
    nvt.Dataset(str(d / "input-*.parquet")).to_parquet(str(d), output_files=["out_0.parquet", "out_1.parquet"])
    assert nvt.Dataset(str(d)).num_rows == 6 and (d / "part_0.parquet").read_bytes() == before[__import__("pathlib").Path("part_0.parquet")]


def test_an_output_from_before_manifests_keeps_its_neighbours(writer, tmp_path):
    save, marker = writer
    kind = "workflow" if marker == "workflow.json" else "dataset"
    save(tmp_path / "out")
    os.remove(tmp_path / "out" / atomic.MANIFESTS[kind])  # as tabflow wrote outputs before manifests
    (tmp_path / "out" / "other.txt").write_text("x")
    save(tmp_path / "out")
    assert (tmp_path / "out" / "other.txt").read_text() == "x"
    assert (tmp_path / "out" / marker).is_file() and atomic.owned_files(str(tmp_path / "out"), kind)
    assert os.listdir(tmp_path) == ["out"]


_SLOW_BESIDE_WRITER = _SLOW_WRITER.replace("to_parquet(sys.argv[1])", "to_parquet(sys.argv[1], output_files=2)")


def test_a_writer_killed_while_writing_beside_leaves_the_previous_output(tmp_path):
    d = tmp_path / "work"
    _inputs(d)
    nvt.Dataset(pd.DataFrame({"x": range(10)}), npartitions=2).to_parquet(str(d), output_files=2)
    before = _contents(d)
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(_SLOW_BESIDE_WRITER))
    process = subprocess.Popen([sys.executable, str(script), str(d)], stdout=subprocess.PIPE, text=True, env=_env())
    assert process.stdout.readline().strip() == "writing"
    deadline = time.monotonic() + 60
    while not any(name.startswith(".tabflow-tmp-") for name in os.listdir(d)):
        assert time.monotonic() < deadline, "the writer never started"
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGKILL)
    process.wait()
    leftover = [n for n in os.listdir(d) if n.startswith(".tabflow-tmp-")]
    assert leftover and {k: v for k, v in _contents(d).items() if not str(k).startswith(".tabflow-tmp-")} == before
    assert sorted(nvt.Dataset(str(d)).to_ddf().compute()["x"]) == list(range(10))
    assert not [n for n in os.listdir(d) if n.startswith(".tabflow-tmp-")]  # the read removed the dead writer's files
    assert _contents(d) == before


def test_categorify_out_path_and_a_saved_workflow_share_a_folder_of_other_files(tmp_path):
    d = tmp_path / "work"
    frame = _inputs(d)
    (d / "categories").mkdir()
    (d / "categories" / "mine.csv").write_text("kept")
    neighbours = _contents(d)
    dataset = nvt.Dataset(str(d / "*.parquet"), part_size="1KB")
    workflow = nvt.Workflow(["c"] >> ops.Categorify(out_path=str(d))).fit(dataset)
    expected = workflow.transform(frame)["c"].tolist()
    # NVTabular's codes: null 1, then values by descending frequency (a: 2, b: 2, z: 1)
    assert expected == [3, 1, 4, 3, 5, 4]
    workflow.save(str(d))  # bundles the vocabulary files Categorify wrote there: no clash
    workflow.save(str(d))
    after = _contents(d)
    assert {k: after[k] for k in neighbours} == neighbours
    assert nvt.Workflow.load(str(d)).transform(frame)["c"].tolist() == expected
    unique = pd.read_parquet(d / "categories" / "unique.c.parquet")
    assert unique["c"].tolist() == ["a", "b", "z"] and unique.index.tolist() == [3, 4, 5]
    assert os.listdir(tmp_path) == ["work"]


@pytest.mark.parametrize("neighbour", ["empty directory", "link to a directory"])
def test_an_empty_directory_or_a_link_beside_a_previous_output_is_kept(writer, tmp_path, neighbour):
    save, marker = writer
    save(tmp_path / "out")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "data.txt").write_text("kept")
    if neighbour == "empty directory":
        (tmp_path / "out" / "logs").mkdir()
    else:
        os.symlink(tmp_path / "elsewhere", tmp_path / "out" / "logs")
    save(tmp_path / "out")
    assert (tmp_path / "out" / "logs").is_dir() and (tmp_path / "out" / marker).is_file()
    assert (tmp_path / "elsewhere" / "data.txt").read_text() == "kept"


def test_a_directory_of_csv_inputs_reads_as_csv_after_a_parquet_output_beside_them(tmp_path):
    d = tmp_path / "work"
    d.mkdir()
    frame = pd.DataFrame({"x": [1.0, None, 3.0], "c": ["a", "b", None]})
    frame.iloc[:2].to_csv(d / "day-0.csv", index=False)
    frame.iloc[2:].to_csv(d / "day-1.csv", index=False)
    nvt.Dataset(str(d), engine="csv").to_parquet(str(d), output_files=2)
    as_csv = nvt.Dataset(str(d), engine="csv").to_ddf().compute().reset_index(drop=True)
    as_parquet = nvt.Dataset(str(d)).to_ddf().compute().reset_index(drop=True)
    for read in (as_csv, as_parquet):
        assert read["x"].isna().tolist() == [False, True, False] and read["c"].isna().tolist() == [False, False, True]
        assert read["c"].dropna().tolist() == ["a", "b"]
