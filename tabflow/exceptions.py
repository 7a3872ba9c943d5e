"""Errors of saving and loading, in one place every layer can import.

Examples
--------
>>> from tabflow.exceptions import LoadError
>>> issubclass(LoadError, ValueError)
True
"""

from __future__ import annotations

__all__ = ["SaveError", "LoadError", "UntrustedCodeError"]


class SaveError(ValueError):
    """A parameter, state value or target path that tabflow cannot save to safely."""


class LoadError(ValueError):
    """A saved workflow or schema that cannot be loaded: unknown op, unregistered function, a
    file outside the saved directory, a malformed or oversized document, a missing file."""


class UntrustedCodeError(RuntimeError):
    """Code saved with a workflow was asked to run, but the workflow was loaded untrusted."""
