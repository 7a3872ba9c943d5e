"""The package's import graph: no cycles (imports inside functions count) and layers that only
look down: schema -> backends -> ops / graph / workflow -> compat -> loader -> torch modules.

The graph is read from the source with ``ast`` (every ``import`` statement, wherever it is),
so a cycle closed by a deferred import is found as surely as a top-level one.
"""

from __future__ import annotations

import ast
import os

import pytest

import tabflow

ROOT = os.path.dirname(os.path.abspath(tabflow.__file__))


def _module_name(path: str) -> str:
    relative = os.path.relpath(path, os.path.dirname(ROOT))[: -len(".py")].replace(os.sep, ".")
    return relative[: -len(".__init__")] if relative.endswith(".__init__") else relative


def _modules() -> dict[str, str]:
    found = {}
    for directory, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                found[_module_name(path)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The tabflow module an import refers to (the longest existing prefix)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str) -> set[str]:
    tree = ast.parse(open(MODULES[module], encoding="utf-8").read())
    package = module if MODULES[module].endswith("__init__.py") else module.rpartition(".")[0]
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for name in names:
            if name.startswith("tabflow"):
                resolved = _resolve(name)
                # A module inside a package is imported while that package initialises:
                # naming the package (``from tabflow.ops import _vocab``) reaches a sibling,
                # not the package's __init__.
                if resolved and resolved != module and not module.startswith(resolved + "."):
                    targets.add(resolved)
                    # Importing a.b.c runs the __init__ of a and a.b first, unless the
                    # importing module sits inside them (then they are already running).
                    parts = resolved.split(".")
                    for depth in range(1, len(parts)):
                        parent = ".".join(parts[:depth])
                        if parent in MODULES and not (module == parent or module.startswith(parent + ".")):
                            targets.add(parent)
    return targets


GRAPH = {module: _imports(module) for module in MODULES}


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    return result


def test_no_import_cycles():
    assert _cycles() == []


# Layers, lowest first. A module may import its own layer and the layers below it.
LAYERS = [
    ("foundation", ["tabflow.exceptions", "tabflow._json", "tabflow._files", "tabflow._paths", "tabflow._install"]),
    ("schema", ["tabflow.schema", "tabflow.dtypes"]),
    ("backends", ["tabflow.backends"]),
    ("table", ["tabflow.table"]),
    ("graph", ["tabflow.selector", "tabflow.graph", "tabflow.ops", "tabflow.serialize"]),
    ("data", ["tabflow.io", "tabflow.dataset", "tabflow.datasets"]),
    ("workflow", ["tabflow.workflow", "tabflow.viz", "tabflow.testing", "tabflow.utils", "tabflow.tools"]),
    # What exists only for NVTabular/merlin code, and the aliases at the import paths that
    # code uses: nothing below depends on it, so it can shrink without touching the rest.
    ("compat", ["tabflow.compat", "tabflow.dispatch", "tabflow.schema.io"]),
    ("loader", ["tabflow.loader"]),
    ("torch modules", ["tabflow.framework_utils"]),
    ("applications", ["tabflow.demo", "tabflow.cli", "tabflow.__main__", "tabflow"]),
]


def _layer(module: str) -> int:
    best, depth = None, -1
    for level, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = level, len(prefix)
    assert best is not None, f"{module} belongs to no layer; add it to LAYERS"
    return best


def test_imports_only_look_down():
    upward = sorted(
        f"{module} ({LAYERS[_layer(module)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for module, targets in GRAPH.items()
        for target in targets
        if _layer(target) > _layer(module)
    )
    assert upward == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m) < _layer("tabflow.loader")))
def test_no_torch_below_the_loader(module):
    tree = ast.parse(open(MODULES[module], encoding="utf-8").read())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert "torch" not in imported


# Names that reach into pandas' internals: a frame's block manager, the buffers of its
# arrays, private modules.
_PANDAS_INTERNALS = ("_mgr", "_pa_array", "_ndarray", "_mask", "blknos", "blklocs")
_PANDAS_PRIVATE_MODULES = ("pandas.core", "pandas._libs", "pandas.api.internals")


def test_pandas_internals_are_read_in_one_module():
    readers = set()
    for module, path in MODULES.items():
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in _PANDAS_INTERNALS:
                readers.add(module)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(_PANDAS_PRIVATE_MODULES):
                readers.add(module)
            elif isinstance(node, ast.Import) and any(alias.name.startswith(_PANDAS_PRIVATE_MODULES) for alias in node.names):
                readers.add(module)
    assert readers <= {"tabflow.backends._pandas_blocks"}, readers


# The engine modules a layer above may import: the package, its protocol, the host kernels
# it shares and the list-key names; the rest (each engine, its private helpers) stays behind
# the protocol.
_PUBLIC_BACKEND_MODULES = {"tabflow.backends", "tabflow.backends.protocol", "tabflow.backends.kernels", "tabflow.backends.list_keys"}


def test_engines_stay_behind_their_seam():
    reaching = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if not module.startswith("tabflow.backends")
        for target in targets
        if target.startswith("tabflow.backends.") and target not in _PUBLIC_BACKEND_MODULES
    )
    assert reaching == []


# The GPU engine's libraries: importing any of them is engine knowledge.
_ENGINE_LIBRARIES = ("cudf", "dask_cudf", "cupy", "cupyx", "rmm")


def _libraries_imported(module: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(open(MODULES[module], encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add((node.module or "").split(".")[0])
        elif (
            isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value.split(".")[0])
    return found & set(_ENGINE_LIBRARIES)


def test_engine_libraries_are_imported_by_the_backends_only():
    importing = sorted(
        f"{module} imports {', '.join(sorted(_libraries_imported(module)))}"
        for module in MODULES
        if not module.startswith("tabflow.backends") and _libraries_imported(module)
    )
    assert importing == []


def test_dtype_names_come_from_the_schema():
    # Naming a dtype is engine-neutral (schema/dtypes.py); asking an engine by name for it
    # ties an op to that engine.
    asking = sorted(
        module
        for module, path in MODULES.items()
        if module.startswith(("tabflow.ops", "tabflow.graph"))
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "canonical_dtype"
        and isinstance(node.func.value, ast.Call) and getattr(node.func.value.func, "id", None) == "get_backend"
    )
    assert asking == []


COMPAT = _layer("tabflow.compat")


def test_nothing_below_compat_imports_it():
    # Code kept for NVTabular/merlin users reaches the layers below through their hooks
    # (register_frame_fitter, register_schema_format, register_construction_check,
    # register_attribute_alias, register_fitted_names); a lower module importing it would make
    # the rest depend on it.
    importing = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if _layer(module) < COMPAT
        for target in targets
        if _layer(target) == COMPAT
    )
    assert importing == []


def _exported(module: str) -> set[str]:
    tree = ast.parse(open(MODULES[module], encoding="utf-8").read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


# The names of what exists only for NVTabular/merlin: every name compat's own modules export,
# but dispatch's, which repeat NVTabular's generic helper names (``concat``, ``zeros``, ...)
# that modules below spell for pandas' and NumPy's functions.
MERLIN_ONLY = set().union(
    *(_exported(m) for m in MODULES if m.startswith("tabflow.compat.") and m != "tabflow.compat.dispatch")
)
# merlin.io's constant, at merlin.io's path (``tabflow.io`` is where ``merlin.io`` users import from).
_ALIASES_BELOW = {"tabflow.io": {"MERLIN_METADATA_DIR_NAME"}}


def _spelled(module: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(open(MODULES[module], encoding="utf-8").read())):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.rpartition(".")[2])
    return names


def test_merlin_only_names_live_in_compat():
    assert {"TensorflowMetadata", "schema_from_proto_text", "tfmd_json", "InertArgument", "LEGACY_FIT"} <= MERLIN_ONLY
    below = sorted(
        f"{module} spells {name}"
        for module in MODULES
        if _layer(module) < COMPAT
        for name in _spelled(module) & MERLIN_ONLY
    )
    assert below == []
    assert "MERLIN_METADATA_DIR_NAME" not in set().union(
        *(_spelled(m) for m in MODULES if _layer(m) < COMPAT and m not in _ALIASES_BELOW)
    )
