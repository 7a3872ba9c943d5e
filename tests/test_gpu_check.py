"""``scripts/gpu_check.sh``, the one command that verifies the GPU half: it parses, and
where the GPU engine cannot run it says why and checks nothing (exit status 3)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tabflow.backends import gpu_available

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "gpu_check.sh")
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@needs_bash
def test_the_script_parses():
    done = subprocess.run(["bash", "-n", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@needs_bash
@pytest.mark.skipif(gpu_available(), reason="the GPU engine runs here: the script would check it")
def test_without_a_gpu_engine_it_says_why_and_checks_nothing(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path / "out"), "PYTHON": sys.executable, "WORKDIR": str(tmp_path / "work"),
           "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(["bash", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no usable GPU engine here, nothing was checked" in done.stdout
    assert "reason: the GPU engine needs RAPIDS cuDF" in done.stdout or "reason: RAPIDS cuDF" in done.stdout
    versions = (tmp_path / "out" / "gpu_check_versions.txt").read_text()
    assert "numpy" in versions and "tabflow GPU check" in versions
    assert not (tmp_path / "out" / "gpu_suite.txt").exists()
