"""A real HTTP server speaking the OpenAI chat-completions protocol, for tests.

It listens on 127.0.0.1 on a free port and answers `POST /v1/chat/completions` (non-streaming) from
a script: each request takes the next scripted reply; when the script runs out, `responder` (a
function of the request body) answers, else the request gets a 500 that says the script ran out.
Every request is recorded (path, headers, parsed body) so a test can count requests and inspect
what was sent.

    with FakeOpenAI() as srv:
        srv.script(tool_reply({"same": True}), status_reply(429, retry_after=0))
        model, api_base = srv.model("fake"), srv.api_base   # "openai/fake", "http://127.0.0.1:PORT/v1"
        ...
        assert srv.count == 2

Instead of a script, `srv.responder = lambda body: tool_reply(...)` answers from the request (say,
from the user message, for concurrent calls whose order is not fixed); `srv.request_responder =
lambda request: ...` also sees the headers (a lying server that echoes `bearer(request)`, the API
key the client sent). `srv.requests[i]` has
`.path`, `.headers` (lower-cased names), `.body`, `.messages`, `.user_content`, `.received_at` and
`.answered_at` (time.monotonic()); `srv.max_in_flight`
is the most requests served at once. `write_prompt(folder, stage, version=...)` writes a prompt file
for `make_client(..., prompts_dir=folder)`; the `fake_openai` fixture starts a server for one test
(`from openai_server import fake_openai` in a test module).

Replies:
- `tool_reply(args)`: a tool call whose `function.arguments` is `args` (a dict, dumped as JSON, or a
  string sent verbatim, e.g. malformed JSON). The function name echoes the tool the request
  forced, as instructor's TOOLS mode expects.
- `content_reply(text_or_dict)`: `message.content` (JSON, JSON_SCHEMA and MD_JSON modes).
- `status_reply(status, retry_after=None, body=None)`: an HTTP error (429, 500, 503, 401, ...).
- `hang_reply(seconds)`: sleep past the client's timeout, then answer 500 (if anyone still listens).
- any of them with `delay=` seconds of latency before answering.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest


@dataclass
class Reply:
    kind: str  # "tool" | "content" | "status" | "hang"
    payload: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    prompt_tokens: int = 11
    completion_tokens: int = 7


def tool_reply(args: dict[str, Any] | str, *, delay: float = 0.0, prompt_tokens: int = 11, completion_tokens: int = 7) -> Reply:
    return Reply("tool", args, delay=delay, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def content_reply(content: dict[str, Any] | str, *, delay: float = 0.0, prompt_tokens: int = 11, completion_tokens: int = 7) -> Reply:
    return Reply("content", content, delay=delay, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def status_reply(status: int, *, retry_after: float | None = None, body: dict[str, Any] | None = None, delay: float = 0.0) -> Reply:
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return Reply("status", body, status=status, headers=headers, delay=delay)


def hang_reply(seconds: float) -> Reply:
    return Reply("hang", None, delay=seconds)


@dataclass
class Request:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)  # when it arrived (benchmarks)
    answered_at: float | None = None  # when its reply was sent

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def user_content(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return str(users[0].get("content", "")) if users else ""


def _forced_tool_name(body: dict[str, Any]) -> str:
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if name:
            return str(name)
    tools = body.get("tools") or []
    if tools:
        return str(tools[0].get("function", {}).get("name", "reply"))
    return "reply"


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if reply.kind == "tool":
        args = reply.payload if isinstance(reply.payload, str) else json.dumps(reply.payload)
        message["tool_calls"] = [
            {"id": "call_1", "type": "function", "function": {"name": _forced_tool_name(body), "arguments": args}}
        ]
        finish = "tool_calls"
    else:
        message["content"] = reply.payload if isinstance(reply.payload, str) else json.dumps(reply.payload)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


class FakeOpenAI:
    """The server; use as a context manager (it starts and stops a thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.request_responder: Callable[[Request], Reply] | None = None
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests answered at once (concurrency checks)
        self._stopping = threading.Event()
        self._connections: set[Any] = set()  # open client connections, each with a handler thread
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # --- control -------------------------------------------------------------------------------

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():  # shutdown() waits for serve_forever, which never ran otherwise
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()
        # A client's keep-alive connection holds its handler thread in a read: end them all, so
        # no thread or socket outlives the test.
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.max_in_flight = 0

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @staticmethod
    def model(name: str = "fake") -> str:
        return f"openai/{name}"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    # --- serving -------------------------------------------------------------------------------

    def _next(self, request: Request) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.request_responder is not None:
            return self.request_responder(request)
        if self.responder is not None:
            return self.responder(request.body)
        return status_reply(500, body={"error": {"message": "fake server: script exhausted", "type": "server_error"}})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._connections.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
                pass

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout); nothing to answer

            def do_GET(self) -> None:  # noqa: N802
                self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(request)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._answer(request)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                        request.answered_at = time.monotonic()

            def _answer(self, request: Request) -> None:
                body = request.body
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                reply = server._next(request)
                if reply.kind == "hang":
                    server._stopping.wait(reply.delay)
                    self._send(500, {"error": {"message": "fake server: hang ended", "type": "server_error"}})
                    return
                if reply.delay:
                    server._stopping.wait(reply.delay)
                if reply.kind == "status":
                    payload = reply.payload or {"error": {"message": f"fake error {reply.status}", "type": "fake"}}
                    self._send(reply.status, payload, reply.headers)
                    return
                self._send(200, _completion(body, reply))

        return Handler


def bearer(request: Request) -> str:
    """The API key the client sent (`Authorization: Bearer KEY`), for servers that echo it."""
    auth = request.headers.get("authorization", "")
    return auth.split(" ", 1)[1] if auth.lower().startswith("bearer ") else auth


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def write_prompt(folder: Path, stage: str, *, version: str = "1", text: str = "You are a careful judge. Reply with the schema.") -> Path:
    """A prompt file as the client expects it, for tests that point `prompts_dir` at a temp folder."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stage}.md"
    path.write_text(f"---\nversion: {version}\n---\n{text}\n", encoding="utf-8")
    return path


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """The server, started for one test (import this name into a test module to use it)."""
    with FakeOpenAI() as server:
        yield server
