"""merlin-core's ``TensorflowMetadata``: a dataset's schema as ``schema.pbtxt`` and ``schema.json``.

merlin scripts read and write schema files through
``merlin.schema.io.tensorflow_metadata.TensorflowMetadata``; the same calls work here with
tabflow's :class:`~tabflow.schema.Schema` standing in for merlin's (``to_merlin_schema``
returns one, ``from_merlin_schema`` takes one). The files are the ones merlin-core 23.08
reads and writes: the text protobuf of TensorFlow Metadata's ``Schema`` message, and the same
message as JSON. Reading is :mod:`tabflow.compat.tf_metadata`'s (the format tabflow's own parquet
output carries); this module adds the text writer and merlin's names.

What a file holds per column, and so what survives a round trip: the name, the dtype (its
kind as the feature type, its width as the ``dtype_item_size`` property), the domain
(``int_domain`` / ``float_domain``), the value count of list columns (and so their shape),
the tags, and every other property (``extra_metadata``). Boolean columns have no feature
type in merlin's files, so their dtype comes back unknown, as merlin reads it.

Examples
--------
>>> import tempfile
>>> from tabflow.schema import ColumnSchema, Schema, Tags
>>> from tabflow.schema.io.tensorflow_metadata import TensorflowMetadata
>>> schema = Schema([ColumnSchema("item", dtype="int32", tags=[Tags.CATEGORICAL],
...                               properties={"domain": {"min": 0, "max": 9}})])
>>> directory = tempfile.mkdtemp()
>>> TensorflowMetadata.from_merlin_schema(schema).to_proto_text_file(directory)
>>> TensorflowMetadata.from_proto_text_file(directory).to_merlin_schema() == schema
True
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Mapping
from typing import Any

from tabflow._files import write_atomically
from tabflow.compat.tf_metadata import schema_from_proto_text, schema_from_tfmd_json, tfmd_json
from tabflow.exceptions import LoadError
from tabflow.schema import Schema

__all__ = ["SCHEMA_JSON_FILE_NAME", "SCHEMA_PBTXT_FILE_NAME", "TensorflowMetadata"]

SCHEMA_PBTXT_FILE_NAME = "schema.pbtxt"
SCHEMA_JSON_FILE_NAME = "schema.json"

_STRUCT_TYPE = "[type.googleapis.com/google.protobuf.Struct]"


class TensorflowMetadata:
    """A schema in TensorFlow Metadata form, read from or written to merlin's schema files.

    Parameters
    ----------
    schema : Schema, optional
        The columns (an empty schema when left out). merlin's class wraps the protobuf message;
        this one wraps the tabflow schema the message describes.

    Examples
    --------
    >>> from tabflow.schema import ColumnSchema, Schema, Tags
    >>> from tabflow.compat import TensorflowMetadata
    >>> text = TensorflowMetadata.from_merlin_schema(
    ...     Schema([ColumnSchema("label", dtype="float32", tags=[Tags.TARGET])])).to_proto_text()
    >>> print(text.splitlines()[1:3])
    ['  name: "label"', '  type: FLOAT']
    >>> TensorflowMetadata.from_proto_text(text).to_merlin_schema()["label"].dtype
    'float32'
    """

    def __init__(self, schema: Schema | None = None) -> None:
        self.schema = schema

    # ----------------------------------------------------------------------- merlin schema
    @classmethod
    def from_merlin_schema(cls, schema: Schema) -> TensorflowMetadata:
        """Wrap ``schema`` (tabflow's ``Schema``, in place of merlin's)."""
        if not isinstance(schema, Schema):
            raise TypeError(f"from_merlin_schema takes a tabflow.schema.Schema, got {type(schema).__name__}")
        return cls(schema)

    def to_merlin_schema(self) -> Schema:
        """The columns as a tabflow ``Schema`` (merlin's ``Schema`` in merlin)."""
        return self.schema if self.schema is not None else Schema([])

    # -------------------------------------------------------------------------------- JSON
    @classmethod
    def from_json(cls, json: str | bytes) -> TensorflowMetadata:  # noqa: A002 - merlin's parameter name
        """Read the JSON form (``.merlin/schema.json``) from a string."""
        try:
            document = _json_loads(json)
        except ValueError as err:
            raise LoadError(f"schema JSON is not valid JSON: {err}") from err
        if not isinstance(document, Mapping):
            raise LoadError(f"schema JSON must be an object with a 'feature' list, got {type(document).__name__}")
        return cls(schema_from_tfmd_json(document))

    @classmethod
    def from_json_file(cls, path: str | os.PathLike, file_name: str = SCHEMA_JSON_FILE_NAME) -> TensorflowMetadata:
        """Read ``path/file_name`` (a directory and a file name, as merlin takes them)."""
        return cls.from_json(_read(path, file_name))

    def to_json(self) -> str:
        """The JSON form, as merlin writes it to ``.merlin/schema.json``."""
        return json.dumps(tfmd_json(self.to_merlin_schema()), indent=2)

    def to_json_file(self, path: str | os.PathLike, file_name: str = SCHEMA_JSON_FILE_NAME) -> None:
        """Write the JSON form to ``path/file_name``, creating ``path`` if needed."""
        _write(self.to_json(), path, file_name)

    # -------------------------------------------------------------------------- proto text
    @classmethod
    def from_proto_text(cls, proto_text: str) -> TensorflowMetadata:
        """Read the text protobuf (``schema.pbtxt``) from a string."""
        return cls(schema_from_proto_text(proto_text))

    @classmethod
    def from_proto_text_file(cls, path: str | os.PathLike, file_name: str = SCHEMA_PBTXT_FILE_NAME) -> TensorflowMetadata:
        """Read ``path/file_name`` (a directory and a file name, as merlin takes them)."""
        full = os.path.join(os.fspath(path), file_name)
        return cls(schema_from_proto_text(_read(path, file_name), where=full))

    def to_proto_text(self) -> str:
        """The text protobuf, with properties as an expanded ``google.protobuf.Struct`` as merlin prints them."""
        lines: list[str] = []
        for feature in tfmd_json(self.to_merlin_schema())["feature"]:
            lines.append("feature {")
            lines.extend(_feature_lines(feature))
            lines.append("}")
        return "\n".join(lines) + ("\n" if lines else "")

    def to_proto_text_file(self, path: str | os.PathLike, file_name: str = SCHEMA_PBTXT_FILE_NAME) -> None:
        """Write the text protobuf to ``path/file_name``, creating ``path`` if needed."""
        _write(self.to_proto_text(), path, file_name)

    def copy(self, **kwargs: Any) -> TensorflowMetadata:
        """A copy; ``schema=`` replaces the columns."""
        return type(self)(kwargs.get("schema", self.schema))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorflowMetadata) and self.to_merlin_schema() == other.to_merlin_schema()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TensorflowMetadata({self.to_merlin_schema().column_names})"


# from_json's parameter is named json, as merlin's is, hiding the module there.
def _json_loads(text: str | bytes) -> Any:
    return json.loads(text)


def _read(path: str | os.PathLike, file_name: str) -> str:
    full = os.path.join(os.fspath(path), file_name)
    if not os.path.isfile(full):
        raise LoadError(f"no schema file {full}: give the directory that holds it (and file_name= if it is named otherwise)")
    with open(full, encoding="utf-8") as handle:
        return handle.read()


def _write(text: str, path: str | os.PathLike, file_name: str) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)

    write_atomically(os.path.join(os.fspath(path), file_name), write)


# ------------------------------------------------------------------- text format writing
def _quote(text: str) -> str:
    """A text-format string literal: printable ASCII kept, every other byte as an octal escape."""
    out = []
    for byte in str(text).encode("utf-8"):
        char = chr(byte)
        if char in "\\\"'":
            out.append("\\" + char)
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _feature_lines(feature: Mapping[str, Any]) -> list[str]:
    lines = [f"  name: {_quote(feature['name'])}"]
    if "type" in feature:
        lines.append(f"  type: {feature['type']}")
    for key, field in (("intDomain", "int_domain"), ("floatDomain", "float_domain")):
        domain = feature.get(key)
        if domain is None:
            continue
        lines.append(f"  {field} {{")
        if "name" in domain:
            lines.append(f"    name: {_quote(domain['name'])}")
        for bound in ("min", "max"):
            if bound in domain:
                lines.append(f"    {bound}: {domain[bound]}")
        if domain.get("isCategorical"):
            lines.append("    is_categorical: true")
        lines.append("  }")
    counts = feature.get("valueCount")
    if counts:
        lines.append("  value_count {")
        lines.extend(f"    {bound}: {counts[bound]}" for bound in ("min", "max") if bound in counts)
        lines.append("  }")
    annotation = feature.get("annotation", {})
    lines.append("  annotation {")
    lines.extend(f"    tag: {_quote(tag)}" for tag in annotation.get("tag", []))
    for properties in annotation.get("extraMetadata", []):
        lines.append("    extra_metadata {")
        lines.append(f"      {_STRUCT_TYPE} {{")
        lines.extend(_struct_lines(properties, "        "))
        lines.append("      }")
        lines.append("    }")
    lines.append("  }")
    return lines


def _struct_lines(struct: Mapping[str, Any], indent: str) -> list[str]:
    lines = []
    for key, value in struct.items():
        lines.append(f"{indent}fields {{")
        lines.append(f"{indent}  key: {_quote(key)}")
        lines.append(f"{indent}  value {{")
        lines.extend(_value_lines(value, indent + "    ", key))
        lines.append(f"{indent}  }}")
        lines.append(f"{indent}}}")
    return lines


def _value_lines(value: Any, indent: str, key: str) -> list[str]:
    if value is None:
        return [f"{indent}null_value: NULL_VALUE"]
    if isinstance(value, bool):
        return [f"{indent}bool_value: {'true' if value else 'false'}"]
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"property {key!r} is {number}: schema files hold finite numbers only")
        return [f"{indent}number_value: {number!r}"]
    if isinstance(value, str):
        return [f"{indent}string_value: {_quote(value)}"]
    if isinstance(value, Mapping):
        return [f"{indent}struct_value {{", *_struct_lines(value, indent + "  "), f"{indent}}}"]
    if isinstance(value, (list, tuple)):
        lines = [f"{indent}list_value {{"]
        for item in value:
            lines.append(f"{indent}  values {{")
            lines.extend(_value_lines(item, indent + "    ", key))
            lines.append(f"{indent}  }}")
        lines.append(f"{indent}}}")
        return lines
    raise TypeError(f"property {key!r} holds a {type(value).__name__}: schema files hold numbers, strings, booleans, lists and dicts")
