"""A background thread that runs its source ahead of the consumer.

The thread puts the source's items into a bounded queue; a stop event ends it early; an
exception raised by the source travels through the queue as data and is re-raised,
unchanged, by :meth:`Prefetcher.next`. The state is the source's as of the item last
handed out (the thread may be further on).

Examples
--------
>>> from tabflow.loader._node import FromIterable
>>> from tabflow.loader._prefetch import Prefetcher
>>> prefetcher = Prefetcher(FromIterable(lambda: iter(range(3))))
>>> prefetcher.reset()
>>> list(prefetcher), prefetcher.get_state()
([0, 1, 2], {'items': 3})
>>> prefetcher.shutdown()
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Mapping

from tabflow.loader._node import Node

__all__ = ["Prefetcher"]

_END = object()
_POLL_S = 0.05


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetcher(Node[Any]):
    """Run ``source`` in a thread, keeping at most ``depth`` items ready.

    ``reset`` stops the thread of the previous run, resets the source (in the calling
    thread, so an error there is raised at once) and starts a new thread. ``shutdown``
    stops and joins the thread, then shuts the source down; it is idempotent.
    """

    def __init__(self, source: Node[Any], depth: int = 2, name: str = "tabflow-loader") -> None:
        self.source = source
        self.depth = max(1, depth)
        self.name = name
        self._queue: queue.Queue = queue.Queue(maxsize=self.depth)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._state: dict[str, Any] = {}

    def reset(self, initial_state: Mapping[str, Any] | None = None) -> None:
        self._stop_thread()
        self.source.reset(initial_state)
        self._state = self.source.get_state()
        self._stop = threading.Event()
        self._queue = queue.Queue(maxsize=self.depth)
        self._thread = threading.Thread(target=self._run, args=(self.source, self._queue, self._stop), name=self.name,
                                        daemon=True)
        self._thread.start()

    @staticmethod
    def _run(source: Node[Any], items: queue.Queue, stop: threading.Event) -> None:
        # A static method holding no reference to the prefetcher, so that an abandoned loader
        # can be collected (its finaliser then stops this thread).
        def put(item: Any) -> bool:
            # A timed put so that a consumer which stopped reading can still end the thread.
            while not stop.is_set():
                try:
                    items.put(item, timeout=_POLL_S)
                    return True
                except queue.Full:
                    continue
            return False

        try:
            while True:
                try:
                    item = source.next()
                except StopIteration:
                    break
                if not put((item, source.get_state())):
                    return
            put(_END)
        except BaseException as error:  # noqa: BLE001 - forwarded to the consumer as data
            put(_Failure(error))

    def next(self) -> Any:
        if self._thread is None:
            raise StopIteration
        while True:
            try:
                item = self._queue.get(timeout=_POLL_S * 2)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    if self._stop.is_set():
                        raise StopIteration from None
                    raise RuntimeError("the loader thread ended before finishing the epoch") from None
                continue
            if item is _END:
                raise StopIteration
            if isinstance(item, _Failure):
                raise item.error
            item, self._state = item
            return item

    def get_state(self) -> dict[str, Any]:
        return dict(self._state)

    def _stop_thread(self) -> None:
        self._stop.set()
        thread = self._thread
        while thread is not None and thread.is_alive():
            self._drain()
            thread.join(timeout=_POLL_S)
        self._drain()

    def _drain(self) -> None:
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass

    def shutdown(self) -> None:
        self._stop_thread()
        self.source.shutdown()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()
