"""``nvt.dispatch``: NVTabular 23.08's dispatch helpers (``nvtabular.dispatch``, ``merlin.core.dispatch``).

Scripts and custom ops that call them need only their imports changed: ``import tabflow as
nvt`` then ``nvt.dispatch.make_df(...)``, or ``from tabflow.dispatch import make_df``. The
functions live in :mod:`tabflow.backends.dispatch`, built on the engine backends; this module
is their public name.

Examples
--------
>>> import tabflow as nvt
>>> type(nvt.dispatch.make_df({"a": [1]}, device="cpu")).__name__
'DataFrame'
"""

from __future__ import annotations

from tabflow.backends.dispatch import (
    ExtData,
    ParquetFrameWriter,
    __getattr__,  # noqa: F401  (computes HAS_GPU, DataFrameType and SeriesType when first read)
    add_to_series,
    annotate,
    arange,
    array,
    build_cudf_list_column,
    build_pandas_list_column,
    columnwise_explode,
    concat,
    concat_columns,
    convert_data,
    coo_matrix,
    create_multihot_col,
    dataframe_columnwise_explode,
    detect_format,
    df_from_dict,
    dict_from_df,
    encode_list_column,
    flatten_list_column,
    flatten_list_column_values,
    from_host,
    generate_local_seed,
    get_lib,
    get_random_state,
    hash_series,
    hex_to_int,
    is_cpu_object,
    is_dataframe_object,
    is_list_dtype,
    is_series_object,
    is_series_or_dataframe_object,
    is_string_dtype,
    list_val_dtype,
    make_df,
    make_series,
    nullable_series,
    parquet_writer_dispatch,
    pull_apart_list,
    random_state,
    random_uniform,
    read_dispatch,
    read_parquet_dispatch,
    read_parquet_metadata,
    reinitialize,
    series_has_nulls,
    to_arrow,
    to_host,
    zeros,
)

__all__ = [
    "HAS_GPU",  # noqa: F822
    "DataFrameType",  # noqa: F822
    "SeriesType",  # noqa: F822
    "ExtData",
    "ParquetFrameWriter",
    "get_lib",
    "reinitialize",
    "annotate",
    "is_dataframe_object",
    "is_series_object",
    "is_cpu_object",
    "is_series_or_dataframe_object",
    "is_list_dtype",
    "is_string_dtype",
    "list_val_dtype",
    "series_has_nulls",
    "hex_to_int",
    "hash_series",
    "random_uniform",
    "random_state",
    "get_random_state",
    "generate_local_seed",
    "arange",
    "array",
    "zeros",
    "coo_matrix",
    "make_df",
    "make_series",
    "nullable_series",
    "add_to_series",
    "concat",
    "concat_columns",
    "columnwise_explode",
    "dataframe_columnwise_explode",
    "flatten_list_column_values",
    "flatten_list_column",
    "pull_apart_list",
    "encode_list_column",
    "build_pandas_list_column",
    "build_cudf_list_column",
    "create_multihot_col",
    "to_arrow",
    "to_host",
    "from_host",
    "convert_data",
    "detect_format",
    "read_dispatch",
    "read_parquet_dispatch",
    "read_parquet_metadata",
    "parquet_writer_dispatch",
    "df_from_dict",
    "dict_from_df",
]
