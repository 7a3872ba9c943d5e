"""The ``tabflow`` command line (also ``python -m tabflow``).

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
    return parser


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
    message says what to install), 2 for a usage error (as argparse does).

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
