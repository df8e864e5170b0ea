"""One live turn: validate, stage, run the harness, observe (docs/oneshot.md section 3).

``stream_turn`` runs the harness in a worker thread (the executor's selector loop) and hands
each observation to the consumer as soon as the stdout that causes it has been read;
``astream_turn`` is the same for asyncio; ``run_turn`` collects a ``stream_turn``.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import dataclasses
import functools
import os
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from .. import prices
from ..errors import ContractError
from ..export._live import live_export
from .contract import MALFORMED, validate_contract
from .executor import (
    STDERR_TAIL_BYTES,
    ProcessResult,
    StagedFile,
    make_staging_dir,
    minimal_environment,
    remove_staging_dir,
    run_process,
)
from .observe import REPLAY_CHUNK, Observation, Observer
from .plan import TurnRequest, check_request, plan_exchange
from .redact import redact_bytes, redactor

DEFAULT_DEADLINE_S = 600.0
DEFAULT_OUTPUT_CAP = 64 * 1024 * 1024
_END = object()
_EMPTY = object()
# a TurnResult keeps at most this many observations (about 1 KiB each for short messages):
# a flood of 781,628 observations held 680 MiB; the stream itself yields every one
MAX_KEPT_OBSERVATIONS = 10_000
# ... and at most this many bytes of them (observation_bytes: a message's content may be 256k
# characters, so 10,000 of them were up to 2.5 GB)
MAX_KEPT_BYTES = 16 << 20
# the observations queued for a TurnStream's consumer and not yet taken, at most; beyond, an
# observation is not queued (the ending always is) and counts in observations_skipped
QUEUE_MAX_OBSERVATIONS = 10_000
QUEUE_MAX_BYTES = 16 << 20
FOLD_QUEUE_BYTES = 2 << 20  # stdout read but not yet folded, at most (then: caught up after)
_POLL_S = 0.1  # the consumer's wait wakes this often (KeyboardInterrupt is seen promptly)
_EXIT_JOIN_S = 15.0  # at interpreter exit: wait this long for each cancelled turn


class _EitherFlag:
    """Set when either flag is set (the turn's own, the caller's ``cancel``)."""

    def __init__(self, mine: threading.Event, caller: Any) -> None:
        self._mine, self._caller = mine, caller

    def is_set(self) -> bool:
        return self._mine.is_set() or bool(self._caller.is_set())


@dataclass(frozen=True)
class TurnResult:
    observations: list[Observation]
    resulting_state: dict[str, Any]
    planned: dict[str, Any]  # the exchange as planned for the private staging dir
    staging_dir: str  # removed when the turn has ended
    process: ProcessResult  # stderr_tail and spawn_error_message redacted
    # a retryable failure's resume time as the stream stated it (error retryAt / retryAfterMs)
    retry_at: str | None = None  # RFC 3339 UTC
    retry_after_ms: int | None = None
    # observations the stream yielded that ``observations`` does not keep (beyond
    # MAX_KEPT_OBSERVATIONS or MAX_KEPT_BYTES: the first ones and the ending are kept)
    observations_dropped: int = 0
    # usage_totals of the turn's events ({"total", "byModel", "bySession"}): costUsd reported,
    # else estimated at the shipped prices (source says which)
    usage: dict[str, Any] | None = None
    session_id: str | None = None  # the CLI's session id (the events' last sessionId)
    stopped_by: str | None = None  # the TurnBudget limit that stopped the turn ("budget.usd", ...)
    # observations the stream did not yield: its consumer was QUEUE_MAX_OBSERVATIONS or
    # QUEUE_MAX_BYTES behind when they came (``result.observations`` may still hold them)
    observations_skipped: int = 0
    # a turn blocked on a human: the action of each observation.requires_action it ended with
    requires_action: list[dict[str, Any]] | None = None

    @functools.cached_property
    def exchange(self) -> dict[str, Any]:
        """The exchange: ``planned`` plus ``stdout`` (the kept stdout, decoded) and
        ``resulting_state``. Made on first access: until then the turn holds its stdout once
        (``process.stdout``), so a turn's peak memory is the output cap, not twice it."""
        exchange = {k: v for k, v in self.planned.items() if k != "resulting_state"}
        exchange["stdout"] = self.process.stdout.decode("utf-8", "replace")
        exchange["resulting_state"] = self.resulting_state
        return exchange


@dataclass(frozen=True)
class TurnBudget:
    """Limits of one live turn; ``None`` is no limit. The turn is stopped (interrupt ladder:
    SIGINT, SIGTERM, SIGKILL to its group) the moment a live reading crosses one, and ends
    ``finished``/``interrupted`` with ``TurnResult.stopped_by`` = ``"budget.<name>"``.

    - ``usd``: the cost so far (``usage_totals``' ``costUsd``: reported, else estimated at the
      shipped prices) exceeds it;
    - ``tokens``: input + output tokens of the usage events so far exceed it;
    - ``tool_calls``: more tool calls than this were observed;
    - ``repeats``: the same tool call (name and identical arguments) came this many times in a
      row (a runaway loop);
    - ``wall_s``: the turn ran longer than this many seconds.
    """

    usd: float | None = None
    tokens: int | None = None
    tool_calls: int | None = None
    repeats: int | None = None
    wall_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("usd", "tokens", "tool_calls", "repeats", "wall_s"):
            value = getattr(self, name)
            if value is None:
                continue
            whole = name in ("tokens", "tool_calls", "repeats")
            ok = isinstance(value, int) if whole else isinstance(value, (int, float))
            if not ok or isinstance(value, bool) or not value >= 0 or value != value:
                kind = "a whole number" if whole else "a number"
                raise ContractError(
                    MALFORMED,
                    f"/budget/{name}",
                    "budget.value",
                    f"budget {name} must be {kind} of at least 0 (or None), not {value!r}",
                )
        if self.repeats is not None and self.repeats < 1:
            raise ContractError(
                MALFORMED, "/budget/repeats", "budget.value", "budget repeats must be at least 1"
            )


_LIVE: set[TurnStream] = set()  # running turns (each removes itself when it ends)
_LIVE_LOCK = threading.Lock()


@atexit.register
def _cancel_live_turns() -> None:
    """Interpreter exit (an uncaught KeyboardInterrupt, ``sys.exit``) with turns still running:
    cancel them, so that their groups are killed and staging directories removed."""
    with _LIVE_LOCK:
        streams = list(_LIVE)
    for s in streams:
        s.cancel()
    for s in streams:
        s._thread.join(_EXIT_JOIN_S)


class TurnStream:
    """A running turn: iterate for its observations (the same dicts ``observe`` gives),
    ``cancel()`` from any thread, ``result`` once it has ended. Use it as a context manager:
    leaving the block cancels a turn that is still running and waits for its end."""

    def __init__(
        self,
        contract: Any,
        request: TurnRequest,
        *,
        env: Mapping[str, str] | None = None,
        deadline_s: float = DEFAULT_DEADLINE_S,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        dialect: Any = None,
        implementation: str = "native",
        entrypoint: str | None = None,
        entrypoint_prefix: tuple[str, ...] = (),
        redact: bool = True,
        budget: TurnBudget | None = None,
        cancel: Any = None,
        **executor_options: Any,
    ) -> None:
        contract = validate_contract(contract)
        if cancel is not None and not callable(getattr(cancel, "is_set", None)):
            raise TypeError(f"cancel must have is_set() (a threading.Event), not {cancel!r}")
        check_request(request)
        if budget is not None and not isinstance(budget, TurnBudget):
            raise ContractError(
                MALFORMED,
                "/budget",
                "budget.type",
                f"budget must be a TurnBudget, not a {type(budget).__name__}",
            )
        self._budget = budget
        self._stopped_by: str | None = None
        self._usage_events = 0
        self._cancel = threading.Event()
        self._caller_cancel = cancel  # the caller's flag (run_turn's cancel hook), or None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._observations: list[Observation] = []
        self._kept_bytes = 0
        self._dropped = 0
        self._waiting = 0  # observations queued for the consumer and not yet taken
        self._waiting_bytes = 0
        self._count_lock = threading.Lock()
        self.skipped = 0  # observations not queued: the consumer was too far behind
        self._result: TurnResult | None = None
        self._error: BaseException | None = None
        self._done = False
        self._waker: Callable[[], object] | None = None
        self._fold_wake = threading.Condition()
        self._chunks: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._behind = False
        self._read_done = False
        self._process: ProcessResult | None = None
        self._read_error: BaseException | None = None
        # the shipped prices (read once per process, by the observer's usage fold) are read
        # before the staging directory's lock holds a descriptor: a host short of descriptors
        # fails the turn where it spawns (host_resources), not here with a bare OSError
        prices.snapshot()
        root = make_staging_dir()
        try:
            exchange = plan_exchange(contract, request, staging_root=root)
            child_env = dict(env) if env is not None else minimal_environment(home=root)
            self._redact = redactor(child_env) if redact else None
            self._observer = Observer(
                contract,
                request,
                dialect=dialect,
                implementation=implementation,
                redact=self._redact,  # (None: nothing redacted)
            )
            live_export(self._observer, executor_options)  # trajectory=, otel= (docs/export.md)
            stdin = exchange["stdin"]
            self._root, self._exchange = root, exchange
            self._run_args: dict[str, Any] = {
                "entrypoint": entrypoint or contract["entrypoint"],
                "argv": [*entrypoint_prefix, *exchange["argv"]],
                "stdin": stdin.encode("utf-8", "surrogatepass") if stdin is not None else None,
                "staging_dir": root,
                "staged_files": [
                    StagedFile(f["path"][len(root) + 1 :], f["content"].encode("utf-8"))
                    for f in exchange["staged_files"]
                ],
                "cwd": contract.get("working_directory"),
                "env": child_env,
                "deadline_s": deadline_s,
                "output_cap": output_cap,
                "cleanup_dir": os.path.dirname(root),  # its private parent
                **executor_options,
            }
            self._thread = threading.Thread(target=self._work, name="checkfu-turn", daemon=True)
            with _LIVE_LOCK:
                _LIVE.add(self)
            self._thread.start()
        except BaseException:
            self._cancel.set()
            with _LIVE_LOCK:
                _LIVE.discard(self)
            if getattr(self, "_thread", None) is not None and self._thread.is_alive():
                self._thread.join()
            else:
                remove_staging_dir(root)
            raise

    # -- the worker thread ----------------------------------------------------------------------

    def _put(self, item: Any, size: int = 0, always: bool = True) -> None:
        """Queue ``item`` for the consumer; one that is not ``always`` (every observation but
        the ending) only while fewer than ``QUEUE_MAX_OBSERVATIONS`` observations and
        ``QUEUE_MAX_BYTES`` bytes wait: else it is skipped (counted in ``skipped``)."""
        with self._count_lock:
            if not always and (
                self._waiting >= QUEUE_MAX_OBSERVATIONS
                or self._waiting_bytes + size > QUEUE_MAX_BYTES
            ):
                self.skipped += 1
                return
            if item is not _END:
                self._waiting += 1
                self._waiting_bytes += size
            # (the sizes ride along so that the consumer's take frees exactly what was counted)
            self._queue.put((item, size) if item is not _END else item)
        waker = self._waker
        if waker is not None:
            with contextlib.suppress(RuntimeError):  # the event loop is closed
                waker()

    def _keep(self, obs: Observation, ending: bool = False) -> None:
        """Keep ``obs`` for the result: the first ones, at most ``MAX_KEPT_OBSERVATIONS - 1``
        of at most ``MAX_KEPT_BYTES`` (``observation_bytes``) in all, and the ending; the others
        are only yielded (and counted in ``observations_dropped``)."""
        size = observation_bytes(obs)
        if ending or (
            not self._dropped
            and len(self._observations) < MAX_KEPT_OBSERVATIONS - 1
            and self._kept_bytes + size <= MAX_KEPT_BYTES
        ):
            self._observations.append(obs)
            self._kept_bytes += size
        else:
            self._dropped += 1
        self._put(obs, size, always=ending)

    def _feed(self, data: bytes) -> None:
        for obs in self._observer.feed(data):
            self._keep(obs)
        if self._budget is not None and self._stopped_by is None:
            self._check_budget()

    def _check_budget(self) -> None:
        """Stop the turn when a live reading crosses a limit of the budget."""
        budget, o = self._budget, self._observer
        assert budget is not None
        if budget.tool_calls is not None and o.tool_calls > budget.tool_calls:
            return self._stop("budget.tool_calls")
        if budget.repeats is not None and o.repeats >= budget.repeats:
            return self._stop("budget.repeats")
        if (budget.usd is None and budget.tokens is None) or not o.usage_seen:
            return None
        total = o.usage["total"]
        tokens = (total.get("inputTokens") or 0) + (total.get("outputTokens") or 0)
        if budget.tokens is not None and tokens > budget.tokens:
            return self._stop("budget.tokens")
        cost = total.get("costUsd")  # reported, else estimated at the shipped prices
        if budget.usd is not None and cost is not None and cost > budget.usd:
            return self._stop("budget.usd")
        return None

    def _stop(self, limit: str) -> None:
        if self._stopped_by is None:
            self._stopped_by = limit
            self._observer.stop = limit
            self._cancel.set()

    # The executor's loop reads stdout at the pipe's speed: it never waits for the fold. Its
    # ``on_stdout`` only queues each kept chunk (at most ``FOLD_QUEUE_BYTES``); the fold runs
    # in this worker thread. When the queue is full the chunk is not queued and neither is any
    # later one (``_behind``): the fold is slower than the harness writes, and catches up from
    # the stored stdout (which holds every kept byte) once the process has ended. Nothing is
    # lost, the cap and the deadline act at the pipe's speed, and the queue adds at most
    # ``FOLD_QUEUE_BYTES`` to the stored stdout.

    def _queue_stdout(self, data: bytes) -> None:
        with self._fold_wake:
            if self._behind or self._queued + len(data) > FOLD_QUEUE_BYTES:
                self._behind = True
                return
            self._chunks.append(data)
            self._queued += len(data)
            self._fold_wake.notify()

    @property
    def _flag(self) -> Any:
        """The flag the executor watches: ``cancel()``, a budget's stop or the caller's own."""
        caller = self._caller_cancel
        if caller is None:
            return self._cancel
        return _EitherFlag(self._cancel, caller)

    def _read(self) -> None:
        try:
            self._process = run_process(
                on_stdout=self._queue_stdout, cancel=self._flag, **self._run_args
            )
        except BaseException as exc:
            self._read_error = exc
        finally:
            with self._fold_wake:
                self._read_done = True
                self._fold_wake.notify()

    def _fold_live(self) -> int:
        """Fold the queued chunks until the reader is done; the number of bytes folded."""
        folded = 0
        while True:
            with self._fold_wake:
                while not self._chunks and not self._read_done:
                    self._fold_wake.wait(_POLL_S)
                if not self._chunks:
                    return folded
                data = self._chunks.popleft()
                self._queued -= len(data)
            folded += len(data)
            self._feed(data)

    def _run(self) -> ProcessResult:
        """``run_process`` in a reader thread, the fold here; the process's result."""
        self._deadline = time.monotonic() + self._run_args["deadline_s"]
        reader = threading.Thread(target=self._read, name="checkfu-turn-reader", daemon=True)
        reader.start()
        try:
            folded = self._fold_live()
        finally:
            reader.join()
        if self._read_error is not None:
            raise self._read_error
        process = self._process
        assert process is not None
        stdout = memoryview(process.stdout)
        for at in range(folded, len(stdout), REPLAY_CHUNK):  # what the queue could not take
            if time.monotonic() >= self._deadline:
                # the fold is slower than the turn's time: the rest of stdout is not folded and
                # the turn ends past its deadline (a capped one still ends payload_too_large)
                return dataclasses.replace(process, timed_out=True)
            self._feed(stdout[at : at + REPLAY_CHUNK].tobytes())
        return process

    def _work(self) -> None:
        timer: threading.Timer | None = None
        if self._budget is not None and self._budget.wall_s is not None:
            timer = threading.Timer(self._budget.wall_s, self._stop, ("budget.wall_s",))
            timer.daemon = True
            timer.start()
        try:
            process = self._run()
            if timer is not None:
                timer.cancel()
            if self._redact is not None:  # before the ending quotes the stderr tail
                message = process.spawn_error_message
                tail = process.stderr_tail
                cut = len(tail) >= self._run_args.get("stderr_tail_bytes", STDERR_TAIL_BYTES)
                process = dataclasses.replace(
                    process,
                    stderr_tail=redact_bytes(tail, self._redact, cut=cut),
                    spawn_error_message=self._redact(message) if message is not None else None,
                )
            last = self._observer.finish(process)
            for i, obs in enumerate(last):  # the ending (or a blocked turn's actions) is kept
                blocked = obs["type"] == "observation.requires_action"
                self._keep(obs, ending=blocked or i == len(last) - 1)
            state = self._observer.state
            exchange = self._exchange
            exchange["resulting_state"] = state
            retry_at, retry_after_ms = self._observer.retry or (None, None)
            self._result = TurnResult(
                self._observations,
                state,
                exchange,
                self._root,
                process,
                retry_at=retry_at,
                retry_after_ms=retry_after_ms,
                observations_dropped=self._dropped,
                observations_skipped=self.skipped,
                usage=getattr(self._observer, "usage", None),  # (a stand-in fold may lack them)
                session_id=getattr(self._observer, "session_id", None),
                stopped_by=self._stopped_by,
                requires_action=getattr(self._observer, "requires_action", None),
            )
        except BaseException as exc:  # handed to the consumer
            self._error = exc
        finally:
            if timer is not None:
                timer.cancel()
            remove_staging_dir(self._root)
            with _LIVE_LOCK:
                _LIVE.discard(self)
            self._put(_END)

    # -- the consumer ---------------------------------------------------------------------------

    def _poll(self, timeout: float | None) -> Any:
        """The next observation, ``_END`` once the turn ended, ``_EMPTY`` on timeout."""
        if self._done:
            return _END
        try:
            item = self._queue.get(timeout=timeout) if timeout else self._queue.get_nowait()
        except queue.Empty:
            return _EMPTY
        if item is not _END:
            item, size = item
            with self._count_lock:
                self._waiting -= 1
                self._waiting_bytes -= size
        if item is _END:
            self._done = True
        return item

    def __iter__(self) -> Iterator[Observation]:
        return self

    def __next__(self) -> Observation:
        while True:
            item = self._poll(_POLL_S)
            if item is _EMPTY:
                continue
            if item is _END:
                if self._error is not None:
                    raise self._error
                raise StopIteration
            return cast(Observation, item)

    def cancel(self) -> None:
        """Stop the turn (safe from any thread, any number of times): the group goes down the
        kill ladder and the stream ends with one ending observation (``finished`` with
        ``stop_reason: "interrupted"`` unless the stream had already reached its outcome)."""
        self._cancel.set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the turn's end (observations stay queued for iteration); True if ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def result(self) -> TurnResult:
        """The ``TurnResult`` (waits for the end of the turn); raises what the turn raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def close(self) -> None:
        """Cancel the turn if it is still running and wait for its end."""
        if self._thread.is_alive():
            self.cancel()
        while self._thread.is_alive():
            self._thread.join(_POLL_S)

    def __enter__(self) -> TurnStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def observation_bytes(obs: Any) -> int:
    """An observation's estimated size in memory: its strings' lengths and a fixed cost per
    value (what ``MAX_KEPT_BYTES`` and ``QUEUE_MAX_BYTES`` count)."""
    if isinstance(obs, str):
        return 56 + len(obs)
    if isinstance(obs, dict):
        return 64 + sum(observation_bytes(k) + observation_bytes(v) for k, v in obs.items())
    if isinstance(obs, (list, tuple)):
        return 56 + sum(observation_bytes(v) for v in obs)
    return 32


def stream_turn(contract: Any, request: TurnRequest, **options: Any) -> TurnStream:
    """Start one turn of the harness and return its :class:`TurnStream` (the options of
    :func:`run_turn`). Raises ``ContractError`` before anything runs."""
    return TurnStream(contract, request, **options)


class AsyncTurnStream:
    """``astream_turn``'s async iterator (and async context manager). Cancelling the task that
    consumes it cancels the turn (the group is killed), waits for its cleanup and re-raises
    ``CancelledError``."""

    def __init__(self, stream: TurnStream) -> None:
        self._stream = stream
        self._event: asyncio.Event | None = None

    def _arm(self) -> asyncio.Event:
        if self._event is None:
            loop = asyncio.get_running_loop()
            event = asyncio.Event()
            self._event = event
            self._stream._waker = lambda: loop.call_soon_threadsafe(event.set)
        return self._event

    def __aiter__(self) -> AsyncTurnStream:
        return self

    async def __anext__(self) -> Observation:
        event = self._arm()
        try:
            while True:
                event.clear()
                item = self._stream._poll(None)
                if item is _EMPTY:
                    await event.wait()
                    continue
                if item is _END:
                    if self._stream._error is not None:
                        raise self._stream._error
                    raise StopAsyncIteration
                return cast(Observation, item)
        except asyncio.CancelledError:
            await self.aclose()
            raise

    def cancel(self) -> None:
        self._stream.cancel()

    @property
    def result(self) -> TurnResult:
        """The ``TurnResult`` once the turn has ended (it blocks until then: in a coroutine,
        ``await turn.wait()`` or ``await turn`` instead)."""
        return self._stream.result

    @property
    def running(self) -> bool:
        return self._stream.running

    async def wait(self) -> TurnResult:
        """Wait for the end of the turn without blocking the event loop and return its
        ``TurnResult`` (observations not iterated stay in ``result.observations``). Cancelling
        the waiting task cancels the turn and waits for its cleanup, as iteration does."""
        stream = self._stream
        event = self._arm()
        try:
            while stream._thread.is_alive():
                event.clear()
                if not stream._thread.is_alive():
                    break
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(event.wait(), 0.05)
        except asyncio.CancelledError:
            await self.aclose()
            raise
        return stream.result

    def __await__(self) -> Generator[Any, None, TurnResult]:
        return self.wait().__await__()

    async def aclose(self) -> None:
        """Cancel the turn if it still runs and wait (without blocking the loop) for its end."""
        stream = self._stream
        if not stream._thread.is_alive():
            return
        stream.cancel()
        try:
            while stream._thread.is_alive():
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:  # cancelled again: finish the cleanup synchronously
            stream.close()
            raise

    async def __aenter__(self) -> AsyncTurnStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def astream_turn(contract: Any, request: TurnRequest, **options: Any) -> AsyncTurnStream:
    """:func:`stream_turn` as an async iterator (``async for obs in astream_turn(...)``)."""
    return AsyncTurnStream(TurnStream(contract, request, **options))


def run_turn(
    contract: Any,
    request: TurnRequest,
    *,
    env: Mapping[str, str] | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    output_cap: int = DEFAULT_OUTPUT_CAP,
    dialect: Any = None,
    implementation: str = "native",
    entrypoint: str | None = None,
    entrypoint_prefix: tuple[str, ...] = (),
    cancel: Any = None,
    **executor_options: Any,
) -> TurnResult:
    """Run one turn of the harness for real and return its observations and new state.

    ``entrypoint`` overrides the contract's (e.g. a host path for a container image's binary);
    ``entrypoint_prefix`` are arguments put before the planned argv (e.g. a script path when
    the entrypoint is an interpreter). ``cancel``: a flag (anything with ``is_set()``, e.g. a
    ``threading.Event``) that another thread may set to stop the turn as ``TurnStream.cancel()``
    does (the hook for ``run_turn`` in an executor thread, which nothing else can reach).
    Raises ``ContractError`` before anything runs. This is :func:`stream_turn`, collected.
    """
    with stream_turn(
        contract,
        request,
        env=env,
        deadline_s=deadline_s,
        output_cap=output_cap,
        dialect=dialect,
        implementation=implementation,
        entrypoint=entrypoint,
        entrypoint_prefix=entrypoint_prefix,
        cancel=cancel,
        **executor_options,
    ) as stream:
        for _ in stream:
            pass
    return stream.result
