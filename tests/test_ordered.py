"""checkfu_fast.ordered: items in input order, the waiting ones bounded in bytes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from checkfu_fast.ordered import ordered

SIZES = {f"f{i}": [(i * 7 + k * 3) % 9 + 1 for k in range(12)] for i in range(6)}


def _produce(
    held: list[int], lock: threading.Lock
) -> Callable[[str, Callable[[tuple[str, int, int]], None]], None]:
    def produce(name: str, put: Callable[[tuple[str, int, int]], None]) -> None:
        for k, size in enumerate(SIZES[name]):
            put((name, k, size))
            with lock:  # handed over and not read yet
                held[0] += size
                held[1] = max(held[1], held[0])

    return produce


@pytest.mark.parametrize("jobs", [1, 2, 3, 8])
@pytest.mark.parametrize("budget", [1, 10, 40])
def test_items_in_input_order_and_bytes_bounded(jobs: int, budget: int) -> None:
    held, lock = [0, 0], threading.Lock()
    got = []
    for path, item in ordered(
        list(SIZES), jobs, _produce(held, lock), budget=budget, cost=lambda it: it[2]
    ):
        assert not isinstance(item, BaseException)
        assert item[0] == path
        got.append(item[:2])
        with lock:
            held[0] -= item[2]
    assert got == [(name, k) for name in SIZES for k in range(len(SIZES[name]))]
    # at most the budget, plus the one item the file being read may always hand over
    assert held[1] <= max(budget, 0) + max(max(s) for s in SIZES.values())


def test_a_producer_error_ends_its_file_only() -> None:
    def produce(name: str, put: Callable[[bytes], None]) -> None:
        put(name.encode())
        if name == "b":
            raise OSError(2, "gone", name)
        put(b"end")

    got = [(p, it) for p, it in ordered(["a", "b", "c"], 2, produce, budget=4)]
    assert [p for p, _ in got] == ["a", "a", "b", "b", "c", "c"]
    assert isinstance(got[3][1], OSError)
    assert [it for _, it in got if not isinstance(it, BaseException)] == [
        b"a", b"end", b"b", b"c", b"end"
    ]  # fmt: skip


def test_closing_stops_every_producer() -> None:
    started = threading.Event()

    def produce(name: str, put: Callable[[bytes], None]) -> None:
        started.set()
        while True:  # endless: only the consumer going away stops it
            put(b"x" * 10)

    before = threading.active_count()
    gen = ordered(["a", "b", "c"], 3, produce, budget=25)
    assert next(gen) == ("a", b"x" * 10)
    assert started.wait(5)
    gen.close()  # waits for the threads
    assert threading.active_count() == before


@pytest.mark.parametrize(("jobs", "ahead"), [(1, None), (2, None), (2, 4), (3, 7)])
def test_keys_taken_lazily_at_most_ahead_started(jobs: int, ahead: int | None) -> None:
    # a generator of keys (the CLI plans a file's ranges as they are taken) is read only as
    # far as the keys started and not read to their end allow
    taken: list[int] = []

    def keys() -> Iterator[int]:
        for k in range(20):
            taken.append(k)
            yield k

    def produce(key: int, put: Callable[[int], None]) -> None:
        put(key)
        put(-key)

    got = []
    for key, item in ordered(keys(), jobs, produce, budget=1, cost=lambda it: 1, ahead=ahead):
        assert len(taken) <= key + (jobs if ahead is None else ahead)
        got.append((key, item))
    assert got == [(k, x) for k in range(20) for x in (k, -k)]
