"""Print a pip constraints file that pins every declared floor exactly.

Reads ``[project]`` of pyproject.toml: the base dependencies plus the extras named on the
command line. Each ``name>=X`` becomes ``name==X``, so an environment installed with
``pip install -c`` this output runs on the oldest releases the metadata admits; a requirement
without a floor is left free. A floor must name a release that exists (``2.3.1``, not ``2.3``
when no 2.3.0 was published), or pip finds nothing to install.

An argument ``name==version`` pins that package to that version instead of its floor (or adds
the pin where it has none): ``make test-min`` takes PyTorch this way, because the only builds of
torch at its floor on PyPI for Linux x86-64 carry CUDA's libraries, several GB that a CPU
machine has no use for. ``make test-min-torch`` passes none and tests torch's floor too.

Usage: python .ci/min_constraints.py [EXTRA ...] [NAME==VERSION ...] > constraints.txt
"""

from __future__ import annotations

import os
import re
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# name, optional [extras], then the version specifiers; environment markers are not used here.
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*?)\s*$")


def floors(extras: list[str]) -> dict[str, str]:
    """``{distribution name: lowest declared version}`` for the base dependencies and ``extras``."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as file:
        project = tomllib.load(file)["project"]
    unknown = sorted(set(extras) - set(project["optional-dependencies"]))
    if unknown:
        raise SystemExit(f"pyproject.toml has no extra {unknown}; it has {sorted(project['optional-dependencies'])}")
    requirements = project["dependencies"] + [r for extra in extras for r in project["optional-dependencies"][extra]]
    pinned: dict[str, str] = {}
    for requirement in requirements:
        name, specifiers = REQUIREMENT.match(requirement).groups()
        lowest = re.search(r">=\s*([0-9][0-9A-Za-z.]*)", specifiers)
        if lowest is None:
            continue
        key = _normalised(name)
        # Two extras may declare the same package; the higher floor is the one both accept.
        if key not in pinned or _version_key(lowest.group(1)) > _version_key(pinned[key]):
            pinned[key] = lowest.group(1)
    return pinned


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def pins(arguments: list[str]) -> dict[str, str]:
    """The floors of the extras named in ``arguments``, with their ``name==version`` pins applied."""
    extras = [argument for argument in arguments if "==" not in argument]
    pinned = floors(extras)
    for argument in arguments:
        if "==" in argument:
            name, _, version = argument.partition("==")
            if not name.strip() or not version.strip():
                raise SystemExit(f"{argument!r} is not a pin; write it as name==version, e.g. torch==2.13.0")
            pinned[_normalised(name.strip())] = version.strip()
    return pinned


if __name__ == "__main__":
    for name, version in sorted(pins(sys.argv[1:]).items()):
        print(f"{name}=={version}")
