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
    (tmp_path / "out" / "stale-extra-file").write_text("from the previous output")
    save(tmp_path / "out")
    assert (tmp_path / "out" / marker).is_file()
    assert not (tmp_path / "out" / "stale-extra-file").exists()
    assert os.listdir(tmp_path) == ["out"]


def test_a_project_folder_is_refused_and_untouched(writer, tmp_path):
    save, _ = writer
    before = _project(tmp_path / "project")
    with pytest.raises(SaveError, match=r"project is a non-empty directory that does not hold a tabflow .*overwrite=True"):
        save(tmp_path / "project")
    assert _contents(tmp_path / "project") == before
    assert os.listdir(tmp_path) == ["project"]  # no temporary directory left behind


def test_a_file_is_refused_and_untouched(writer, tmp_path):
    save, marker = writer
    (tmp_path / "out").write_text("precious")
    with pytest.raises(SaveError, match="is a file"):
        save(tmp_path / "out")
    assert (tmp_path / "out").read_text() == "precious" and os.listdir(tmp_path) == ["out"]
    save(tmp_path / "out", overwrite=True)
    assert (tmp_path / "out" / marker).is_file() and os.listdir(tmp_path) == ["out"]


def test_the_other_kind_of_output_is_refused(tmp_path):
    _save_dataset(tmp_path / "data")
    with pytest.raises(SaveError, match="does not hold a tabflow workflow"):
        _save_workflow(tmp_path / "data")
    _save_workflow(tmp_path / "wf")
    with pytest.raises(SaveError, match="does not hold a tabflow dataset"):
        _save_dataset(tmp_path / "wf")
    assert (tmp_path / "data" / "_schema.json").exists() and (tmp_path / "wf" / "workflow.json").exists()


def test_overwrite_replaces_a_foreign_directory(writer, tmp_path):
    save, marker = writer
    _project(tmp_path / "project")
    save(tmp_path / "project", overwrite=True)
    assert (tmp_path / "project" / marker).is_file() and not (tmp_path / "project" / "train.py").exists()
    assert os.listdir(tmp_path) == ["project"]


@pytest.mark.parametrize("target", [".", ".."])
def test_the_current_directory_and_its_parents_are_never_replaced(writer, tmp_path, monkeypatch, target):
    save, _ = writer
    before = _project(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project" / "notes" if target == ".." else tmp_path / "project")
    for overwrite in (False, True):
        with pytest.raises(SaveError, match="current directory"):
            save(target, overwrite=overwrite)
    assert _contents(tmp_path / "project") == before
    assert os.listdir(tmp_path) == ["project"]


def test_replacement_without_an_atomic_exchange(writer, tmp_path, monkeypatch):
    save, marker = writer
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    save(tmp_path / "out")
    save(tmp_path / "out")
    assert (tmp_path / "out" / marker).is_file() and os.listdir(tmp_path) == ["out"]


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
    _save_dataset(tmp_path / "out")  # the next write cleans up after the killed one
    assert sorted(os.listdir(tmp_path)) == ["out", "writer.py"]
    assert nvt.Dataset(str(tmp_path / "out")).num_rows == 10
