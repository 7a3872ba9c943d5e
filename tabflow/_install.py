"""What a user types to install an optional part of tabflow.

The import name is ``tabflow`` but the distribution is ``tabflow-etl`` (``tabflow`` on PyPI is
another project), so every message that says what to install is built here. The command names
where this copy of tabflow came from, as pip recorded it: a checkout installed with ``pip
install -e`` is installed again from that checkout, a wheel or source archive from that file,
and only a copy installed from a package index by its name is told the name.

Examples
--------
>>> from tabflow._install import install_source, pip_install
>>> pip_install("fastai", source="tabflow-etl")
'pip install "tabflow-etl[fastai]"'
>>> pip_install("gpu-cu12", "fastai", source="/src/tabflow")
'pip install -e "/src/tabflow[gpu-cu12,fastai]"'
>>> pip_install("fastai", source="/wheels/tabflow_etl-0.1.0-py3-none-any.whl")
'pip install "/wheels/tabflow_etl-0.1.0-py3-none-any.whl[fastai]"'
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import os
from typing import Iterable
from urllib.parse import unquote, urlparse

__all__ = ["DISTRIBUTION", "install_source", "pip_install", "missing_modules"]

#: The distribution name in tabflow's metadata (what ``pip install`` takes from an index).
DISTRIBUTION = "tabflow-etl"


@functools.cache
def install_source() -> str:
    """Where this copy of tabflow was installed from: a checkout's directory, a wheel or archive
    file, or :data:`DISTRIBUTION` for a copy from a package index (or one pip did not record).

    A copy imported from a checkout (installed with ``pip install -e``, or run from the source
    tree) names that checkout; otherwise the ``direct_url.json`` pip writes into the installed
    metadata (PEP 610) names the file it was installed from.
    """
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if _is_checkout(checkout):
        return checkout
    for distribution in importlib.metadata.distributions(name=DISTRIBUTION):
        path = _recorded_file(distribution.read_text("direct_url.json"))
        if path is not None:
            return path
    return DISTRIBUTION


def _is_checkout(directory: str) -> bool:
    try:
        with open(os.path.join(directory, "pyproject.toml"), encoding="utf-8") as file:
            text = file.read()
    except OSError:
        return False
    return f'name = "{DISTRIBUTION}"' in text


def _recorded_file(recorded: str | None) -> str | None:
    """The local file or directory a PEP 610 record names, if it still exists."""
    if not recorded:
        return None
    try:
        url = urlparse(json.loads(recorded)["url"])
    except (ValueError, KeyError, TypeError):
        return None
    path = unquote(url.path)
    # Only a local file or directory that still exists can be named again; a VCS or remote
    # URL would need its credentials and revision, which the index name does not.
    return path if url.scheme == "file" and os.path.exists(path) else None


def pip_install(*extras: str, source: str | None = None) -> str:
    """The pip command that installs tabflow with ``extras`` (quoted for any shell).

    ``source`` defaults to :func:`install_source`; a directory is installed editable, as a
    checkout is.
    """
    source = install_source() if source is None else source
    editable = "-e " if source != DISTRIBUTION and not source.endswith((".whl", ".tar.gz", ".zip")) else ""
    return f'pip install {editable}"{source}[{",".join(extras)}]"'


def missing_modules(names: Iterable[str]) -> list[str]:
    """The top-level modules of ``names`` that cannot be imported, without importing any.

    Examples
    --------
    >>> from tabflow._install import missing_modules
    >>> missing_modules(["json", "no_such_module_here"])
    ['no_such_module_here']
    """
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            # A module blocked with sys.modules[name] = None, or a finder that refuses it.
            found = False
        if not found:
            missing.append(name)
    return missing
