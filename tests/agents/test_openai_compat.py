from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.base import BackendError
from agent_agency.agents.openai_compat import OpenAICompatBackend, to_openai_message
from agent_agency.records import Message, ToolCall

HELLO = [Message(role="user", content="Say hello.")]


def _spec(base_url: str, **overrides: object) -> AgentSpec:
    values = {"name": "remote", "backend": "openai_compat", "base_url": base_url, **overrides}
    return AgentSpec.model_validate(values)


def _answer(message: bytes, usage: bytes = b'"prompt_tokens": 1') -> bytes:
    """A chat completion whose message holds `message` (JSON members), with `usage`."""
    return (
        b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", '
        b'"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", '
        + message
        + b'}}], "usage": {'
        + usage
        + b', "completion_tokens": 1, "total_tokens": 2}}'
    )


class _BadServer(BaseHTTPRequestHandler):
    """Answers every request with whatever `reply` the path names."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.startswith("/e500"):
            status, body = 500, b'{"error": {"message": "model exploded"}}'
        elif self.path.startswith("/garbage"):
            status, body = 200, b"<html>not json</html>"
        elif self.path.startswith("/empty"):
            status = 200
            body = (
                b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", '
                b'"choices": [{"index": 0, "finish_reason": "stop", '
                b'"message": {"role": "assistant", "content": "  "}}]}'
            )
        elif self.path.startswith("/infinite-tool"):
            status, body = (
                200,
                _answer(
                    b'"content": null, "tool_calls": [{"id": "c1", "type": "function", '
                    b'"function": {"name": "calculator", '
                    b'"arguments": "{\\"expression\\": 1e999}"}}]'
                ),
            )
        elif self.path.startswith("/huge-usage"):
            status = 200
            body = _answer(b'"content": "hello"', usage=b'"prompt_tokens": 1099511627776')
        else:
            time.sleep(2)
            status, body = 200, b"{}"
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first (the time-out test)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def bad_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _BadServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_connection_refused_is_a_backend_error(closed_port: int) -> None:
    backend = OpenAICompatBackend(_spec(f"http://127.0.0.1:{closed_port}/v1"))
    with pytest.raises(BackendError, match="cannot connect"):
        asyncio.run(backend.complete(HELLO))


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/e500", "HTTP 500.*model exploded"),
        ("/garbage", "no choices|bad response"),
        ("/empty", "empty output"),
        ("/infinite-tool", "tool call 'calculator' is invalid: .*not a finite number"),
        ("/huge-usage", "malformed response from .*: input_tokens: .*less than or equal to"),
    ],
)
def test_server_errors_and_garbage_are_backend_errors(
    bad_server: str, path: str, reason: str
) -> None:
    backend = OpenAICompatBackend(_spec(bad_server + path))
    with pytest.raises(BackendError, match=reason):
        asyncio.run(backend.complete(HELLO))


def test_a_slow_server_hits_the_spec_timeout(bad_server: str) -> None:
    backend = OpenAICompatBackend(_spec(bad_server + "/slow", timeout_s=0.3))
    with pytest.raises(BackendError, match="within 0.3 s"):
        asyncio.run(backend.complete(HELLO))


def test_api_key_comes_from_the_named_env_var_or_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AGENCY_MISSING_KEY", raising=False)
    with pytest.raises(BackendError, match="AGENCY_MISSING_KEY"):
        OpenAICompatBackend(_spec("https://api.example.com/v1", api_key_env="AGENCY_MISSING_KEY"))
    OpenAICompatBackend(_spec("http://localhost:9/v1", api_key_env="AGENCY_MISSING_KEY"))


def test_tool_turns_use_the_openai_shapes() -> None:
    call = ToolCall(id="c1", name="calculator", arguments={"expression": "2+2"})
    assistant = to_openai_message(Message(role="assistant", tool_calls=[call]))
    assert assistant["tool_calls"][0]["function"] == {
        "name": "calculator",
        "arguments": '{"expression": "2+2"}',
    }
    tool = to_openai_message(
        Message(role="tool", name="calculator", tool_call_id="c1", content="4")
    )
    assert tool == {"role": "tool", "tool_call_id": "c1", "content": "4"}


@pytest.mark.e2e
def test_chat_completion_against_a_real_llama_cpp_server(llama_server: str) -> None:
    backend = OpenAICompatBackend(_spec(llama_server, model="smollm2", max_tokens=8))
    completion = asyncio.run(backend.complete(HELLO))
    assert completion.text
    assert completion.input_tokens > 0 and 0 < completion.output_tokens <= 8
    assert completion.model == "smollm2"
    assert completion.latency_ms > 0
