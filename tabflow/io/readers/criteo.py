"""Raw Criteo click logs: tab-separated text with Criteo's columns and dtypes.

Each line holds the label, 13 integer features (I1-I13) and 26 hexadecimal categorical
features (C1-C26); an empty field is a null. This is the CSV reader with those defaults.

Examples
--------
>>> import pathlib, tempfile
>>> from tabflow.io.readers import CRITEO_COLUMNS, ReadOptions, read_criteo
>>> CRITEO_COLUMNS[:2], CRITEO_COLUMNS[-1], len(CRITEO_COLUMNS)
(['label', 'I1'], 'C26', 40)
>>> path = pathlib.Path(tempfile.mkdtemp(), "day_0")
>>> _ = path.write_text("\\t".join(["1", "5"] + [""] * 12 + ["68fd1e64"] * 26) + "\\n")
>>> frame = read_criteo([str(path)], ReadOptions(cpu=True)).ddf.compute()
>>> frame["label"].tolist(), frame["I1"].tolist(), frame["I2"].tolist(), frame["C1"].tolist()
([1], [5], [<NA>], ['68fd1e64'])
"""

from __future__ import annotations

from typing import Sequence

from tabflow.io.readers._source import ReadOptions, Source
from tabflow.io.readers.csv import nullable_dtypes, read_text

__all__ = ["read_criteo", "CRITEO_COLUMNS", "CRITEO_DTYPES", "CRITEO_CONTINUOUS", "CRITEO_CATEGORICAL"]

CRITEO_CONTINUOUS = [f"I{i}" for i in range(1, 14)]
CRITEO_CATEGORICAL = [f"C{i}" for i in range(1, 27)]
CRITEO_COLUMNS = ["label", *CRITEO_CONTINUOUS, *CRITEO_CATEGORICAL]
#: Raw Criteo click logs: label, 13 integer features, 26 hex-string features; empty = null.
CRITEO_DTYPES = {"label": "int64", **{c: "Int64" for c in CRITEO_CONTINUOUS}, **{c: "string" for c in CRITEO_CATEGORICAL}}


def read_criteo(paths: Sequence[str], options: ReadOptions) -> Source:
    """The Criteo reader: tab-separated, no header line, Criteo's column names and dtypes.

    ``sep``, ``names`` and ``dtypes`` override the defaults; ``header`` is ignored (raw logs
    have none). Dtypes asked for are read nullable, as in CSV; the default label is int64.
    """
    return read_text(
        paths, options, sep=options.sep or "\t", names=options.names or CRITEO_COLUMNS, header=None,
        dtypes={**CRITEO_DTYPES, **nullable_dtypes(options.canonical_dtypes)},
    )
