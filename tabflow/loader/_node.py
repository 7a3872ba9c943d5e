"""The contract of the loader's parts (as torchdata's nodes): ``reset``, ``next``,
``get_state`` and ``shutdown``.

A part takes its upstream part as an argument and is an iterator over its items. ``reset``
starts it over, from the beginning or from a state that an earlier ``get_state`` returned
(a flat dict of plain values, so a loader can save it with a checkpoint); ``shutdown``
releases what it holds (threads, open files) and passes the call upstream.

Examples
--------
>>> from tabflow.loader._node import Node
>>> class Count(Node):
...     def reset(self, initial_state=None):
...         self.n = (initial_state or {}).get("n", 0)
...     def next(self):
...         if self.n == 3:
...             raise StopIteration
...         self.n += 1
...         return self.n
...     def get_state(self):
...         return {"n": self.n}
>>> counter = Count()
>>> counter.reset()
>>> list(counter), counter.get_state()
([1, 2, 3], {'n': 3})
>>> counter.reset({"n": 1})
>>> list(counter)
[2, 3]
"""

from __future__ import annotations

from typing import Any, Callable, Generic, Iterable, Iterator, Mapping, TypeVar

__all__ = ["Node", "FromIterable"]

T = TypeVar("T")


class Node(Generic[T]):
    """One part of the pipeline; subclasses implement :meth:`reset` and :meth:`next`."""

    def reset(self, initial_state: Mapping[str, Any] | None = None) -> None:
        """Start over: from the beginning, or from ``initial_state``."""
        raise NotImplementedError

    def next(self) -> T:
        """The next item; ``StopIteration`` at the end."""
        raise NotImplementedError

    def get_state(self) -> dict[str, Any]:
        """Where the part stands, for :meth:`reset`."""
        return {}

    def shutdown(self) -> None:
        """Release threads and files; idempotent. A later :meth:`reset` starts over."""

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        return self.next()


class FromIterable(Node[T]):
    """A source over ``make()``, a new iterable per reset; its state counts the items.

    Examples
    --------
    >>> from tabflow.loader._node import FromIterable
    >>> source = FromIterable(lambda: "abc")
    >>> source.reset({"items": 1})
    >>> list(source)
    ['b', 'c']
    """

    def __init__(self, make: Callable[[], Iterable[T]]) -> None:
        self.make = make
        self._items: Iterator[T] = iter(())
        self._count = 0

    def reset(self, initial_state: Mapping[str, Any] | None = None) -> None:
        self.shutdown()
        self._items, self._count = iter(self.make()), 0
        for _ in range(int((initial_state or {}).get("items", 0))):
            self.next()

    def next(self) -> T:
        item = next(self._items)
        self._count += 1
        return item

    def get_state(self) -> dict[str, Any]:
        return {"items": self._count}

    def shutdown(self) -> None:
        close = getattr(self._items, "close", None)
        if close is not None:
            close()
