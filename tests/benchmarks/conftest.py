"""The benchmark scripts, loaded by path as the tests of each one need them."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Callable, Iterator

import pytest

_BENCHMARKS = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "benchmarks")


@pytest.fixture(scope="session")
def load_benchmark() -> Iterator[Callable[[str], Any]]:
    """``load_benchmark("etl")`` runs ``benchmarks/etl.py`` as a module and returns it. The
    module stays registered in ``sys.modules`` for the session, as an imported module is
    (dataclasses look their module up)."""
    loaded: list[str] = []

    def load(name: str) -> Any:
        spec = importlib.util.spec_from_file_location(f"tabflow_benchmark_{name}", os.path.join(_BENCHMARKS, f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        loaded.append(spec.name)
        spec.loader.exec_module(module)
        return module

    yield load
    for name in loaded:
        sys.modules.pop(name, None)
