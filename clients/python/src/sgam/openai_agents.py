"""``remember``, ``recall`` and ``forget`` as OpenAI Agents SDK tools (``pip install 'sgam[openai-agents]'``).

    from agents import Agent
    from sgam.openai_agents import memory_tools

    agent = Agent(name="assistant", tools=memory_tools(sgam.AsyncClient(api_key=KEY), session="thread-1"))

Each is a ``function_tool`` (strict JSON schema) bound to the tenant of the
client's key: no tool argument names a tenant. See :mod:`sgam.tools` for what
each does.
"""

from __future__ import annotations

from typing import Any

try:
    from agents import function_tool
except ImportError as e:  # pragma: no cover
    raise ImportError("sgam.openai_agents needs the OpenAI Agents SDK: pip install 'sgam[openai-agents]'") from e

from .client import AsyncClient, Client
from .tools import FORGET, RECALL, REMEMBER, MemoryTools

__all__ = ["memory_tools"]


def memory_tools(
    client: Client | AsyncClient | None = None,
    *,
    aclient: AsyncClient | None = None,
    session: str | None = None,
    kind: str = "message",
    budget: int | None = None,
) -> list[Any]:
    """The tools ``remember``, ``recall`` and ``forget`` for an ``agents.Agent``."""
    m = MemoryTools(client, aclient=aclient, session=session, kind=kind, budget=budget)

    async def remember(subject: str, attribute: str, value: str, quote: str) -> str:
        """Remember a fact.

        Args:
            subject: the subject's lowercase id: mira, acct-42.
            attribute: the attribute, a lowercase_identifier: favorite_color.
            value: the value as JSON text: "teal" (with quotes), 42, true, {"city": "Oslo"}.
            quote: what was said that states it, word for word.
        """
        return await m.aremember(subject, attribute, value, quote)

    async def recall(question: str) -> str:
        """Recall what memory holds.

        Args:
            question: the question, in words; the subjects, attributes and instants it names.
        """
        return await m.arecall(question)

    async def forget(subject: str, attribute: str, quote: str) -> str:
        """Withdraw a fact.

        Args:
            subject: the subject's lowercase id.
            attribute: the attribute that no longer holds.
            quote: what was said that withdraws it, word for word.
        """
        return await m.aforget(subject, attribute, quote)

    return [
        function_tool(remember, name_override="remember", description_override=REMEMBER),
        function_tool(recall, name_override="recall", description_override=RECALL),
        function_tool(forget, name_override="forget", description_override=FORGET),
    ]
