"""The ``tabflow`` command line (also ``python -m tabflow``).

``tabflow demo`` runs the main job end to end, ``tabflow inspect`` describes a dataset's
columns as JSON and ``tabflow generate`` writes synthetic parquet files that follow such a
description (or, with ``--criteo``, a Criteo-like click log of a chosen shape);
``tabflow COMMAND --help`` describes each.

Examples
--------
>>> from tabflow.cli import build_parser
>>> args = build_parser().parse_args(["demo", "--rows", "1000", "--cpu"])
>>> args.rows, args.cpu, args.batch_size
(1000, True, 65536)
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

__all__ = ["main", "build_parser"]


def _positive_int(text: str) -> int:
    value = int(text.replace("_", ""))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tabflow`` command.

    Examples
    --------
    >>> from tabflow.cli import build_parser
    >>> build_parser().parse_args(["demo", "--rows", "20000"]).rows
    20000
    """
    from tabflow import __version__

    parser = argparse.ArgumentParser(
        prog="tabflow",
        description="GPU/CPU dataframe ETL and asynchronous PyTorch data loading for recommender and CTR data.",
    )
    parser.add_argument("--version", action="version", version=f"tabflow {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="generate a Criteo-like click log, run the ETL workflow and train a TabularModel",
        description=(
            "Generate a synthetic Criteo-like click log (or read real Criteo day files), fit and apply "
            "the Criteo ETL workflow, stream the result through TorchAsyncItr into fastai's TabularModel, "
            "and print ETL, loader and training rows/s and the validation AUC. A PNG of the training "
            "loss curve is saved in the work directory."
        ),
    )
    demo.add_argument("--rows", type=_positive_int, default=2_000_000, help="rows of synthetic data to generate (default: %(default)s)")
    demo.add_argument(
        "--criteo-dir", metavar="PATH", default=None,
        help="directory (or glob) of real Criteo day files in raw text format, used instead of synthetic data",
    )
    demo.add_argument("--workdir", default="demo_output", help="where data, outputs and the loss plot go (default: %(default)s)")
    demo.add_argument("--batch-size", type=_positive_int, default=65536, help="rows per training batch (default: %(default)s)")
    demo.add_argument("--epochs", type=_positive_int, default=1, help="training epochs (default: %(default)s)")
    demo.add_argument("--freq-threshold", type=int, default=15, help="Categorify: categories seen fewer times share one index (default: %(default)s)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the data, the shuffles and the model (default: %(default)s)")
    demo.add_argument("--no-progress", action="store_true", help="hide progress bars")
    device = demo.add_mutually_exclusive_group()
    device.add_argument("--cpu", dest="cpu", action="store_const", const=True, default=None,
                        help="pandas ETL and CPU training (default: GPU when cuDF and CUDA are available)")
    device.add_argument("--gpu", dest="cpu", action="store_const", const=False,
                        help="cuDF ETL and CUDA training (an error when unavailable)")
    demo.set_defaults(handler=_run_demo)

    from tabflow.tools import inspector_script

    inspect = commands.add_parser(
        "inspect",
        help="describe a dataset's columns as JSON (the description `tabflow generate` reads)",
        description=(
            inspector_script.DESCRIPTION + " Example: tabflow inspect -i data/ -c columns.json -o dataset_info.json, "
            'where columns.json holds {"cats": ["C1"], "conts": ["I1"], "labels": ["label"]}.'
        ),
    )
    inspector_script.add_arguments(inspect)
    inspect.set_defaults(handler=lambda args: inspector_script.run(args, inspect))

    generate = commands.add_parser(
        "generate",
        help="write synthetic parquet files that follow a dataset description, or a Criteo-like click log",
        usage="tabflow generate DESCRIPTION OUTPUT [options]\n       tabflow generate --criteo OUTPUT [options]",
        description=(
            "Generate synthetic data shaped like a description (the JSON `tabflow inspect` writes: column dtypes, "
            "ranges, cardinalities, string sizes, list lengths, null shares) and write it as "
            "dataset_<i>.parquet files in OUTPUT. Example: tabflow generate dataset_info.json synthetic/ --rows 100000. "
            "With --criteo, write a synthetic Criteo-like click log (tabflow.datasets.write_criteo) as part_<k>.parquet "
            "files instead, its ids spelled as --ids says, its nulls placed as --nulls says, --multi-hot columns as lists "
            "of 1 to 20 ids. Example: tabflow generate --criteo urls/ --rows 5000000 --ids text --files 10"
        ),
    )
    generate.add_argument("description", metavar="DESCRIPTION", nargs="?",
                          help="the JSON description to follow (with --criteo: none, only OUTPUT)")
    generate.add_argument("output", metavar="OUTPUT", nargs="?", help="directory for the parquet files (new or empty)")
    generate.add_argument("--rows", type=_positive_int, default=None,
                          help="rows to generate (default: the description's num_rows; with --criteo 1000000)")
    generate.add_argument("--distribution", choices=["uniform", "powerlaw"], default="uniform",
                          help="where values are drawn from (default: %(default)s)")
    generate.add_argument("--alpha", type=float, default=0.1, help="exponent of the power-law distribution (default: %(default)s)")
    generate.add_argument("--entries", action="store_true",
                          help="categorical columns as strings of the described sizes (default: integer codes)")
    generate.add_argument("--seed", type=int, default=0, help="seed of every value drawn (default: %(default)s)")
    generate.add_argument("--file-memory-fraction", type=_fraction, default=0.8, dest="gpu_frac", metavar="FRACTION",
                          help="fraction of the engine's memory one file may take (default: %(default)s)")
    device = generate.add_mutually_exclusive_group()
    device.add_argument("--cpu", dest="cpu", action="store_const", const=True, default=None,
                        help="pandas engine (default: cuDF when cuDF and a GPU are available)")
    device.add_argument("--gpu", dest="cpu", action="store_const", const=False, help="cuDF engine (an error when unavailable)")
    from tabflow.datasets import criteo

    click_log = generate.add_argument_group("a Criteo-like click log (--criteo)")
    click_log.add_argument("--criteo", action="store_true",
                           help="write a synthetic Criteo-like click log instead of following a description")
    click_log.add_argument("--ids", choices=criteo.ID_FORMS, default=None,
                           help="how the categories are spelled: 8 hex digits, URLs and user agents of 30-80 bytes, "
                                "or int64 ids (default: hex)")
    click_log.add_argument("--nulls", choices=criteo.NULL_FORMS, default=None,
                           help="Criteo's null rates, or 60-90%% nulls in every other column (default: criteo)")
    click_log.add_argument("--multi-hot", default=None, metavar="COLUMNS",
                           help="comma-separated categorical columns (C1..C26) held as lists of 1 to 20 ids a row")
    click_log.add_argument("--files", type=_positive_int, default=None, help="parquet files (default: 1)")
    click_log.add_argument("--row-group-size", type=_positive_int, default=None, metavar="ROWS",
                           help="rows per parquet row group (default: 524288)")
    click_log.add_argument("--cardinality-scale", type=float, default=None, metavar="SCALE",
                           help="multiplies every vocabulary size (default: 1)")
    generate.set_defaults(handler=lambda args: _run_generate(args, generate))
    return parser


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], got {text}")
    return value


#: The options of ``tabflow generate`` that only a Criteo click log takes, and those that only
#: a description takes (with their defaults).
_CRITEO_OPTIONS = ("ids", "nulls", "multi_hot", "files", "row_group_size", "cardinality_scale")
_DESCRIPTION_OPTIONS = {"distribution": "uniform", "alpha": 0.1, "entries": False, "gpu_frac": 0.8, "cpu": None}


def _option_name(dest: str) -> str:
    return "--file-memory-fraction" if dest == "gpu_frac" else "--" + dest.replace("_", "-")


def _is_free_output(path: str) -> bool:
    import os

    return not (os.path.isfile(path) or (os.path.isdir(path) and os.listdir(path)))


def _run_generate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.criteo:
        return _run_generate_criteo(args, parser)
    given = [_option_name(name) for name in _CRITEO_OPTIONS if getattr(args, name) is not None]
    if given:
        parser.error(f"{', '.join(given)} describe a Criteo click log: add --criteo (and name only OUTPUT)")
    if args.description is None or args.output is None:
        parser.error("name a DESCRIPTION and an OUTPUT directory (or --criteo and an OUTPUT directory)")
    return _run_generate_description(args, parser)


def _run_generate_criteo(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import os

    from tabflow.datasets import write_criteo

    given = [_option_name(name) for name, default in _DESCRIPTION_OPTIONS.items() if getattr(args, name) != default]
    if given:
        parser.error(f"{', '.join(given)} apply to a DESCRIPTION, not to --criteo")
    if args.description is None or args.output is not None:
        parser.error("with --criteo, name only the OUTPUT directory (no DESCRIPTION)")
    output = args.description
    if not _is_free_output(output):
        parser.error(f"{output} exists and is not an empty directory: name a new or empty directory")
    rows = args.rows if args.rows is not None else 1_000_000
    multi_hot = [name.strip() for name in args.multi_hot.split(",") if name.strip()] if args.multi_hot else []
    try:
        files = write_criteo(
            output, rows, num_files=args.files or 1, seed=args.seed, cardinality_scale=args.cardinality_scale or 1.0,
            row_group_size=args.row_group_size, ids=args.ids or "hex", nulls=args.nulls or "criteo", multi_hot=multi_hot,
            num_workers=os.cpu_count() or 1,
        )
    except ValueError as err:
        parser.error(str(err))
    print(f"wrote {rows} rows to {len(files)} file(s) in {output}")
    return 0


def _run_generate_description(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from tabflow._json import read_json
    from tabflow.exceptions import LoadError
    from tabflow.tools.data_gen import DatasetGen, PowerLawDistro, UniformDistro, _get_cols_from_schema

    try:
        description = read_json(args.description, "dataset description")
    except LoadError as err:
        parser.error(str(err))
    if not isinstance(description, dict):
        parser.error(f"{args.description} must hold an object such as tabflow inspect writes: "
                     '{"num_rows": N, "conts": {...}, "cats": {...}, "labels": {...}}')
    rows = args.rows if args.rows is not None else description.get("num_rows")
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
        parser.error(f"{args.description} gives no positive num_rows ({rows!r}): pass --rows N")
    try:
        cols = _get_cols_from_schema(description)
    except (TypeError, ValueError) as err:
        parser.error(f"{args.description} is not a dataset description: {err}")
    if not any(cols.values()):
        parser.error(f"{args.description} describes no columns")
    # Generating into a directory that holds other files would mix two datasets.
    if not _is_free_output(args.output):
        parser.error(f"{args.output} exists and is not an empty directory: name a new or empty directory")
    distribution = PowerLawDistro(args.alpha) if args.distribution == "powerlaw" else UniformDistro()
    try:
        generator = DatasetGen(distribution, gpu_frac=args.gpu_frac, seed=args.seed, cpu=args.cpu)
    except ImportError as err:
        print(f"tabflow generate: {err}", file=sys.stderr)
        return 1
    try:
        files = generator.full_df_create(rows, cols, entries=args.entries, output=args.output)
    except ValueError as err:
        parser.error(f"cannot generate from {args.description}: {err}")
    print(f"wrote {rows} rows to {len(files)} file(s) in {args.output}")
    return 0


def _run_demo(args: argparse.Namespace) -> int:
    from tabflow.demo import DemoConfig, check_requirements, run_demo

    try:
        check_requirements(args.cpu)
    except ImportError as err:
        # A missing optional package is a set-up step for the user, not a crash.
        print(f"tabflow demo: {err}", file=sys.stderr)
        return 1

    config = DemoConfig(
        rows=args.rows, criteo_dir=args.criteo_dir, workdir=args.workdir, batch_size=args.batch_size,
        epochs=args.epochs, cpu=args.cpu, seed=args.seed, freq_threshold=args.freq_threshold,
        progress=not args.no_progress,
    )
    run_demo(config)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tabflow`` command with ``argv`` (default: the process arguments).

    Returns the exit status: 0 on success, 1 when a package the command needs is missing (the
    message says what to install), 2 for a usage error (as argparse does), which includes
    arguments naming files that cannot be used (a missing or malformed description, a column
    the data does not have).

    Examples
    --------
    >>> from tabflow.cli import main
    >>> main([])  # no subcommand: prints the usage to stderr
    2
    """
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
