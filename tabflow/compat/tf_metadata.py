"""NVTabular / Merlin schema files (TensorFlow Metadata), read without protobuf installed.

NVTabular 23.08 (merlin-core) writes a dataset's schema twice next to its parquet files:
``schema.pbtxt`` (the text protobuf of ``tensorflow_metadata.proto.v0.Schema``) and
``.merlin/schema.json`` (the same message as JSON). Both hold, per column (``feature``): the
name, a type (``INT``, ``FLOAT``, ``BYTES``), an ``int_domain`` / ``float_domain`` (min, max,
``is_categorical``), a ``value_count`` for list columns, the tags (``annotation.tag``) and the
remaining properties as a ``google.protobuf.Struct`` packed into ``annotation.extra_metadata``
(serialized bytes in older files, an expanded ``[type.googleapis.com/google.protobuf.Struct]``
block in newer ones, a plain object in the JSON).

This module reads all of these with a small tolerant parser (unknown fields are skipped) and
writes the JSON form (:func:`tfmd_json`), which merlin-core reads as ``.merlin/schema.json``.
Numbers that Struct stores as doubles but that are whole (cardinalities, embedding
dimensions) come back as ints. Importing it registers both files with the dataset readers and
writer (:func:`~tabflow.io.readers._schema_files.register_schema_format`): datasets NVTabular wrote keep
their tags and properties, and every dataset tabflow writes carries ``.merlin/schema.json``.

Examples
--------
>>> from tabflow.compat.tf_metadata import schema_from_proto_text
>>> text = '''
... feature {
...   name: "user"
...   type: INT
...   int_domain { name: "user" max: 100 is_categorical: true }
...   annotation {
...     tag: "user"
...     extra_metadata {
...       [type.googleapis.com/google.protobuf.Struct] {
...         fields { key: "dtype_item_size" value { number_value: 32.0 } }
...         fields { key: "embedding_sizes" value { struct_value {
...           fields { key: "cardinality" value { number_value: 101.0 } } } } }
...       }
...     }
...   }
... }'''
>>> column = schema_from_proto_text(text)["user"]
>>> column.dtype, sorted(str(t) for t in column.tags), column.properties["embedding_sizes"]
('int32', ['categorical', 'user'], {'cardinality': 101})
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
from typing import Any, Mapping, Sequence

from tabflow.io import MERLIN_METADATA_DIR_NAME
from tabflow.io.readers._schema_files import SchemaFormat, read_schema_file, register_schema_format
from tabflow.schema import ColumnSchema, Schema, Shape, Tags

__all__ = ["schema_from_proto_text", "schema_from_tfmd_json", "tfmd_json", "decode_struct"]

_MAX_DEPTH = 64
# Properties merlin keeps in extra_metadata to rebuild its own dtype and shape.
_SHAPE_KEYS = ("is_list", "is_ragged", "dtype_item_size", "_dims")
_FEATURE_TYPES = {0: None, 1: "BYTES", 2: "INT", 3: "FLOAT", 4: "STRUCT"}


def _load_error(message: str) -> Exception:
    from tabflow.exceptions import LoadError

    return LoadError(message)


# ------------------------------------------------------------------ text protobuf parser

_TOKENS = re.compile(
    r"""
    (?P<skip>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[fF]?)
  | (?P<word>[-+]?[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[{}<>\[\]:;,/])
    """,
    re.VERBOSE,
)
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.DOTALL)
_SIMPLE_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v"}


def _unescape(body: str) -> bytes:
    """The bytes of a quoted text-format string (C escapes, octal and hex bytes)."""
    out = bytearray()
    position = 0
    for match in _ESCAPE.finditer(body):
        out += body[position:match.start()].encode("utf-8")
        octal, hexa, short, long, char = match.groups()
        if octal is not None:
            out.append(int(octal, 8) & 0xFF)
        elif hexa is not None:
            out.append(int(hexa, 16))
        elif short is not None or long is not None:
            out += chr(int(short or long, 16)).encode("utf-8")
        else:
            out += _SIMPLE_ESCAPES.get(char, char.encode("utf-8"))
        position = match.end()
    out += body[position:].encode("utf-8")
    return bytes(out)


def _tokenize(text: str, where: str) -> list[tuple[str, Any]]:
    tokens: list[tuple[str, Any]] = []
    position = 0
    while position < len(text):
        match = _TOKENS.match(text, position)
        if match is None:
            raise _load_error(f"{where}: cannot parse the text protobuf near {text[position:position + 30]!r}")
        position = match.end()
        kind = match.lastgroup
        if kind is None or kind == "skip":
            continue
        value = match.group(kind)
        tokens.append((kind, _unescape(value[1:-1]) if kind == "string" else value))
    return tokens


class _Parser:
    """Text protobuf into nested lists of ``(field name, value)``; a value is a token
    string, the bytes of quoted strings, or a nested list (a message)."""

    def __init__(self, tokens: list[tuple[str, Any]], where: str) -> None:
        self.tokens = tokens
        self.index = 0
        self.where = where

    def fail(self, what: str) -> Exception:
        near = " ".join(str(v) for _, v in self.tokens[self.index:self.index + 5])
        return _load_error(f"{self.where}: malformed text protobuf ({what} near {near!r})")

    def peek(self) -> tuple[str, Any] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> tuple[str, Any]:
        token = self.peek()
        if token is None:
            raise self.fail("unexpected end")
        self.index += 1
        return token

    def message(self, close: str | None, depth: int) -> list:
        if depth > _MAX_DEPTH:
            raise self.fail("nesting too deep")
        fields: list = []
        while True:
            token = self.peek()
            if token is None:
                if close is None:
                    return fields
                raise self.fail(f"missing {close!r}")
            if token == ("punct", close):
                self.index += 1
                return fields
            if token[0] == "punct" and token[1] in ";,":
                self.index += 1
                continue
            fields.append((self.name(), self.value(depth)))

    def name(self) -> str:
        kind, value = self.take()
        if (kind, value) == ("punct", "["):
            parts = []
            while (token := self.take()) != ("punct", "]"):
                parts.append(str(token[1]))
            return "[" + "".join(parts) + "]"
        if kind != "word":
            raise self.fail("expected a field name")
        return value

    def value(self, depth: int) -> Any:
        token = self.peek()
        if token == ("punct", ":"):
            self.index += 1
            token = self.peek()
        if token is not None and token[0] == "punct" and token[1] in "{<":
            self.index += 1
            return self.message("}" if token[1] == "{" else ">", depth + 1)
        if token == ("punct", "["):  # short repeated form: [1, 2] or [{...}, {...}]
            self.index += 1
            values = []
            while self.peek() != ("punct", "]"):
                values.append(self.value(depth))
                if self.peek() == ("punct", ","):
                    self.index += 1
            self.index += 1
            return values
        kind, value = self.take()
        if kind == "string":
            while (following := self.peek()) is not None and following[0] == "string":  # "a" "b" is "ab"
                value += self.take()[1]
            return value
        if kind in ("number", "word"):
            return value
        raise self.fail("expected a value")


def _fields(message: Any, name: str) -> list:
    if not isinstance(message, list):
        return []
    found = []
    for key, value in message:
        if key == name:
            found.extend(value if isinstance(value, list) and value and not isinstance(value[0], tuple) else [value])
    return found


def _field(message: Any, name: str, default: Any = None) -> Any:
    found = _fields(message, name)
    return found[-1] if found else default


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _number(value: Any) -> Any:
    if value is None:
        return None
    text = _text(value).rstrip("fF")
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return None


def _boolean(value: Any) -> bool:
    return _text(value).lower() in ("true", "t", "1")


def _struct_from_text(message: list, depth: int = 0) -> dict:
    """A ``google.protobuf.Struct`` written as text (``fields { key: ... value { ... } }``)."""
    if depth > _MAX_DEPTH:
        raise _load_error("a Struct in the schema is nested too deep")
    return {_text(_field(entry, "key", b"")): _value_from_text(_field(entry, "value", []), depth + 1) for entry in _fields(message, "fields")}


def _value_from_text(message: list, depth: int) -> Any:
    for key, value in message if isinstance(message, list) else []:
        if key == "number_value":
            return _number(value)
        if key == "string_value":
            return _text(value)
        if key == "bool_value":
            return _boolean(value)
        if key == "struct_value":
            return _struct_from_text(value, depth + 1)
        if key == "list_value":
            return [_value_from_text(v, depth + 1) for v in _fields(value, "values")]
        if key == "null_value":
            return None
    return None


# ------------------------------------------------------- google.protobuf.Struct (wire format)


def decode_struct(data: bytes) -> dict:
    """The dict a serialized ``google.protobuf.Struct`` holds.

    Examples
    --------
    >>> from tabflow.compat.tf_metadata import decode_struct
    >>> decode_struct(b"\\n\\r\\n\\x07is_list\\x12\\x02 \\x00\\n\\x11\\n\\x0bnum_buckets\\x12\\x02\\x08\\x00")
    {'is_list': False, 'num_buckets': None}
    """
    return _decode_struct(memoryview(data), 0)


def _wire_fields(data: memoryview):
    """Yield ``(field number, wire type, value)`` of one message (varints as ints, fixed64
    as 8 bytes, length-delimited as a memoryview)."""
    position = 0
    end = len(data)
    while position < end:
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        value: int | bytes | memoryview
        if wire == 0:
            value, position = _varint(data, position)
        elif wire == 1:
            value, position = bytes(data[position:position + 8]), position + 8
        elif wire == 2:
            length, position = _varint(data, position)
            value, position = data[position:position + length], position + length
        elif wire == 5:
            value, position = bytes(data[position:position + 4]), position + 4
        else:
            raise _load_error(f"unsupported protobuf wire type {wire} in a schema's extra_metadata")
        if position > end:
            raise _load_error("truncated protobuf in a schema's extra_metadata")
        yield number, wire, value


def _varint(data: memoryview, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise _load_error("truncated protobuf varint in a schema's extra_metadata")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _decode_struct(data: memoryview, depth: int) -> dict:
    if depth > _MAX_DEPTH:
        raise _load_error("a Struct in the schema is nested too deep")
    out = {}
    for number, wire, entry in _wire_fields(data):
        if number != 1 or wire != 2:
            continue
        key, value = "", None
        for inner, inner_wire, payload in _wire_fields(entry):
            if inner == 1 and inner_wire == 2:
                key = bytes(payload).decode("utf-8", "replace")
            elif inner == 2 and inner_wire == 2:
                value = _decode_value(payload, depth + 1)
        out[key] = value
    return out


def _decode_value(data: memoryview, depth: int) -> Any:
    value = None
    for number, wire, payload in _wire_fields(data):
        if number == 1:
            value = None
        elif number == 2 and wire == 1:
            value = struct.unpack("<d", payload)[0]
        elif number == 3 and wire == 2:
            value = bytes(payload).decode("utf-8", "replace")
        elif number == 4 and wire == 0:
            value = bool(payload)
        elif number == 5 and wire == 2:
            value = _decode_struct(payload, depth + 1)
        elif number == 6 and wire == 2:
            value = [_decode_value(item, depth + 1) for n, w, item in _wire_fields(payload) if n == 1 and w == 2]
    return value


# ----------------------------------------------------------------- features -> ColumnSchema


def _whole_numbers(value: Any) -> Any:
    """Struct stores every number as a double: whole ones (cardinalities) back to ints."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value


def _column(name: str, kind: Any, domain: Mapping[str, Any] | None, value_count: Mapping[str, Any] | None,
            tags: Sequence[str], properties: Mapping[str, Any], fixed_shape: Sequence[int] = ()) -> ColumnSchema:
    """One column from a feature's parts, as merlin's ``_merlin_column`` reads them."""
    properties = dict(_whole_numbers(dict(properties)))
    dims = _merlin_dims(name, properties.get("_dims"))
    bits = properties.get("dtype_item_size")
    is_list = bool(properties.get("is_list", False))
    if dims:
        is_list = len(dims) > 1
    counts = {k: v for k, v in (value_count or {}).items() if isinstance(v, (int, float)) and v > 0}
    if counts:
        is_list = True
    if fixed_shape:
        is_list = True
        counts = counts or {"min": int(fixed_shape[0]), "max": int(fixed_shape[0])}
    for key in _SHAPE_KEYS:
        properties.pop(key, None)
    tags = [str(t) for t in tags]
    domain = dict(domain or {})
    if domain.pop("is_categorical", False) and Tags.CATEGORICAL.value not in tags:
        tags.append(Tags.CATEGORICAL.value)
    if domain:
        properties["domain"] = _whole_numbers(domain)
    kind = _FEATURE_TYPES.get(kind, kind) if isinstance(kind, int) else (str(kind).upper() if kind else None)
    size = int(bits) if isinstance(bits, (int, float)) and bits else None
    if kind == "INT":
        element = f"int{size}" if size in (8, 16, 32, 64) else "int64"
    elif kind == "FLOAT":
        element = f"float{size}" if size in (16, 32, 64) else "float64"
    elif kind == "BYTES":
        element = "string"
    else:
        element = None  # no type stored (merlin's strings and booleans): the data tells
    dtype = f"list<{element}>" if is_list and element else element
    if dims:
        # merlin's own shape: it says everything the value count and list flags say.
        fields: dict[str, Any] = dict(dtype=element, properties=properties, dims=dims)
    else:
        fields = dict(dtype=dtype, properties=properties, is_list=is_list, value_count=dict(counts) if is_list and counts else None)
    try:
        return ColumnSchema(name, tags=tags, **fields)
    except ValueError:
        # Tags that contradict each other (an old file tagging a column both categorical and
        # continuous): applied one by one, a later tag displaces an earlier one.
        column = ColumnSchema(name, **fields)
        for tag in tags:
            column = column.with_tags(tag)
        return column


def _merlin_dims(name: str, dims: Any) -> tuple | None:
    """The shape merlin keeps in ``_dims`` (``[[0, null], 3, 4]``: a size or a ``[min, max]``
    pair per dimension) as ``dims``; None where it kept none (``[]``, an unknown shape)."""
    if not isinstance(dims, list) or not dims:
        return None
    out: list[Any] = []
    for dim in dims:
        if isinstance(dim, list) and len(dim) == 2 and all(d is None or isinstance(d, int) for d in dim):
            out.append(tuple(dim))
        elif dim is None or isinstance(dim, int):
            out.append(dim)
        else:
            raise _load_error(f"column {name!r}: '_dims' entry {dim!r} is neither a size nor a [min, max] pair")
    try:
        Shape(tuple(out))
    except ValueError as err:
        raise _load_error(f"column {name!r}: '_dims' {dims!r} is not a shape ({err})") from None
    return tuple(out)


def schema_from_proto_text(text: str, where: str = "schema.pbtxt") -> Schema:
    """The columns of a TensorFlow Metadata text protobuf (NVTabular's ``schema.pbtxt``)."""
    tree = _Parser(_tokenize(text, where), where).message(None, 0)
    columns = []
    for feature in _fields(tree, "feature"):
        name = _text(_field(feature, "name", b""))
        kind = _field(feature, "type")
        kind = _number(kind) if kind is not None and _number(kind) is not None else kind
        domain = None
        for domain_field in ("int_domain", "float_domain"):
            found = _field(feature, domain_field)
            if found is not None:
                domain = {}
                for key in ("name", "min", "max"):
                    raw = _field(found, key)
                    if raw is not None:
                        domain[key] = _text(raw) if key == "name" else _number(raw)
                # proto3 leaves zeros out: merlin reads a missing bound as 0.
                domain = {"min": 0, "max": 0, **domain}
                if _field(found, "is_categorical") is not None:
                    domain["is_categorical"] = _boolean(_field(found, "is_categorical"))
        counts = _field(feature, "value_count")
        value_count = None if counts is None else {k: _number(_field(counts, k)) for k in ("min", "max") if _field(counts, k) is not None}
        shape = _field(feature, "shape")
        fixed = [_number(_field(dim, "size", "0")) or 0 for dim in _fields(shape, "dim")] if shape is not None else []
        annotation = _field(feature, "annotation", [])
        tags = [_text(t) for t in _fields(annotation, "tag")]
        properties: dict = {}
        for extra in _fields(annotation, "extra_metadata"):
            expanded = next((v for k, v in extra if k.startswith("[") and k.endswith("Struct]")), None)
            if expanded is not None:
                properties.update(_struct_from_text(expanded))
            elif isinstance(_field(extra, "value"), bytes):
                properties.update(decode_struct(_field(extra, "value")))
        columns.append(_column(name, kind, domain, value_count, tags, properties, fixed))
    return Schema(columns)


def _get(mapping: Any, *names: str, default: Any = None) -> Any:
    if isinstance(mapping, Mapping):
        for name in names:
            if name in mapping:
                return mapping[name]
    return default


def schema_from_tfmd_json(document: Mapping[str, Any], where: str = "schema.json") -> Schema:
    """The columns of TensorFlow Metadata JSON (merlin-core's ``.merlin/schema.json``)."""
    features = document.get("feature", [])
    if not isinstance(features, list):
        raise _load_error(f"schema file {where} is malformed ('feature' is not a list)")
    columns = []
    for feature in features:
        if not isinstance(feature, Mapping) or "name" not in feature:
            raise _load_error(f"schema file {where} is malformed (a feature without a name)")
        kind = _get(feature, "type")
        domain = None
        for names in (("intDomain", "int_domain"), ("floatDomain", "float_domain")):
            found = _get(feature, *names)
            if isinstance(found, Mapping):
                domain = {"min": 0, "max": 0}
                domain.update({k: (str(v) if k == "name" else _number(v)) for k, v in found.items() if k in ("name", "min", "max")})
                categorical = _get(found, "isCategorical", "is_categorical")
                if categorical is not None:
                    domain["is_categorical"] = bool(categorical)
        counts = _get(feature, "valueCount", "value_count")
        value_count = {k: _number(v) for k, v in counts.items() if k in ("min", "max")} if isinstance(counts, Mapping) else None
        shape = _get(feature, "shape")
        fixed = [_number(_get(dim, "size", default=0)) or 0 for dim in _get(shape, "dim", default=[])] if isinstance(shape, Mapping) else []
        annotation = _get(feature, "annotation", default={})
        tags = list(_get(annotation, "tag", default=[]) or [])
        properties: dict = {}
        for extra in _get(annotation, "extraMetadata", "extra_metadata", default=[]) or []:
            properties.update(_any_struct(extra))
        columns.append(_column(str(feature["name"]), kind, domain, value_count, tags, properties, fixed))
    return Schema(columns)


def _any_struct(extra: Any) -> dict:
    """The properties of one JSON ``extra_metadata`` entry (a plain object, or an Any)."""
    if not isinstance(extra, Mapping):
        return {}
    if "@type" in extra or "typeUrl" in extra or "type_url" in extra:
        value = extra.get("value")
        if isinstance(value, Mapping):
            return dict(value)
        if isinstance(value, str):
            try:
                return decode_struct(base64.b64decode(value))
            except ValueError:
                return {}
        return {k: v for k, v in extra.items() if k not in ("@type", "typeUrl", "type_url")}
    return dict(extra)


# ----------------------------------------------------------------------- writing (JSON)


def tfmd_json(schema: Schema) -> dict:
    """``schema`` as TensorFlow Metadata JSON, the form merlin-core reads from ``.merlin/schema.json``.

    Examples
    --------
    >>> from tabflow.compat.tf_metadata import schema_from_tfmd_json, tfmd_json
    >>> from tabflow.schema import ColumnSchema, Schema, Shape, Tags
    >>> s = Schema([ColumnSchema("c", dtype="int32", tags=[Tags.CATEGORICAL], properties={"domain": {"min": 0, "max": 9}})])
    >>> doc = tfmd_json(s)
    >>> doc["feature"][0]["type"], doc["feature"][0]["intDomain"]
    ('INT', {'min': '0', 'max': '9', 'isCategorical': True})
    >>> schema_from_tfmd_json(doc)["c"].properties
    {'domain': {'min': 0, 'max': 9}}
    """
    from tabflow.schema import dtypes as dtype_names

    features = []
    for column in schema:
        element = column.element_dtype
        feature: dict = {"name": column.name}
        properties = {k: v for k, v in column.properties.items() if k not in ("domain", "value_count")}
        domain = column.properties.get("domain") if isinstance(column.properties.get("domain"), Mapping) else None
        tags = sorted(str(t) for t in column.tags)
        if column.is_list and column.value_count:
            feature["valueCount"] = {k: str(int(v)) for k, v in column.value_count.items() if k in ("min", "max") and v}
        if dtype_names.is_integer(element) or dtype_names.is_bool(element):
            if dtype_names.is_integer(element):
                feature["type"] = "INT"
            if domain is not None:
                int_domain: dict[str, Any] = {k: (str(domain[k]) if k == "name" else str(int(domain[k]))) for k in ("name", "min", "max") if domain.get(k) is not None}
                int_domain["isCategorical"] = Tags.CATEGORICAL.value in tags
                feature["intDomain"] = int_domain
        elif dtype_names.is_float(element):
            feature["type"] = "FLOAT"
            if domain is not None:
                feature["floatDomain"] = {k: (str(domain[k]) if k == "name" else float(domain[k])) for k in ("name", "min", "max") if domain.get(k) is not None}
        elif dtype_names.is_string(element):
            feature["type"] = "BYTES"
        properties["is_list"] = bool(column.is_list)
        properties["is_ragged"] = bool(column.is_list) and not (
            column.value_count and column.value_count.get("min") == column.value_count.get("max") and column.value_count.get("min")
        )
        if len(column.shape) > 2:
            properties["is_ragged"] = column.shape.is_ragged
        properties["_dims"] = [list(dim) if isinstance(dim, tuple) else dim for dim in column.shape.as_tuple or ()]
        bits = _item_bits(element)
        if bits:
            properties["dtype_item_size"] = float(bits)
        feature["annotation"] = {"tag": tags, "extraMetadata": [properties]} if tags else {"extraMetadata": [properties]}
        features.append(feature)
    return {"feature": features}


def _item_bits(element: str) -> int | None:
    match = re.search(r"(\d+)$", element)
    if match:
        return int(match.group(1))
    return 8 if element.lower() in ("bool", "boolean") else None


def _tfmd_document(document: Any, where: str) -> Schema | None:
    # merlin also wrote TensorFlow Metadata JSON under the plain name ``schema.json``.
    if isinstance(document, Mapping) and "feature" in document and "columns" not in document:
        return schema_from_tfmd_json(document, where)
    return None


register_schema_format(
    SchemaFormat(
        f"{MERLIN_METADATA_DIR_NAME}/schema.json",
        read=lambda text, where: read_schema_file(where, text),
        read_document=_tfmd_document,
        write=lambda schema: json.dumps(tfmd_json(schema), indent=2).encode("utf-8"),
    )
)
register_schema_format(SchemaFormat("schema.pbtxt", read=lambda text, where: schema_from_proto_text(text, where)))
