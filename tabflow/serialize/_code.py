"""Functions in saved workflows: registered names, or source code that runs only when trusted.

A function given to an op (``LambdaOp(f)``, ``Rename(f=...)``, ``Filter(f)``) is saved in
one of two ways:

- **by name**, when it was registered with :func:`register_function` (or is a NumPy ufunc,
  which holds no Python code). Loading looks the name up in the registry of the running
  process: nothing is imported, nothing from the file is executed.
- **as code** otherwise (lambdas, nested functions, closures, functions defined in
  ``__main__`` or a notebook, unregistered module functions): the exact source text of the
  lambda expression or ``def`` statement, the plain values it closes over or reads as
  globals (numbers, strings, lists, tuples, dicts), the modules it reads by name and the
  other functions it calls (saved the same way). Loading keeps the code as a
  :class:`SavedCode` that refuses to run; ``Workflow.load(path, trust_code=True)`` compiles
  it instead, and only then may it import the modules it names.

Examples
--------
>>> from tabflow.serialize._code import capture_code, compile_code
>>> scale = 10
>>> record = capture_code(lambda x: x * scale)
>>> record["source"], record["env"]["scale"]
('lambda x: x * scale', {'value': 10})
>>> compile_code(record, "example")(3)
30
"""

from __future__ import annotations

import ast
import builtins
import dis
import importlib
import inspect
import linecache
import math
import textwrap
import types
from typing import Any, Callable

import numpy as np

from tabflow.exceptions import LoadError, SaveError, UntrustedCodeError

__all__ = [
    "register_function",
    "registered_name",
    "resolve_registered",
    "SavedCode",
    "UntrustedCodeError",
    "capture_code",
    "compile_code",
    "code_record",
]

#: Functions that saved workflows may name, by their registered name.
FUNCTION_REGISTRY: dict[str, Callable] = {}
_NAMES: dict[int, str] = {}

# Plain values a function may close over or read as globals: they are saved as data.
_PLAIN_SCALARS = (type(None), bool, int, float, str)
_MAX_CODE_DEPTH = 16


def register_function(func: Callable | None = None, *, name: str | None = None) -> Any:
    """Register a function so that saved workflows refer to it by name.

    A registered function is saved as its name and found again by
    :meth:`tabflow.Workflow.load` in the registry of the loading process, which must have
    registered it too (import the module that defines it first). Loading never imports or
    runs anything to find it. An unregistered function is saved as source code instead,
    which runs after loading only with ``trust_code=True``.

    Parameters
    ----------
    func : callable
        The function (use as ``@register_function`` or ``@register_function(name=...)``).
    name : str, optional
        Registered name; default ``"<module>:<qualified name>"``.

    Returns
    -------
    callable
        ``func`` unchanged.

    Examples
    --------
    >>> import tabflow as nvt
    >>> @nvt.register_function
    ... def clip_price(col):
    ...     return col.clip(lower=0)
    >>> nvt.serialize.registered_name(clip_price).endswith(":clip_price")
    True
    """
    if func is None:
        return lambda f: register_function(f, name=name)
    if not callable(func):
        raise TypeError(f"register_function expects a function, got {func!r}")
    key = name or f"{getattr(func, '__module__', None)}:{getattr(func, '__qualname__', getattr(func, '__name__', None))}"
    existing = FUNCTION_REGISTRY.get(key)
    if existing is not None and existing is not func and not _same_definition(existing, func):
        raise ValueError(f"another function is already registered as {key!r}; pass name=... to tell them apart")
    FUNCTION_REGISTRY[key] = func
    _NAMES[id(func)] = key
    return func


def _same_definition(a: Callable, b: Callable) -> bool:
    # Re-running a notebook cell or reloading a module defines the function again.
    return getattr(a, "__module__", None) == getattr(b, "__module__", None) and getattr(a, "__qualname__", None) == getattr(
        b, "__qualname__", None
    )


def registered_name(func: Callable) -> str | None:
    """The name ``func`` is saved under, or None when it is not registered (nor a ufunc)."""
    key = _NAMES.get(id(func))
    if key is not None and FUNCTION_REGISTRY.get(key) is func:
        return key
    if isinstance(func, np.ufunc) and getattr(np, func.__name__, None) is func:
        return f"numpy:{func.__name__}"
    return None


def resolve_registered(name: str, owner: str = "the workflow") -> Callable:
    """The function registered as ``name`` (NumPy ufuncs by ``numpy:<name>``), else LoadError."""
    if not isinstance(name, str):
        raise LoadError(f"{owner}: a saved function name must be a string, got {name!r:.80}")
    func = FUNCTION_REGISTRY.get(name)
    if func is not None:
        return func
    module, _, attr = name.partition(":")
    if module == "numpy" and isinstance(getattr(np, attr, None), np.ufunc):
        return getattr(np, attr)
    raise LoadError(
        f"{owner}: the workflow names the function {name!r:.100}, which is not registered in this process. Import the "
        "module that defines it and register it with @tabflow.register_function before Workflow.load "
        "(loading never imports modules or looks functions up by path)"
    )


# ------------------------------------------------------------------------------ capturing


def code_record(func: Callable) -> dict | None:
    """The saved record of a function compiled by :func:`compile_code` or held as SavedCode."""
    if isinstance(func, SavedCode):
        return func.record
    return getattr(func, "__tabflow_code__", None)


def capture_code(func: Callable, _depth: int = 0, _seen: tuple = ()) -> dict:
    """Source text and environment of ``func``; :class:`SaveError` when it cannot be saved.

    The record holds ``kind`` (``"lambda"`` or ``"def"``), ``name``, ``source`` (the exact
    lambda expression or ``def`` statement, decorators excluded), ``env`` (what the code reads
    from outside: ``{"value": ...}``, ``{"module": ...}``, ``{"function": ...}`` or
    ``{"code": record}``), ``defaults`` and ``kwdefaults``.
    """
    record = code_record(func)
    if record is not None:
        return record
    label = _describe(func)
    if not isinstance(func, types.FunctionType):
        raise SaveError(
            f"cannot save {label}: only Python functions (def or lambda) can be saved as code. Register it "
            "with @tabflow.register_function (it is then saved by name) or wrap it in a function"
        )
    if _depth > _MAX_CODE_DEPTH:
        raise SaveError(f"cannot save {label}: it calls functions nested more than {_MAX_CODE_DEPTH} deep")
    if hasattr(func, "__wrapped__"):
        raise SaveError(
            f"cannot save {label}: it is wrapped by a decorator, whose behaviour its source does not show. "
            "Register it with @tabflow.register_function, or pass the undecorated function"
        )
    kind, source = _source(func, label)
    code = func.__code__
    env: dict[str, Any] = {}
    seen = (*_seen, func)
    closure = dict(zip(code.co_freevars, func.__closure__ or ()))
    for name, cell in closure.items():
        try:
            value = cell.cell_contents
        except ValueError:
            raise SaveError(f"cannot save {label}: the variable {name!r} it uses has no value yet") from None
        env[name] = _environment_entry(name, value, label, _depth, seen)
    for name in _global_names(code):
        if name in env or name in closure:
            continue
        if name in func.__globals__:
            env[name] = _environment_entry(name, func.__globals__[name], label, _depth, seen)
        elif not hasattr(builtins, name):
            # Unknown when saved: the original would fail the same way when it runs.
            continue
    defaults = [_plain(value, f"a default argument of {label}") for value in (func.__defaults__ or ())]
    kwdefaults = {k: _plain(v, f"the default of {k!r} in {label}") for k, v in (func.__kwdefaults__ or {}).items()}
    return {
        "kind": kind,
        "name": func.__name__,
        "source": source,
        "env": env,
        "defaults": defaults,
        "kwdefaults": kwdefaults,
    }


def _describe(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    module = getattr(func, "__module__", None)
    return f"the function {module}.{name}" if module else f"the function {name}"


def _environment_entry(name: str, value: Any, label: str, depth: int, seen: tuple) -> dict:
    if isinstance(value, types.ModuleType):
        return {"module": value.__name__}
    if callable(value) and not isinstance(value, type):
        registered = registered_name(value)
        if registered is not None:
            return {"function": registered}
        if any(value is s for s in seen):
            return {"self": True}
        if isinstance(value, types.FunctionType):
            return {"code": capture_code(value, depth + 1, seen)}
    try:
        return {"value": _plain(value, f"the variable {name!r}")}
    except SaveError:
        raise SaveError(
            f"cannot save {label}: it uses the variable {name!r}, a {type(value).__module__}.{type(value).__name__}. "
            "Code is saved with the plain values it uses (numbers, strings, lists, tuples, dicts), the modules it "
            "names and the functions it calls; pass this object another way (e.g. as a column or an op "
            "parameter), or register the function with @tabflow.register_function so it is saved by name"
        ) from None


def _plain(value: Any, what: str) -> Any:
    """``value`` if it is plain data (JSON-like, tuples allowed), else SaveError."""
    if isinstance(value, _PLAIN_SCALARS):
        if isinstance(value, float) and not math.isfinite(value):
            return {"__float__": repr(value)}
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return _plain(value.item(), what)
    if isinstance(value, list):
        return [_plain(v, what) for v in value]
    if isinstance(value, tuple):
        return {"__tuple__": [_plain(v, what) for v in value]}
    if isinstance(value, dict):
        return {"__items__": [[_plain(k, what), _plain(v, what)] for k, v in value.items()]}
    raise SaveError(f"cannot save {what}: {type(value).__name__} values are not plain data")


def _unplain(value: Any) -> Any:
    if isinstance(value, list):
        return [_unplain(v) for v in value]
    if isinstance(value, dict):
        if "__float__" in value:
            return float(value["__float__"])
        if "__tuple__" in value:
            return tuple(_unplain(v) for v in value["__tuple__"])
        if "__items__" in value:
            return {_unplain(k): _unplain(v) for k, v in value["__items__"]}
        raise LoadError(f"unrecognised saved value {value!r:.80}")
    return value


def _global_names(code: types.CodeType) -> list[str]:
    """Names the code (and code nested in it) reads as globals, in order of first use."""
    names: dict[str, None] = {}
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"):
            names.setdefault(str(instruction.argval), None)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            for name in _global_names(const):
                names.setdefault(name, None)
    return list(names)


def _source(func: types.FunctionType, label: str) -> tuple[str, str]:
    """("lambda" | "def", exact source text) of a function, found by parsing its file."""
    code = func.__code__
    text = "".join(linecache.getlines(code.co_filename, func.__globals__))
    if not text:
        try:
            lines, _ = inspect.findsource(func)
            text = "".join(lines)
        except (OSError, TypeError):
            text = ""
    if not text:
        raise SaveError(
            f"cannot save {label}: its source code is not available (defined with exec/eval or typed at an "
            "interactive prompt). Define it in a file or a notebook cell, or register it with "
            "@tabflow.register_function"
        )
    try:
        tree = ast.parse(text)
    except SyntaxError:
        raise SaveError(f"cannot save {label}: the file that defines it ({code.co_filename}) no longer parses") from None
    # co_positions() gives (line, end line, column, end column); zero-width entries are the
    # bookkeeping instructions every function has.
    positions = [
        (line, column, end_line, end_column)
        for line, end_line, column, end_column in code.co_positions()
        if None not in (line, end_line, column, end_column) and (line, column) != (end_line, end_column)
    ]
    is_lambda = func.__name__ == "<lambda>"
    candidates: list[_Definition] = []
    for node in ast.walk(tree):
        if is_lambda and isinstance(node, ast.Lambda):
            pass
        elif not is_lambda and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.__name__:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if first != code.co_firstlineno:
                continue
        else:
            continue
        if all(_contains(node, p) for p in positions):
            candidates.append(node)
    if not candidates:
        raise SaveError(
            f"cannot save {label}: its source in {code.co_filename} does not match the function (was the file "
            "edited after it was defined?). Re-run the definition, or register it with @tabflow.register_function"
        )
    node = min(candidates, key=_span)  # the innermost one holding every instruction
    segment = ast.get_source_segment(text, node)
    if segment is None:  # pragma: no cover - ast always records positions for parsed code
        raise SaveError(f"cannot save {label}: its source could not be cut out of {code.co_filename}")
    if is_lambda:
        return "lambda", segment
    # Continuation lines keep their indentation; the first line starts at `def`.
    return "def", textwrap.dedent(" " * node.col_offset + segment)


# A function's definition: what its source is cut from and compiled back to.
_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def _contains(node: _Definition, position: tuple) -> bool:
    lineno, col, end_lineno, end_col = position
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    return start <= (lineno, col) and (end_lineno, end_col) <= end


def _span(node: _Definition) -> tuple:
    return ((node.end_lineno or node.lineno) - node.lineno, (node.end_col_offset or 0) - node.col_offset)


# ------------------------------------------------------------------------------ loading


class SavedCode:
    """A function loaded as source text that runs only if the workflow was loaded trusted.

    Calling it raises :class:`UntrustedCodeError` naming the op, the code and the fix.
    Saving a workflow that holds it writes the same code again.
    """

    def __init__(self, record: dict, owner: str) -> None:
        self.record = record
        self.owner = owner
        self.__name__ = str(record.get("name", "<code>"))

    @property
    def source(self) -> str:
        return str(self.record.get("source", ""))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise UntrustedCodeError(
            f"{self.owner} runs code saved with the workflow:\n    {self.source}\n"
            "The workflow was loaded without trusting its code, so the code does not run. If you trust where "
            "the workflow comes from, load it with Workflow.load(path, trust_code=True). (A function registered "
            "with @tabflow.register_function, in the process that saves and in the one that loads, is saved "
            "by name and needs no trust.)"
        )

    def __repr__(self) -> str:
        return f"SavedCode({self.source!r})"


def check_record(record: Any, owner: str, depth: int = 0) -> dict:
    """Validate the shape of a saved code record (from an untrusted file) without running it."""
    if depth > _MAX_CODE_DEPTH:
        raise LoadError(f"{owner}: saved code nests functions more than {_MAX_CODE_DEPTH} deep")
    if not isinstance(record, dict) or record.get("kind") not in ("lambda", "def"):
        raise LoadError(f"{owner}: malformed saved code {record!r:.120}")
    for key, kind in (("name", str), ("source", str), ("env", dict), ("defaults", list), ("kwdefaults", dict)):
        if not isinstance(record.get(key), kind):
            raise LoadError(f"{owner}: saved code lacks a valid {key!r}")
    for name, entry in record["env"].items():
        if not isinstance(entry, dict) or len(entry) != 1:
            raise LoadError(f"{owner}: saved code has a malformed entry for {name!r}")
        (what, value), = entry.items()
        if what == "code":
            check_record(value, owner, depth + 1)
        elif what in ("module", "function") and not isinstance(value, str):
            raise LoadError(f"{owner}: saved code names a {what} that is not a string: {value!r:.80}")
        elif what not in ("code", "module", "function", "value", "self"):
            raise LoadError(f"{owner}: saved code has an unknown kind of entry {what!r}")
    return record


def compile_code(record: dict, owner: str) -> Callable:
    """Compile a saved code record into a function (only for trusted workflows).

    Modules the code names are imported, registered functions looked up, nested code
    compiled the same way; default argument values are the saved ones.
    """
    check_record(record, owner)
    namespace: dict[str, Any] = {"__builtins__": builtins.__dict__, "__name__": "tabflow.saved_code"}
    pending_self = []
    for name, entry in record["env"].items():
        (what, value), = entry.items()
        if what == "module":
            namespace[name] = importlib.import_module(value)
        elif what == "function":
            namespace[name] = resolve_registered(value, owner)
        elif what == "code":
            namespace[name] = compile_code(value, owner)
        elif what == "self":
            pending_self.append(name)
        else:
            namespace[name] = _unplain(value)
    func = _compile(record, owner, namespace)
    for name in pending_self:
        namespace[name] = func
    func.__defaults__ = tuple(_unplain(v) for v in record["defaults"]) or None
    func.__kwdefaults__ = {k: _unplain(v) for k, v in record["kwdefaults"].items()} or None
    func.__tabflow_code__ = record  # type: ignore[attr-defined]  # functions take attributes
    return func


def _compile(record: dict, owner: str, namespace: dict) -> Callable:
    source = record["source"]
    filename = f"<tabflow saved code: {owner}>"
    try:
        if record["kind"] == "lambda":
            tree = ast.parse(source, mode="eval")
            if not isinstance(tree.body, ast.Lambda):
                raise LoadError(f"{owner}: saved code is not a lambda expression: {source!r:.120}")
            _neutralise(tree.body)
        else:
            tree = ast.parse(source, mode="exec")
            if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
                raise LoadError(f"{owner}: saved code is not one function definition: {source!r:.120}")
            _neutralise(tree.body[0])
        compiled = compile(ast.fix_missing_locations(tree), filename, "eval" if record["kind"] == "lambda" else "exec")
    except SyntaxError as err:
        raise LoadError(f"{owner}: saved code does not compile ({err.msg}): {source!r:.120}") from None
    # Tracebacks through the compiled code show its source.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    if record["kind"] == "lambda":
        return eval(compiled, namespace)  # noqa: S307 - only with trust_code=True
    exec(compiled, namespace)  # noqa: S102 - only with trust_code=True
    return namespace[tree.body[0].name]


def _neutralise(node: _Definition) -> None:
    """Drop what a definition evaluates where it is written: decorators, annotations and
    default expressions (the saved default values are set after compiling)."""
    args = node.args
    args.defaults = [ast.Constant(None) for _ in args.defaults]
    args.kw_defaults = [None if d is None else ast.Constant(None) for d in args.kw_defaults]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node.decorator_list = []
        node.returns = None
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                arg.annotation = None
