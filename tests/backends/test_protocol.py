"""Both engines implement exactly the :class:`~tabflow.backends.Backend` protocol, and the rest
of the package uses nothing else.

The classes are inspected, not instantiated against a GPU: the cuDF backend imports cuDF
inside its methods, so this runs everywhere.
"""

from __future__ import annotations

import ast
import glob
import inspect
import os

import numpy as np
import pandas as pd
import pytest

import tabflow
from tabflow.backends import Backend
from tabflow.backends.cudf_backend import CudfBackend
from tabflow.backends.pandas_backend import PandasBackend
from tabflow.backends.protocol import FRAME_METHODS

ROOT = os.path.dirname(os.path.abspath(tabflow.__file__))
ENGINES = [PandasBackend, CudfBackend]


def _members(cls: type) -> dict[str, str]:
    """Public members of a class body (and its annotated attributes) with their kind."""
    kinds = {name: "attribute" for name in getattr(cls, "__annotations__", {}) if not name.startswith("_")}
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, staticmethod):
            kinds[name] = "staticmethod"
        elif isinstance(value, classmethod):
            kinds[name] = "classmethod"
        elif inspect.isfunction(value):
            kinds[name] = "method"
        else:  # a property or a plain value: read as an attribute either way
            kinds[name] = "attribute"
    return kinds


def _parameters(cls: type, name: str) -> list[tuple[str, str, object]]:
    """``(name, kind, default)`` of each parameter, ``self`` left out."""
    value = inspect.getattr_static(cls, name)
    function = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
    parameters = list(inspect.signature(function).parameters.values())
    if not isinstance(value, staticmethod):
        parameters = parameters[1:]
    return [(p.name, p.kind.name, p.default) for p in parameters]


PROTOCOL = _members(Backend)


def test_the_protocol_lists_methods_and_attributes():
    assert {"name", "xp"} <= {n for n, kind in PROTOCOL.items() if kind == "attribute"}
    assert len([kind for kind in PROTOCOL.values() if kind != "attribute"]) > 40
    for name, kind in PROTOCOL.items():
        if kind != "attribute":
            function = inspect.getattr_static(Backend, name)
            function = getattr(function, "__func__", function)
            assert (function.__doc__ or "").strip(), f"Backend.{name} has no docstring"
            assert "return" in inspect.get_annotations(function), f"Backend.{name} has no return type"


@pytest.mark.parametrize("engine", ENGINES, ids=lambda cls: cls.__name__)
def test_engine_implements_exactly_the_protocol(engine):
    members = _members(engine)
    assert sorted(set(members) - set(PROTOCOL)) == [], "public members missing from the Backend protocol"
    assert sorted(set(PROTOCOL) - set(members)) == [], "protocol members the engine lacks"
    assert {n: k for n, k in members.items()} == PROTOCOL


@pytest.mark.parametrize("engine", ENGINES, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("name", sorted(n for n, kind in PROTOCOL.items() if kind != "attribute"))
def test_engine_signatures_match_the_protocol(engine, name):
    assert _parameters(engine, name) == _parameters(Backend, name)


# ------------------------------------------------------------------------------ callers
_FACTORIES = ("get_backend", "backend_for")
_NAMES = ("backend", "BACKEND")


def _is_factory_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id in _FACTORIES) or (isinstance(func, ast.Attribute) and func.attr in _FACTORIES)


def _backend_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, attribute)`` of every attribute read from a backend: a name ``backend`` or
    ``BACKEND``, a ``get_backend(...)`` / ``backend_for(...)`` call, a name assigned one of
    those in the same function, or an object's ``.backend`` (``Dataset.backend``)."""
    uses = []
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    for scope in scopes:
        names = set(_NAMES)
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and (_is_factory_call(node.value) or (isinstance(node.value, ast.Name) and node.value.id in names)):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for node in ast.walk(scope):
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value
            if (
                (isinstance(owner, ast.Name) and owner.id in names)
                or _is_factory_call(owner)
                or (isinstance(owner, ast.Attribute) and owner.attr == "backend")
            ):
                uses.append((node.lineno, node.attr))
    return sorted(set(uses))


def _package_files() -> list[str]:
    backends = os.path.join(ROOT, "backends")
    return sorted(
        os.path.join(directory, name)
        for directory, _, files in os.walk(ROOT)
        if not (directory == backends or directory.startswith(backends + os.sep))
        for name in files
        if name.endswith(".py")
    )


def test_the_scan_finds_backend_calls():
    source = "b = backend_for(df)\nb.columns_matrix(df)\nbackend.to_torch(x)\nget_backend('pandas').frame_from_dict({})\n"
    assert _backend_uses(ast.parse(source)) == [(2, "columns_matrix"), (3, "to_torch"), (4, "frame_from_dict")]


def test_nothing_outside_the_backends_uses_a_method_outside_the_protocol():
    outside = []
    used = set()
    for path in _package_files():
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for line, attribute in _backend_uses(tree):
            used.add(attribute)
            if attribute not in PROTOCOL:
                outside.append(f"{os.path.relpath(path, os.path.dirname(ROOT))}:{line}: backend.{attribute}")
    assert outside == []
    assert len(used) > 20  # the scan sees the package's backend calls at all


# Method names pandas frames share with Python's containers, strings and NumPy arrays are
# called on those too, so the scan below cannot tell them apart; FRAME_METHODS lists the ones
# ops do call on frames.
_PANDAS_ONLY = {
    name
    for name in set(dir(pd.DataFrame)) | set(dir(pd.Series))
    if not name.startswith("_")
} - {name for kind in (list, dict, str, set, bytes, tuple, np.ndarray) for name in dir(kind)}
# Receivers that are not frames: the engine itself, array modules, the op.
_NOT_FRAMES = {"backend", "xp", "np", "pd", "pa", "pq", "host", "pandas", "compute", "self", "cls", "on_host"}


def _frame_method_calls(path: str) -> set[str]:
    called = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            if isinstance(receiver, ast.Name) and (receiver.id in _NOT_FRAMES or receiver.id.endswith("backend")):
                continue
            if node.func.attr in _PANDAS_ONLY:
                called.add(node.func.attr)
    return called


def test_the_frame_method_scan_finds_calls(tmp_path):
    source = tmp_path / "op.py"
    source.write_text("def f(backend, df):\n    backend.shift(df)\n    return df.fillna(0).interpolate()\n")
    assert _frame_method_calls(str(source)) == {"fillna", "interpolate"}


def test_ops_call_only_the_listed_frame_methods():
    unlisted = {
        f"{os.path.basename(path)}: {name}"
        # ops and the loader's ops: both run on the engine's frames
        for path in sorted(glob.glob(os.path.join(ROOT, "ops", "*.py")) + glob.glob(os.path.join(ROOT, "loader", "ops", "*.py")))
        for name in _frame_method_calls(path) - FRAME_METHODS
    }
    assert unlisted == set(), "add the method to backends/protocol.py FRAME_METHODS (after checking cuDF has it) or use a Backend method"


@pytest.mark.parametrize("engine", ["pandas", pytest.param("cudf", marks=pytest.mark.gpu)])
def test_every_listed_frame_method_exists_on_the_engine(engine):
    library = pd if engine == "pandas" else pytest.importorskip("cudf")
    frame, series = library.DataFrame({"a": [1, 2]}), library.Series([1, 2])
    grouped = frame.groupby("a")
    missing = sorted(
        name for name in FRAME_METHODS
        if not any(hasattr(obj, name) for obj in (frame, series, grouped))
    )
    assert missing == []
