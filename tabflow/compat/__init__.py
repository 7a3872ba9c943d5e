"""What exists only so that NVTabular 23.08 / merlin-core 23.08 code runs unchanged.

The layer sits above the workflow: it uses tabflow's engines, readers and schema, and nothing
below it depends on it. Users reach it through the import paths NVTabular and merlin gave
these names (``tabflow.dispatch`` for ``nvtabular.dispatch`` / ``merlin.core.dispatch``,
``tabflow.schema.io.tensorflow_metadata`` for ``merlin.schema.io.tensorflow_metadata``),
which are thin re-exports of the modules here:

- :mod:`tabflow.compat.dispatch`: NVTabular's engine helpers (``make_df``, ``hash_series``, ...);
- :mod:`tabflow.compat.tensorflow_metadata`: merlin's ``TensorflowMetadata`` for
  ``schema.pbtxt`` and ``.merlin/schema.json``;
- :mod:`tabflow.compat.tf_metadata`: the format of those files, registered with the dataset
  readers and writer when the package is imported (datasets carry ``.merlin/schema.json``,
  and NVTabular's files give a dataset its tags and properties);
- :mod:`tabflow.compat.op_arguments`: the NVTabular-only arguments ops accept (a warning
  when one is set) and NVTabular's names of fitted statistics, registered with the graph's
  op hooks when the package is imported;
- :mod:`tabflow.compat.legacy_fit`: NVTabular's ``StatOperator.fit(col_selector, ddf)``,
  registered with the workflow when the package is imported;
- :mod:`tabflow.compat.numba_cuda`: ``numba.cuda`` as an attribute of ``numba`` once read,
  as merlin's own ``from numba import cuda`` left it, installed when the package is imported.

Examples
--------
>>> from tabflow.compat import TensorflowMetadata
>>> from tabflow.schema import ColumnSchema, Schema
>>> TensorflowMetadata.from_merlin_schema(Schema([ColumnSchema("a", dtype="int64")])).to_merlin_schema().column_names
['a']
"""

from __future__ import annotations

from tabflow.compat import legacy_fit, numba_cuda, op_arguments, tf_metadata
from tabflow.compat.tensorflow_metadata import TensorflowMetadata

numba_cuda.expose_numba_cuda()

__all__ = ["TensorflowMetadata", "legacy_fit", "numba_cuda", "op_arguments", "tf_metadata"]
