"""Files worked on in parallel, their results read in input order, memory bounded by a window.

``ordered(paths, jobs, produce)`` runs ``produce(path, put)`` on ``jobs`` threads, at most
``jobs`` files at a time, and yields ``(path, item)`` for every item a producer ``put``, file
after file in input order and each file's items in their order. A producer blocks once
``depth`` of its items wait to be read, so memory holds at most ``jobs * depth`` items (of the
window of files being read), never a whole file's output. The producers call into the core,
which releases the GIL, so the threads run on every core.

A producer's exception is yielded as the item of its file (after the items it put before it)
and ends that file; the other files go on. Closing the generator (an error or Ctrl-C in the
consumer) stops the producers at their next ``put`` and waits for them: no thread outlives it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

#: Items a file may have waiting before its producer blocks.
DEPTH = 4

_END = object()


class _Stopped(Exception):
    """The consumer went away: the producer stops."""


def ordered(
    paths: Sequence[str],
    jobs: int,
    produce: Callable[[str, Callable[[T], None]], None],
    depth: int = DEPTH,
) -> Iterator[tuple[str, T | BaseException]]:
    """See the module doc."""
    stop = threading.Event()
    queues: dict[int, queue.Queue[Any]] = {}

    def put_into(q: queue.Queue[Any], item: Any) -> None:
        while True:
            if stop.is_set():
                raise _Stopped
            try:
                q.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def run(i: int, q: queue.Queue[Any]) -> None:
        try:
            produce(paths[i], lambda item: put_into(q, item))
        except _Stopped:
            return
        except BaseException as exc:  # handed to the consumer, in order
            try:
                put_into(q, exc)
            except _Stopped:
                return
        try:
            put_into(q, _END)
        except _Stopped:
            return

    jobs = max(1, jobs)
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="checkfu-ordered") as pool:
        started = 0

        def start_until(k: int) -> None:
            nonlocal started
            while started < min(k, len(paths)):
                q: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))
                queues[started] = q
                pool.submit(run, started, q)
                started += 1

        try:
            start_until(jobs)
            for i, path in enumerate(paths):
                q = queues.pop(i)
                while True:
                    item = q.get()
                    if item is _END:
                        break
                    yield path, item
                    if isinstance(item, BaseException):
                        break
                start_until(i + 1 + jobs)
        finally:
            stop.set()
