"""Safe, pickle-free encoding of op parameters and fitted state: JSON plus parquet files.

Values are encoded recursively. Plain JSON values stay as they are; tuples, numpy values,
tags, selectors and nested ops get small tagged objects; frames and series (pandas or cuDF)
are written as parquet files next to the JSON; functions are saved by their registered name
(:func:`register_function`) or as source code (see :mod:`tabflow.serialize._code`).

Decoding is written for files from anyone. It only builds data: it instantiates only
subclasses of :class:`tabflow.ops.Operator` that the running process defines, with only
the parameters their signatures declare; restores only fitted attributes (public names,
ending in ``_``, that shadow nothing the class defines); resolves functions only from the
registry; reads parquet files only inside the saved directory; checks dtypes and sizes; and
never imports a module or runs code from the files, unless the caller passes
``trust_code=True``, which compiles saved code (and imports the modules it names).

Examples
--------
>>> import tempfile
>>> from tabflow.serialize import encode, decode
>>> d = tempfile.mkdtemp()
>>> decode(encode({"a": (1, 2)}, d, "x"), d)
{'a': (1, 2)}
"""

from __future__ import annotations

import enum
import keyword
import os
import stat
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tabflow._json import parse_json, read_json
from tabflow._paths import Directory, UnsafePathError, check_name
from tabflow.backends import backend_for, get_backend
from tabflow.exceptions import LoadError, SaveError, UntrustedCodeError
from tabflow.serialize._code import (
    SavedCode,
    capture_code,
    check_record,
    code_record,
    compile_code,
    register_function,
    registered_name,
    resolve_registered,
)

__all__ = [
    "encode",
    "decode",
    "encode_op",
    "decode_op",
    "decode_selector",
    "SaveError",
    "LoadError",
    "UntrustedCodeError",
    "SavedCode",
    "register_function",
    "registered_name",
    "register_fitted_names",
    "read_json",
    "parse_json",
]

# Largest array a saved document may ask for (elements x item size).
MAX_ARRAY_BYTES = 256 * 2**20
_DTYPE_KINDS = "biufcmMOSU"
_MAX_TEXT_ITEMSIZE = 4096


@dataclass(frozen=True)
class _Context:
    """Where decoding happens: the saved directory, whether code may run, and what is being
    decoded (for messages)."""

    directory: str
    engine: str | None = None
    trust_code: bool = False
    owner: str = "the saved value"
    nodes: Sequence[Any] = ()  # the graph's nodes built so far (node references point back)

    def at(self, owner: str) -> "_Context":
        return replace(self, owner=owner)


# ------------------------------------------------------------------------------- encoding


def encode(value: Any, directory: str, key: str, nodes: Mapping[int, int] | None = None) -> Any:
    """JSON-able form of ``value``; frames go to ``directory/<key>.parquet``.

    ``nodes`` maps the ids of the graph's nodes to their positions in the saved graph: a
    parameter that is a node (``JoinGroupby(cont_cols=other_node)``) is saved as a
    reference to it.
    """
    from tabflow.graph.node import Node
    from tabflow.graph.selector import ColumnSelector
    from tabflow.ops.operator import Operator
    from tabflow.schema import Tags

    if isinstance(value, Tags):  # before str: Tags is a str enum
        return {"__tag__": value.value}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, enum.Enum):
        if isinstance(value, float) and not np.isfinite(value):
            return {"__float__": repr(value)}
        return value
    if isinstance(value, np.generic):
        item = value.item()
        if isinstance(item, float) and not np.isfinite(item):
            item = repr(item)
        return {"__npscalar__": item, "dtype": str(value.dtype)}
    if isinstance(value, np.dtype):
        return {"__dtype__": str(value)}
    if isinstance(value, np.ndarray):
        return {"__ndarray__": encode(value.tolist(), directory, key, nodes), "dtype": str(value.dtype)}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v, directory, f"{key}.{i}", nodes) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [encode(v, directory, f"{key}.{i}", nodes) for i, v in enumerate(value)]
    if isinstance(value, set):
        return {"__set__": [encode(v, directory, f"{key}.{i}", nodes) for i, v in enumerate(sorted(value, key=repr))]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {"__dict__": {k: encode(v, directory, f"{key}.{k}", nodes) for k, v in value.items()}}
        return {"__items__": [[encode(k, directory, f"{key}.k{i}", nodes), encode(v, directory, f"{key}.{i}", nodes)] for i, (k, v) in enumerate(value.items())]}
    if isinstance(value, ColumnSelector):
        return {"__selector__": value.to_dict()}
    if isinstance(value, Operator):
        return {"__op__": encode_op(value, directory, key, nodes)}
    if isinstance(value, Node):
        if nodes is None or value.id not in nodes:
            raise SaveError(f"cannot save a graph node that is not part of the saved workflow ({key}): {value!r:.80}")
        return {"__node__": nodes[value.id]}
    if isinstance(value, type) and value in (int, float, str, bool):
        return {"__pytype__": value.__name__}
    if isinstance(value, type) and issubclass(value, np.generic):
        return {"__nptype__": np.dtype(value).str}
    if callable(value) and not hasattr(value, "to_pandas") and not hasattr(value, "dtypes"):
        return _encode_function(value)
    if _is_sparse(value):
        return _encode_sparse(value, directory, key)
    try:
        backend = backend_for(value)
    except TypeError:
        backend = None
    if backend is not None and (backend.is_frame(value) or backend.is_series(value)):
        host = backend.to_host(value)
        is_series = backend.is_series(value)
        frame = host.to_frame(name="__values__" if host.name is None else host.name) if is_series else host
        filename = f"{_safe(key)}.parquet"
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), os.path.join(directory, filename))
        return {"__parquet__": filename, "series": is_series, "name": host.name if is_series else None, "engine": backend.name}
    raise SaveError(f"cannot save a value of type {type(value).__module__}.{type(value).__name__} ({key}): {value!r:.80}")


def _encode_function(func: Any) -> dict:
    """A registered function (or NumPy ufunc) by name; any other function as its code."""
    name = registered_name(func)
    if name is not None:
        return {"__function__": name}
    record = code_record(func)
    return {"__code__": record if record is not None else capture_code(func)}


def encode_op(op: Any, directory: str, key: str, nodes: Mapping[int, int] | None = None) -> dict:
    """``{"class", "params", "state"}`` for an op; state holds its fitted attributes."""
    encoded: dict[str, Any] = {"class": type(op).registry_name(), "params": {}, "state": {}}
    for section, values in (("params", op.get_params()), ("state", op.fitted_state())):
        for name, value in values.items():
            try:
                encoded[section][name] = encode(value, directory, f"{key}.{section[:5]}.{name}", nodes)
            except SaveError as err:
                # The bare message names a value; say which op and argument it belongs to.
                raise SaveError(f"cannot save {type(op).__name__} (its {name!r}): {err}") from None
    return encoded


# ------------------------------------------------------------------------------- decoding


def decode(
    value: Any, directory: str, engine: str | None = None, trust_code: bool = False, owner: str = "the saved value"
) -> Any:
    """Inverse of :func:`encode`, safe on documents from anyone (see the module docstring);
    ``owner`` names what is decoded in error messages."""
    return _decode(value, _Context(directory=directory, engine=engine, trust_code=trust_code, owner=owner))


def _decode(value: Any, ctx: _Context) -> Any:
    if isinstance(value, list):
        return [_decode(v, ctx) for v in value]
    if not isinstance(value, dict):
        return value
    try:
        return _decode_tagged(value, ctx)
    except (LoadError, UntrustedCodeError):
        raise
    except (TypeError, ValueError, KeyError, OverflowError) as err:
        raise LoadError(f"{ctx.owner}: malformed saved value {value!r:.120} ({type(err).__name__}: {err})") from None


def _decode_tagged(value: dict, ctx: _Context) -> Any:
    from tabflow.schema import Tags

    if "__dict__" in value:
        return {_text(k, ctx): _decode(v, ctx) for k, v in _mapping(value["__dict__"], ctx).items()}
    if "__items__" in value:
        return {_hashable(_decode(k, ctx), ctx): _decode(v, ctx) for k, v in _pairs(value["__items__"], ctx)}
    if "__tuple__" in value:
        return tuple(_decode(v, ctx) for v in _sequence(value["__tuple__"], ctx))
    if "__set__" in value:
        return {_hashable(_decode(v, ctx), ctx) for v in _sequence(value["__set__"], ctx)}
    if "__float__" in value:
        return float(_text(value["__float__"], ctx))
    if "__tag__" in value:
        return Tags(value["__tag__"])
    if "__npscalar__" in value:
        raw = value["__npscalar__"]
        dtype = _safe_dtype(value.get("dtype"), ctx)
        if isinstance(raw, (list, dict)):
            raise LoadError(f"{ctx.owner}: a saved NumPy scalar holds {raw!r:.80}")
        return dtype.type(float(raw) if isinstance(raw, str) and dtype.kind in "fc" else raw)
    if "__dtype__" in value:
        return _safe_dtype(value["__dtype__"], ctx)
    if "__ndarray__" in value:
        dtype = _safe_dtype(value.get("dtype"), ctx)
        data = _decode(value["__ndarray__"], ctx)
        if _leaves(data) * max(1, dtype.itemsize) > MAX_ARRAY_BYTES:
            raise LoadError(f"{ctx.owner}: a saved array would take more than {MAX_ARRAY_BYTES} bytes")
        return np.asarray(data, dtype=dtype)
    if "__selector__" in value:
        return _selector(value["__selector__"], ctx)
    if "__op__" in value:
        return _decode_op(value["__op__"], ctx)
    if "__pytype__" in value:
        types = {"int": int, "float": float, "str": str, "bool": bool}
        if value["__pytype__"] not in types:
            raise LoadError(f"{ctx.owner}: unknown saved type {value['__pytype__']!r:.40}")
        return types[value["__pytype__"]]
    if "__node__" in value:
        index = value["__node__"]
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(ctx.nodes):
            raise LoadError(f"{ctx.owner}: a saved node reference {index!r:.40} does not point to an earlier node")
        return ctx.nodes[index]
    if "__nptype__" in value:
        return _safe_dtype(value["__nptype__"], ctx).type
    if "__function__" in value:
        return resolve_registered(value["__function__"], ctx.owner)
    if "__code__" in value:
        record = check_record(value["__code__"], ctx.owner)
        return compile_code(record, ctx.owner) if ctx.trust_code else SavedCode(record, ctx.owner)
    if "__sparse__" in value:
        return _decode_sparse(value, ctx)
    if "__parquet__" in value:
        frame = get_backend("pandas").from_arrow(read_member_table(value["__parquet__"], ctx.directory, ctx.owner))
        if value.get("series"):
            series = frame.iloc[:, 0]
            series.name = value.get("name")
            return series
        return frame
    raise LoadError(f"{ctx.owner}: unrecognised saved value {value!r:.120}")


def decode_op(
    data: Any, directory: str, engine: str | None = None, trust_code: bool = False, owner: str = "op",
    nodes: Sequence[Any] = (),
) -> Any:
    """An op from :func:`encode_op`'s form, checked against its class (see the module docstring).

    ``nodes`` are the graph's nodes built before this op's node; saved node references
    point into them.
    """
    return _decode_op(data, _Context(directory=directory, engine=engine, trust_code=trust_code, owner=owner, nodes=tuple(nodes)))


def _decode_op(data: Any, ctx: _Context) -> Any:
    import tabflow.ops  # noqa: F401  (registers the built-in ops)
    from tabflow.graph.operator import rebuilding_ops
    from tabflow.ops.operator import OPERATOR_REGISTRY, StatOperator

    if not isinstance(data, dict) or not isinstance(data.get("class"), str) or set(data) - {"class", "params", "state"}:
        raise LoadError(f"{ctx.owner}: malformed saved op {data!r:.120}")
    cls = OPERATOR_REGISTRY.get(data["class"])
    if cls is None:
        raise LoadError(
            f"{ctx.owner}: the saved workflow uses the op {data['class']!r:.100}, which is not a tabflow op and has "
            "not been defined in this process; import the module that defines it before Workflow.load"
        )
    owner = f"{ctx.owner} ({cls.__name__})"
    params = _mapping(data.get("params", {}), ctx.at(owner))
    declared = cls._param_names()
    unknown = [name for name in params if name not in declared]
    if unknown:
        raise LoadError(f"{owner}: {cls.__name__} takes no parameter(s) {[str(u)[:60] for u in unknown]}; it takes {declared}")
    kwargs = {name: _decode(value, ctx.at(f"{owner}, parameter {name!r}")) for name, value in params.items()}
    try:
        with rebuilding_ops():
            op = cls(**kwargs)
    except Exception as err:  # noqa: BLE001 - a constructor refusing saved parameters
        raise LoadError(f"{owner}: {cls.__name__}(**saved parameters) raised {type(err).__name__}: {err}") from err
    state = _mapping(data.get("state", {}), ctx.at(owner))
    any_name = any(accepts(cls) for accepts in _ANY_FITTED_NAMES)
    for name in state:
        _check_state_name(cls, name, declared, any_name, owner)
    for name, value in state.items():
        setattr(op, name, _decode(value, ctx.at(f"{owner}, fitted {name!r}")))
    if state and isinstance(op, StatOperator):
        op.mark_fitted(k for k in state if not k.endswith("_"))
    return op


_ANY_FITTED_NAMES: list[Callable[[type], bool]] = []


def register_fitted_names(accepts: Callable[[type], bool]) -> None:
    """Let ops whose class ``accepts`` load fitted attributes under any public name.

    Fitted attributes are otherwise names ending in ``_``; ops fitted another way (NVTabular's
    ``fit`` / ``fit_finalize``, :mod:`tabflow.compat.legacy_fit`) keep their statistics under
    the names they chose. Either way a loaded attribute may not be private, a parameter, or
    shadow anything of the class.

    Examples
    --------
    >>> from tabflow.serialize import _ANY_FITTED_NAMES
    >>> from tabflow.compat.legacy_fit import LEGACY_FIT
    >>> LEGACY_FIT.accepts_class in _ANY_FITTED_NAMES
    True
    """
    if accepts not in _ANY_FITTED_NAMES:
        _ANY_FITTED_NAMES.append(accepts)


def _check_state_name(cls: type, name: Any, params: list[str], any_name: bool, owner: str) -> None:
    """A fitted attribute may only add data to the op, never replace its behaviour."""
    valid = (
        isinstance(name, str)
        and name.isidentifier()
        and not keyword.iskeyword(name)
        and not name.startswith("_")
        and (name.endswith("_") or any_name)
        and name not in params
        and not hasattr(cls, name)
    )
    if not valid:
        raise LoadError(
            f"{owner}: the saved fitted attribute {str(name)[:60]!r} is not one {cls.__name__} can have (fitted "
            "attributes are public names ending in '_' that shadow no method, property or parameter)"
        )


# --------------------------------------------------------------------------- checked parts


def read_member_table(name: Any, directory: str, owner: str = "the workflow") -> pa.Table:
    """The parquet table saved as ``name``, which must be a regular file directly inside
    ``directory``: a plain file name (no separators, no ``..``), and not a symbolic link,
    opened without following one, so what is read is the file inside the directory, whatever
    is renamed meanwhile."""
    parts = check_name(name, f"{owner}: the saved file reference", LoadError, max_parts=1)
    location = os.path.join(directory, parts[0])
    try:
        with Directory(directory) as saved:
            fd = saved.open(parts[0])
    except FileNotFoundError:
        raise LoadError(f"{owner}: saved file {location} is missing; the workflow directory is incomplete") from None
    except UnsafePathError:
        raise LoadError(
            f"{owner}: the saved file {location} is a symbolic link, which may lead outside the saved directory: saved "
            "files are read only from regular files inside it"
        ) from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise LoadError(f"{owner}: saved file {location} is not a regular file")
        try:
            # Read on this thread: pq.read_table scans asynchronously, and its scan state, which holds
            # this Python file, can be released by an arrow thread at interpreter exit, when it can
            # no longer take the GIL, and the process aborts.
            with pq.ParquetFile(handle) as table_file:
                return table_file.read()
        except (OSError, pa.ArrowException) as err:
            raise LoadError(f"{owner}: saved table {location} cannot be read: {err}") from err


def _safe_dtype(text: Any, ctx: _Context) -> np.dtype:
    if not isinstance(text, str) or len(text) > 40:
        raise LoadError(f"{ctx.owner}: invalid saved dtype {text!r:.60}")
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError):
        raise LoadError(f"{ctx.owner}: unknown saved dtype {text!r}") from None
    if dtype.kind not in _DTYPE_KINDS or dtype.fields is not None or dtype.subdtype is not None or (
        dtype.kind in "SU" and dtype.itemsize > _MAX_TEXT_ITEMSIZE
    ):
        raise LoadError(f"{ctx.owner}: saved dtype {text!r} is not a plain numeric, text or object dtype")
    return dtype


def _leaves(data: Any) -> int:
    if isinstance(data, (list, tuple)):
        return sum(_leaves(v) for v in data) or 1
    return 1


def decode_selector(data: Any, owner: str = "the saved selector") -> Any:
    """A :class:`~tabflow.selector.ColumnSelector` from its saved form, every field checked."""
    return _selector(data, _Context(directory="", owner=owner))


def _selector(data: Any, ctx: _Context) -> Any:
    from tabflow.selector import ColumnSelector

    data = _mapping(data, ctx)
    if data.get("all") is True:
        return ColumnSelector("*")
    names = _sequence(data.get("names", []), ctx)
    if not all(isinstance(n, str) for n in names):
        raise LoadError(f"{ctx.owner}: a saved column selector holds non-string names")
    tags = [_text(t, ctx) for t in _sequence(data.get("tags", []), ctx)]
    subgroups = [_selector(g, ctx) for g in _sequence(data.get("subgroups", []), ctx)]
    return ColumnSelector(names, subgroups=subgroups, tags=tags or None)


def _mapping(value: Any, ctx: _Context) -> dict:
    if not isinstance(value, dict):
        raise LoadError(f"{ctx.owner}: expected a mapping, found {value!r:.80}")
    return value


def _sequence(value: Any, ctx: _Context) -> list:
    if not isinstance(value, list):
        raise LoadError(f"{ctx.owner}: expected a list, found {value!r:.80}")
    return value


def _pairs(value: Any, ctx: _Context) -> list:
    pairs = _sequence(value, ctx)
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise LoadError(f"{ctx.owner}: malformed saved mapping {value!r:.80}")
    return pairs


def _text(value: Any, ctx: _Context) -> str:
    if not isinstance(value, str):
        raise LoadError(f"{ctx.owner}: expected text, found {value!r:.80}")
    return value


def _hashable(value: Any, ctx: _Context) -> Any:
    try:
        hash(value)
    except TypeError:
        raise LoadError(f"{ctx.owner}: a saved key or set member is not hashable: {value!r:.80}") from None
    return value


# ----------------------------------------------------------------------------- sparse


def _is_sparse(value: Any) -> bool:
    # Checked by module name so that saving never imports scipy or cupy just to ask.
    module = type(value).__module__
    return module.startswith(("scipy.sparse", "cupyx.scipy.sparse")) and hasattr(value, "tocoo")


def _encode_sparse(value: Any, directory: str, key: str) -> dict:
    """A scipy/cupyx sparse matrix as a parquet table of (row, col, value) plus its shape."""
    host = value.get() if type(value).__module__.startswith("cupyx") else value
    coo = host.tocoo()
    table = pa.table({"row": np.asarray(coo.row, dtype=np.int64), "col": np.asarray(coo.col, dtype=np.int64), "value": np.asarray(coo.data)})
    filename = f"{_safe(key)}.sparse.parquet"
    pq.write_table(table, os.path.join(directory, filename))
    return {"__sparse__": filename, "shape": [int(n) for n in host.shape], "format": host.format}


def _decode_sparse(value: dict, ctx: _Context) -> Any:
    import scipy.sparse as sp

    shape = _sequence(value.get("shape"), ctx)
    if len(shape) != 2 or not all(isinstance(n, int) and 0 <= n < 2**40 for n in shape):
        raise LoadError(f"{ctx.owner}: malformed shape of a saved sparse matrix: {shape!r:.60}")
    fmt = value.get("format", "csr")
    if fmt not in ("csr", "csc", "coo"):
        raise LoadError(f"{ctx.owner}: unknown sparse format {fmt!r:.20}")
    table = read_member_table(value["__sparse__"], ctx.directory, ctx.owner)
    coo = sp.coo_matrix((table["value"].to_numpy(), (table["row"].to_numpy(), table["col"].to_numpy())), shape=tuple(shape))
    return coo.asformat(fmt)


def _safe(key: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in key)
