"""Run NVTabular's, merlin-dataloader's or merlin-core's own unit tests against tabflow.

The tests of a checkout (any tree holding the project's ``tests/``, e.g. a ``git archive`` of
its ``v23.08.00`` tag) are copied into a work directory, their imports are rewritten as the
migration guide's imports table says (``docs/migrating.md``: ``nvtabular`` -> ``tabflow``,
``merlin.io`` -> ``tabflow.io``, ``merlin.dag`` -> ``tabflow.graph``, ...), and pytest runs
them there with this checkout of tabflow first on the path. Nothing is downloaded: bring the
checkout yourself.

Some modules the tests import have no place in tabflow, and the work directory gets one
module standing for them all (``STAND_INS``): ``merlin.core.compat``, through which merlin's
tests import optional libraries (``from merlin.core.compat import cudf, pandas``), with
tabflow's ``HAS_GPU`` and each library where it is installed (None where not, as merlin
gives it); merlin internals that tabflow does not have (``merlin.core.protocols``,
``merlin.io.parquet``'s ``GPUParquetWriter``, ``merlin.io.worker``'s ``fetch_table_data``),
so that a module importing one of them still runs its other tests, while a test that uses
one fails, saying so; and ``asvdb``, the benchmark database NVTabular's ``conftest.py``
imports (its benchmarks are not run).

Which tests run (``SUITES``): each suite's ``tests/unit`` less the TensorFlow, JAX and
Transformers4Rec modules and the notebook examples (they need those frameworks or
downloads), and, on a machine without a GPU, the tests parametrised with ``device=0`` (they
ask for CUDA device 0 without skipping themselves). merlin-core's run covers its schema,
tag, dag, io and utils tests.

Usage::

    git --git-dir=<core repo> archive v23.08.00 tests | tar -x -C /tmp/merlin-core
    python scripts/run_upstream_tests.py merlin-core /tmp/merlin-core
    python scripts/run_upstream_tests.py nvtabular /tmp/nvtabular -- -x -k categorify

It prints pytest's report, then one line of counts (collected, passed, failed, skipped, and
the share of those that ran that passed), and writes the failed tests' ids to
``failures.txt`` in the work directory (``--workdir``, a new temporary directory by default).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The module standing for ``merlin.core.compat`` and merlin's internals in the work directory.
STAND_INS = "merlin_stand_ins"

#: Upstream module -> tabflow module, as the migration guide's imports table maps them; the
#: longest matching prefix of a dotted name wins. ``package.*`` is the package and every
#: module in it (a lower-case name after it: ``merlin.dag.ops.udf``, not ``merlin.dag.ops.UDF``).
MODULES = {
    "nvtabular": "tabflow",
    "merlin.core.dispatch": "tabflow.dispatch",
    "merlin.core.utils": "tabflow.utils",
    "merlin.core.compat.torch": STAND_INS,
    "merlin.core.compat.tensorflow": STAND_INS,
    "merlin.core.compat": STAND_INS,
    "merlin.core.protocols": STAND_INS,
    "merlin.core": "tabflow",
    "merlin.io": "tabflow.io",
    "merlin.io.parquet": STAND_INS,
    "merlin.io.worker": STAND_INS,
    "merlin.schema": "tabflow.schema",
    "merlin.schema.schema": "tabflow.schema",
    "merlin.dtypes": "tabflow.dtypes",
    "merlin.dtypes.shape": "tabflow.schema.shape",
    "merlin.dag": "tabflow.graph",
    "merlin.dag.ops.*": "tabflow.graph.ops",
    "merlin.dag.executors": "tabflow.graph.executors",
    "merlin.dag.graph": "tabflow.graph",
    "merlin.dag.node": "tabflow.graph",
    "merlin.dag.operator": "tabflow.graph",
    "merlin.dag.selector": "tabflow.graph",
    "merlin.table": "tabflow.table",
    "merlin.loader.torch": "tabflow.loader.torch",
    "merlin.dataloader.torch": "tabflow.loader.torch",
    "merlin.dataloader.loader_base": "tabflow.loader.array",
    "merlin.dataloader.array": "tabflow.loader.array",
    "merlin.dataloader.ops.embeddings": "tabflow.loader.ops",
    "merlin.dataloader.ops.padding": "tabflow.loader.ops",
    "merlin.testing": "tabflow.testing",
    "asvdb": STAND_INS,
}

STAND_INS_SOURCE = '''"""What merlin's tests import from modules tabflow does not have.

merlin.core.compat's names: tabflow's HAS_GPU, optional libraries (None where not installed).
merlin's internals: names that fail when used.
"""
import importlib

import numpy
import pandas

from tabflow.utils import HAS_GPU, device_mem_size, pynvml_mem_size


def _optional(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


psutil = _optional("psutil")
torch = _optional("torch")
tensorflow = None  # the TensorFlow tests are not run
cupy = _optional("cupy") if HAS_GPU else None
cudf = _optional("cudf") if HAS_GPU else None
dask_cudf = _optional("dask_cudf") if HAS_GPU else None


class _Absent:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"{self.__class__.__name__}: merlin's internal, which tabflow does not have")


def _absent(name):
    return type(name, (_Absent,), {})


# merlin.core.protocols: nothing is an instance of these (isinstance checks fail, annotations work).
DictLike, DataFrameLike, SeriesLike, Transformable = (_absent(n) for n in ("DictLike", "DataFrameLike", "SeriesLike", "Transformable"))
GPUParquetWriter = _absent("GPUParquetWriter")  # merlin.io.parquet
fetch_table_data = _absent("fetch_table_data")  # merlin.io.worker
ASVDb, BenchmarkInfo, utils = (_absent(n) for n in ("ASVDb", "BenchmarkInfo", "utils"))  # asvdb
'''

#: Deselects what a machine without a GPU cannot run and the tests do not skip themselves.
CONFTEST_SOURCE = '''"""Added by tabflow's scripts/run_upstream_tests.py."""
from tabflow.utils import HAS_GPU


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    kept = [item for item in items if getattr(getattr(item, "callspec", None), "params", {}).get("device") != 0]
    deselected = [item for item in items if item not in kept]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
'''


@dataclass(frozen=True)
class Suite:
    """Which tests of a project run: ``paths`` under the checkout, less ``left_out`` (globs)."""

    paths: tuple[str, ...]
    left_out: tuple[str, ...] = field(default=())


SUITES = {
    "nvtabular": Suite(
        ("tests/unit",),
        ("tests/unit/test_tf4rec.py", "tests/unit/framework_utils/test_tf_*.py", "tests/unit/loader/test_tf_dataloader.py",
         "tests/unit/examples"),
    ),
    "merlin-dataloader": Suite(
        ("tests/unit",),
        ("tests/unit/dataloader/test_tf_dataloader.py", "tests/unit/dataloader/test_jax_dataloader.py",
         "tests/unit/dataloader/test_array_to_tensorflow.py"),
    ),
    "merlin-core": Suite(("tests/unit/schema", "tests/unit/dag", "tests/unit/io", "tests/unit/utils")),
}

def _pattern(name: str) -> str:
    if name.endswith(".*"):
        return re.escape(name[:-2]) + r"(?:\.[a-z_]\w*)?"
    return re.escape(name)


_ORDERED = sorted(MODULES, key=lambda name: len(name.rstrip("*")), reverse=True)
_DOTTED = re.compile(r"(?<![\w.])(?:" + "|".join(f"({_pattern(name)})" for name in _ORDERED) + r")(?![\w])")


def rewrite_imports(source: str) -> str:
    """``source`` with every dotted name under an upstream module renamed to tabflow's.

    >>> rewrite_imports("import nvtabular as nvt\\nfrom merlin.dag.ops.subgraph import Subgraph\\nmerlin.dag.ops.UDF")
    'import tabflow as nvt\\nfrom tabflow.graph.ops import Subgraph\\ntabflow.graph.ops.UDF'
    """
    return _DOTTED.sub(lambda found: MODULES[_ORDERED[found.lastindex - 1]], source)


def prepare(checkout: str, workdir: str) -> None:
    """The checkout's tests, rewritten, in ``workdir`` beside the stand-ins' module."""
    tests = os.path.join(checkout, "tests")
    if not os.path.isdir(tests):
        raise SystemExit(f"{checkout} has no tests/ directory: pass the root of the project's checkout")
    shutil.copytree(tests, os.path.join(workdir, "tests"))
    for directory, _, files in os.walk(os.path.join(workdir, "tests")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as handle:
                    source = handle.read()
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(rewrite_imports(source))
    for name, text in ((f"{STAND_INS}.py", STAND_INS_SOURCE), ("conftest.py", CONFTEST_SOURCE), ("pytest.ini", "[pytest]\n")):
        with open(os.path.join(workdir, name), "w", encoding="utf-8") as handle:
            handle.write(text)


def summarise(report: str) -> dict[str, int | list[str]]:
    """Counts from pytest's JUnit XML report (a collection error counts as a failed test)."""
    counts: dict[str, int | list[str]] = {"collected": 0, "passed": 0, "failed": 0, "skipped": 0}
    failed: list[str] = []
    for case in ET.parse(report).getroot().iter("testcase"):
        counts["collected"] += 1  # type: ignore[operator]
        outcome = {child.tag for child in case}
        if outcome & {"failure", "error"}:
            counts["failed"] += 1  # type: ignore[operator]
            failed.append(f"{case.get('classname')}::{case.get('name')}")
        elif "skipped" in outcome:
            counts["skipped"] += 1  # type: ignore[operator]
        else:
            counts["passed"] += 1  # type: ignore[operator]
    counts["failures"] = failed
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", choices=sorted(SUITES))
    parser.add_argument("checkout", help="root of the project's checkout (the directory holding tests/)")
    parser.add_argument("--workdir", help="where the rewritten tests go (a new temporary directory by default)")
    parser.epilog = "Arguments after -- go to pytest."
    argv = sys.argv[1:] if argv is None else list(argv)
    pytest_args = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)

    checkout = os.path.abspath(args.checkout)
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix=f"tabflow-{args.suite}-"))
    if os.path.commonpath([workdir, REPO]) == REPO:
        raise SystemExit(f"--workdir {workdir} is inside tabflow's checkout; choose a directory outside it")
    if os.path.exists(os.path.join(workdir, "tests")):
        raise SystemExit(f"{workdir} already holds a tests/ directory; choose an empty work directory")
    suite = SUITES[args.suite]
    missing = [path for path in suite.paths if not os.path.isdir(os.path.join(checkout, path))]
    if missing:
        raise SystemExit(f"{checkout} has no {', '.join(missing)}: is it a checkout of {args.suite}?")
    os.makedirs(workdir, exist_ok=True)
    prepare(checkout, workdir)

    report = os.path.join(workdir, "report.xml")
    ignores = [f"--ignore-glob={os.path.join(workdir, pattern)}" for pattern in suite.left_out]
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", "--continue-on-collection-errors", f"--junitxml={report}",
               *ignores, *suite.paths, *pytest_args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, workdir, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, cwd=workdir, env=env)
    if not os.path.exists(report):
        return done.returncode
    counts = summarise(report)
    failures = counts.pop("failures")
    with open(os.path.join(workdir, "failures.txt"), "w", encoding="utf-8") as handle:
        handle.writelines(f"{name}\n" for name in failures)  # type: ignore[union-attr]
    ran = int(counts["passed"]) + int(counts["failed"])
    share = f"{100 * int(counts['passed']) / ran:.1f}%" if ran else "n/a"
    print(
        f"{args.suite}: {counts['collected']} collected, {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['skipped']} skipped; {share} of those that ran passed (work directory {workdir})"
    )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
