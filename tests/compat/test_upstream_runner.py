"""scripts/run_upstream_tests.py: NVTabular's and merlin's own tests, imports rewritten, against tabflow."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "run_upstream_tests.py")


@pytest.fixture(scope="module")
def runner():
    spec = importlib.util.spec_from_file_location("run_upstream_tests", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being built
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_imports_are_rewritten_by_the_longest_upstream_module(runner):
    source = textwrap.dedent("""
        import nvtabular as nvt
        import merlin.io
        from merlin.core import dispatch
        from merlin.core.dispatch import make_df
        from merlin.dag.ops.subgraph import Subgraph
        from merlin.dag.ops import UDF
        from merlin.dtypes.shape import Shape
        from merlin.core.compat import cudf
        x = merlin.io.Dataset, nvt.ops.Categorify, "nvtabular_like", my.merlin.io, merlin.dag.ops.UDF
    """)
    assert runner.rewrite_imports(source) == textwrap.dedent("""
        import tabflow as nvt
        import tabflow.io
        from tabflow import dispatch
        from tabflow.dispatch import make_df
        from tabflow.graph.ops import Subgraph
        from tabflow.graph.ops import UDF
        from tabflow.schema.shape import Shape
        from merlin_stand_ins import cudf
        x = tabflow.io.Dataset, nvt.ops.Categorify, "nvtabular_like", my.merlin.io, tabflow.graph.ops.UDF
    """)


def test_every_mapping_imports_and_is_in_the_migration_guide(runner):
    with open(os.path.join(ROOT, "docs", "migrating.md"), encoding="utf-8") as handle:
        imports_table = handle.read().split("\n## Imports\n", 1)[1].split("\n## ", 1)[0]
    for upstream, target in runner.MODULES.items():
        if target == runner.STAND_INS:
            continue
        importlib.import_module(target)
        upstream = upstream.replace(".*", ".<module>")
        assert f"`{upstream}" in imports_table or f"from {upstream} import" in imports_table or f"import {upstream}" in imports_table, (
            f"{upstream} -> {target} is not in the migration guide's imports table"
        )


def test_a_suite_runs_with_its_imports_rewritten_and_is_counted(runner, tmp_path):
    checkout = tmp_path / "checkout"
    for part in ("schema", "dag", "io", "utils"):
        (checkout / "tests" / "unit" / part).mkdir(parents=True)
    tests = checkout / "tests" / "unit" / "schema"
    (checkout / "tests" / "conftest.py").write_text("from merlin.core.compat import HAS_GPU, cudf, pandas as pd\n")
    (tests / "test_fake.py").write_text(textwrap.dedent("""
        import pytest
        from merlin.io.worker import fetch_table_data
        from merlin.schema import ColumnSchema, Schema, Tags

        def test_merge_as_merlin():
            merged = Schema([ColumnSchema("a", tags=[Tags.CATEGORICAL])]) + Schema([ColumnSchema("a", tags=[Tags.ITEM_ID])])
            assert merged["a"].tags == {Tags.CATEGORICAL, Tags.ITEM, Tags.ID}

        def test_fails():
            assert Schema(["a"]).column_names == ["b"]

        def test_uses_a_merlin_internal():
            fetch_table_data({}, "x.parquet")

        def test_skips():
            pytest.skip("needs a GPU")

        @pytest.mark.parametrize("device", [None, 0])
        def test_device(device):
            assert device is None
    """))
    (tests / "test_broken.py").write_text("from merlin.dag import no_such_name\n")
    workdir = tmp_path / "work"
    done = subprocess.run(
        [sys.executable, SCRIPT, "merlin-core", str(checkout), "--workdir", str(workdir), "--", "-p", "no:randomly"],
        capture_output=True, text=True, timeout=600,
    )
    summary = done.stdout.strip().splitlines()[-1]
    has_gpu = importlib.import_module("tabflow.utils").HAS_GPU
    ran_device_0 = 1 if has_gpu else 0
    assert summary.startswith(
        f"merlin-core: {6 + ran_device_0} collected, {2} passed, {3 + ran_device_0} failed, 1 skipped; "
    ), done.stdout + done.stderr
    failures = (workdir / "failures.txt").read_text().splitlines()
    assert {f.rpartition("::")[2] for f in failures} >= {"test_fails", "test_uses_a_merlin_internal"}
    assert any("test_broken" in f for f in failures)  # a module that cannot be imported is one failure
    assert (checkout / "tests" / "conftest.py").read_text().startswith("from merlin.core.compat")  # the checkout is untouched
    again = subprocess.run([sys.executable, SCRIPT, "merlin-core", str(checkout), "--workdir", str(workdir)], capture_output=True, text=True)
    assert again.returncode != 0 and "already holds a tests/ directory" in again.stderr
    other = subprocess.run([sys.executable, SCRIPT, "nvtabular", str(checkout / "tests"), "--workdir", str(tmp_path / "w2")],
                           capture_output=True, text=True)
    assert other.returncode != 0 and "has no tests/" in other.stderr
    inside = subprocess.run([sys.executable, SCRIPT, "merlin-core", str(checkout), "--workdir", os.path.join(ROOT, "build-x")],
                            capture_output=True, text=True)
    assert inside.returncode != 0 and "inside tabflow's checkout" in inside.stderr
