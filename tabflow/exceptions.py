"""Errors of saving and loading, in one place every layer can import.

Examples
--------
>>> from tabflow.exceptions import LoadError
>>> issubclass(LoadError, ValueError)
True
"""

from __future__ import annotations

__all__ = ["SaveError", "LoadError", "UntrustedCodeError", "MissingColumnError"]


class SaveError(ValueError):
    """A parameter, state value or target path that tabflow cannot save to safely."""


class LoadError(ValueError):
    """A saved workflow or schema that cannot be loaded: unknown op, unregistered function, a
    file outside the saved directory, a malformed or oversized document, a missing file."""


class UntrustedCodeError(RuntimeError):
    """Code saved with a workflow was asked to run, but the workflow was loaded untrusted."""


class MissingColumnError(KeyError, ValueError):
    """A column the graph, an op or a request reads is not in the data or the schema.

    merlin raises ``ValueError`` where a node's input lacks a column and tabflow used to raise
    ``KeyError``; being both keeps the scripts that catch either one working.

    Examples
    --------
    >>> from tabflow.exceptions import MissingColumnError
    >>> err = MissingColumnError("column 'x' is missing")
    >>> isinstance(err, KeyError), isinstance(err, ValueError), str(err)
    (True, True, "column 'x' is missing")
    """

    def __str__(self) -> str:
        # KeyError quotes its argument as a dictionary key; this one is a sentence.
        return str(self.args[0]) if self.args else ""
