"""What a user without the optional packages sees, and the distribution name they are told.

The ``tabflow`` command must say what to install (from where this copy was installed: its
checkout, its wheel, or the distribution name ``tabflow-etl``) instead of failing with a traceback, and ``pytest`` must run in a checkout
that lacks pytest-timeout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from typing import TYPE_CHECKING

import pytest

from tabflow._install import DISTRIBUTION, install_source, missing_modules, pip_install

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_cli_without(blocked: list[str], argv: list[str], cwd: str) -> subprocess.CompletedProcess:
    """``python -m tabflow argv`` in a fresh interpreter where importing ``blocked`` fails as
    it does when a package is not installed."""
    code = (
        "import runpy, sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        f"sys.argv = ['tabflow', *{argv!r}]\n"
        "runpy.run_module('tabflow', run_name='__main__', alter_sys=True)\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_the_distribution_name_is_the_one_in_the_metadata():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as file:
        project = tomllib.load(file)["project"]
    assert project["name"] == DISTRIBUTION == "tabflow-etl"
    assert project["scripts"] == {"tabflow": "tabflow.cli:main"}
    for extra in ("torch", "fastai", "notebook", "bench", "gpu-cu12", "gpu-cu13", "dev"):
        assert extra in project["optional-dependencies"]
    assert pip_install("gpu-cu13", source=DISTRIBUTION) == 'pip install "tabflow-etl[gpu-cu13]"'


def test_install_commands_name_where_this_copy_came_from():
    # The suite runs from a checkout installed with `pip install -e`: the command installs that
    # checkout again rather than a name no index may hold.
    source = install_source()
    assert os.path.isfile(os.path.join(source, "pyproject.toml"))
    assert pip_install("fastai") == f'pip install -e "{source}[fastai]"'
    assert pip_install("fastai", source="dist/tabflow_etl-0.1.0.tar.gz") == 'pip install "dist/tabflow_etl-0.1.0.tar.gz[fastai]"'


#: What the GPU suite last passed on (one H100, CUDA 13): each GPU extra must admit it.
TESTED_GPU_SET = {
    "cudf": "26.10.2", "dask-cudf": "26.10.2", "dask-cuda": "26.10.0", "cupy": "14.2.0", "numpy": "2.4.6",
}
#: Versions known not to work with RAPIDS 26.10: each GPU extra must refuse them.
REFUSED_WITH_RAPIDS_26_10 = {"numpy": ["2.5.0", "2.5.2"]}


def _requirements(specs: list[str]) -> dict[str, "SpecifierSet"]:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    out: dict[str, SpecifierSet] = {}
    for spec in specs:
        requirement = Requirement(spec)
        out[requirement.name] = out.get(requirement.name, SpecifierSet()) & requirement.specifier
    return out


def _family(name: str) -> str:
    """``cudf-cu13`` -> ``cudf``, ``cupy-cuda12x`` -> ``cupy``: the package a CUDA build is of."""
    return re.sub(r"-(cu\d+|cuda\d+x)$", "", name)


@pytest.mark.parametrize("extra", ["gpu-cu12", "gpu-cu13", "gpu"])
def test_gpu_extras_admit_the_tested_set_and_refuse_what_breaks_it(extra):
    pytest.importorskip("packaging")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as file:
        project = tomllib.load(file)["project"]
    base = _requirements(project["dependencies"])
    gpu = _requirements(project["optional-dependencies"][extra])
    # One package of each RAPIDS family, all from one CUDA major version.
    families = {_family(name): name for name in gpu}
    assert {"cudf", "dask-cudf", "dask-cuda", "cupy", "numpy"} <= set(families)
    suffixes = {re.search(r"cu(?:da)?(\d+)", name).group(1) for name in gpu if name != "dask-cuda" and re.search(r"-cu", name)}
    assert len(suffixes) == 1, f"{extra} mixes CUDA versions: {sorted(gpu)}"
    for family, version in TESTED_GPU_SET.items():
        name = families[family]
        combined = gpu[name] & base.get(name, gpu[name])
        assert combined.contains(version), f"{extra}: {name}{combined} refuses the tested {version}"
    for family, versions in REFUSED_WITH_RAPIDS_26_10.items():
        name = families[family]
        combined = gpu[name] & base.get(name, gpu[name])
        assert not any(combined.contains(v) for v in versions), f"{extra}: {name}{combined} admits {versions}"
    # The RAPIDS packages of an extra move together: the same release range for all three.
    ranges = {str(gpu[families[f]]) for f in ("cudf", "dask-cudf")}
    assert len(ranges) == 1, f"{extra}: cudf and dask-cudf ranges differ: {ranges}"


def test_gpu_is_gpu_cu12_under_its_former_name():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as file:
        extras = tomllib.load(file)["project"]["optional-dependencies"]
    assert extras["gpu"] == extras["gpu-cu12"]


def test_no_message_names_the_other_projects_distribution():
    # "tabflow" on PyPI is an unrelated project: `pip install tabflow[...]` would install it.
    stale = re.compile(r"""pip install\s+['"]?tabflow(\[|['"\s)]|$)""")
    offenders = []
    for directory, _, files in os.walk(os.path.join(ROOT, "tabflow")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as file:
                    offenders += [f"{path}:{n}" for n, line in enumerate(file, 1) if stale.search(line)]
    assert offenders == []


@pytest.mark.parametrize("blocked", [["torch"], ["fastai"], ["torch", "fastai", "sklearn", "matplotlib"]])
def test_demo_without_the_training_packages_says_what_to_install(tmp_path, blocked):
    done = _run_cli_without(blocked, ["demo", "--rows", "1000", "--workdir", str(tmp_path / "out")], cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"tabflow demo: the demo trains with {', '.join(blocked)}, which" in done.stderr
    assert done.stderr.rstrip().endswith(pip_install("fastai"))
    # Checked before any work: no data was generated.
    assert not (tmp_path / "out").exists()


def test_demo_help_needs_no_training_packages(tmp_path):
    done = _run_cli_without(["torch", "fastai"], ["demo", "--help"], cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "--rows" in done.stdout


@pytest.mark.skipif(not missing_modules(["cudf"]) == ["cudf"], reason="cuDF is installed here")
def test_demo_on_the_gpu_without_cudf_names_the_gpu_extras(tmp_path):
    pytest.importorskip("fastai")
    done = _run_cli_without([], ["demo", "--gpu", "--rows", "1000", "--workdir", str(tmp_path / "out")], cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f'{pip_install("gpu-cu12")} for CUDA 12' in done.stderr
    assert f'{pip_install("gpu-cu13")} for CUDA 13' in done.stderr


def test_missing_modules_does_not_import_them():
    sys.modules.pop("antigravity", None)
    assert missing_modules(["antigravity", "tabflow", "no_such_module_anywhere"]) == ["no_such_module_anywhere"]
    assert "antigravity" not in sys.modules


@pytest.mark.timeout(120)
def test_timeout_marker_probe():
    """Carries a timeout marker, so that the run below proves the marker is registered."""


def test_pytest_runs_without_pytest_timeout():
    # `-p no:timeout` leaves pytest as it is in a checkout without the plugin: the settings must
    # not pass --timeout, and the timeout marker must still be known (--strict-markers).
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:timeout", "-p", "no:cacheprovider",
         f"{__file__}::test_timeout_marker_probe"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def _min_constraints(*arguments: str) -> subprocess.CompletedProcess:
    script = os.path.join(ROOT, ".ci", "min_constraints.py")
    return subprocess.run([sys.executable, script, *arguments], capture_output=True, text=True, timeout=60)


def test_min_constraints_pin_each_floor_and_let_a_pin_take_a_floors_place():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as file:
        project = tomllib.load(file)["project"]
    floors = dict(line.split("==") for line in _min_constraints("fastai").stdout.split())
    declared = {re.split(r"[\s>=<\[]", r)[0].lower(): r for r in project["dependencies"] + project["optional-dependencies"]["fastai"]}
    for name, requirement in declared.items():
        if ">=" in requirement:
            assert floors[name] == re.search(r">=\s*([0-9][0-9A-Za-z.]*)", requirement).group(1)
    pinned = dict(line.split("==") for line in _min_constraints("fastai", "torch==2.13.0", "Torch_Vision==0.28.0").stdout.split())
    assert pinned["torch"] == "2.13.0" and pinned["torch-vision"] == "0.28.0"  # names normalised as pip does
    assert {k: v for k, v in pinned.items() if k not in ("torch", "torch-vision")} == {k: v for k, v in floors.items() if k != "torch"}
    refused = _min_constraints("fastai", "==2.8")
    assert refused.returncode != 0 and "name==version" in refused.stderr
    unknown = _min_constraints("no-such-extra")
    assert unknown.returncode != 0 and "no-such-extra" in unknown.stderr
