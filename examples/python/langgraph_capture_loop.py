"""Capture in a loop, in LangGraph: memory before every model call, every
finished turn handed to sgam.

    export SGAM_URL=http://127.0.0.1:7420 SGAM_API_KEY=sgam_...   # a write key
    python examples/python/langgraph_capture_loop.py

The graph has three nodes around the model:

    recall   -> the system message: TurnMemory.context(user's words), i.e.
                recall(...).rendered, what memory holds for this turn
    model    -> any LangChain chat model (here a tiny offline stand-in that
                answers from the recalled block, so the example needs no API)
    capture  -> TurnMemory.capture_messages(...): the finished turn becomes an
                episode of the session, extracted by the server's workers
                (extract: background) while the conversation goes on

The server needs a model for extraction (SGAM_LLM_BASE_URL, SGAM_LLM_MODEL;
the SDK tests use a scripted one). Turn 1 tells a fact; the example waits for
the workers to extract it (a real loop does not need to: the next turn comes
seconds later); turn 2 asks for it, and the recalled block has it, with the
episode it came from.
"""

from __future__ import annotations

import re
import sys
import uuid

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, MessagesState, StateGraph

import sgam
from sgam.capture import TurnMemory

FACT_LINE = re.compile(r"^- (\S+) (\S+) = (.+?) \|", re.MULTILINE)


def offline_model(messages: list) -> AIMessage:
    """Stands in for a chat model: answers with the facts the recalled block holds."""
    context = next((m.content for m in messages if m.type == "system"), "")
    facts = FACT_LINE.findall(context)
    if not facts:
        return AIMessage("Noted. I do not know anything about that yet.")
    return AIMessage("From memory: " + "; ".join(f"{s}'s {a.replace('_', ' ')} is {v}" for s, a, v in facts))


def build(turns: TurnMemory, model=RunnableLambda(offline_model)):
    def recall(state: MessagesState) -> dict:
        question = state["messages"][-1].content
        block = turns.context(question)
        return {"messages": [SystemMessage(block, id="memory")]}

    def call_model(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    def capture(state: MessagesState) -> dict:
        turns.capture_messages(state["messages"])
        return {}

    graph = StateGraph(MessagesState)
    graph.add_node("recall", recall)
    graph.add_node("model", call_model)
    graph.add_node("capture", capture)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "model")
    graph.add_edge("model", "capture")
    graph.add_edge("capture", END)
    return graph.compile()


def main() -> int:
    session = "example-" + uuid.uuid4().hex[:8]
    with sgam.Client() as client:  # $SGAM_URL, $SGAM_API_KEY
        turns = TurnMemory(client, session=session)
        app = build(turns)
        for text in ["Hi! Mira's favorite color is teal.", "What is Mira's favorite color?"]:
            out = app.invoke({"messages": [HumanMessage(text)]})
            print(f"user:      {text}")
            print(f"assistant: {out['messages'][-1].content}")
            if not turns.wait_extracted(timeout=30):
                print("the turn was not extracted within 30 s: is a model configured on the server?", file=sys.stderr)
                return 1
        print("\nwhat the last model call was given (recall(...).rendered):")
        print(turns.context("What is Mira's favorite color?"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
