"""``merlin.schema.io`` under tabflow's name: schema files in merlin's formats.

Examples
--------
>>> from tabflow.schema.io import tensorflow_metadata
>>> tensorflow_metadata.TensorflowMetadata.__name__
'TensorflowMetadata'
"""
