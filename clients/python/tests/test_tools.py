"""remember, recall and forget as tools, driven by each framework's own fake
model (no network), writing and recalling through the real server."""

from __future__ import annotations

import json
import os

import pytest

import sgam

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


def names_of(uid: str) -> tuple[str, str]:
    return f"mira-{uid}", "favorite_color"


# LangChain tools in a LangGraph tool loop, with LangChain's GenericFakeChatModel.


def langgraph_loop(tools: list, script: list, use_async: bool = False) -> object:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    model = GenericFakeChatModel(messages=iter(script))

    def agent(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", aagent if use_async else agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def script(subject: str, attribute: str, value: str, question: str) -> list:
    from langchain_core.messages import AIMessage

    return [
        AIMessage(content="", tool_calls=[{"name": "remember", "id": "c1", "args": {
            "subject": subject, "attribute": attribute, "value": json.dumps(value),
            "quote": f"{subject} said: my favorite color is {value}"}}]),
        AIMessage(content="", tool_calls=[{"name": "recall", "id": "c2", "args": {"question": question}}]),
        AIMessage(content="", tool_calls=[{"name": "forget", "id": "c3", "args": {
            "subject": subject, "attribute": attribute, "quote": "actually, forget my color"}}]),
        AIMessage(content="", tool_calls=[{"name": "recall", "id": "c4", "args": {"question": question}}]),
        AIMessage(content="Done."),
    ]


def tool_answers(messages: list) -> dict[str, str]:
    return {m.tool_call_id: m.content for m in messages if m.type == "tool"}


def test_langchain_tools_schemas(alpha_write: sgam.Client) -> None:
    from langchain_core.tools import BaseTool

    from sgam.langchain import memory_tools

    tools = memory_tools(alpha_write)
    assert [t.name for t in tools] == ["remember", "recall", "forget"]
    assert all(isinstance(t, BaseTool) for t in tools)
    assert set(tools[0].args) == {"subject", "attribute", "value", "quote"}
    assert set(tools[1].args) == {"question"}
    assert set(tools[2].args) == {"subject", "attribute", "quote"}
    assert not any("tenant" in t.args for t in tools), "the tenant is the key's, never an argument"


def test_langchain_tools_with_a_fake_model(alpha_write: sgam.Client, uid: str) -> None:
    from langchain_core.messages import HumanMessage

    from sgam.langchain import memory_tools

    subject, attribute = names_of(uid)
    question = f"What is {subject}'s favorite color?"
    app = langgraph_loop(memory_tools(alpha_write, session=uid), script(subject, attribute, "teal", question))
    out = app.invoke({"messages": [HumanMessage("My favorite color is teal.")]})  # type: ignore[attr-defined]
    answers = tool_answers(out["messages"])
    assert answers["c1"].startswith(f'remembered: {subject} {attribute} = "teal"')
    assert f'{subject} {attribute} = "teal"' in answers["c2"]
    assert answers["c3"].startswith(f"forgot: {subject} {attribute} = no value")
    assert f'{attribute} = "teal"' not in answers["c4"].split("Evidence")[0]
    assert out["messages"][-1].content == "Done."
    # Written through the real server, under the key's tenant.
    rows = [f for f in alpha_write.subjects.history(subject, attribute) if f.retracted_at is None]
    assert [f.value for f in rows] == ["teal", None]
    episode = alpha_write.episodes.get(rows[0].sources[0])
    assert episode.content == f"{subject} said: my favorite color is teal" and episode.session == uid


async def test_langchain_tools_async(env: dict[str, str], uid: str) -> None:
    from langchain_core.messages import HumanMessage

    from sgam.langchain import memory_tools

    subject, attribute = names_of("a" + uid)
    question = f"What is {subject}'s favorite color?"
    async with sgam.AsyncClient(env["SGAM_URL"], env["SGAM_ALPHA_WRITE_KEY"]) as ac:
        app = langgraph_loop(memory_tools(ac, session=uid), script(subject, attribute, "plum", question),
                             use_async=True)
        out = await app.ainvoke({"messages": [HumanMessage("plum")]})  # type: ignore[attr-defined]
        answers = tool_answers(out["messages"])
        assert f'{subject} {attribute} = "plum"' in answers["c2"]
        assert len(await ac.subjects.history(subject, attribute)) >= 2


def test_langchain_tools_error_is_the_answer(alpha_read: sgam.Client, uid: str) -> None:
    from sgam.langchain import memory_tools

    remember = memory_tools(alpha_read)[0]
    answer = remember.invoke({"subject": uid, "attribute": "x", "value": "1", "quote": "q"})
    assert answer.startswith("error: forbidden: ")


def test_langchain_tools_of_a_second_tenant_see_nothing(env: dict[str, str], alpha_write: sgam.Client,
                                                       uid: str) -> None:
    from sgam.langchain import memory_tools

    subject, attribute = names_of("t" + uid)
    memory_tools(alpha_write)[0].invoke({"subject": subject, "attribute": attribute, "value": '"amber"',
                                         "quote": "my favorite color is amber"})
    assert "amber" in memory_tools(alpha_write)[1].invoke({"question": f"{subject} favorite color?"})
    with sgam.Client(env["SGAM_URL"], env["SGAM_BETA_WRITE_KEY"]) as beta:
        recalled = memory_tools(beta)[1].invoke({"question": f"What is {subject}'s favorite color?"})
        assert "amber" not in recalled
        forgot = memory_tools(beta)[2].invoke({"subject": subject, "attribute": attribute, "quote": "forget it"})
        assert forgot.startswith("forgot:")
    # beta's retraction is beta's: alpha's value stands.
    assert alpha_write.subjects.get(subject, attribute).fact.value == "amber"  # type: ignore[union-attr]


# OpenAI Agents SDK tools, with the SDK's own ScriptedModel.


def agents_script(subject: str, attribute: str, value: str, question: str) -> list:
    from agents.testing import assistant_message, function_call

    return [
        [function_call("remember", {"subject": subject, "attribute": attribute, "value": json.dumps(value),
                                    "quote": f"{subject}: my favorite color is {value}"}, call_id="c1")],
        [function_call("recall", {"question": question}, call_id="c2")],
        [function_call("forget", {"subject": subject, "attribute": attribute, "quote": "forget my color"},
                       call_id="c3")],
        [assistant_message("Done.")],
    ]


def outputs(result: object) -> dict[str, str]:
    out = {}
    for item in result.new_items:  # type: ignore[attr-defined]
        if item.type == "tool_call_output_item":
            raw = item.raw_item
            call_id = raw["call_id"] if isinstance(raw, dict) else raw.call_id
            out[call_id] = item.output
    return out


def test_openai_agents_tools_schemas(env: dict[str, str]) -> None:
    from agents import FunctionTool

    from sgam.openai_agents import memory_tools

    tools = memory_tools(sgam.AsyncClient(env["SGAM_URL"], env["SGAM_ALPHA_WRITE_KEY"]))
    assert [t.name for t in tools] == ["remember", "recall", "forget"]
    assert all(isinstance(t, FunctionTool) and t.strict_json_schema for t in tools)
    assert set(tools[0].params_json_schema["properties"]) == {"subject", "attribute", "value", "quote"}
    assert set(tools[1].params_json_schema["properties"]) == {"question"}
    assert not any("tenant" in t.params_json_schema["properties"] for t in tools)


async def test_openai_agents_tools_with_a_scripted_model(env: dict[str, str], uid: str) -> None:
    from agents import Agent, Runner
    from agents.testing import ScriptedModel

    from sgam.openai_agents import memory_tools

    subject, attribute = names_of("o" + uid)
    question = f"What is {subject}'s favorite color?"
    async with sgam.AsyncClient(env["SGAM_URL"], env["SGAM_ALPHA_WRITE_KEY"]) as ac:
        model = ScriptedModel(agents_script(subject, attribute, "jade", question))
        agent = Agent(name="assistant", instructions="Use memory.", model=model,
                      tools=memory_tools(ac, session=uid))
        result = await Runner.run(agent, "My favorite color is jade.")
        assert result.final_output == "Done."
        out = outputs(result)
        assert out["c1"].startswith(f'remembered: {subject} {attribute} = "jade"')
        assert f'{subject} {attribute} = "jade"' in out["c2"]
        assert out["c3"].startswith("forgot:")
        rows = [f for f in await ac.subjects.history(subject, attribute) if f.retracted_at is None]
        assert [f.value for f in rows] == ["jade", None]

    # A second tenant's agent recalls nothing of it.
    async with sgam.AsyncClient(env["SGAM_URL"], env["SGAM_BETA_READ_KEY"]) as other:
        from agents.testing import assistant_message, function_call

        model = ScriptedModel([[function_call("recall", {"question": question}, call_id="b1")],
                               [assistant_message("Nothing.")]])
        agent = Agent(name="other", model=model, tools=memory_tools(other))
        result = await Runner.run(agent, "What do you know?")
        assert "jade" not in outputs(result)["b1"]


def test_memory_tools_take_json_or_text(alpha_write: sgam.Client, uid: str) -> None:
    from sgam.tools import MemoryTools

    tools = MemoryTools(alpha_write)
    assert "= 42 " in tools.remember(uid, "n", "42", "it is 42")
    assert '= {"city":"Oslo"} ' in tools.remember(uid, "address", '{"city": "Oslo"}', "I live in Oslo")
    assert '= "plain words" ' in tools.remember(uid, "note", "plain words", "plain words")
    assert alpha_write.subjects.get(uid, "n").fact.value == 42  # type: ignore[union-attr]


@pytest.mark.parametrize("role", ["SGAM_ALPHA_READ_KEY"])
def test_a_read_key_can_recall_but_not_remember(env: dict[str, str], role: str, uid: str) -> None:
    from sgam.tools import MemoryTools

    with sgam.Client(env["SGAM_URL"], env[role]) as c:
        tools = MemoryTools(c)
        assert tools.recall("anything?").startswith("Question: anything?")
        assert tools.forget(uid, "x", "q").startswith("error: forbidden")
