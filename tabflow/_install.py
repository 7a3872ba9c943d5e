"""What a user types to install an optional part of tabflow.

The import name is ``tabflow`` but the distribution is ``tabflow-etl`` (``tabflow`` on PyPI is
another project), so every message that says what to install is built here.

Examples
--------
>>> from tabflow._install import pip_install
>>> pip_install("fastai")
'pip install "tabflow-etl[fastai]"'
>>> pip_install("gpu-cu12", "fastai")
'pip install "tabflow-etl[gpu-cu12,fastai]"'
"""

from __future__ import annotations

import importlib.util
from typing import Iterable

__all__ = ["DISTRIBUTION", "pip_install", "missing_modules"]

#: The name tabflow is published under (``pip install tabflow-etl``).
DISTRIBUTION = "tabflow-etl"


def pip_install(*extras: str) -> str:
    """The pip command that installs tabflow with ``extras`` (quoted for any shell)."""
    return f'pip install "{DISTRIBUTION}[{",".join(extras)}]"'


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
