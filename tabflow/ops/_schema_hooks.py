"""merlin's per-column schema hooks for ops that compute their output columns whole.

merlin builds an output column by ``_compute_dtype``, ``_compute_tags``,
``_compute_properties`` and ``_compute_shape`` in turn, and NVTabular's ops override those
hooks; code written for NVTabular (custom ops that call ``super()._compute_dtype``, tests
comparing a schema with ``op._compute_properties(...)``) asks the hooks what the op produces.
Several tabflow ops instead compute each output column in one step (an encoded column's
dtype, tags and vocabulary properties come from the same unit), or the whole output schema at
once (``Groupby``, ``TargetEncoding``). :class:`SchemaFromColumns` makes the four hooks answer
with the pieces of that one computation, so the hooks and the schema can never disagree.
"""

from __future__ import annotations

from tabflow.graph.selector import ColumnSelector
from tabflow.schema import ColumnSchema, Schema


class SchemaFromColumns:
    """Mixin (before the op's base class) whose schema hooks answer from
    :meth:`_full_column_schema`.

    An op that computes columns one at a time overrides :meth:`_full_column_schema` and
    starts from :meth:`_source_column_schema` (the inherited hooks: the source column's dtype,
    tags, properties and shape). An op that computes its whole output schema keeps the
    default, which picks the column from ``compute_output_schema``.

    Examples
    --------
    >>> from tabflow import ops
    >>> from tabflow.schema import ColumnSchema, Schema
    >>> source = Schema([ColumnSchema("x", dtype="int32", properties={"p": 1})])
    >>> op = ops.HashBucket(10)
    >>> op._compute_dtype(ColumnSchema("x"), source).dtype
    'int32'
    >>> op._compute_properties(ColumnSchema("x"), source).properties == op.compute_output_schema(source, None)["x"].properties
    True
    """

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        return self._full_column_schema(col_name, input_schema)

    def _full_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        """Output column ``col_name`` computed from ``input_schema``, the fragment of the op's
        input schema that ``column_mapping`` names for it."""
        produced = self.compute_output_schema(input_schema, ColumnSelector(input_schema.column_names))
        if col_name in produced.column_names:
            return produced[col_name]
        # A column needing more than this fragment (a cross-column statistic asked about
        # with one source): what the inherited hooks say, as merlin would.
        return self._source_column_schema(col_name, input_schema)

    def _source_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        inherited = super()
        return self._compute_column_schema(
            col_name,
            input_schema,
            methods=[inherited._compute_dtype, inherited._compute_tags, inherited._compute_properties, inherited._compute_shape],
        )

    def _compute_dtype(self, col_schema: ColumnSchema, input_schema: Schema) -> ColumnSchema:
        return col_schema.with_dtype(self._full_column_schema(col_schema.name, input_schema).dtype)

    def _compute_tags(self, col_schema: ColumnSchema, input_schema: Schema) -> ColumnSchema:
        return col_schema.with_tags(self._full_column_schema(col_schema.name, input_schema).tags)

    def _compute_properties(self, col_schema: ColumnSchema, input_schema: Schema) -> ColumnSchema:
        return col_schema.with_properties(self._full_column_schema(col_schema.name, input_schema).properties)

    def _compute_shape(self, col_schema: ColumnSchema, input_schema: Schema) -> ColumnSchema:
        return col_schema.with_shape(self._full_column_schema(col_schema.name, input_schema).shape)
