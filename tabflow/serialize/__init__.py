"""Safe, pickle-free encoding of op parameters and fitted state: JSON plus parquet files.

Values are encoded recursively. Plain JSON values stay as they are; tuples, numpy values,
tags, selectors, nested ops and named functions get small tagged objects; frames and series
(pandas or cuDF) are written as parquet files next to the JSON. Decoding only builds data and
looks up op classes and functions that are already imported: it never imports a module and
never runs code from the saved files.

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
import os
import sys
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tabflow.backends import backend_for, get_backend

__all__ = ["encode", "decode", "SaveError", "LoadError", "function_path", "resolve_function"]


class SaveError(ValueError):
    """A parameter or state value that tabflow cannot save safely."""


class LoadError(ValueError):
    """A saved workflow that cannot be loaded (unknown op, missing function or file)."""


def function_path(func: Callable) -> str:
    """``"module:qualname"`` of a module-level function, or SaveError for anything else."""
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    if isinstance(func, np.ufunc):
        return f"numpy:{func.__name__}"
    if not module or not qualname or "<lambda>" in qualname or "<locals>" in qualname or module == "__main__":
        raise SaveError(
            f"cannot save the function {func!r}: lambdas, nested functions and functions defined in "
            "__main__ or a notebook cannot be found again when loading. Define it as a named function "
            "in an importable module (e.g. my_features.py) and pass that function instead."
        )
    return f"{module}:{qualname}"


def resolve_function(path: str) -> Callable:
    """The function saved as ``"module:qualname"``; its module must already be imported."""
    module_name, _, qualname = path.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        raise LoadError(
            f"the workflow uses the function {path!r}; import {module_name!r} before loading "
            "(tabflow never imports modules while loading a workflow)"
        )
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise LoadError(f"function {path!r} was not found in module {module_name!r}")
    return obj


def encode(value: Any, directory: str, key: str) -> Any:
    """JSON-able form of ``value``; frames go to ``directory/<key>.parquet``."""
    from tabflow.ops.operator import Operator
    from tabflow.schema import Tags
    from tabflow.selector import ColumnSelector

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
        return {"__ndarray__": encode(value.tolist(), directory, key), "dtype": str(value.dtype)}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v, directory, f"{key}.{i}") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [encode(v, directory, f"{key}.{i}") for i, v in enumerate(value)]
    if isinstance(value, set):
        return {"__set__": [encode(v, directory, f"{key}.{i}") for i, v in enumerate(sorted(value, key=repr))]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {"__dict__": {k: encode(v, directory, f"{key}.{k}") for k, v in value.items()}}
        return {"__items__": [[encode(k, directory, f"{key}.k{i}"), encode(v, directory, f"{key}.{i}")] for i, (k, v) in enumerate(value.items())]}
    if isinstance(value, ColumnSelector):
        return {"__selector__": value.to_dict()}
    if isinstance(value, Operator):
        return {"__op__": encode_op(value, directory, key)}
    if isinstance(value, type) and value in (int, float, str, bool):
        return {"__pytype__": value.__name__}
    if callable(value) and not hasattr(value, "to_pandas") and not hasattr(value, "dtypes"):
        return {"__function__": function_path(value)}
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


def decode(value: Any, directory: str, engine: str | None = None) -> Any:
    """Inverse of :func:`encode`."""
    from tabflow.schema import Tags
    from tabflow.selector import ColumnSelector

    if isinstance(value, list):
        return [decode(v, directory, engine) for v in value]
    if not isinstance(value, dict):
        return value
    if "__dict__" in value:
        return {k: decode(v, directory, engine) for k, v in value["__dict__"].items()}
    if "__items__" in value:
        return {decode(k, directory, engine): decode(v, directory, engine) for k, v in value["__items__"]}
    if "__tuple__" in value:
        return tuple(decode(v, directory, engine) for v in value["__tuple__"])
    if "__set__" in value:
        return {decode(v, directory, engine) for v in value["__set__"]}
    if "__float__" in value:
        return float(value["__float__"])
    if "__tag__" in value:
        return Tags(value["__tag__"])
    if "__npscalar__" in value:
        raw = value["__npscalar__"]
        return np.dtype(value["dtype"]).type(float(raw) if isinstance(raw, str) else raw)
    if "__dtype__" in value:
        return np.dtype(value["__dtype__"])
    if "__ndarray__" in value:
        return np.asarray(decode(value["__ndarray__"], directory, engine), dtype=value["dtype"])
    if "__selector__" in value:
        return ColumnSelector.from_dict(value["__selector__"])
    if "__op__" in value:
        return decode_op(value["__op__"], directory, engine)
    if "__pytype__" in value:
        return {"int": int, "float": float, "str": str, "bool": bool}[value["__pytype__"]]
    if "__function__" in value:
        return resolve_function(value["__function__"])
    if "__sparse__" in value:
        return _decode_sparse(value, directory)
    if "__parquet__" in value:
        path = os.path.join(directory, value["__parquet__"])
        if not os.path.exists(path):
            raise LoadError(f"saved statistics file {path} is missing; the workflow directory is incomplete")
        backend = get_backend("pandas")
        frame = backend.from_arrow(pq.read_table(path))
        if value["series"]:
            series = frame.iloc[:, 0]
            series.name = value["name"]
            return series
        return frame
    raise LoadError(f"unrecognised saved value {value!r:.120}")


def encode_op(op: Any, directory: str, key: str) -> dict:
    """``{"class", "params", "state"}`` for an op; state holds its fitted attributes."""
    encoded: dict[str, Any] = {"class": type(op).registry_name(), "params": {}, "state": {}}
    for section, values in (("params", op.get_params()), ("state", op.fitted_state())):
        for name, value in values.items():
            try:
                encoded[section][name] = encode(value, directory, f"{key}.{section[:5]}.{name}")
            except SaveError as err:
                # The bare message names a value; say which op and argument it belongs to.
                raise SaveError(f"cannot save {type(op).__name__} (its {name!r}): {err}") from None
    return encoded


def decode_op(data: dict, directory: str, engine: str | None = None) -> Any:
    from tabflow.ops.operator import OPERATOR_REGISTRY

    import tabflow.ops  # noqa: F401  (registers the built-in ops)

    cls = OPERATOR_REGISTRY.get(data["class"])
    if cls is None:
        raise LoadError(
            f"the saved workflow uses the op {data['class']!r}, which is not a tabflow op and has not "
            "been imported; import the module that defines it before Workflow.load"
        )
    op = cls(**{k: decode(v, directory, engine) for k, v in data["params"].items()})
    for name, value in data["state"].items():
        setattr(op, name, decode(value, directory, engine))
    if data["state"]:
        op._fitted_by_workflow = True
        op._state_names = sorted(k for k in data["state"] if not k.endswith("_"))
    return op


def _is_sparse(value: Any) -> bool:
    # Checked by module name so that saving never imports scipy or cupy just to ask.
    module = type(value).__module__
    return (module.startswith("scipy.sparse") or module.startswith("cupyx.scipy.sparse")) and hasattr(value, "tocoo")


def _encode_sparse(value: Any, directory: str, key: str) -> dict:
    """A scipy/cupyx sparse matrix as a parquet table of (row, col, value) plus its shape."""
    host = value.get() if type(value).__module__.startswith("cupyx") else value
    coo = host.tocoo()
    table = pa.table({"row": np.asarray(coo.row, dtype=np.int64), "col": np.asarray(coo.col, dtype=np.int64), "value": np.asarray(coo.data)})
    filename = f"{_safe(key)}.sparse.parquet"
    pq.write_table(table, os.path.join(directory, filename))
    return {"__sparse__": filename, "shape": [int(n) for n in host.shape], "format": host.format}


def _decode_sparse(value: dict, directory: str) -> Any:
    import scipy.sparse as sp

    path = os.path.join(directory, value["__sparse__"])
    if not os.path.exists(path):
        raise LoadError(f"saved sparse matrix file {path} is missing; the workflow directory is incomplete")
    table = pq.read_table(path)
    coo = sp.coo_matrix(
        (table["value"].to_numpy(), (table["row"].to_numpy(), table["col"].to_numpy())), shape=tuple(value["shape"])
    )
    return coo.asformat(value.get("format", "csr"))


def _safe(key: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in key)
