"""Distributions of generated values: uniform and power law, sampled by their inverse CDF.

Re-exported by :mod:`tabflow.tools.data_gen`, where NVTabular scripts find them.

Examples
--------
>>> from tabflow.tools.data_gen import PowerLawDistro
>>> values = PowerLawDistro(0.5, seed=0).sample(5, min_val=0, max_val=100)
>>> bool(((values >= 0) & (values <= 100)).all())
True
"""

from __future__ import annotations

import abc
import functools
from typing import Any

import numpy as np

from tabflow.backends import backend_for, get_backend

__all__ = ["DISTRO_TYPES", "PowerLawDistro", "UniformDistro"]

# Values are drawn on the host; only finished frames move to an engine.
_HOST = get_backend("pandas")


class _InverseCdfDistro(abc.ABC):
    """A distribution on ``[min_val, max_val]`` sampled through its inverse CDF."""

    seed: Any

    def _generator(self) -> np.random.Generator:
        if isinstance(self.seed, np.random.Generator):
            return self.seed
        if getattr(self, "_rng", None) is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng

    def _check_range(self, min_val: float, max_val: float) -> None:
        if not max_val > min_val:
            raise ValueError(f"max_val ({max_val}) must be greater than min_val ({min_val})")

    @abc.abstractmethod
    def cdf(self, values: Any, min_val: float = 0, max_val: float = 1) -> np.ndarray:
        """The cumulative distribution function at ``values``."""

    @abc.abstractmethod
    def inverse_cdf(self, quantiles: np.ndarray, min_val: float = 0, max_val: float = 1) -> np.ndarray:
        """The values at the given quantiles (numbers in ``[0, 1)``)."""

    def sample(self, num_rows: int, min_val: float = 0, max_val: float = 1, rng: np.random.Generator | None = None) -> np.ndarray:
        """``num_rows`` float64 values drawn with ``rng`` (default: the distribution's own)."""
        self._check_range(min_val, max_val)
        generator = rng if rng is not None else self._generator()
        return self.inverse_cdf(generator.random(num_rows), min_val, max_val)

    def create_col(
        self, num_rows: int, dtype: Any = np.float32, min_val: float = 0, max_val: float = 1, rng: np.random.Generator | None = None
    ) -> Any:
        """A pandas Series of ``num_rows`` values between ``min_val`` and ``max_val`` as ``dtype``
        (an integer dtype truncates, as ``astype`` does)."""
        return _HOST.series(self.sample(num_rows, min_val, max_val, rng)).astype(dtype)

    def verify(self, pandas_series: Any, min_val: float = 0, max_val: float = 1) -> Any:
        """Kolmogorov-Smirnov test of the series' values against this distribution on
        ``[min_val, max_val]``: scipy's ``KstestResult`` (``statistic, pvalue = ...``).

        The series may be pandas or cuDF, or a list column (its elements are tested); nulls
        are left out.
        """
        from scipy import stats

        return stats.kstest(_host_numbers(pandas_series), functools.partial(self.cdf, min_val=min_val, max_val=max_val))


class UniformDistro(_InverseCdfDistro):
    """Values spread evenly between ``min_val`` and ``max_val``.

    Parameters
    ----------
    seed : int or numpy.random.Generator, optional
        Source of the values :meth:`create_col` draws on its own. :class:`DatasetGen` draws
        with its own generator instead, so its ``seed`` fixes everything it makes.

    Examples
    --------
    >>> from tabflow.tools.data_gen import UniformDistro
    >>> values = UniformDistro(seed=0).create_col(10_000, min_val=2, max_val=4)
    >>> str(values.dtype), bool(values.between(2, 4).all()), round(float(values.mean()), 1)
    ('float32', True, 3.0)
    >>> bool(UniformDistro().verify(values, min_val=2, max_val=4).pvalue > 0.01)
    True
    """

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        self.seed = seed

    def cdf(self, values: Any, min_val: float = 0, max_val: float = 1) -> np.ndarray:
        return np.clip((np.asarray(values, dtype=np.float64) - min_val) / (max_val - min_val), 0.0, 1.0)

    def inverse_cdf(self, quantiles: np.ndarray, min_val: float = 0, max_val: float = 1) -> np.ndarray:
        return min_val + quantiles * (max_val - min_val)


class PowerLawDistro(_InverseCdfDistro):
    """Values with density proportional to ``x ** -alpha`` between ``min_val`` and ``max_val``.

    Small values are the most frequent (for ``0 < alpha < 1``), as the ids of popular items
    are. Values are drawn by inverting the CDF
    ``F(x) = (x**g - min_val**g) / (max_val**g - min_val**g)`` with ``g = 1 - alpha``.

    Parameters
    ----------
    alpha : float
        The exponent, below 1 (``min_val`` must then be at least 0).
    seed : int or numpy.random.Generator, optional
        As for :class:`UniformDistro`.

    Examples
    --------
    >>> from tabflow.tools.data_gen import PowerLawDistro
    >>> skewed = PowerLawDistro(alpha=0.5, seed=0)
    >>> values = skewed.create_col(10_000, min_val=0, max_val=100)
    >>> round(float(values.mean()))  # (1 - alpha) / (2 - alpha) * 100 for the ideal law
    33
    >>> bool(skewed.verify(values, min_val=0, max_val=100).pvalue > 0.01)
    True
    """

    def __init__(self, alpha: float = 0.1, seed: int | np.random.Generator | None = None) -> None:
        self.alpha = alpha
        self.seed = seed

    def _check_range(self, min_val: float, max_val: float) -> None:
        super()._check_range(min_val, max_val)
        if not self.alpha < 1:
            raise ValueError(f"PowerLawDistro needs alpha below 1 (its density x**-alpha must integrate), got {self.alpha}")
        if min_val < 0:
            raise ValueError(f"PowerLawDistro draws values of at least 0; min_val is {min_val}")

    def cdf(self, values: Any, min_val: float = 0, max_val: float = 1) -> np.ndarray:
        exponent = 1.0 - self.alpha
        clipped = np.clip(np.asarray(values, dtype=np.float64), min_val, max_val)
        low, high = float(min_val) ** exponent, float(max_val) ** exponent
        return (clipped**exponent - low) / (high - low)

    def inverse_cdf(self, quantiles: np.ndarray, min_val: float = 0, max_val: float = 1) -> np.ndarray:
        exponent = 1.0 - self.alpha
        low, high = float(min_val) ** exponent, float(max_val) ** exponent
        return (low + quantiles * (high - low)) ** (1.0 / exponent)


#: Distribution classes by the names the JSON ``distros`` use.
DISTRO_TYPES = {"powerlaw": PowerLawDistro, "uniform": UniformDistro}


def _host_numbers(values: Any) -> np.ndarray:
    """Non-null values of a series (pandas or cuDF, elements of a list column) or an array,
    as float64 NumPy."""
    backend = backend_for(values)
    if not backend.is_series(values):
        values = backend.series(values)
    if backend.is_list_dtype(values.dtype):
        values = backend.list_values_series(values)
    numbers = backend.to_host(backend.to_numpy(values, "float64", na_value=np.nan))
    return numbers[~np.isnan(numbers)]
