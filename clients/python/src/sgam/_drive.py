"""Logic written once as a generator of operations, run by either client.

An adapter's step is a generator that yields an :class:`Op` (and receives
its result, or has its :class:`sgam.Error` thrown in) or a list of Ops (and
receives the list of their results: sent one after another by the
synchronous client, at once by the asynchronous one), and returns its
result. :func:`run` drives it with a :class:`sgam.Client`, :func:`arun` with an
:class:`sgam.AsyncClient`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any, TypeVar, Union

from ._core import Op
from .errors import Error

T = TypeVar("T")
Step = Union[Op, list[Op]]
Steps = Generator[Step, Any, T]

#: At most this many requests of one list step are in flight at once.
CONCURRENCY = 8


def run(client: Any, gen: Steps[T]) -> T:
    value: Any = None
    exc: BaseException | None = None
    while True:
        try:
            step = gen.throw(exc) if exc is not None else gen.send(value)
        except StopIteration as stop:
            return stop.value
        exc = None
        try:
            if isinstance(step, list):
                value = [client.call(op) for op in step]
            else:
                value = client.call(step)
        except Error as e:
            exc = e


async def arun(client: Any, gen: Steps[T]) -> T:
    value: Any = None
    exc: BaseException | None = None
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(op: Op) -> Any:
        async with sem:
            return await client.call(op)

    while True:
        try:
            step = gen.throw(exc) if exc is not None else gen.send(value)
        except StopIteration as stop:
            return stop.value
        exc = None
        try:
            if isinstance(step, list):
                value = list(await asyncio.gather(*(one(op) for op in step)))
            else:
                value = await client.call(step)
        except Error as e:
            exc = e
