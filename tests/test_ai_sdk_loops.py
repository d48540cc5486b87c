"""The tool loop beside the real AI SDK (``ai`` + ``@ai-sdk/openai`` / ``@ai-sdk/anthropic``,
pinned in ``bench/peers``): the loop scenarios of ``contract-tests/calls/loops.json`` (their tools
and scripted model answers, ``tests/make_recordings.py``'s ``LOOP_SCENARIOS``) plus a cancel while
a tool runs, on both providers, run live against the scenario server by aimux-ops (the Python
API's ``execute``) and by the AI SDK's ``streamText`` with the same tool and ``stopWhen``.

Compared per scenario: what the server received (the number of model calls; at step 2 each tool
result's id, content and Anthropic's ``is_error``, and the whole conversation replayed: the
prompt, the assistant's tool calls, the results), and the outcome (text, finish reason, each
step's finish reason, the tool results and errors, summed usage, or the error the caller got).
A scenario is ``same`` or a listed difference whose key is in DESIGN.md's loop table ("The tool
loop beside the AI SDK"); a listed difference must still differ (a stale entry fails) and its
check of both sides must hold. Scenarios the AI SDK has no behaviour for (a tool-level error with
data) are not run on its side; their row says so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import make_recordings as rec
import orjson
import pytest
from helpers import ROOT, run_node_json_lines
from scenario_server import ScenarioServer
from test_tool_loop import WIRE, tool_results_sent

import aimux_ops

PEERS = ROOT / "bench" / "peers" / "node_modules"
NODE = shutil.which("node")
DESIGN = ROOT / "docs" / "DESIGN.md"
PROVIDERS = tuple(rec.LOOP_MODELS)
#: the answer of the model's second call where the scenario's own has none (raise-io: the AI SDK
#: sends the failure to the model, which is then asked again)
SECOND_ANSWER = "The weather service is down."

# -- the AI SDK's side: one node process runs every scenario ------------------------------------

SCRIPT = r"""
import { readFile } from 'node:fs/promises';
import { streamText, tool, jsonSchema, stepCountIs } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
const cases = JSON.parse(await readFile(process.argv[2], 'utf8'));
const MISSING = process.env.MISSING, RAISED = process.env.RAISED;

function model(c) {
  if (c.provider === 'anthropic')
    return createAnthropic({ baseURL: c.url, apiKey: 'k' })(c.modelId);
  return createOpenAI({ baseURL: c.url, apiKey: 'k' }).chat(c.modelId);
}
const errorOf = e => ({ name: e?.name ?? null, message: String(e?.message ?? e),
                        cause: e?.cause ? (e.cause.code ?? e.cause.name ?? null) : null });

for (const c of cases) {
  let osloStarted, osloSeen = new Promise(r => { osloStarted = r; });
  let toolRunning, running = new Promise(r => { toolRunning = r; });
  const ac = new AbortController();
  const out = { name: c.name, sawAbort: false };
  const execute = async ({ city }, { abortSignal }) => {
    switch (c.behaviour) {
      case 'value': return `sunny in ${city}`;
      // the AI SDK has no tool-level result: a throw is the only error the model reads
      case 'tool-error': throw new Error(`no weather for ${city}`);
      case 'raise-io': return await readFile(MISSING, 'utf8');
      case 'raise': throw new Error(RAISED);
      case 'value-paired':
        if (city === 'Oslo') osloStarted();
        else await Promise.race([osloSeen, new Promise((_, no) =>
          setTimeout(() => no(new Error('the Oslo call never started')), 30000))]);
        return `sunny in ${city}`;
      case 'wait-abort':
        toolRunning();
        await new Promise(done => {
          if (abortSignal?.aborted) done();
          abortSignal?.addEventListener('abort', done, { once: true });
          setTimeout(done, 30000);
        });
        out.sawAbort = Boolean(abortSignal?.aborted);
        return 'late';
      default: throw new Error(`unknown behaviour ${c.behaviour}`);
    }
  };
  const tools = { weather: tool({ description: 'The weather in a city.',
                                  inputSchema: jsonSchema(c.schema), execute }) };
  if (c.behaviour === 'wait-abort') running.then(() => ac.abort());
  try {
    const r = streamText({ model: model(c), prompt: c.prompt, tools, maxRetries: 0,
                           stopWhen: stepCountIs(c.stepCount), abortSignal: ac.signal,
                           onError: () => {} });
    let error = null;
    for await (const p of r.fullStream) {
      if (p.type === 'error' && !error) error = p.error;
      if (p.type === 'abort' && !error) error = { name: 'AbortError', message: 'aborted' };
    }
    if (error) throw error;
    const steps = await r.steps;
    const u = await r.totalUsage;
    out.result = {
      text: await r.text, finishReason: await r.finishReason,
      usage: [u.inputTokens ?? null, u.outputTokens ?? null, u.totalTokens ?? null],
      steps: steps.map(s => ({
        finishReason: s.finishReason, text: s.text,
        toolResults: s.content.filter(p => p.type === 'tool-result')
          .map(p => ({ toolCallId: p.toolCallId, toolName: p.toolName, output: p.output })),
        toolErrors: s.content.filter(p => p.type === 'tool-error')
          .map(p => ({ toolCallId: p.toolCallId, toolName: p.toolName,
                       message: String(p.error?.message ?? p.error) })),
      })),
    };
  } catch (e) { out.error = errorOf(e); }
  console.log(JSON.stringify(out));
}
"""


@dataclass(frozen=True)
class Scenario:
    name: str  # LOOP_SCENARIOS' key, or "cancel"
    provider: str
    #: "same", "differs:<DESIGN key>" or "theirs-absent:<DESIGN key>" (the AI SDK has none)
    expect: str = "same"
    #: a listed difference's check of (ours, theirs)
    check: Callable[[dict[str, Any], dict[str, Any]], bool] | None = None

    @property
    def key(self) -> str:
        return f"{self.name}-{self.provider}"


CANCEL_CALLS = [("t1", "weather", {"city": "Paris"})]


def _scripted(name: str) -> tuple[str, list[Any], str | None]:
    """(behaviour, the model's calls of step 1, its answer at step 2) of a scenario."""
    if name == "cancel":
        return "wait-abort", CANCEL_CALLS, "x"
    behaviour, calls, answer, _, _ = rec.LOOP_SCENARIOS[name]
    return behaviour, calls, answer


#: the class-name prefix the AI SDK puts before a thrown error's message (``String(error)``)
JS_ERROR_PREFIX = re.compile(r"\b(?:AI_[A-Za-z]+Error|Error): ")


def _message_alone(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Everything agrees once the AI SDK's ``Error: `` / ``AI_NoSuchToolError: `` prefix is cut
    from what it sent and reports: ours sends the message alone."""
    mine = orjson.dumps(comparable(ours, None), option=orjson.OPT_SORT_KEYS).decode()
    their = orjson.dumps(comparable(theirs, None), option=orjson.OPT_SORT_KEYS).decode()
    return mine != their and mine == JS_ERROR_PREFIX.sub("", their)


def _raise_reaches_the_caller(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Ours: AI_ToolExecutionError caused by the very ENOENT, the model asked once; the AI SDK
    sends the failure's message to the model and asks it again."""
    return (
        ours["calls"] == 1
        and ours["error"] == {"code": 22, "cause": "FileNotFoundError"}
        and theirs["calls"] == 2
        and "ENOENT" in theirs["sent"][0]["content"]
    )


def _cancel_outcome(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Both stop at step 1 (no second model call); the AI SDK's tool saw its abortSignal and its
    stream ended with an ``abort`` part; ours ended where the caller closed it."""
    return (
        ours["calls"] == theirs["calls"] == 1
        and theirs["sawAbort"] is True
        and theirs["error"]["name"] == "AbortError"
        and "error" not in ours
        and "result" not in ours
    )


SCENARIOS = [
    *(Scenario("ok", p) for p in PROVIDERS),
    *(Scenario("tool-error", p, "differs:loop-error-text", _message_alone) for p in PROVIDERS),
    *(Scenario("tool-error-data", p, "theirs-absent:loop-error-data") for p in PROVIDERS),
    *(
        Scenario("raise-io", p, "differs:loop-throw-to-caller", _raise_reaches_the_caller)
        for p in PROVIDERS
    ),
    *(Scenario("to-model", p, "differs:loop-error-text", _message_alone) for p in PROVIDERS),
    *(Scenario("unknown-tool", p, "differs:loop-error-text", _message_alone) for p in PROVIDERS),
    *(Scenario("parallel", p) for p in PROVIDERS),
    *(Scenario("cancel", p, "differs:loop-cancel", _cancel_outcome) for p in PROVIDERS),
]


@pytest.fixture(scope="module")
def server() -> Iterator[ScenarioServer]:
    srv = ScenarioServer().start()
    yield srv
    srv.stop()


def _register(srv: ScenarioServer, scenario: Scenario, peer: str) -> str:
    _, calls, answer = _scripted(scenario.name)
    tool_calls, text = WIRE[scenario.provider]
    return srv.add(f"{peer}-{scenario.key}", tool_calls(*calls), text(answer or SECOND_ANSWER))


def _wire(srv: ScenarioServer, scenario: Scenario, peer: str) -> dict[str, Any]:
    """What the server received: the model calls; at the second, the tool results and every
    message."""
    requests = srv.requests[f"{peer}-{scenario.key}"]
    if len(requests) < 2:
        return {"calls": len(requests), "sent": [], "messages": None, "request": None}
    return {
        "calls": len(requests),
        "sent": tool_results_sent(scenario.provider, requests[1]),
        # the whole conversation replayed at step 2: the prompt, the assistant's calls, results
        "messages": orjson.loads(requests[1]["body"])["messages"],
        "request": _request_rest(scenario.provider, orjson.loads(requests[1]["body"])),
    }


def _request_rest(provider: str, body: dict[str, Any]) -> dict[str, Any]:
    """The step-2 request but its messages, without what the AI SDK adds to any call (DESIGN.md's
    tools section): OpenAI ``tool_choice: "auto"`` (the default), Anthropic's
    ``eager_input_streaming`` on each tool of a stream."""
    rest = {k: v for k, v in body.items() if k != "messages"}
    if provider == "openai" and rest.get("tool_choice") == "auto":
        del rest["tool_choice"]
    if provider == "anthropic":
        rest["tools"] = [
            {k: v for k, v in t.items() if k != "eager_input_streaming"} for t in rest["tools"]
        ]
    return rest


@pytest.fixture(scope="module")
def theirs(
    server: ScenarioServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    if NODE is None or not all(
        (PEERS / pkg / "package.json").exists()
        for pkg in ("ai", "@ai-sdk/openai", "@ai-sdk/anthropic")
    ):
        pytest.fail("needs node and the AI SDK peers: run `make peers` (make test does)")
    work = tmp_path_factory.mktemp("aisdk-loops")
    (work / "node_modules").symlink_to(PEERS)
    (work / "package.json").write_text('{"type": "module"}')
    (work / "loops.mjs").write_text(SCRIPT)
    run = [s for s in SCENARIOS if not s.expect.startswith("theirs-absent")]
    cases = [
        {
            "name": s.key,
            "provider": s.provider,
            "modelId": rec.LOOP_MODELS[s.provider],
            "url": _register(server, s, "ai"),
            "behaviour": _scripted(s.name)[0],
            "schema": rec.LOOP_TOOLS["weather"]["inputSchema"],
            "prompt": rec.LOOP_PROMPT,
            "stepCount": 4,
        }
        for s in run
    ]
    (work / "cases.json").write_text(json.dumps(cases))
    env = {**os.environ, "MISSING": rec.LOOP_MISSING_FILE, "RAISED": rec.LOOP_RAISED}
    out = {}
    for item in run_node_json_lines(work, ["loops.mjs", "cases.json"], env, timeout=120):
        name = item.pop("name")
        scenario = next(s for s in run if s.key == name)
        out[name] = {**item, **_wire(server, scenario, "ai")}
    return out


# -- aimux-ops' side ----------------------------------------------------------------------------


def ours(srv: ScenarioServer, scenario: Scenario) -> dict[str, Any]:
    url = _register(srv, scenario, "ax")
    origin = url.split("/c/")[0]
    name = "ok" if scenario.name == "cancel" else scenario.name
    params = rec.loop_params(name, scenario.provider, origin, None)
    del params["recording"]
    params["model"]["baseURL"] = url
    params["model"]["apiKey"] = "k"
    behaviour = _scripted(scenario.name)[0]
    out: dict[str, Any] = {}
    if scenario.name == "cancel":
        running, release = threading.Event(), threading.Event()

        def wait(args: dict[str, Any]) -> str:
            running.set()
            release.wait(30)
            return "late"

        events = aimux_ops.stream("stream_text", params, execute={"weather": wait})
        for event in events:
            if event["type"] == "tool-call":
                break
        assert running.wait(30)
        events.close()  # the cancel, while the tool runs
        release.set()
        out["sawAbort"] = False  # a sync Python function has no signal (Node's execute has one)
    else:
        try:
            result = aimux_ops.call(
                "generate_text", params, execute={"weather": rec.loop_tool(behaviour)}
            )
        except aimux_ops.AimuxError as exc:
            out["error"] = {"code": exc.code, "cause": type(exc.__cause__).__name__}
        else:
            usage = result["usage"]
            out["result"] = {
                "text": result["text"],
                "finishReason": result["finishReason"],
                "usage": [usage["inputTokens"], usage["outputTokens"], usage["totalTokens"]],
                "steps": [
                    {
                        "finishReason": s["finishReason"],
                        "text": s["text"],
                        "toolResults": [
                            {k: r[k] for k in ("toolCallId", "toolName", "output")}
                            for r in s["toolResults"]
                        ],
                        "toolErrors": [
                            {
                                "toolCallId": e["toolCallId"],
                                "toolName": e["toolName"],
                                "message": _error_message(e["error"]),
                            }
                            for e in s["toolErrors"]
                        ],
                    }
                    for s in result["steps"]
                ],
            }
    return {**out, **_wire(srv, scenario, "ax")}


def _error_message(error: Any) -> str:
    """A step's tool error as a message (the host's ``{message, data?}`` or the core's node)."""
    if isinstance(error, dict):
        return str(error.get("message", ""))
    return str(error)


def comparable(o: dict[str, Any], scenario: Scenario | None) -> dict[str, Any]:
    out = {k: o[k] for k in ("calls", "sent", "messages", "request")}
    if "result" in o:
        result = dict(o["result"])
        if scenario is not None and scenario.name == "parallel":  # answers come in any order
            result["steps"] = [
                {**s, "toolResults": sorted(s["toolResults"], key=lambda r: r["toolCallId"])}
                for s in result["steps"]
            ]
        out["result"] = result
    if "error" in o:
        out["error"] = o["error"]
    return out


def _design_keys() -> set[str]:
    return {
        line.split("`")[1]
        for line in DESIGN.read_text().splitlines()
        if line.startswith("| `") and line.count("`") >= 2
    }


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.key for s in SCENARIOS])
def test_the_loop_against_the_ai_sdk(
    server: ScenarioServer, theirs: dict[str, dict[str, Any]], scenario: Scenario
) -> None:
    mine = ours(server, scenario)
    kind, _, key = scenario.expect.partition(":")
    if kind == "theirs-absent":
        assert key in _design_keys(), f"{key} is not in the DESIGN.md table"
        assert scenario.key not in theirs
        assert mine["calls"] == 2 and mine["sent"][0]["id"] == "t1", mine
        return
    their = theirs[scenario.key]
    a, b = comparable(mine, scenario), comparable(their, scenario)
    if os.environ.get("AIMUX_DIFF_SHOW"):
        print(f"\n{scenario.key}\n  ours:   {a}\n  theirs: {b}")
    if kind == "same":
        assert a == b, f"\nours:   {a}\ntheirs: {b}"
        return
    assert key in _design_keys(), f"{key} is not in the DESIGN.md table"
    assert a != b, f"listed as a difference but the peers agree now: {a}"
    assert scenario.check is None or scenario.check(mine, their), f"\nours:   {a}\ntheirs: {b}"
