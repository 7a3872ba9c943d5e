"""Print a pip constraints file that pins every declared floor exactly.

Reads ``[project]`` of pyproject.toml: the base dependencies plus the extras named on the
command line. Each ``name>=X`` becomes ``name==X``, so an environment installed with
``pip install -c`` this output runs on the oldest releases the metadata admits; a requirement
without a floor is left free. A floor must name a release that exists (``2.3.1``, not ``2.3``
when no 2.3.0 was published), or pip finds nothing to install.

Usage: python .ci/min_constraints.py [EXTRA ...] > constraints.txt
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
        key = re.sub(r"[-_.]+", "-", name).lower()
        # Two extras may declare the same package; the higher floor is the one both accept.
        if key not in pinned or _version_key(lowest.group(1)) > _version_key(pinned[key]):
            pinned[key] = lowest.group(1)
    return pinned


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


if __name__ == "__main__":
    for name, version in sorted(floors(sys.argv[1:]).items()):
        print(f"{name}=={version}")
