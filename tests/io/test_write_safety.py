"""Writing beside other files never touches what is not tabflow's: journals and manifests are
untrusted, names are confined to the output, one writer publishes at a time, readers read one
version, and a crash at any step leaves the old or the new output (never a mix).

Each test builds a directory as another writer of it could leave it (a planted journal or
manifest, symbolic links, foreign files) next to "victim" files outside the output, and checks
that nothing outside the output and nothing foreign inside it is read, changed or deleted.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import fsspec
import pandas as pd
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow._paths import Directory, UnsafePathError, check_name
from tabflow.exceptions import LoadError, SaveError
from tabflow.io import atomic, locks, remote_atomic
from tabflow.io.readers import DatasetChangedError, DatasetReadError

MACHINERY = (".tabflow-tmp-", ".tabflow-publishing-", ".tabflow-lock", ".tabflow-writing", ".tabflow-replaced")


def _contents(root):
    root = str(root)
    found = {}
    for top, _, files in os.walk(root):
        for name in files:
            full = os.path.join(top, name)
            if not os.path.islink(full):
                found[os.path.relpath(full, root)] = open(full, "rb").read()
    return found


def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _leftovers(parent):
    """Every temporary directory, journal, marker or lock of tabflow under ``parent``."""
    found = []
    for top, directories, files in os.walk(parent):
        for name in [*directories, *files]:
            if name.startswith(MACHINERY) or ".tmp-" in name or ".old-" in name or name.endswith(locks.LOCK_NAME):
                found.append(os.path.relpath(os.path.join(top, name), parent))
    return sorted(found)


@pytest.fixture
def scene(tmp_path):
    """``work/`` holding a previous dataset beside a user's files, and ``victim/`` outside it."""
    work, victim = tmp_path / "work", tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("outside")
    (victim / "part_0.parquet").write_bytes(b"outside parquet")
    work.mkdir()
    (work / "notebook.ipynb").write_text("{}")
    (work / "notes").mkdir()
    (work / "notes" / "todo.md").write_text("- ship")
    nvt.Dataset(pd.DataFrame({"x": range(30)}), npartitions=3).to_parquet(str(work), output_files=3)
    return work, victim


def _foreign(work):
    return {k: v for k, v in _contents(work).items() if k in ("notebook.ipynb", os.path.join("notes", "todo.md"))}


# ------------------------------------------------------------------ 1. the journal is untrusted


def _plant_journal(work, **fields):
    document = {
        "format": 1, "kind": "dataset", "owner": f"{socket.gethostname()}\n{_dead_pid()}\n\n", "tmp": ".tabflow-tmp-0123456789ab",
        "token": "0" * 32, "add": [".tabflow-dataset.json"], "remove": [],
    }
    document.update(fields)
    (work / ".tabflow-publishing-dataset.json").write_text(json.dumps(document))


def _planted_tmp(work, victim, name=".tabflow-tmp-0123456789ab", token="0" * 32):
    tmp = work / name
    tmp.mkdir()
    (tmp / ".tabflow-writing").write_text(f"{socket.gethostname()}\n{_dead_pid()}\n\n{token}\n")
    (tmp / ".tabflow-dataset.json").write_text(json.dumps({"kind": "dataset", "files": []}))
    return tmp


JOURNALS = {
    "tmp absolute": lambda work, victim: {"tmp": str(victim)},
    "tmp outside by ..": lambda work, victim: {"tmp": "../victim.tmp-0123456789ab"},
    "tmp a foreign subdirectory": lambda work, victim: {"tmp": "notes"},
    "tmp a link to outside": lambda work, victim: (os.symlink(victim, work / ".tabflow-tmp-0123456789ab"), {})[1],
    "tmp not marked": lambda work, victim: ((work / ".tabflow-tmp-0123456789ab").mkdir(), {"add": ["secret.txt", ".tabflow-dataset.json"]})[1],
    "remove through a link": lambda work, victim: (os.symlink(victim, work / "link"), _planted_tmp(work, victim), {"remove": ["link/secret.txt"]})[2],
    "add through a link": lambda work, victim: (
        os.symlink(victim, work / "link"), _planted_tmp(work, victim), (work / ".tabflow-tmp-0123456789ab" / "link").mkdir(),
        (work / ".tabflow-tmp-0123456789ab" / "link" / "secret.txt").write_text("attacker"),
        {"add": ["link/secret.txt", ".tabflow-dataset.json"]},
    )[4],
    "remove a string": lambda work, victim: (_planted_tmp(work, victim), {"remove": "notebook.ipynb"})[1],
    "remove a foreign file": lambda work, victim: (_planted_tmp(work, victim), {"remove": ["notebook.ipynb"]})[1],
    "remove a foreign directory": lambda work, victim: (_planted_tmp(work, victim), {"remove": ["notes"]})[1],
    "remove outside by ..": lambda work, victim: (_planted_tmp(work, victim), {"remove": ["../victim/secret.txt"]})[1],
    "add absolute": lambda work, victim: (_planted_tmp(work, victim), {"add": [str(victim / "secret.txt"), ".tabflow-dataset.json"]})[1],
    "wrong token": lambda work, victim: (_planted_tmp(work, victim, token="1" * 32), {"remove": ["part_0.parquet"]})[1],
    "not a journal": lambda work, victim: {"format": "x"},
}


def _readers_and_writers(work):
    return {
        "Dataset(dir)": lambda: nvt.Dataset(str(work)),
        "to_parquet": lambda: nvt.Dataset(pd.DataFrame({"x": [1]})).to_parquet(str(work)),
        "Workflow.save": lambda: nvt.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1.0, 2.0]})).save(str(work)),
        "Workflow.load": lambda: nvt.Workflow.load(str(work)),
    }


@pytest.mark.parametrize("attack", sorted(JOURNALS))
def test_a_journal_that_does_not_validate_is_refused_and_nothing_moves(scene, attack):
    work, victim = scene
    fields = JOURNALS[attack](work, victim)
    _plant_journal(work, **fields)
    outside, inside = _contents(victim), _contents(work)
    for action, call in _readers_and_writers(work).items():
        with pytest.raises((SaveError, LoadError, DatasetReadError)) as caught:
            call()
        message = str(caught.value)
        assert ".tabflow-publishing-dataset.json" in message and "remove" in message, (action, message)
        assert _contents(victim) == outside, action
        assert _contents(work) == inside, action


def test_a_journal_of_another_user_is_never_carried_out(scene):
    if os.geteuid() != 0:
        pytest.skip("making a file of another user needs root")
    work, victim = scene
    _planted_tmp(work, victim)
    _plant_journal(work, remove=["part_0.parquet"])
    os.chown(work / ".tabflow-publishing-dataset.json", 12345, 12345)
    before = _contents(work)
    with pytest.raises(DatasetReadError, match="belongs to another user"):
        nvt.Dataset(str(work))
    assert _contents(work) == before


def test_a_valid_journal_of_a_killed_writer_on_another_host_is_completed_at_once(scene, tmp_path):
    work, _ = scene
    new = tmp_path / "new"
    nvt.Dataset(pd.DataFrame({"x": range(100, 120)}), npartitions=2).to_parquet(str(new), output_files=2)
    tmp = atomic.temporary_directory(str(work), "dataset")
    for name in atomic.owned_files(str(new), "dataset"):
        os.makedirs(os.path.dirname(os.path.join(tmp, name)), exist_ok=True)
        shutil.copy(new / name, os.path.join(tmp, name))
    (open(os.path.join(tmp, ".tabflow-dataset.json"), "wb")).write(
        atomic.manifest_bytes("dataset", atomic.owned_files(str(new), "dataset"))
    )
    token = open(os.path.join(tmp, ".tabflow-writing")).read().split("\n")[3]
    names = atomic.owned_files(str(new), "dataset")
    _plant_journal(
        work, owner="elsewhere\n1\n\n", tmp=os.path.basename(tmp), token=token, add=[*names, ".tabflow-dataset.json"],
        remove=["part_2.parquet"],
    )
    started = time.monotonic()
    assert sorted(nvt.Dataset(str(work)).compute()["x"]) == list(range(100, 120))
    assert time.monotonic() - started < 30  # no minute-long wait for a writer that cannot be asked
    assert not (work / "part_2.parquet").exists() and _leftovers(work) == []


# ----------------------------------------------------- 2. and 8. manifests are untrusted


def test_a_manifest_entry_through_a_link_is_never_followed(scene):
    work, victim = scene
    os.symlink(victim, work / "link")
    manifest = work / ".tabflow-dataset.json"
    document = json.loads(manifest.read_text())
    document["files"].append("link/secret.txt")
    manifest.write_text(json.dumps(document))
    outside = _contents(victim)
    with pytest.raises(DatasetReadError, match="symbolic link"):
        nvt.Dataset(str(work))  # the reader reads nothing outside
    nvt.Dataset(pd.DataFrame({"x": [7]})).to_parquet(str(work))  # an ordinary write removes nothing outside
    nvt.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1.0, 2.0]})).save(str(work))
    assert _contents(victim) == outside
    assert os.path.islink(work / "link")
    assert nvt.Dataset(str(work)).compute()["x"].tolist() == [7]


def test_a_saved_workflow_manifest_entry_through_a_link_is_never_followed(tmp_path):
    work, victim = tmp_path / "work", tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("outside")
    work.mkdir()
    (work / "notebook.ipynb").write_text("{}")
    workflow = nvt.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1.0, 2.0]}))
    workflow.save(str(work))
    os.symlink(victim, work / "link")
    manifest = work / ".tabflow-workflow.json"
    document = json.loads(manifest.read_text())
    document["files"].append("link/secret.txt")
    manifest.write_text(json.dumps(document))
    workflow.save(str(work))
    assert (victim / "secret.txt").read_text() == "outside" and (work / "notebook.ipynb").read_text() == "{}"


@pytest.mark.parametrize("entry", ["../victim/part_0.parquet", "/etc/hostname", "a/../../victim/part_0.parquet", "", "a\x00b"])
def test_a_manifest_naming_something_outside_is_refused_and_says_what_to_do(scene, entry):
    work, victim = scene
    manifest = work / ".tabflow-dataset.json"
    document = json.loads(manifest.read_text())
    document["files"].append(entry)
    manifest.write_text(json.dumps(document))
    outside = _contents(victim)
    with pytest.raises(DatasetReadError, match=r"\.tabflow-dataset\.json is malformed.*remove it"):
        nvt.Dataset(str(work))
    with pytest.raises(SaveError, match=r"\.tabflow-dataset\.json is malformed.*remove it"):
        nvt.Dataset(pd.DataFrame({"x": [1]})).to_parquet(str(work))
    assert _contents(victim) == outside and _leftovers(work) == []
    manifest.unlink()  # as the message says: the write then goes beside the files there
    nvt.Dataset(pd.DataFrame({"x": [5]})).to_parquet(str(work), output_files=["fresh.parquet"])
    assert nvt.Dataset(str(work)).compute()["x"].tolist() == [5] and _contents(victim) == outside


@pytest.mark.parametrize("files", ['"part_0.parquet"', "[1, 2]", '{"a": 1}'])
def test_a_manifest_of_the_wrong_shape_is_refused(scene, files):
    work, _ = scene
    (work / ".tabflow-dataset.json").write_text(f'{{"kind": "dataset", "files": {files}}}')
    with pytest.raises(DatasetReadError, match="malformed"):
        nvt.Dataset(str(work))


def test_a_manifest_of_another_user_names_none_of_this_users_files(scene):
    if os.geteuid() != 0:
        pytest.skip("making a file of another user needs root")
    work, _ = scene
    os.chown(work / ".tabflow-dataset.json", 12345, 12345)
    before = _contents(work)
    for output_files in (1, ["mine.parquet"]):  # its data files, then its _metadata and schema, are not ours
        with pytest.raises(SaveError, match="exists and was not written by tabflow"):
            nvt.Dataset(pd.DataFrame({"x": [1]})).to_parquet(str(work), output_files=output_files)
    assert _contents(work) == before
    nvt.Dataset(pd.DataFrame({"x": [1]})).to_parquet(str(work / "mine"))  # a directory of one's own


# ------------------------------------------------------------ 3. output names stay inside


@pytest.mark.parametrize(
    "output_files",
    [{"../victim.parquet": [0]}, {"../input.parquet": [0]}, ["/tmp/x.parquet"], ["a/../../x.parquet"], ["_schema.json"],
     [".tabflow-dataset.json"], ["a\\b.parquet"], ["sub/./x.parquet"], [""]],
)
def test_output_names_that_leave_the_directory_or_take_its_own_files_are_refused(tmp_path, output_files):
    (tmp_path / "victim.parquet").write_bytes(b"victim")
    out = tmp_path / "out"
    out.mkdir()
    (out / "input.parquet").write_bytes(b"input")
    with pytest.raises((ValueError, SaveError)):
        nvt.Dataset(pd.DataFrame({"x": [1, 2]})).to_parquet(str(out), output_files=output_files)
    assert (tmp_path / "victim.parquet").read_bytes() == b"victim" and (out / "input.parquet").read_bytes() == b"input"
    assert sorted(os.listdir(tmp_path)) == ["out", "victim.parquet"] and os.listdir(out) == ["input.parquet"]


@pytest.mark.parametrize("key", ["../k", "a/b", ".hidden", "_private", "a=b", ".."])
def test_partition_on_columns_that_cannot_name_a_directory_are_refused(tmp_path, key):
    frame = pd.DataFrame({key: ["a", "b"], "x": [1, 2]})
    with pytest.raises(ValueError, match="partition_on"):
        nvt.Dataset(frame).to_parquet(str(tmp_path / "base" / "out"), partition_on=[key])
    assert not (tmp_path / "base").exists() or _contents(tmp_path / "base") == {}


def test_partition_values_stay_inside_the_output(tmp_path):
    values = ["../../escape", "..", ".", "a/b", "ok", None]
    frame = pd.DataFrame({"k": values, "x": range(6)})
    nvt.Dataset(frame).to_parquet(str(tmp_path / "base" / "out"), partition_on=["k"])
    assert sorted(os.listdir(tmp_path)) == ["base"] and os.listdir(tmp_path / "base") == ["out"]
    back = nvt.Dataset(str(tmp_path / "base" / "out")).compute().sort_values("x")
    assert back["k"].tolist()[:5] == values[:5] and pd.isna(back["k"].tolist()[5])


def test_a_vocabulary_file_never_goes_through_a_link_or_out_by_a_column_name(tmp_path):
    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    victim.mkdir()
    os.symlink(victim, out / "categories")
    frame = pd.DataFrame({"c": ["a", "b", "a"]})
    with pytest.raises(UnsafePathError, match="categories"):
        nvt.Workflow(["c"] >> ops.Categorify(out_path=str(out))).fit(frame)
    assert os.listdir(victim) == []
    os.unlink(out / "categories")
    with pytest.raises(ValueError, match="column whose name holds '/'"):
        nvt.Workflow(["a/b"] >> ops.Categorify(out_path=str(out))).fit(pd.DataFrame({"a/b": ["x"]}))
    assert _leftovers(tmp_path) == []


# ------------------------------------------------------------ 4. readers read one version


def _two_versions(tmp_path):
    first = pd.DataFrame({"x": range(40)})
    second = pd.DataFrame({"x": range(1000, 1040)})
    return first, second


@pytest.mark.parametrize("beside", [False, True], ids=["whole directory", "beside other files"])
def test_a_dataset_replaced_after_it_was_opened_fails_instead_of_mixing(tmp_path, beside):
    first, second = _two_versions(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    if beside:
        (out / "notebook.ipynb").write_text("{}")
    nvt.Dataset(first, npartitions=4).to_parquet(str(out), output_files=4)
    opened = nvt.Dataset(str(out))
    nvt.Dataset(second, npartitions=4).to_parquet(str(out), output_files=4)
    with pytest.raises(DatasetChangedError, match="changed after the dataset was opened"):
        opened.compute()
    with pytest.raises(DatasetChangedError):
        list(opened.to_iter())
    assert sorted(nvt.Dataset(str(out)).compute()["x"]) == list(range(1000, 1040))


def test_a_dataset_published_into_while_it_is_planned_is_planned_again(tmp_path, monkeypatch):
    from tabflow.io.readers import _registry

    first, second = _two_versions(tmp_path)
    out = tmp_path / "out"
    nvt.Dataset(first, npartitions=2).to_parquet(str(out), output_files=2)
    real, calls = _registry.expand_paths, []

    def expand_then_publish(*args, **kwargs):
        listed = real(*args, **kwargs)
        calls.append(listed)
        if len(calls) == 1:
            nvt.Dataset(second, npartitions=3).to_parquet(str(out), output_files=3)
        return listed

    monkeypatch.setattr(_registry, "expand_paths", expand_then_publish)
    dataset = nvt.Dataset(str(out))
    assert len(calls) == 2 and dataset.npartitions == 3
    assert sorted(dataset.compute()["x"]) == list(range(1000, 1040))


@pytest.mark.parametrize("beside", [False, True], ids=["whole directory", "beside other files"])
def test_readers_beside_a_writer_read_one_version_or_fail_clearly(tmp_path, beside):
    first, second = _two_versions(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    if beside:
        (out / "notebook.ipynb").write_text("{}")
    versions = [first, second]
    nvt.Dataset(first, npartitions=4).to_parquet(str(out), output_files=4)
    stop = threading.Event()
    errors = []

    def write():
        k = 0
        try:
            while not stop.is_set():
                k += 1
                nvt.Dataset(versions[k % 2], npartitions=4).to_parquet(str(out), output_files=4)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    writer = threading.Thread(target=write)
    writer.start()
    seen = {"first": 0, "second": 0, "changed": 0}
    try:
        for _ in range(25):
            try:
                values = sorted(nvt.Dataset(str(out)).compute()["x"])
            except DatasetChangedError:
                seen["changed"] += 1
                continue
            assert values in (list(range(40)), list(range(1000, 1040))), values  # never a mix
            seen["first" if values[0] == 0 else "second"] += 1
    finally:
        stop.set()
        writer.join()
    assert not errors, errors
    assert seen["first"] + seen["second"] + seen["changed"] == 25
    assert _leftovers(tmp_path) == []
    if beside:
        assert (out / "notebook.ipynb").read_text() == "{}"


def test_a_remote_dataset_replaced_after_it_was_opened_fails_instead_of_mixing():
    fs = fsspec.filesystem("memory")
    url = f"memory://tabflow-safety-{os.getpid()}/changed"
    try:
        nvt.Dataset(pd.DataFrame({"x": range(30)}), npartitions=3).to_parquet(url, output_files=3)
        opened = nvt.Dataset(url)
        nvt.Dataset(pd.DataFrame({"x": range(100, 130)}), npartitions=3).to_parquet(url, output_files=3)
        with pytest.raises(DatasetChangedError):
            opened.compute()
        assert sorted(nvt.Dataset(url).compute()["x"]) == list(range(100, 130))
    finally:
        fs.rm(f"/tabflow-safety-{os.getpid()}", recursive=True)


# ------------------------------------------------------------ 5. one writer at a time


def _two_writers_at_once(target, rounds):
    """Two threads writing datasets of 60 rows (6 files) and 30 rows (2 files) to ``target``."""
    frames = {"a": pd.DataFrame({"x": range(60)}), "b": pd.DataFrame({"x": range(500, 530)})}
    shapes = {"a": 6, "b": 2}
    errors = []

    def write(which):
        try:
            for _ in range(rounds):
                nvt.Dataset(frames[which], npartitions=shapes[which]).to_parquet(target, output_files=shapes[which])
        except BaseException as err:  # noqa: BLE001 - reported by the caller
            errors.append(err)

    threads = [threading.Thread(target=write, args=(w,)) for w in frames]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


@pytest.mark.parametrize("beside", [False, True], ids=["whole directory", "beside other files"])
def test_two_writers_at_once_leave_one_whole_output(tmp_path, beside):
    out = tmp_path / "out"
    out.mkdir()
    if beside:
        (out / "notebook.ipynb").write_text("{}")
    _two_writers_at_once(str(out), rounds=4)
    values = sorted(nvt.Dataset(str(out)).compute()["x"])
    assert values in (list(range(60)), list(range(500, 530)))
    written = atomic.owned_files(str(out), "dataset")
    parts = sorted(n for n in written if n.endswith(".parquet"))
    assert parts == sorted(f"part_{k}.parquet" for k in range(len(parts)))
    on_disk = sorted(n for n in os.listdir(out) if n.endswith(".parquet"))
    assert on_disk == parts  # no file of the other writer's left over
    assert _leftovers(tmp_path) == []
    if beside:
        assert (out / "notebook.ipynb").read_text() == "{}"


def test_a_writer_waits_for_the_publication_under_way_and_names_it_when_it_gives_up(tmp_path, monkeypatch):
    out = tmp_path / "out"
    nvt.Dataset(pd.DataFrame({"x": range(10)})).to_parquet(str(out))
    done = threading.Event()

    def write():
        nvt.Dataset(pd.DataFrame({"x": range(50, 55)})).to_parquet(str(out))
        done.set()

    with locks.output_lock(str(out)):
        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(1.0)
        assert not done.is_set()  # waiting for the lock held here
        assert sorted(nvt.Dataset(str(out)).compute()["x"]) == list(range(10))
    writer.join(timeout=60)
    assert done.is_set() and sorted(nvt.Dataset(str(out)).compute()["x"]) == list(range(50, 55))
    monkeypatch.setattr(locks, "LOCK_WAIT_S", 0.3)
    with locks.output_lock(str(out)):
        with pytest.raises(SaveError, match=rf"process {os.getpid()} on host .* remove .*\.tabflow-lock"):
            with locks.output_lock(str(out), wait_s=0.3):
                pass
    assert _leftovers(tmp_path) == []


def test_the_lock_of_a_killed_holder_is_released_with_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    script = f"import time; from tabflow.io.locks import output_lock\nwith output_lock({str(out)!r}):\n    print('held', flush=True); time.sleep(60)\n"
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SaveError, match=str(holder.pid)):
            with locks.output_lock(str(out), wait_s=0.2):
                pass
    finally:
        holder.kill()
        holder.wait()
    with locks.output_lock(str(out), wait_s=10):
        pass
    assert os.listdir(out) == []


def test_a_lock_that_is_a_link_is_refused(tmp_path):
    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    victim.write_text("outside")
    os.symlink(victim, out / ".tabflow-lock")
    with pytest.raises(UnsafePathError):
        nvt.Dataset(pd.DataFrame({"x": [1]})).to_parquet(str(out))
    assert victim.read_text() == "outside"


# ------------------------------------------------ 6. object stores: a failure keeps the old output


class _FailAt:
    """Make the ``step``-th call of the memory filesystem's writing methods raise."""

    METHODS = ("pipe_file", "mv", "copy", "cp_file", "rm_file", "rm", "_rm")

    def __init__(self, fs, step, crash=False):
        self.fs, self.step, self.crash, self.calls = fs, step, crash, 0

    def __enter__(self):
        self.saved = {name: getattr(self.fs, name) for name in self.METHODS}
        for name, method in self.saved.items():
            setattr(self.fs, name, self._wrap(method))
        if self.crash:  # a killed writer runs no clean-up
            self.rollback, remote_atomic._roll_back = remote_atomic._roll_back, self._no_rollback
        return self

    def _wrap(self, method):
        def wrapped(*args, **kwargs):
            self.calls += 1
            if self.calls == self.step:
                raise OSError(errno.EIO, f"simulated failure at call {self.step}")
            return method(*args, **kwargs)

        return wrapped

    @staticmethod
    def _no_rollback(*args, **kwargs):
        raise RuntimeError("killed")

    def __exit__(self, *exc):
        for name in self.METHODS:
            self.fs.__dict__.pop(name, None)
        if self.crash:
            remote_atomic._roll_back = self.rollback


@pytest.fixture
def memory_prefix():
    fs = fsspec.filesystem("memory")
    root = f"/tabflow-safety-{os.getpid()}-{time.monotonic_ns()}"
    yield fs, root
    if fs.exists(root):
        fs.rm(root, recursive=True)


def _remote_contents(fs, root):
    fs.invalidate_cache()
    return {p[len(root):]: fs.cat_file(p) for p in fs.find(root)} if fs.exists(root) else {}


@pytest.mark.parametrize("crash", [False, True], ids=["failure", "killed"])
def test_a_failure_at_any_step_of_an_object_store_publication_keeps_the_previous_output(memory_prefix, crash):
    fs, root = memory_prefix
    url = f"memory://{root}/out"
    old = pd.DataFrame({"x": range(300)})
    new = pd.DataFrame({"x": range(1000, 1200)})
    fs.pipe_file(f"{root}/out/notes.txt", b"foreign")
    for step in range(1, 200):
        nvt.Dataset(old, npartitions=3).to_parquet(url, output_files=3, overwrite=False)
        before = _remote_contents(fs, root)
        failing = _FailAt(fs, step, crash)
        try:
            with failing:
                nvt.Dataset(new, npartitions=2).to_parquet(url, output_files=2)
        except (OSError, RuntimeError):
            values = sorted(nvt.Dataset(url).compute()["x"])  # rolls a killed writer's publication back
            if values == list(range(300)):
                assert _remote_contents(fs, root) == {k: v for k, v in before.items()}, step
            else:  # failed once the manifest was in place: the new output, whole
                assert values == list(range(1000, 1200)), step
            assert fs.cat_file(f"{root}/out/notes.txt") == b"foreign"
            nvt.Dataset(new, npartitions=2).to_parquet(url, output_files=2)  # the next write succeeds and cleans
            fs.invalidate_cache()
            assert [p for p in fs.find(root) if ".tmp-" in p or ".old-" in p or ".tabflow-publishing" in p or "lock" in p] == []
            continue
        assert sorted(nvt.Dataset(url).compute()["x"]) == list(range(1000, 1200))
        assert fs.cat_file(f"{root}/out/notes.txt") == b"foreign"
        if failing.calls < step:
            break  # the write took fewer steps: every one has failed once
    else:
        pytest.fail("the publication never completed")
    assert step > 10  # every step of the publication was failed once


def test_an_object_store_journal_naming_other_prefixes_is_refused(memory_prefix):
    fs, root = memory_prefix
    url = f"memory://{root}/out"
    nvt.Dataset(pd.DataFrame({"x": range(30)}), npartitions=3).to_parquet(url, output_files=3)
    fs.pipe_file(f"{root}/victim/secret.txt", b"outside")
    document = {
        "format": 1, "kind": "dataset", "state": "moving", "owner": "x\n1\n", "token": "0" * 32, "tmp": "victim",
        "backup": "out.old-0123456789ab", "add": ["../victim/secret.txt"], "saved": [], "remove": [],
    }
    fs.pipe_file(f"{root}/out/.tabflow-publishing-dataset.json", json.dumps(document).encode())
    with pytest.raises(DatasetReadError, match="not a publication tabflow can roll back"):
        nvt.Dataset(url)
    assert fs.cat_file(f"{root}/victim/secret.txt") == b"outside"


# ------------------------------------------------------------ 9. bucket roots and URLs


@pytest.mark.parametrize("url", ["memory://", "memory:///", "s3://", "gs://", "s3:///"])
def test_the_root_of_a_bucket_or_store_is_refused(url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SaveError, match="root of a bucket"):
        nvt.Dataset(pd.DataFrame({"x": [1]})).to_parquet(url)
    assert os.listdir(tmp_path) == []  # nothing written locally under a name like "s3:"


@pytest.mark.parametrize("call", ["save", "load"])
def test_a_workflow_is_saved_and_loaded_in_local_directories_only(call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    workflow = nvt.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1.0, 2.0]}))
    error = SaveError if call == "save" else LoadError
    with pytest.raises(error, match="local directories"):
        workflow.save("memory://wf") if call == "save" else nvt.Workflow.load("s3://bucket/wf")
    assert os.listdir(tmp_path) == []
    workflow.save(f"file://{tmp_path}/wf")
    assert nvt.Workflow.load(f"file://{tmp_path}/wf").output_schema == workflow.output_schema


# ---------------------------------------- 10. a crash at every step leaves old or new, cleaned next


_ZYGOTE = r"""
import json, os, signal, sys
import tabflow.io.atomic as atomic

CREATING = os.O_CREAT | os.O_WRONLY | os.O_RDWR | os.O_TRUNC
for line in sys.stdin:
    request = json.loads(line)
    child = os.fork()
    if child == 0:
        marker = os.path.join(request["tmp"], atomic.TEMPORARY_MARKER)
        token = open(marker).read().split("\n")[3]
        with open(marker, "w") as handle:
            handle.write(atomic.owner_text(token))  # this process is the writer that dies
        count = [0]

        def counted(function, creating_only=False):
            def call(*args, **kwargs):
                if not creating_only or (len(args) > 1 and args[1] & CREATING):
                    count[0] += 1
                    if count[0] == request["step"]:
                        os.kill(os.getpid(), signal.SIGKILL)
                return function(*args, **kwargs)
            return call

        for name in ("rename", "replace", "unlink", "remove", "rmdir", "mkdir", "ftruncate", "write", "chmod"):
            setattr(os, name, counted(getattr(os, name)))
        os.open = counted(os.open, creating_only=True)
        atomic._exchange = counted(atomic._exchange)
        atomic.publish(request["tmp"], request["path"], request["kind"], request["overwrite"])
        os._exit(0)
    _, status = os.waitpid(child, 0)
    print(json.dumps(os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL), flush=True)
"""


def _stage(path, kind, files):
    """A temporary directory of ``path`` holding ``files`` ({name: bytes}), as a writer leaves it complete."""
    tmp = atomic.temporary_directory(str(path), kind)
    for name, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(tmp, name)), exist_ok=True)
        with open(os.path.join(tmp, name), "wb") as handle:
            handle.write(data)
    return tmp


def _output_of(path, kind):
    written = atomic.owned_files(str(path), kind)
    return None if written is None else {n: open(os.path.join(path, n), "rb").read() for n in written}


def _dataset_files(tmp_path, name, values, parts):
    scratch = tmp_path / name
    nvt.Dataset(pd.DataFrame({"x": values}), npartitions=parts).to_parquet(str(scratch), output_files=parts)
    return {n: (scratch / n).read_bytes() for n in atomic.owned_files(str(scratch), "dataset")}


def _workflow_files(tmp_path, name, values):
    scratch = tmp_path / name
    frame = pd.DataFrame({"x": values, "c": [str(v % 3) for v in values]})
    nvt.Workflow((["x"] >> ops.Normalize()) + (["c"] >> ops.Categorify())).fit(frame).save(str(scratch))
    return {n: (scratch / n).read_bytes() for n in atomic.owned_files(str(scratch), "workflow")}


FOREIGN = (os.path.join("out", "notebook.ipynb"), os.path.join("out", "notes", "todo.md"))


@pytest.mark.parametrize("case", ["dataset beside other files", "dataset replacing a previous one", "first dataset", "workflow beside other files"])
def test_a_writer_killed_at_any_step_of_its_publication_leaves_the_old_or_the_new_output(tmp_path, case):
    kind = "workflow" if case.startswith("workflow") else "dataset"
    make = (lambda name, values: _workflow_files(tmp_path, name, values)) if kind == "workflow" else (
        lambda name, values: _dataset_files(tmp_path, name, values, 3 if values[0] == 0 else 2)
    )
    old, new, third = make("old", list(range(30))), make("new", list(range(100, 120))), make("third", list(range(7, 9)))
    base = tmp_path / "base"
    out = base / "out"
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    if case != "first dataset":
        (pristine / "out").mkdir()
        if "beside" in case:
            (pristine / "out" / "notebook.ipynb").write_text("{}")
            (pristine / "out" / "notes").mkdir()
            (pristine / "out" / "notes" / "todo.md").write_text("- ship")
    zygote = subprocess.Popen(
        [sys.executable, "-c", _ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(nvt.__file__)), os.environ.get("PYTHONPATH", "")])},
    )
    try:
        for step in range(1, 400):
            shutil.rmtree(base, ignore_errors=True)
            shutil.copytree(pristine, base)
            if case != "first dataset":
                atomic.publish(_stage(out, kind, old), str(out), kind)
            foreign = {k: v for k, v in _contents(base).items() if k in FOREIGN}
            tmp = _stage(out, kind, new)
            zygote.stdin.write(json.dumps({"step": step, "tmp": tmp, "path": str(out), "kind": kind, "overwrite": False}) + "\n")
            zygote.stdin.flush()
            killed = json.loads(zygote.stdout.readline())
            if kind == "workflow":
                nvt.Workflow.load(str(out))  # a reader: completes a killed publication, then loads
            found = _output_of(out, kind) if os.path.isdir(out) else None  # a reader: completes a killed publication
            expected = [new] if case == "first dataset" and found is not None else [old, new]
            if case == "first dataset" and found is None:
                expected = [None]
            assert found in expected, (step, sorted(found or {}))
            assert {k: v for k, v in _contents(base).items() if k in FOREIGN} == foreign, step
            atomic.publish(_stage(out, kind, third), str(out), kind)  # the next write succeeds and cleans up
            assert _output_of(out, kind) == third, step
            assert _leftovers(base) == [], (step, _leftovers(base))
            if not killed:
                break
        else:
            pytest.fail("the publication never completed")
    finally:
        zygote.stdin.close()
        zygote.wait(timeout=60)
    assert step > 5


@pytest.mark.parametrize("beside", [False, True], ids=["whole directory", "beside other files"])
def test_a_full_disk_at_any_step_of_a_publication_leaves_the_old_or_the_new_output(tmp_path, monkeypatch, beside):
    old, new, third = (_dataset_files(tmp_path, n, v, p) for n, v, p in (("old", list(range(30)), 3), ("new", list(range(100, 120)), 2), ("third", [7, 8], 1)))
    out = tmp_path / "base" / "out"
    for step in range(1, 400):
        shutil.rmtree(tmp_path / "base", ignore_errors=True)
        out.mkdir(parents=True)
        if beside:
            (out / "notebook.ipynb").write_text("{}")
        atomic.publish(_stage(out, "dataset", old), str(out), "dataset")
        tmp = _stage(out, "dataset", new)
        calls = [0]
        # A full disk fails what creates or renames, never a removal.
        saved = {name: getattr(os, name) for name in ("rename", "replace", "mkdir", "open")}

        def failing(function, name, calls=calls, step=step):
            def call(*args, **kwargs):
                if name != "open" or (len(args) > 1 and args[1] & (os.O_CREAT | os.O_WRONLY | os.O_RDWR)):
                    calls[0] += 1
                    if calls[0] == step:
                        raise OSError(errno.ENOSPC, "No space left on device")
                return function(*args, **kwargs)

            return call

        for name, function in saved.items():
            monkeypatch.setattr(os, name, failing(function, name))
        try:
            atomic.publish(tmp, str(out), "dataset")
        except OSError:
            atomic.discard(tmp)
        finally:
            for name, function in saved.items():
                monkeypatch.setattr(os, name, function)
        failed = calls[0] >= step  # else the publication took fewer steps: every one has failed once
        assert _output_of(out, "dataset") in (old, new), step
        if beside:
            assert (out / "notebook.ipynb").read_text() == "{}"
        atomic.publish(_stage(out, "dataset", third), str(out), "dataset")
        assert _output_of(out, "dataset") == third and _leftovers(tmp_path / "base") == [], step
        if not failed:
            break
    assert step > 5


# ------------------------------------------------- 11. a file saved meanwhile is not lost


def test_a_file_saved_into_the_directory_while_it_is_replaced_is_kept(tmp_path, monkeypatch):
    out = tmp_path / "out"
    nvt.Dataset(pd.DataFrame({"x": range(10)}), npartitions=2).to_parquet(str(out), output_files=2)
    real = atomic._exchange

    def user_saves_then_exchange(a, b):
        if os.path.basename(b) == "out" and not (out / "late.ipynb").exists():
            (out / "late.ipynb").write_text("saved just now")
        return real(a, b)

    monkeypatch.setattr(atomic, "_exchange", user_saves_then_exchange)
    nvt.Dataset(pd.DataFrame({"x": range(50, 53)})).to_parquet(str(out))
    assert (out / "late.ipynb").read_text() == "saved just now"
    assert sorted(nvt.Dataset(str(out)).compute()["x"]) == [50, 51, 52]
    assert _leftovers(tmp_path) == []


# ---------------------------------------------------------------------- the name checks


@pytest.mark.parametrize("name", ["..", "a/..", "/a", "a//b", "a/./b", "", "a\x00", "a\\b", 3, None, ["a"]])
def test_check_name_refuses_every_name_that_is_not_a_plain_relative_path(name):
    with pytest.raises(ValueError, match="is not a plain relative path"):
        check_name(name, "the name")


def test_a_directory_never_follows_a_link_below_it(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "f").write_text("outside")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(tmp_path / "outside", root / "link")
    os.symlink(tmp_path / "outside" / "f", root / "file-link")
    with Directory(root) as directory:
        for call in (
            lambda: directory.entry("link/f"), lambda: directory.write_bytes("link/g", b"x"),
            lambda: directory.read_bytes("file-link", 10), lambda: directory.subdirectory("link"),
        ):
            with pytest.raises(UnsafePathError):
                call()
        assert directory.remove_file("link/f") is False and directory.remove_file("file-link") is False
        assert directory.remove_file("link") is False  # a link is not a regular file
    assert (tmp_path / "outside" / "f").read_text() == "outside" and os.path.islink(root / "file-link")


def test_a_saved_table_read_through_a_link_is_refused(tmp_path):
    workflow = nvt.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["a", "b"]}))
    workflow.save(str(tmp_path / "wf"))
    tables = [n for n in os.listdir(tmp_path / "wf") if n.endswith(".parquet")]
    assert tables
    pq.write_table(pq.read_table(tmp_path / "wf" / tables[0]), tmp_path / "elsewhere.parquet")
    os.unlink(tmp_path / "wf" / tables[0])
    os.symlink(tmp_path / "elsewhere.parquet", tmp_path / "wf" / tables[0])
    with pytest.raises(LoadError, match="symbolic link"):
        nvt.Workflow.load(str(tmp_path / "wf"))


def test_a_dead_writers_sibling_lock_is_removed_by_the_next_write(tmp_path):
    out = tmp_path / "out"
    (tmp_path / "out.tabflow-lock").write_text(f"{socket.gethostname()}\n{_dead_pid()}\n")
    nvt.Dataset(pd.DataFrame({"x": [1]})).to_parquet(str(out))
    nvt.Dataset(pd.DataFrame({"x": [2]})).to_parquet(str(out))
    assert sorted(os.listdir(tmp_path)) == ["out"]



def test_without_flock_the_lock_file_is_created_exclusively_and_a_dead_holders_is_taken_over(tmp_path, monkeypatch):
    import fcntl

    def no_flock(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    out = tmp_path / "out"
    out.mkdir()
    with locks.output_lock(str(out)):
        assert (out / ".tabflow-lock").is_file()
        with pytest.raises(SaveError, match=f"process {os.getpid()}"):
            with locks.output_lock(str(out), wait_s=0.2):
                pass
    assert os.listdir(out) == []
    (out / ".tabflow-lock").write_text(f"{socket.gethostname()}\n{_dead_pid()}\n")
    with locks.output_lock(str(out), wait_s=10):
        assert (out / ".tabflow-lock").read_text().split("\n")[1] == str(os.getpid())
    (out / ".tabflow-lock").write_text("another-host\n1\n")
    with pytest.raises(SaveError, match="another-host"):
        with locks.output_lock(str(out), wait_s=0.2):
            pass


def test_two_writers_of_one_object_store_prefix_leave_one_whole_output(memory_prefix):
    fs, root = memory_prefix
    url = f"memory://{root}/out"
    fs.pipe_file(f"{root}/out/notes.txt", b"foreign")
    _two_writers_at_once(url, rounds=3)
    assert sorted(nvt.Dataset(url).compute()["x"]) in (list(range(60)), list(range(500, 530)))
    fs.invalidate_cache()
    parquet = sorted(p.rpartition("/")[2] for p in fs.find(f"{root}/out") if p.endswith(".parquet"))
    assert len(parquet) in (2, 6) and fs.cat_file(f"{root}/out/notes.txt") == b"foreign"
    assert [p for p in fs.find(root) if ".tmp-" in p or ".old-" in p or ".tabflow-publishing" in p or "lock" in p] == []


def test_an_object_store_lock_of_a_dead_writer_of_this_host_is_taken_over(memory_prefix):
    fs, root = memory_prefix
    fs.pipe_file(f"{root}/out/.tabflow-lock", f"{socket.gethostname()}\n{_dead_pid()}\n\nabc\n".encode())
    nvt.Dataset(pd.DataFrame({"x": [1, 2]})).to_parquet(f"memory://{root}/out")
    assert not fs.exists(f"{root}/out/.tabflow-lock")
    fs.pipe_file(f"{root}/out/.tabflow-lock", b"another-host\n1\n\nabc\n")
    with pytest.raises(SaveError, match="another-host"):
        with locks.remote_output_lock(fs, f"{root}/out", wait_s=0.3):
            pass
