"""Every benchmark script describes its options: ``--help`` prints them and exits 0."""

from __future__ import annotations

import glob
import importlib.util
import os
import sys

import pytest

_SCRIPTS = sorted(
    path
    for path in glob.glob(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "benchmarks", "*.py"))
    if not os.path.basename(path).startswith("_")
)


@pytest.mark.parametrize("script", _SCRIPTS, ids=[os.path.basename(path) for path in _SCRIPTS])
def test_help_prints_every_option(script, capsys, monkeypatch):
    name = "tabflow_benchmark_help_" + os.path.basename(script)[:-3]
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs, as an imported module is (dataclasses look it up).
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:") and "--help" in out
