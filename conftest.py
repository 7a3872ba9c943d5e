"""Settings for every test run from this checkout: the doctests under tabflow/ and tests/.

A loader thread that hangs would hang the whole run, so each test gets a time limit where
pytest-timeout is installed (the ``dev`` extra). A plain ``pytest`` without the plugin still
runs: the limit is applied here rather than through ``--timeout`` in ``addopts``.
"""

from __future__ import annotations

import os

import pytest

#: Seconds a single test may run unless ``--timeout``, ``PYTEST_TIMEOUT``, the ``timeout`` ini
#: option or a ``@pytest.mark.timeout`` says otherwise.
DEFAULT_TEST_TIMEOUT_S = 600


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # tryfirst: pytest-timeout reads its settings in its own pytest_configure, after this one.
    if not config.pluginmanager.hasplugin("timeout"):
        return
    chosen = config.getoption("timeout") is not None or os.environ.get("PYTEST_TIMEOUT") or config.getini("timeout")
    if not chosen:
        config.option.timeout = DEFAULT_TEST_TIMEOUT_S
