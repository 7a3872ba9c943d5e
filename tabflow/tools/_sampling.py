"""Random integers within bounds and random unique strings, for :mod:`tabflow.tools.data_gen`.

Every function takes the numpy ``Generator`` to draw from, so one seed fixes all the data a
:class:`~tabflow.tools.data_gen.DatasetGen` makes.

Examples
--------
>>> import numpy as np
>>> from tabflow.tools._sampling import bounded_integers, random_entries
>>> rng = np.random.default_rng(0)
>>> lengths = bounded_integers(rng, 1000, 2, 5, mean=3.0)
>>> int(lengths.min()) >= 2, int(lengths.max()) <= 5, round(float(lengths.mean()), 1)
(True, True, 3.0)
>>> [len(entry) for entry in random_entries(rng, np.array([1, 3, 2]))]
[1, 3, 2]
"""

from __future__ import annotations

import string
from collections.abc import Callable

import numpy as np

__all__ = ["ALPHABET", "adjust_to_mean", "bounded_integers", "ensure_extremes", "fit_lengths_to_capacity", "random_entries"]

#: The characters of generated strings (NVTabular's: ASCII letters and digits).
ALPHABET = np.frombuffer((string.ascii_letters + string.digits).encode("ascii"), dtype=np.uint8)


def bounded_integers(
    rng: np.random.Generator,
    size: int,
    low: int,
    high: int,
    mean: float | None = None,
    draw: Callable[[int, float, float], np.ndarray] | None = None,
) -> np.ndarray:
    """``size`` int64 values in ``[low, high]``.

    With a ``mean`` strictly between the bounds the values are ``low + Binomial(high - low, p)``,
    whose expectation is ``mean``; otherwise they are the floor of ``draw(size, low, high + 1)``
    (a distribution's samples), or uniform when no ``draw`` is given.
    """
    if high < low:
        raise ValueError(f"the upper bound {high} is below the lower bound {low}")
    if mean is not None and low < mean < high:
        return low + rng.binomial(high - low, (mean - low) / (high - low), size).astype(np.int64)
    if draw is not None:
        values = np.floor(draw(size, low, high + 1))
    else:
        values = rng.integers(low, high + 1, size)
    # A distribution may return its upper bound itself; it belongs to the last integer.
    return np.clip(values, low, high).astype(np.int64)


def ensure_extremes(rng: np.random.Generator, values: np.ndarray, low: int, high: int, start: int = 0) -> np.ndarray:
    """Make ``low`` and ``high`` both occur in ``values[start:]`` (in place) and return one
    position holding each.

    A missing bound replaces the value at a random position, so the data reach the bounds a
    description gave (a statistics round trip then reports the same range). With fewer than
    two positions only ``low`` is ensured.
    """
    span = len(values) - start
    held: list[int] = []
    for target in (low, high) if span >= 2 else (low,) if span == 1 else ():
        found = np.flatnonzero(values[start:] == target)
        found = found[~np.isin(found + start, held)]
        if len(found):
            position = start + int(found[0])
        else:
            free = np.setdiff1d(np.arange(start, len(values)), held)
            position = int(rng.choice(free))
            values[position] = target
        held.append(position)
    return np.array(held, dtype=np.int64)


def adjust_to_mean(rng: np.random.Generator, values: np.ndarray, low: int, high: int, mean: float, keep: np.ndarray) -> None:
    """Step random values of ``values`` (in place, never those at positions ``keep``) by one
    until their sum is the nearest to ``mean * len(values)`` that ``[low, high]`` allows.

    A few dozen entries drawn around a mean can miss it by a whole unit; the vocabulary of a
    small categorical column should still have the average size it was described with.
    """
    difference = round(mean * len(values)) - int(values.sum())
    movable = np.ones(len(values), dtype=bool)
    movable[keep] = False
    while difference:
        step = 1 if difference > 0 else -1
        candidates = np.flatnonzero(movable & ((values < high) if step > 0 else (values > low)))
        if not len(candidates):
            return
        chosen = rng.choice(candidates, size=min(abs(difference), len(candidates)), replace=False)
        values[chosen] += step
        difference -= step * len(chosen)


def _capacity(length: int) -> int:
    return len(ALPHABET) ** length


def fit_lengths_to_capacity(lengths: np.ndarray, low: int, high: int) -> np.ndarray:
    """``lengths`` changed as little as possible so that no length is asked for more distinct
    strings than the alphabet has of it (there are only 62 of length 1).

    Raises
    ------
    ValueError
        When all lengths in ``[low, high]`` together cannot hold ``len(lengths)`` strings.
    """
    total = 0
    for length in range(low, high + 1):
        total += _capacity(length)
        if total >= len(lengths):
            break
    else:
        raise ValueError(
            f"only {total} distinct strings have between {low} and {high} characters, fewer than the "
            f"{len(lengths)} entries asked for; raise max_entry_size or lower the cardinality"
        )
    lengths = lengths.copy()
    # Excess moves up to longer strings, then (for what the longest cannot hold) down again.
    for order in (range(low, high), range(high, low, -1)):
        for length in order:
            where = np.flatnonzero(lengths == length)
            excess = len(where) - _capacity(length)
            if excess > 0:
                lengths[where[:excess]] = length + (1 if order.step > 0 else -1)
    return lengths


def _unique_strings(rng: np.random.Generator, count: int, length: int) -> np.ndarray:
    if length == 0:
        return np.array([""] * count, dtype=object)
    chosen = np.empty(0, dtype=f"S{length}")
    while len(chosen) < count:
        letters = ALPHABET[rng.integers(0, len(ALPHABET), size=(count - len(chosen), length))]
        merged = np.concatenate([chosen, np.ascontiguousarray(letters).view(f"S{length}").ravel()])
        # Keep the first copy of each string, in drawing order; draw again for the rest.
        _, first = np.unique(merged, return_index=True)
        chosen = merged[np.sort(first)]
    return chosen.astype(str).astype(object)


def random_entries(rng: np.random.Generator, lengths: np.ndarray) -> np.ndarray:
    """One string per entry of ``lengths``, of that many letters and digits, all distinct.

    Each length must leave room for its strings (see :func:`fit_lengths_to_capacity`).
    """
    entries = np.empty(len(lengths), dtype=object)
    for length in np.unique(lengths):
        where = np.flatnonzero(lengths == length)
        if len(where) > _capacity(int(length)):
            raise ValueError(f"{len(where)} distinct strings of {length} characters asked for; there are {_capacity(int(length))}")
        entries[where] = _unique_strings(rng, len(where), int(length))
    return entries
