"""``remember``, ``recall`` and ``forget`` for agents, framework-free.

:class:`MemoryTools` holds the logic the framework adapters wrap
(:mod:`sgam.langchain`, :mod:`sgam.openai_agents`): each tool is bound to
the tenant of one API key, which is never a tool argument (as in sgam's MCP
server), and answers the model with text: what was written, the recalled
block, or the error (``invalid: attribute: ...``), never the key.

* ``remember(subject, attribute, value, quote)``: captures ``quote`` (what was
  said) as an episode and asserts the value from now on, citing it. ``value``
  is JSON text (``"teal"`` with its quotes, ``42``, ``{"city": "Oslo"}``); text
  that is not JSON is taken as a string.
* ``recall(question)``: ``recall(question).rendered``, the prompt-ready block.
* ``forget(subject, attribute, quote)``: captures ``quote`` and retracts the
  value from now on. It is a retraction, not an erasure: history keeps the
  old value (erasing is ``Client.forget``, an admin's call, never a model's tool).
"""

from __future__ import annotations

import hashlib
from typing import Any

from . import _ops as ops
from ._drive import Steps, arun, run
from ._json import dumps, loads
from .client import AsyncClient, Client
from .errors import Error
from .models import WriteResult

__all__ = ["MemoryTools", "REMEMBER", "RECALL", "FORGET"]

REMEMBER = (
    "Remember a fact about a subject (a person, an account, a task) for later conversations: its "
    "attribute's value from now on, with the words that state it. Use a lowercase id for the subject "
    "(mira, acct-42) and a lowercase_identifier for the attribute (favorite_color). value is JSON text: "
    '"teal" (with quotes), 42, true, {"city": "Oslo"}. quote is what was said, word for word.'
)
RECALL = (
    "Recall what memory holds to answer a question: the current values of the subjects and attributes "
    "it names (or their values at the instants it names: 'on June 2', 'last week'), each with its source, "
    "then matching earlier conversation. Returns a prompt-ready block."
)
FORGET = (
    "Record that a subject's attribute no longer holds (the user withdrew or corrected it), from now on, "
    "with the words that say so. Earlier values stay in memory's history."
)


def _value(text: str) -> Any:
    try:
        return loads(text)
    except ValueError:
        return text


def _episode_key(*parts: str) -> str:
    h = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
    return "tool-sha256:" + h


def _describe(verb: str, subject: str, attribute: str, res: WriteResult) -> str:
    if res.pending is not None:
        return (f"held for review, not yet a fact: {subject} {attribute} (pending {res.pending.pending_id}, "
                f"reason {res.pending.reason})")
    if res.kept:
        return f"kept the stored value of {subject} {attribute}: the schema's conflict policy preferred it"
    f = res.fact
    if f is None:
        return f"{verb}: {subject} {attribute}"
    what = "no value" if f.tombstone else dumps(f.value)
    change = " (no change)" if res.no_change else ""
    return f"{verb}: {subject} {attribute} = {what} from {f.valid_from.isoformat() if f.valid_from else 'now'}" \
           f" (fact {f.fact_id}){change}"


class MemoryTools:
    """The three tools over one key's tenant.

    Args:
        client: a :class:`sgam.Client` or an :class:`sgam.AsyncClient`; the
            tools call with it, and the other kind is made with the same URL
            and key (both from ``$SGAM_URL`` and ``$SGAM_API_KEY`` when none is
            given). ``aclient`` gives the async one explicitly.
        session: the conversation the tools' episodes belong to, and the
            session recall gives subjects in play from.
        kind: the kind of the episodes ``remember`` and ``forget`` capture
            (``message``: what a user said; ``user_confirmed`` makes a
            ``sensitive`` attribute a fact at once, so grant it with care).
        budget: the most tokens recall's block may take (default the server's, 800).
    """

    def __init__(
        self,
        client: Client | AsyncClient | None = None,
        *,
        aclient: AsyncClient | None = None,
        session: str | None = None,
        kind: str = "message",
        budget: int | None = None,
    ) -> None:
        if isinstance(client, AsyncClient):
            client, aclient = None, client
        if client is None and aclient is None:
            client, aclient = Client(), AsyncClient()
        elif client is None:
            assert aclient is not None
            client = Client(aclient.base_url, aclient._key.get(), retry=aclient.retry)
        elif aclient is None:
            aclient = AsyncClient(client.base_url, client._key.get(), retry=client.retry)
        self.client = client
        self.aclient = aclient
        self.session = session
        self.kind = kind
        self.budget = budget

    def __repr__(self) -> str:
        return f"MemoryTools({self.client!r}, session={self.session!r})"

    # The steps, once.

    def _remember(self, subject: str, attribute: str, value: str, quote: str) -> Steps[str]:
        ep = yield ops.add_episode(quote, session=self.session, kind=self.kind, extract="none",
                                   idempotency_key=_episode_key("remember", self.session or "", subject, attribute, value,
                                                                 quote))
        res = yield ops.assert_fact(subject, attribute, _value(value), source=ep.episode_id or "")
        return _describe("remembered", subject, attribute, res)

    def _recall(self, question: str) -> Steps[str]:
        ctx = yield ops.recall(question, session=self.session, budget=self.budget)
        return ctx.rendered

    def _forget(self, subject: str, attribute: str, quote: str) -> Steps[str]:
        ep = yield ops.add_episode(quote, session=self.session, kind=self.kind, extract="none",
                                   idempotency_key=_episode_key("forget", self.session or "", subject, attribute, quote))
        res = yield ops.retract_fact(subject, attribute, source=ep.episode_id or "")
        return _describe("forgot", subject, attribute, res)

    # Synchronous and asynchronous calls; an error is the answer's text.

    def _sync(self, steps: Steps[str]) -> str:
        try:
            return run(self.client, steps)
        except Error as e:
            return f"error: {e}"

    async def _async(self, steps: Steps[str]) -> str:
        try:
            return await arun(self.aclient, steps)
        except Error as e:
            return f"error: {e}"

    def remember(self, subject: str, attribute: str, value: str, quote: str) -> str:
        """Remember that ``subject``'s ``attribute`` is ``value`` (JSON text) from now on, as ``quote`` says."""
        return self._sync(self._remember(subject, attribute, value, quote))

    async def aremember(self, subject: str, attribute: str, value: str, quote: str) -> str:
        """:meth:`remember`, asynchronously."""
        return await self._async(self._remember(subject, attribute, value, quote))

    def recall(self, question: str) -> str:
        """The prompt-ready block of what memory holds to answer ``question``."""
        return self._sync(self._recall(question))

    async def arecall(self, question: str) -> str:
        """:meth:`recall`, asynchronously."""
        return await self._async(self._recall(question))

    def forget(self, subject: str, attribute: str, quote: str) -> str:
        """Retract ``subject``'s ``attribute`` from now on, as ``quote`` says."""
        return self._sync(self._forget(subject, attribute, quote))

    async def aforget(self, subject: str, attribute: str, quote: str) -> str:
        """:meth:`forget`, asynchronously."""
        return await self._async(self._forget(subject, attribute, quote))
