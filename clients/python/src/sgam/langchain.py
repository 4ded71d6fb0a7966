"""``remember``, ``recall`` and ``forget`` as LangChain tools (``pip install 'sgam[langchain]'``).

    from sgam.langchain import memory_tools

    tools = memory_tools(sgam.Client(api_key=KEY), session="thread-1")
    agent = create_react_agent(model, tools)      # or model.bind_tools(tools)

Each is a :class:`langchain_core.tools.StructuredTool` with a sync and an
async implementation, bound to the tenant of the client's key: no tool
argument names a tenant. See :mod:`sgam.tools` for what each does.
"""

from __future__ import annotations

from typing import Any

try:
    from langchain_core.tools import StructuredTool
except ImportError as e:  # pragma: no cover
    raise ImportError("sgam.langchain needs langchain-core: pip install 'sgam[langchain]'") from e
from pydantic import BaseModel, Field

from .client import AsyncClient, Client
from .tools import FORGET, RECALL, REMEMBER, MemoryTools

__all__ = ["memory_tools", "RememberArgs", "RecallArgs", "ForgetArgs"]


class RememberArgs(BaseModel):
    subject: str = Field(description="the subject's lowercase id: mira, acct-42")
    attribute: str = Field(description="the attribute, a lowercase_identifier: favorite_color")
    value: str = Field(description='the value as JSON text: "teal" (with quotes), 42, true, {"city": "Oslo"}')
    quote: str = Field(description="what was said that states it, word for word")


class RecallArgs(BaseModel):
    question: str = Field(description="the question, in words; the subjects, attributes and instants it names")


class ForgetArgs(BaseModel):
    subject: str = Field(description="the subject's lowercase id")
    attribute: str = Field(description="the attribute that no longer holds")
    quote: str = Field(description="what was said that withdraws it, word for word")


def memory_tools(
    client: Client | AsyncClient | None = None,
    *,
    aclient: AsyncClient | None = None,
    session: str | None = None,
    kind: str = "message",
    budget: int | None = None,
) -> list[Any]:
    """The tools ``remember``, ``recall`` and ``forget`` for LangChain and LangGraph agents."""
    m = MemoryTools(client, aclient=aclient, session=session, kind=kind, budget=budget)
    return [
        StructuredTool.from_function(func=m.remember, coroutine=m.aremember, name="remember", description=REMEMBER,
                                     args_schema=RememberArgs),
        StructuredTool.from_function(func=m.recall, coroutine=m.arecall, name="recall", description=RECALL,
                                     args_schema=RecallArgs),
        StructuredTool.from_function(func=m.forget, coroutine=m.aforget, name="forget", description=FORGET,
                                     args_schema=ForgetArgs),
    ]
