"""Column schemas: dtype, tags and properties of every column a workflow reads or writes.

The API is merlin 23.08's ``merlin.schema`` (``Schema``, ``ColumnSchema``, ``Tags``,
``TagSet``), so scripts written for it run with their imports changed. Dtypes are canonical
names (:mod:`tabflow.schema.dtypes`) rather than merlin ``DType`` objects.

The schema travels with the data: :meth:`Dataset.to_parquet` writes it next to the parquet
files as ``_schema.json`` (the leading underscore makes pandas, pyarrow and Spark skip it when
they read the directory) and the loader reads it to find column roles and cardinalities.

Examples
--------
>>> from tabflow.schema import ColumnSchema, Schema, Tags
>>> s = Schema([ColumnSchema("C1", dtype="int64", tags={Tags.CATEGORICAL})])
>>> s.select_by_tag(Tags.CATEGORICAL).column_names
['C1']
"""

from __future__ import annotations

from tabflow.schema import dtypes
from tabflow.schema.column import ColumnSchema, Domain
from tabflow.schema.schema import SCHEMA_VERSION, Schema
from tabflow.schema.shape import DefaultShapes, Dimension, Shape
from tabflow.schema.tags import Tags, TagSet, TagsType

__all__ = [
    "Tags",
    "TagSet",
    "TagsType",
    "ColumnSchema",
    "Schema",
    "Domain",
    "Shape",
    "DefaultShapes",
    "Dimension",
    "SCHEMA_FILENAME",
    "SCHEMA_FILENAMES",
    "SCHEMA_VERSION",
    "dtypes",
]

SCHEMA_FILENAME = "_schema.json"
#: Names a schema is looked for under next to data files, in order.
SCHEMA_FILENAMES = (SCHEMA_FILENAME, "schema.json")
