"""``python -m tabflow.tools.inspector_script``: describe a dataset from the command line.

NVTabular 23.08's script of the same name; it reads a config naming the columns of each kind
(``{"cats": [...], "conts": [...], "labels": [...]}``), inspects the dataset with
:class:`~tabflow.tools.dataset_inspector.DatasetInspector` and writes the JSON description::

    python -m tabflow.tools.inspector_script -i data/ -f parquet -c columns.json -o dataset_info.json

The work runs on dask's local threads, or with ``--workers N`` on a local Dask cluster of N
workers (:class:`tabflow.Distributed`: GPU workers where dask-cuda and a GPU are there and the
cuDF engine is used, CPU workers otherwise).

Examples
--------
>>> from tabflow.tools.inspector_script import build_parser
>>> args = build_parser().parse_args(["-i", "data", "-c", "columns.json"])
>>> args.data_path, args.format, args.output_file, args.workers
('data', 'parquet', 'dataset_info.json', 0)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence

__all__ = ["DESCRIPTION", "add_arguments", "build_parser", "parse_args", "run", "main"]


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], got {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


DESCRIPTION = "Write the statistics of a dataset's columns as a JSON description (tabflow.tools.data_gen reads it)."


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the inspector's arguments to ``parser`` (this script's, or ``tabflow inspect``'s).

    Examples
    --------
    >>> import argparse
    >>> from tabflow.tools.inspector_script import add_arguments
    >>> parser = add_arguments(argparse.ArgumentParser(prog="tabflow inspect"))
    >>> parser.parse_args(["-i", "data", "-c", "columns.json", "--workers", "2"]).workers
    2
    """
    parser.add_argument("-i", "--data_path", "--data-path", dest="data_path", required=True,
                        help="dataset file, directory or glob (local or a URL)")
    parser.add_argument("-f", "--format", choices=["parquet", "csv"], default="parquet", help="file format (default: %(default)s)")
    parser.add_argument("-c", "--config_file", "--config-file", dest="config_file", required=True,
                        help='JSON file naming the columns of each kind: {"cats": [...], "conts": [...], "labels": [...]}')
    parser.add_argument("-o", "--output_file", "--output-file", dest="output_file", default="dataset_info.json",
                        help="where the description goes (default: %(default)s)")
    parser.add_argument("--part-mem-frac", type=_fraction, default=0.125,
                        help="partition size as a fraction of the engine's memory (default: %(default)s)")
    parser.add_argument("--workers", type=_count, default=0,
                        help="run on a local Dask cluster of this many workers; 0: dask's local threads (default: %(default)s)")
    device = parser.add_mutually_exclusive_group()
    device.add_argument("--cpu", dest="cpu", action="store_const", const=True, default=None,
                        help="pandas engine (default: cuDF when cuDF and a GPU are available)")
    device.add_argument("--gpu", dest="cpu", action="store_const", const=False, help="cuDF engine (an error when unavailable)")
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the inspector command.

    Examples
    --------
    >>> from tabflow.tools.inspector_script import build_parser
    >>> build_parser().parse_args(["--data_path", "x.csv", "-f", "csv", "-c", "c.json", "--cpu"]).cpu
    True
    """
    return add_arguments(argparse.ArgumentParser(prog="python -m tabflow.tools.inspector_script", description=DESCRIPTION))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command's arguments (``sys.argv`` when ``argv`` is None), as NVTabular's
    ``main(parse_args())`` reads them.

    Examples
    --------
    >>> from tabflow.tools.inspector_script import parse_args
    >>> parse_args(["-i", "data", "-c", "columns.json", "-f", "csv"]).format
    'csv'
    """
    return build_parser().parse_args(argv)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Inspect the dataset ``args`` name and write its description; returns the exit status.

    A problem with what the arguments name (a config file that is not a column config, a data
    path that cannot be read, a column the data does not have, an output path that is a
    directory) is reported through ``parser.error``: the message and exit status 2.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from tabflow.tools.inspector_script import build_parser, run
    >>> work = tempfile.mkdtemp()
    >>> pd.DataFrame({"x": [1.0, 2.0]}).to_parquet(os.path.join(work, "data.parquet"))
    >>> _ = open(os.path.join(work, "columns.json"), "w").write('{"conts": ["x"]}')
    >>> parser = build_parser()
    >>> args = parser.parse_args(["-i", os.path.join(work, "data.parquet"), "-c", os.path.join(work, "columns.json"),
    ...                           "-o", os.path.join(work, "info.json"), "--cpu"])
    >>> run(args, parser)
    wrote ... (2 rows: 1 continuous, 0 categorical, 0 label columns)
    0
    """
    from tabflow._json import read_json
    from tabflow.exceptions import LoadError, SaveError
    from tabflow.io.cluster import Distributed
    from tabflow.io.dataset import Dataset
    from tabflow.io.readers import DatasetReadError
    from tabflow.tools.dataset_inspector import SECTIONS, DatasetInspector

    try:
        columns = read_json(args.config_file, "column config")
    except LoadError as err:
        parser.error(str(err))
    example = '{"cats": [...], "conts": [...], "labels": [...]}'
    if not isinstance(columns, dict) or not all(
        isinstance(names, list) and all(isinstance(name, str) for name in names) for names in columns.values()
    ):
        parser.error(f"{args.config_file} must hold an object of column name lists such as {example}")
    unknown = sorted(set(columns) - set(SECTIONS))
    if unknown:
        parser.error(f"{args.config_file}: unknown column kinds {unknown}; expected {example}")
    try:
        dataset = Dataset(args.data_path, engine=args.format, part_mem_fraction=args.part_mem_frac, cpu=args.cpu)
    except DatasetReadError as err:
        parser.error(str(err))
    absent = [name for names in columns.values() for name in names if name not in dataset.schema.column_names]
    if absent:
        parser.error(
            f"{args.config_file} names columns that {args.data_path} does not have: {absent}; "
            f"its columns are {dataset.schema.column_names}"
        )
    cluster: contextlib.AbstractContextManager = contextlib.nullcontext()
    if args.workers:
        cluster = Distributed(cluster_type="cpu" if dataset.cpu else None, n_workers=args.workers)
    try:
        with cluster as running:
            client = getattr(running, "client", None)
            document = DatasetInspector(client=client).inspect(dataset, columns, args.output_file)
    except (SaveError, ValueError) as err:
        parser.error(str(err))
    print(
        f"wrote {args.output_file} ({document['num_rows']} rows: {len(document['conts'])} continuous, "
        f"{len(document['cats'])} categorical, {len(document['labels'])} label columns)"
    )
    return 0


def main(argv: Sequence[str] | argparse.Namespace | None = None) -> int:
    """Run the inspector command; returns the exit status.

    Examples
    --------
    >>> import json, os, tempfile
    >>> import pandas as pd
    >>> from tabflow.tools.inspector_script import main
    >>> work = tempfile.mkdtemp()
    >>> pd.DataFrame({"x": [1.0, 2.0], "y": [0, 1]}).to_parquet(os.path.join(work, "data.parquet"))
    >>> _ = open(os.path.join(work, "columns.json"), "w").write('{"conts": ["x"], "cats": [], "labels": ["y"]}')
    >>> out = os.path.join(work, "info.json")
    >>> main(["-i", os.path.join(work, "data.parquet"), "-c", os.path.join(work, "columns.json"), "-o", out, "--cpu"])
    wrote ... (2 rows: 1 continuous, 0 categorical, 1 label columns)
    0
    >>> json.load(open(out))["conts"]["x"]["max_val"]
    2.0
    """
    parser = build_parser()
    args = argv if isinstance(argv, argparse.Namespace) else parser.parse_args(argv)
    return run(args, parser)


if __name__ == "__main__":
    sys.exit(main())
