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


# ------------------------------------------------------------------------ frame methods
# Two scans of the package's source for methods called on the engines' frames:
#
# - in ops (and the loader's ops), whose receivers are frames more often than not, any method
#   only pandas' classes have (names Python's containers, strings and NumPy arrays share are
#   called on those too, so this scan cannot tell them apart);
# - in every module outside the backends, every method called on a receiver known to be an
#   engine frame or series, whatever its name (``tolist`` and ``astype`` included): a
#   parameter typed ``Frame``/``Series`` or named ``df``, ``frame``, ``series``,
#   ``transformable``, a frame or series a backend method returns, a column of one
#   (``df[name]``, ``.loc``/``.iloc``), a name assigned one of those, and the frames methods
#   give back (``df[name].fillna(0).astype(...)``). Host frames are typed ``pd.DataFrame``.
#
# Both allow FRAME_METHODS only, and refuse what cuDF refuses whatever the list says.

_PANDAS_ONLY = {
    name
    for name in set(dir(pd.DataFrame)) | set(dir(pd.Series))
    if not name.startswith("_")
} - {name for kind in (list, dict, str, set, bytes, tuple, np.ndarray) for name in dir(kind)}
# Receivers that are not frames: the engine itself, array modules, the op.
_NOT_FRAMES = {"backend", "xp", "np", "pd", "pa", "pq", "host", "pandas", "compute", "self", "cls", "on_host"}

#: What cuDF's frames and series have but refuse, read from cuDF's source (rapidsai/cudf,
#: python/cudf/cudf/, the 26.10 line at 6a22d1d): they would copy device data to the host
#: behind the caller's back. An engine frame reaches the host through Backend.to_host /
#: to_numpy / column_values.
CUDF_REFUSES = {
    "tolist": "SingleColumnFrame.tolist raises TypeError (core/single_column_frame.py:225)",
    "to_list": "an alias of SingleColumnFrame.tolist (core/single_column_frame.py:247)",
    "__iter__": "NotIterable.__iter__ raises TypeError (core/mixins/notiterable.py): no for-loop, list(), sorted()",
    "__array__": "Frame.__array__ raises TypeError (core/frame.py:603): no np.asarray(series)",
    "__arrow_array__": "Frame.__arrow_array__ raises TypeError (core/frame.py:612): no pa.array(series)",
}
#: Builtins and NumPy / pyarrow functions that iterate or convert their argument, with the
#: cuDF refusal they meet when given an engine frame or series.
_CONVERTERS = {
    "list": "__iter__", "tuple": "__iter__", "set": "__iter__", "sorted": "__iter__", "iter": "__iter__",
    "dict": "__iter__", "enumerate": "__iter__", "zip": "__iter__",
    "np.asarray": "__array__", "np.array": "__array__", "np.unique": "__array__", "pa.array": "__arrow_array__",
}
#: Modules whose frames are host pandas frames only: what the scan of every module skips.
HOST_FRAME_MODULES = {
    "testing.py": "assert_frame_equal moves both frames to the host (pandas) before comparing them",
}
_FRAME_ANNOTATIONS = {"Frame", "Series"}
_FRAME_NAMES = {"df", "frame", "series", "transformable", "gdf"}
#: Backend methods that return an engine frame or series (by the protocol's annotations).
_RETURNS_FRAME = {
    name for name, function in inspect.getmembers(Backend, inspect.isfunction)
    if inspect.get_annotations(function).get("return") in ("Frame", "Series")
}
#: Methods whose result is a frame or series again when called on one (reductions,
#: conversions and group-bys are not followed).
_FRAME_RESULTS = (FRAME_METHODS | _PANDAS_ONLY) - {
    "to_numpy", "to_dict", "to_parquet", "memory_usage", "all", "any", "sum", "min", "max", "mean", "groupby",
}


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


def _is_backend(node: ast.AST, backends: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in backends or node.id.endswith("backend") or node.id == "BACKEND"
    if isinstance(node, ast.Attribute):
        return node.attr == "backend"
    return _is_factory_call(node)


def _is_frame(node: ast.AST, frames: set[str], backends: set[str]) -> bool:
    """Whether an expression is an engine frame or series (see the comment above)."""
    if isinstance(node, ast.Name):
        return node.id in frames
    if isinstance(node, ast.Subscript):
        value = node.value
        if isinstance(value, ast.Attribute) and value.attr in ("loc", "iloc"):
            value = value.value
        return _is_frame(value, frames, backends)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if _is_backend(node.func.value, backends):
            return node.func.attr in _RETURNS_FRAME
        return node.func.attr in _FRAME_RESULTS and _is_frame(node.func.value, frames, backends)
    return False


def _engine_frame_calls(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` of every method called on an engine frame or series that
    FRAME_METHODS does not list or cuDF refuses, every conversion of one that cuDF refuses,
    and every ``sort_values(kind=...)`` (cuDF sorts stably anyway and warns when asked by
    name: ``IndexedFrame.sort_values``, core/indexed_frame.py:3810; use Backend.sort_rows)."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sort_values":
            if any(keyword.arg == "kind" for keyword in node.keywords):
                found.append((node.lineno, "sort_values(kind=...)"))
    for function in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        arguments = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
        frames = {
            a.arg for a in arguments
            if a.arg in _FRAME_NAMES or (a.annotation is not None and ast.unparse(a.annotation).strip("'\"") in _FRAME_ANNOTATIONS)
        }
        backends: set[str] = set()
        body = list(ast.walk(function))
        grown = True
        while grown:  # names assigned frames (or backends), in any order
            grown = False
            for node in body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    target = node.targets[0].id
                    if target not in frames and _is_frame(node.value, frames, backends):
                        frames.add(target)
                        grown = True
                    if target not in backends and isinstance(node.value, ast.Call) and _is_factory_call(node.value):
                        backends.add(target)
                        grown = True
        for node in body:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_frame(node.func.value, frames, backends):
                name = node.func.attr
                if name not in FRAME_METHODS or name in CUDF_REFUSES:
                    found.append((node.lineno, name))
            elif isinstance(node, ast.Call) and node.args and _is_frame(node.args[0], frames, backends):
                converter = _CONVERTERS.get(ast.unparse(node.func))
                if converter is not None:
                    found.append((node.lineno, f"{ast.unparse(node.func)}(...): {converter}"))
            elif isinstance(node, (ast.For, ast.comprehension)) and _is_frame(node.iter, frames, backends):
                found.append((getattr(node, "lineno", getattr(node.iter, "lineno", 0)), "iteration: __iter__"))
    return sorted(set(found))


def test_the_frame_method_scan_finds_calls(tmp_path):
    source = tmp_path / "op.py"
    source.write_text("def f(backend, df):\n    backend.shift(df)\n    return df.fillna(0).interpolate()\n")
    assert _frame_method_calls(str(source)) == {"fillna", "interpolate"}


def test_the_engine_frame_scan_follows_frames_and_finds_what_cudf_refuses():
    source = (
        "def f(df, values: 'Frame', host: 'pd.DataFrame', names):\n"
        "    backend = backend_for(df)\n"
        "    column = df[names[0]].fillna(0)\n"
        "    built = backend.frame_from_dict({'a': column})\n"
        "    column.tolist()\n"  # refused by cuDF, whatever FRAME_METHODS says
        "    built['a'].interpolate()\n"  # not listed
        "    values.iloc[0].astype('int64')\n"  # listed: fine
        "    host.tolist(); names.tolist(); backend.to_host(column).tolist()\n"  # not engine frames
        "    list(column); np.asarray(built['a'])\n"
        "    for value in df['a']:\n        pass\n"
        "    return df.sort_values('a', kind='stable')\n"
    )
    assert _engine_frame_calls(source) == [
        (5, "tolist"), (6, "interpolate"), (9, "list(...): __iter__"), (9, "np.asarray(...): __array__"),
        (10, "iteration: __iter__"), (12, "sort_values(kind=...)"),
    ]


def test_ops_call_only_the_listed_frame_methods():
    unlisted = {
        f"{os.path.basename(path)}: {name}"
        # ops and the loader's ops: both run on the engine's frames
        for path in sorted(glob.glob(os.path.join(ROOT, "ops", "*.py")) + glob.glob(os.path.join(ROOT, "loader", "ops", "*.py")))
        for name in _frame_method_calls(path) - FRAME_METHODS
    }
    assert unlisted == set(), "add the method to backends/protocol.py FRAME_METHODS (after checking cuDF has it) or use a Backend method"


def test_every_module_calls_only_the_listed_frame_methods_on_engine_frames():
    found = []
    for path in _package_files():
        relative = os.path.relpath(path, ROOT)
        if relative in HOST_FRAME_MODULES:
            continue
        with open(path, encoding="utf-8") as handle:
            found += [f"{relative}:{line}: {what}" for line, what in _engine_frame_calls(handle.read())]
    assert found == [], (
        "on cuDF's frames these are missing, refused or warned about: use a Backend method (to_host, to_numpy, "
        "sort_rows, ...), or add the method to backends/protocol.py FRAME_METHODS after checking cuDF gives it "
        "pandas' meaning (test_every_listed_frame_method_matches_pandas)"
    )


def test_no_listed_frame_method_is_one_cudf_refuses():
    assert FRAME_METHODS & set(CUDF_REFUSES) == set()
    assert set(HOST_FRAME_MODULES) <= {os.path.relpath(p, ROOT) for p in _package_files()}


def _frame_objects(library, tmp_path):
    frame = library.DataFrame({"k": [2, 1, 2, 3], "x": [1.5, None, 3.0, 4.0], "s": ["a", None, "b", "a"]})
    return frame, frame["x"], frame.groupby("k", sort=True)


#: One call per listed method, on a frame (``f``), a series (``x``) or a group-by (``g``) of
#: both engines: cuDF must run it and give what pandas gives (ordered where cuDF leaves the
#: order open). ``path`` is a file name for the writers.
FRAME_CALLS = {
    "isna": lambda f, x, g, path: f.isna(),
    "notna": lambda f, x, g, path: x.notna(),
    "fillna": lambda f, x, g, path: x.fillna(0.0),
    "dropna": lambda f, x, g, path: f.dropna(),
    "where": lambda f, x, g, path: x.where(x > 2.0),
    "mask": lambda f, x, g, path: x.mask(x > 2.0),
    "assign": lambda f, x, g, path: f.assign(y=x * 2),
    "drop": lambda f, x, g, path: f.drop(columns=["s"]),
    "drop_duplicates": lambda f, x, g, path: f[["k"]].drop_duplicates().sort_values("k"),
    "rename": lambda f, x, g, path: f.rename(columns={"x": "z"}),
    "reset_index": lambda f, x, g, path: f.iloc[1:].reset_index(drop=True),
    "sort_values": lambda f, x, g, path: f.sort_values(["k", "x"], na_position="last"),
    "shift": lambda f, x, g, path: x.shift(1),
    "groupby": lambda f, x, g, path: g["x"].sum(),
    "agg": lambda f, x, g, path: g.agg(n=("x", "count"), t=("x", "sum")),
    "transform": lambda f, x, g, path: g["x"].transform("sum"),
    "multiply": lambda f, x, g, path: x.multiply(2.0),
    "map": lambda f, x, g, path: f["k"].map({1: 10, 2: 20, 3: 30}),
    "all": lambda f, x, g, path: bool((f["k"] > 0).all()),
    "any": lambda f, x, g, path: bool((f["k"] > 2).any()),
    "sum": lambda f, x, g, path: float(x.sum()),
    "min": lambda f, x, g, path: float(x.min()),
    "max": lambda f, x, g, path: float(x.max()),
    "mean": lambda f, x, g, path: float(x.mean()),
    "astype": lambda f, x, g, path: f["k"].astype("float32"),
    "clip": lambda f, x, g, path: x.clip(lower=2.0, upper=3.5),
    "copy": lambda f, x, g, path: f.copy(),
    "take": lambda f, x, g, path: f.take([3, 0]),
    "to_numpy": lambda f, x, g, path: x.to_numpy(na_value=-1.0),
    "to_dict": lambda f, x, g, path: f["k"].to_dict(),
    "memory_usage": lambda f, x, g, path: int(f[["k"]].memory_usage(index=False).sum()),
    "to_parquet": lambda f, x, g, path: (f.to_parquet(path, index=False), pd.read_parquet(path))[1],
    "sample": lambda f, x, g, path: len(f.sample(n=3, random_state=0)),
    "set_index": lambda f, x, g, path: f.set_index("k")["x"],
    "to_frame": lambda f, x, g, path: x.to_frame(),
}


def _as_pandas(value):
    """A result of either engine as a pandas frame of Python values (nulls None), labels as
    a column; scalars as they are."""
    if hasattr(value, "to_pandas"):
        value = value.to_pandas()
    if isinstance(value, np.ndarray):
        value = pd.Series(value)
    if isinstance(value, pd.Series):
        value = value.to_frame("__values__" if value.name is None else value.name)
    if isinstance(value, pd.DataFrame):
        value = value.reset_index()
        return value.astype(object).where(value.notna(), None)
    return value


def _assert_same(name, got, expected):
    got, expected = _as_pandas(got), _as_pandas(expected)
    if isinstance(expected, pd.DataFrame):
        assert isinstance(got, pd.DataFrame), name
        pd.testing.assert_frame_equal(got, expected, check_dtype=False, check_index_type=False, check_column_type=False, obj=name)
    else:
        assert got == expected, name


def test_every_listed_frame_method_has_a_call():
    assert set(FRAME_CALLS) == FRAME_METHODS


@pytest.mark.parametrize("engine", ["pandas", pytest.param("cudf", marks=pytest.mark.gpu)])
def test_every_listed_frame_method_matches_pandas(engine, tmp_path):
    """More than ``hasattr``: cuDF has methods that raise (``Series.tolist``) or mean
    something else; each listed method runs on the engine and gives pandas' answer."""
    library = pd if engine == "pandas" else pytest.importorskip("cudf")
    ours, reference = _frame_objects(library, tmp_path), _frame_objects(pd, tmp_path)
    for name, call in sorted(FRAME_CALLS.items()):
        _assert_same(name, call(*ours, str(tmp_path / f"{name}-{engine}.parquet")), call(*reference, str(tmp_path / f"{name}.parquet")))
