"""``numba.cuda`` reachable as an attribute of ``numba``, as merlin-core 23.08 left it.

``merlin.core.compat`` runs ``from numba import cuda`` when it is imported, which every
NVTabular and merlin import does. Scripts came to rely on the side effect: after
``import numba`` alone, ``numba.cuda.is_available()`` works, because importing a submodule
sets it as an attribute of its package (NVTabular's multi-GPU-or-CPU example picks its
cluster so). Plain ``import numba`` does not import ``numba.cuda``, so with tabflow in
merlin's place those scripts failed with ``module 'numba' has no attribute 'cuda'``.

tabflow does not import numba when it is imported (numba and ``numba.cuda`` take about a
fifth of a second, a sixth of ``import tabflow``). Instead, :func:`expose_numba_cuda` gives the
``numba`` module a module ``__getattr__`` (PEP 562) that imports ``numba.cuda`` the first
time ``numba.cuda`` is read and is never called again once the submodule is there. Where numba
is already imported, it is given at once; otherwise a finder at the front of
``sys.meta_path`` waits for ``numba`` to be imported, gives it then, and removes itself.
Nothing else about numba changes.

On a machine without a GPU, ``numba.cuda`` is numba's CUDA package all the same (numba
0.60-0.68 ship it; numba-cuda replaces it where installed) and ``is_available()`` is False.
A numba without ``numba.cuda`` gives an ``AttributeError``, as it always did, saying why.

Examples
--------
>>> import tabflow
>>> import numba
>>> callable(numba.cuda.is_available)  # False on a machine without a CUDA GPU
True
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
from types import ModuleType
from typing import Any, Callable, Sequence

__all__ = ["expose_numba_cuda"]

_PACKAGE = "numba"
_SUBMODULE = "cuda"


def expose_numba_cuda() -> None:
    """Make ``numba.cuda`` an attribute of ``numba`` on first read (see the module's text):
    at once where numba is imported, else when it is."""
    module = sys.modules.get(_PACKAGE)
    if module is not None:
        _give_attribute(module)
    elif not any(isinstance(finder, _NumbaFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _NumbaFinder())


def _give_attribute(module: ModuleType) -> None:
    namespace = vars(module)
    if _SUBMODULE in namespace or getattr(namespace.get("__getattr__"), "reads_numba_cuda", False):
        return
    module.__getattr__ = _attribute_reader(namespace.get("__getattr__"))  # type: ignore[method-assign]


def _attribute_reader(previous: Callable[[str], Any] | None) -> Callable[[str], Any]:
    def __getattr__(name: str) -> Any:
        # Called only for names the module does not have: importing the submodule sets it as
        # the package's attribute, so this runs once for ``cuda``.
        if name == _SUBMODULE:
            try:
                return importlib.import_module(f"{_PACKAGE}.{_SUBMODULE}")
            except ImportError as err:
                raise AttributeError(
                    f"module {_PACKAGE!r} has no attribute {_SUBMODULE!r}: importing {_PACKAGE}.{_SUBMODULE} "
                    f"failed ({err}); install numba-cuda for numba's CUDA target"
                ) from err
        if previous is not None:
            return previous(name)
        raise AttributeError(f"module {_PACKAGE!r} has no attribute {name!r}")

    __getattr__.reads_numba_cuda = True  # type: ignore[attr-defined]
    return __getattr__


class _NumbaFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``numba`` is imported, hands the import to the finder that
    finds it, and gives the module its attribute once it has run."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != _PACKAGE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        _remove(self)
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _AttributeGivingLoader(spec.loader)
        return spec


class _AttributeGivingLoader(importlib.abc.Loader):
    """``loader``, which after running the module gives it its attribute. The module sees
    its own loader as it always does (``__loader__``, ``__spec__.loader``)."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _give_attribute(module)


def _remove(finder: _NumbaFinder) -> None:
    try:
        sys.meta_path.remove(finder)
    except ValueError:  # another thread's import of numba removed it first
        pass
