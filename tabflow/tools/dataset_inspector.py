"""Describe an existing dataset: NVTabular 23.08's ``nvtabular.tools.dataset_inspector``.

:class:`DatasetInspector` fits :class:`~tabflow.ops.DataStats` over a dataset and writes the
statistics as the JSON document :mod:`tabflow.tools.data_gen` reads, so a synthetic dataset
can be made in the image of a real one::

    {"num_rows": N,
     "conts":  {name: {dtype, min_val, max_val, mean, std, per_nan}},
     "cats":   {name: {dtype, cardinality, min_entry_size, max_entry_size, avg_entry_size,
                       per_nan[, multi_min, multi_max, multi_avg]}},
     "labels": {name: {dtype, cardinality, per_nan}}}

For categorical columns the entry sizes are string lengths (the values themselves for
numbers); list columns add their list lengths as ``multi_min``/``multi_max``/``multi_avg``
(a null list counts as length 0). ``per_nan`` is a percentage. A statistic a column does not
have (the spread of a single value, the cardinality of a float column) is ``null``.

Examples
--------
>>> import json, os, tempfile
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.tools.dataset_inspector import DatasetInspector
>>> df = pd.DataFrame({"price": [1.0, 3.0, None, 2.0], "item": ["a", "bb", "a", "ccc"], "click": [0, 1, 1, 0]})
>>> path = os.path.join(tempfile.mkdtemp(), "stats.json")
>>> _ = DatasetInspector().inspect(nvt.Dataset(df), {"conts": ["price"], "cats": ["item"], "labels": ["click"]}, path)
>>> stats = json.load(open(path))
>>> stats["num_rows"], stats["conts"]["price"]["per_nan"], stats["cats"]["item"]["max_entry_size"]
(4, 25.0, 3)
>>> stats["labels"]["click"]
{'dtype': 'int64', 'cardinality': 2, 'per_nan': 0.0}
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tabflow.io.dataset import Dataset
from tabflow.io.fs import open_file
from tabflow.ops.data_stats import DataStats
from tabflow.selector import ColumnSelector
from tabflow.tools._files import check_output_file, write_file
from tabflow.workflow import Workflow

__all__ = ["SECTIONS", "DatasetInspector", "NpEncoder"]

#: The sections of a description, in the order they are written.
SECTIONS = ("conts", "cats", "labels")

# DataStats' names for what a description calls min/max/mean in each section.
_RENAMED = {
    "conts": {"min": "min_val", "max": "max_val", "mean": "mean", "std": "std"},
    "cats": {"cardinality": "cardinality", "min": "min_entry_size", "max": "max_entry_size", "mean": "avg_entry_size"},
    "labels": {"cardinality": "cardinality"},
}
_LIST_LENGTHS = {"list_min": "multi_min", "list_max": "multi_max", "list_mean": "multi_avg"}


def _plain(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays as Python values and NaN/infinity as None, so
    that the document is strict JSON."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(item) for item in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class NpEncoder(json.JSONEncoder):
    """A JSON encoder that writes NumPy integers, floats, booleans and arrays as plain JSON
    (NVTabular's encoder of the same name).

    Examples
    --------
    >>> import json
    >>> import numpy as np
    >>> from tabflow.tools.dataset_inspector import NpEncoder
    >>> json.dumps({"n": np.int64(3), "x": np.float32(0.5), "ok": np.bool_(True), "v": np.arange(2)}, cls=NpEncoder)
    '{"n": 3, "x": 0.5, "ok": true, "v": [0, 1]}'
    """

    def default(self, obj: Any) -> Any:
        if isinstance(obj, (np.generic, np.ndarray)):
            return _plain(obj)
        return super().default(obj)


class DatasetInspector:
    """Collect the statistics of a dataset's columns and write them as a description.

    Parameters
    ----------
    client : distributed.Client, optional
        The Dask client the statistics are computed on; by default the active one (see
        :class:`tabflow.Distributed`), else dask's local threads.
    """

    def __init__(self, client: Any = None) -> None:
        self.client = client

    def inspect(self, dataset: Any, columns_dict: Mapping[str, Sequence[str]], output_file: str) -> dict[str, Any]:
        """Write the description of ``dataset``'s columns to ``output_file`` and return it.

        Parameters
        ----------
        dataset : tabflow.Dataset, or what :class:`tabflow.Dataset` accepts
            The data (a path, a list of files, or a frame are opened as a Dataset).
        columns_dict : dict
            ``{"cats": [...], "conts": [...], "labels": [...]}``: the columns of each kind (a
            missing kind has none).
        output_file : str
            The JSON file to write (a local path or a URL). It is written under a temporary
            name and renamed when complete; a directory is never replaced.

        Returns
        -------
        dict
            The document written.

        Raises
        ------
        tabflow.exceptions.SaveError
            When ``output_file`` is a directory (checked before any statistics are computed).
        ValueError
            For an unknown section, or a column listed twice.
        """
        sections = {section: list(columns_dict.get(section) or []) for section in SECTIONS}
        unknown = sorted(set(columns_dict) - set(SECTIONS))
        if unknown:
            raise ValueError(f"unknown column kinds {unknown}; expected {', '.join(SECTIONS)}")
        names = [name for section in SECTIONS for name in sections[section]]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"columns listed under more than one kind (or twice): {repeated}")
        # A failure to write should not come after the whole dataset has been read.
        check_output_file(output_file)

        if not isinstance(dataset, Dataset):
            dataset = Dataset(dataset)
        stats = DataStats()
        Workflow(ColumnSelector(names) >> stats, client=self.client).fit(dataset)
        measured = stats.output

        document: dict[str, Any] = {"num_rows": dataset.num_rows}
        for section in SECTIONS:
            document[section] = {name: _describe(section, measured[name]) for name in sections[section]}
        document = _plain(document)
        text = json.dumps(document, indent=2, allow_nan=False)

        def write(path: str) -> None:
            with open_file(path, mode="wb") as handle:
                handle.write(text.encode("utf-8"))

        write_file(output_file, write)
        return document


def _describe(section: str, measured: Mapping[str, Any]) -> dict[str, Any]:
    """One column's entry of a description, from its DataStats statistics."""
    entry = {"dtype": measured["dtype"]}
    entry.update({described: measured.get(name) for name, described in _RENAMED[section].items()})
    entry["per_nan"] = measured["per_nan"]
    if section == "cats" and "list_min" in measured:
        entry.update({described: measured[name] for name, described in _LIST_LENGTHS.items()})
    return entry
