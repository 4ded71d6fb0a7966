"""Capture in a loop: memory around every model call, in two lines.

    turns = sgam.capture.TurnMemory(client, session="thread-1")
    while True:
        user = input()
        context = turns.context(user)                 # recall(...).rendered, before the model call
        answer = model(system=context, user=user)
        turns.capture(user, answer)                   # the finished turn, as an episode

:meth:`TurnMemory.context` asks recall with the user's words and the
session (so the subjects of the conversation's latest facts are in play) and
returns the prompt-ready block; :meth:`TurnMemory.capture` hands the finished
turn to sgam as one episode of the session, to be extracted by the server's
workers (``extract: background``): the call returns at once, and what the
turn said is in memory for the turns after it. Works with any framework; the
example ``examples/python/langgraph_capture_loop.py`` puts it in a LangGraph
graph. The ``a``-prefixed methods are the async twins.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

from . import _ops as ops
from ._core import Op
from ._json import format_instant
from .client import AsyncClient, Client
from .models import EpisodeResponse, Extraction

__all__ = ["TurnMemory", "turn_text", "last_turn"]


def turn_text(user: str, assistant: str | None, *, user_label: str = "User", assistant_label: str = "Assistant") -> str:
    """The episode's text of one turn: ``User: ...`` and ``Assistant: ...`` lines."""
    lines = [f"{user_label}: {user.strip()}"]
    if assistant:
        lines.append(f"{assistant_label}: {assistant.strip()}")
    return "\n".join(lines)


def _content(message: Any) -> str:
    content = message.get("content", "") if isinstance(message, dict) else getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return " ".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content).strip()
    return str(content)


def last_turn(messages: Sequence[Any]) -> tuple[str, str | None]:
    """The last user message and the assistant's answer after it, from a list
    of LangChain messages (or anything with ``.type`` and ``.content``, or
    dicts with ``role`` and ``content``)."""
    user, assistant = "", None
    for msg in messages:
        kind = getattr(msg, "type", None) or (msg.get("role") if isinstance(msg, dict) else None)
        if kind in ("human", "user"):
            user, assistant = _content(msg), None
        elif kind in ("ai", "assistant") and _content(msg):
            assistant = _content(msg)
    return user, assistant


class TurnMemory:
    """Recall before each model call, capture after each turn, for one session.

    Args:
        client: a :class:`sgam.Client` or :class:`sgam.AsyncClient` (a write key:
            capture writes episodes).
        session: the conversation; every turn is an episode of it.
        subjects: ids the conversation is about (a hint for extraction, at most 32).
        budget: the most tokens of the recalled block (default the server's, 800).
        extract: ``"background"`` (default: the server's workers extract each
            turn), ``"now"`` (the capture waits for the extraction) or ``"none"``.
    """

    def __init__(
        self,
        client: Client | AsyncClient | None = None,
        *,
        session: str,
        subjects: Iterable[str] | None = None,
        budget: int | None = None,
        extract: ops.Extract = "background",
        kind: str = "message",
    ) -> None:
        self.client = client if client is not None else Client()
        self.session = session
        self.subjects = list(subjects) if subjects is not None else None
        self.budget = budget
        self.extract = extract
        self.kind = kind
        self.captured: list[str] = []
        """The episode ids of the turns captured, in order."""

    def __repr__(self) -> str:
        return f"TurnMemory({self.client!r}, session={self.session!r})"

    def _recall(self, question: str) -> Op:
        return ops.recall(question, session=self.session, budget=self.budget)

    def _capture(self, user: str, assistant: str | None, occurred_at: _dt.datetime | None) -> Op:
        when = occurred_at or _dt.datetime.now(_dt.timezone.utc)
        text = turn_text(user, assistant)
        # One key per turn: a retry of this capture is the same episode, and
        # two turns that say the same words are two episodes.
        key = "turn-sha256:" + hashlib.sha256(
            "\x00".join([self.session, format_instant(when), text]).encode()).hexdigest()
        return ops.add_episode(text, session=self.session, kind=self.kind, occurred_at=when, idempotency_key=key,
                               subjects=self.subjects, extract=self.extract)

    # Synchronous.

    def context(self, question: str) -> str:
        """What memory holds for ``question``: ``recall(...).rendered``, to put before the model call."""
        return self._sync().call(self._recall(question)).rendered

    def capture(self, user: str, assistant: str | None = None, *,
                occurred_at: _dt.datetime | None = None) -> EpisodeResponse:
        """Hand a finished turn to sgam as an episode of the session."""
        ep: EpisodeResponse = self._sync().call(self._capture(user, assistant, occurred_at))
        if ep.episode_id:
            self.captured.append(ep.episode_id)
        return ep

    def capture_messages(self, messages: Sequence[Any]) -> EpisodeResponse | None:
        """Capture the last turn of a list of LangChain messages (None: no user message)."""
        user, assistant = last_turn(messages)
        return self.capture(user, assistant) if user else None

    def wait_extracted(self, episode_id: str | None = None, *, timeout: float = 30.0, poll: float = 0.1) -> list[Extraction]:
        """Wait until a captured episode (default the last) has an extraction
        record, and return its records ([] when ``timeout`` passed first)."""
        eid = episode_id or (self.captured[-1] if self.captured else None)
        if eid is None:
            return []
        deadline = time.monotonic() + timeout
        while True:
            records = self._sync().extractions.list(eid)
            if records or time.monotonic() >= deadline:
                return records
            time.sleep(poll)

    # Asynchronous.

    async def acontext(self, question: str) -> str:
        """:meth:`context`, asynchronously."""
        return (await self._async().call(self._recall(question))).rendered

    async def acapture(self, user: str, assistant: str | None = None, *,
                       occurred_at: _dt.datetime | None = None) -> EpisodeResponse:
        """:meth:`capture`, asynchronously."""
        ep: EpisodeResponse = await self._async().call(self._capture(user, assistant, occurred_at))
        if ep.episode_id:
            self.captured.append(ep.episode_id)
        return ep

    async def acapture_messages(self, messages: Sequence[Any]) -> EpisodeResponse | None:
        """:meth:`capture_messages`, asynchronously."""
        user, assistant = last_turn(messages)
        return await self.acapture(user, assistant) if user else None

    async def await_extracted(self, episode_id: str | None = None, *, timeout: float = 30.0,
                     poll: float = 0.1) -> list[Extraction]:
        """:meth:`wait`, asynchronously."""
        eid = episode_id or (self.captured[-1] if self.captured else None)
        if eid is None:
            return []
        deadline = time.monotonic() + timeout
        while True:
            records = await self._async().extractions.list(eid)
            if records or time.monotonic() >= deadline:
                return records
            await asyncio.sleep(poll)

    def _sync(self) -> Client:
        if not isinstance(self.client, Client):
            raise TypeError("this TurnMemory has an AsyncClient: use acontext, acapture and await_extracted")
        return self.client

    def _async(self) -> AsyncClient:
        if not isinstance(self.client, AsyncClient):
            raise TypeError("this TurnMemory has a Client: use context, capture and wait_extracted")
        return self.client
