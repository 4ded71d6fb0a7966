"""A scripted stand-in for an OpenAI-compatible chat completions server, for
the SDK tests: no network, no weights, standard library only.

It answers every extraction prompt sgam sends with the updates a careful
model would propose for sentences of the form "Mira's favorite color is
teal." in the episode (subject "mira", attribute "favorite_color", value
"teal", the sentence as the quote), and an empty list for any other text. It
serves GET /v1/models too, and writes the port it listens on to the file
named by its one argument.
"""

import json
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake-model"
SENTENCE = re.compile(r"\b([A-Z][a-z]+)'s ([a-z]+(?: [a-z]+){0,3}) is ([A-Za-z0-9-]+)\.")


def episode_text(user: str) -> str:
    start = user.find("<episode")
    if start < 0:
        return ""
    start = user.find(">\n", start)
    end = user.find("\n</episode>", start)
    if start < 0 or end < 0:
        return ""
    return user[start + 2 : end]


def updates_for(text: str) -> list:
    out = []
    for m in SENTENCE.finditer(text):
        name, attribute, value = m.groups()
        out.append(
            {
                "evidence": m.group(0).rstrip("."),
                "subject": name.lower(),
                "attribute": attribute.replace(" ", "_"),
                "current_value": None,
                "change": "new",
                "value": value,
                "valid_from": None,
            }
        )
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self.answer(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "fake"}]})
        else:
            self.answer(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path != "/v1/chat/completions":
            self.answer(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        try:
            req = json.loads(raw)
            messages = req["messages"]
            system, user = messages[0]["content"], messages[-1]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            self.answer(400, {"error": {"message": f"bad request: {e}", "type": "invalid_request_error"}})
            return
        content = json.dumps({"updates": updates_for(episode_text(user))})
        message = {"role": "assistant", "content": content}
        tools = req.get("tools") or []
        if tools:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": tools[0]["function"]["name"], "arguments": content}}],
            }
        prompt = (len(system) + len(user)) // 4
        self.answer(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": req.get("model", MODEL),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": len(content) // 4, "total_tokens": prompt + len(content) // 4},
            },
        )


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os

    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()


if __name__ == "__main__":
    main()
