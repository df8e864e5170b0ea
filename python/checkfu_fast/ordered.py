"""Units of work (files, ranges of files) done in parallel, their results read in input order,
memory bounded by a window.

``ordered(keys, jobs, produce, budget=B, cost=f)`` runs ``produce(key, put)`` on ``jobs``
threads and yields ``(key, item)`` for every item a producer ``put``, key after key in input
order and each key's items in their order. ``keys`` may be any iterable, taken lazily: a key is
taken (and its producer started) only when fewer than ``ahead`` keys (default ``jobs``) are
started and not read to their end, so a generator of keys can plan the next file's ranges while
the threads work. The items waiting to be read are bounded in bytes, not in number:
``cost(item)`` is an item's size, and a producer's ``put`` blocks while the items waiting (of
every key in the window) would exceed ``budget`` bytes. The one exception keeps the output
moving: the key being read may always hand over an item when none of its own is waiting. So at
most ``budget`` bytes plus one item wait, whatever ``jobs`` and the sizes, never a whole file's
output (besides the item each producer is building). Without ``budget``, at most ``depth`` items
per key wait.

The producers call into the core, which releases the GIL, so the threads run on every core.

A producer's exception is yielded as the item of its key (after the items it put before it)
and ends that key; the other keys go on. Closing the generator (an error or Ctrl-C in the
consumer) stops the producers at their next ``put`` and waits for them: no thread outlives it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
K = TypeVar("K")

#: Items a file may have waiting before its producer blocks (without a byte ``budget``).
DEPTH = 4

_END = object()
_NONE: Any = object()  # no key left


class _Stopped(Exception):
    """The consumer went away: the producer stops."""


class _Window:
    """The items waiting, per file, and their bytes; one lock and condition for all."""

    def __init__(self, depth: int, budget: int | None, cost: Callable[[Any], int]) -> None:
        self.cond = threading.Condition()
        self.queues: dict[int, deque[tuple[Any, int]]] = {}
        self.depth, self.budget, self.cost = max(1, depth), budget, cost
        self.waiting = 0  # bytes of the items waiting in every queue
        self.head = 0  # the file being read
        self.stopped = False

    def put(self, i: int, item: Any, final: bool = False) -> None:
        size = 0 if final or isinstance(item, BaseException) else max(0, self.cost(item))
        with self.cond:
            q = self.queues.get(i)
            if q is None:  # the consumer is done with this file (it ended on an exception)
                return
            while True:
                if self.stopped:
                    raise _Stopped
                if final or (i == self.head and not q):
                    break
                if self.budget is None:
                    if len(q) < self.depth:
                        break
                elif self.waiting + size <= self.budget:
                    break
                self.cond.wait()
            q.append((item, size))
            self.waiting += size
            self.cond.notify_all()

    def get(self, i: int) -> Any:
        with self.cond:
            if self.head != i:  # a producer waiting for its turn may hand over an item now
                self.head = i
                self.cond.notify_all()
            q = self.queues[i]
            while not q:
                self.cond.wait()
            item, size = q.popleft()
            self.waiting -= size
            self.cond.notify_all()
            return item

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


def ordered(
    keys: Iterable[K],
    jobs: int,
    produce: Callable[[K, Callable[[T], None]], None],
    depth: int = DEPTH,
    *,
    budget: int | None = None,
    cost: Callable[[T], int] = len,  # type: ignore[assignment]
    ahead: int | None = None,
) -> Iterator[tuple[K, T | BaseException]]:
    """See the module doc."""
    window = _Window(depth, budget, cost)

    def run(i: int, key: K) -> None:
        try:
            produce(key, lambda item: window.put(i, item))
        except _Stopped:
            return
        except BaseException as exc:  # handed to the consumer, in order
            try:
                window.put(i, exc)
            except _Stopped:
                return
        try:
            window.put(i, _END, final=True)
        except _Stopped:
            return

    jobs = max(1, jobs)
    ahead = max(1, jobs if ahead is None else ahead)
    todo = iter(keys)
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="checkfu-ordered") as pool:
        started: deque[tuple[int, K]] = deque()  # started, not read to their end, in order
        count = 0

        def start_more() -> None:
            nonlocal count
            while len(started) < ahead:
                key = next(todo, _NONE)
                if key is _NONE:
                    return
                with window.cond:
                    window.queues[count] = deque()
                pool.submit(run, count, key)
                started.append((count, key))
                count += 1

        try:
            start_more()
            while started:
                i, key = started[0]
                while True:
                    box = [window.get(i)]
                    if box[0] is _END:
                        break
                    failed = isinstance(box[0], BaseException)
                    yield key, box.pop()  # no reference kept here while the consumer works
                    if failed:
                        break
                with window.cond:
                    del window.queues[i]
                started.popleft()
                start_more()
        finally:
            window.stop()
