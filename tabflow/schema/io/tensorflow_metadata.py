"""``merlin.schema.io.tensorflow_metadata``: its names, from :mod:`tabflow.compat.tensorflow_metadata`.

Examples
--------
>>> from tabflow.schema.io.tensorflow_metadata import TensorflowMetadata
>>> TensorflowMetadata().to_merlin_schema().column_names
[]
"""

from tabflow.compat.tensorflow_metadata import SCHEMA_JSON_FILE_NAME, SCHEMA_PBTXT_FILE_NAME, TensorflowMetadata

__all__ = ["SCHEMA_JSON_FILE_NAME", "SCHEMA_PBTXT_FILE_NAME", "TensorflowMetadata"]
