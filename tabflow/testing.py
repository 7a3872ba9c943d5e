"""Testing helpers for code built on tabflow: engine-agnostic frame comparison, and
merlin.testing's ``assert_transformable_equal`` for frames and tensor tables.

Examples
--------
>>> import pandas as pd
>>> from tabflow.testing import assert_frame_equal
>>> assert_frame_equal(pd.DataFrame({"a": [1]}, index=[5]), pd.DataFrame({"a": [1]}))
"""

from __future__ import annotations

from typing import Any

__all__ = ["assert_frame_equal", "assert_transformable_equal"]


def assert_frame_equal(left: Any, right: Any, **kwargs: Any) -> None:
    """Assert two frames (pandas or cuDF, in any combination) hold the same data.

    Frames are compared on the host with ``pandas.testing.assert_frame_equal``; the index is
    ignored (partitioned results carry per-partition indexes), and so is the storage of
    pandas' string dtypes: tabflow's string columns are Arrow-backed (``str`` on pandas 3,
    as pandas' own readers give text), where a frame built with pandas 2 may hold
    ``string[python]``. A string
    column still differs from an ``object`` one, and ``str`` (NaN for missing) from
    ``string`` (``<NA>``). cuDF has no masked integer dtypes (every cuDF column holds nulls):
    against a cuDF frame, an ``Int64`` column and an ``int64`` one holding the same values are
    equal. List columns compare by their rows' values whichever form holds them: the pandas
    engine hands users one NumPy array per row (``object``), where cuDF's lists, and tabflow's
    own inside (``to_ddf(arrow_lists=True)``), are list columns. ``kwargs`` go to pandas.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.testing import assert_frame_equal
    >>> assert_frame_equal(
    ...     pd.DataFrame({"s": pd.array(["x", None], dtype="string[python]")}),
    ...     pd.DataFrame({"s": pd.array(["x", None], dtype="string[pyarrow]")}),
    ... )
    >>> assert_frame_equal(pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [1, 3]}))
    Traceback (most recent call last):
    ...
    AssertionError: DataFrame.iloc[:, 0] (column name="a") are different
    ...
    >>> import pyarrow as pa
    >>> assert_frame_equal(
    ...     pd.DataFrame({"g": pd.Series([[1, 2], []], dtype=pd.ArrowDtype(pa.list_(pa.int64())))}),
    ...     pd.DataFrame({"g": [[1, 2], []]}),
    ... )
    """
    import pandas as pd

    from tabflow.backends import backend_for, get_backend

    engines = {backend_for(left).name, backend_for(right).name}
    host = get_backend("pandas")
    left = host.lists_as_arrays(host.with_list_columns(backend_for(left).to_host(left).reset_index(drop=True)))
    right = host.lists_as_arrays(host.with_list_columns(backend_for(right).to_host(right).reset_index(drop=True)))
    if "cudf" in engines:
        left, right = _with_masks_of(left, right), _with_masks_of(right, left)
    pd.testing.assert_frame_equal(left, _with_string_storage_of(right, left), **kwargs)


def _with_masks_of(frame: Any, model: Any) -> Any:
    """``frame`` with each plain integer or boolean column cast to the masked dtype of the
    column at the same position of ``model`` (``int64`` -> ``Int64``)."""
    from tabflow.backends import get_backend
    from tabflow.schema.dtypes import unmasked_dtype

    pandas = get_backend("pandas")

    def plain_of(dtype: Any, model_dtype: Any) -> bool:
        name, model_name = pandas.canonical_dtype(dtype), pandas.canonical_dtype(model_dtype)
        return name != model_name and unmasked_dtype(model_name) == name

    return _recast_like(frame, model, plain_of)


def _with_string_storage_of(frame: Any, model: Any) -> Any:
    """``frame`` with each string column stored as the string column at the same position of
    ``model`` is, where both hold missing values alike (both ``<NA>``, or both NaN)."""
    import pandas as pd

    def other_storage(dtype: Any, model_dtype: Any) -> bool:
        return (
            isinstance(dtype, pd.StringDtype) and isinstance(model_dtype, pd.StringDtype) and dtype != model_dtype
            and (dtype.na_value is pd.NA) == (model_dtype.na_value is pd.NA)
        )

    return _recast_like(frame, model, other_storage)


def _recast_like(frame: Any, model: Any, differs: Any) -> Any:
    """``frame`` with each column for which ``differs(dtype, model_dtype)`` cast to the dtype
    of ``model``'s column at the same position."""
    recast = {position: model_dtype for position, (dtype, model_dtype) in enumerate(zip(frame.dtypes, model.dtypes))
              if differs(dtype, model_dtype)}
    if not recast:
        return frame
    frame = frame.copy(deep=False)  # column labels may repeat: columns are replaced by position
    for position, dtype in recast.items():
        frame.isetitem(position, frame.iloc[:, position].astype(dtype))
    return frame


def assert_transformable_equal(left: Any, right: Any) -> None:
    """Assert two frames, or two tensor tables (:class:`~tabflow.table.TensorTable`), hold the same data
    (``merlin.testing.assert_transformable_equal``): frames as :func:`assert_frame_equal`
    compares them, tables as the frames of their columns on the host.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from tabflow.table import TensorTable
    >>> from tabflow.testing import assert_transformable_equal
    >>> assert_transformable_equal(pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [1]}))
    >>> assert_transformable_equal(TensorTable({"a": np.array([1, 2])}), TensorTable({"a": np.array([1, 3])}))
    Traceback (most recent call last):
    ...
    AssertionError: DataFrame.iloc[:, 0] (column name="a") are different
    ...
    """
    from tabflow.table import TensorTable

    tables = [isinstance(side, TensorTable) for side in (left, right)]
    if any(tables) and not all(tables):
        raise AssertionError(f"a TensorTable and a {type(right if tables[0] else left).__name__} are not equal")
    if all(tables):
        left, right = left.cpu().to_df(), right.cpu().to_df()
    assert_frame_equal(left, right)
