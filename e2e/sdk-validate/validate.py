#!/usr/bin/env python3
"""Validates mcpl's provider request bodies against the official SDKs' request types.

Each body is checked with unknown keys forbidden at every depth: Anthropic's and OpenAI's
request types are TypedDicts, validated by pydantic after every TypedDict of the SDK is given
`extra="forbid"`; google-genai's types are pydantic models that already forbid extra keys.

    pip install -r requirements.txt
    python3 validate.py --route anthropic transcript.jsonl ...   # one body per line; notices skipped
    python3 validate.py gemini=transcript.jsonl ...              # a route for each file
    python3 validate.py --demo demo-gemini.json ...              # `mcpl demo --json` output
    python3 validate.py --self-test                              # a wrong block type fails

Exit status 0 when every body is valid; 1, with one line per invalid body, when one is not.
"""

import argparse
import importlib
import inspect
import json
import pkgutil
import sys
import typing_extensions

import pydantic

ROUTES = ("anthropic", "openai-chat", "openai-responses", "gemini", "text-only")


def forbid_extra(package):
    """Gives every TypedDict in `package`'s modules `extra="forbid"`."""
    config = pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - an optional module the SDK cannot import here
            continue
        for _, value in inspect.getmembers(module, inspect.isclass):
            if typing_extensions.is_typeddict(value):
                value.__pydantic_config__ = config


def adapters():
    """One validator per route: a function that raises on an invalid body."""
    import anthropic.types
    import openai.types
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from google.genai import types as genai
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    forbid_extra(anthropic.types)
    forbid_extra(openai.types)

    def strict(params):
        adapter = pydantic.TypeAdapter(params)
        # pydantic validates an `Iterable[...]` field lazily, item by item as it is read: read
        # every one, so that each block is validated.
        return lambda body: drain(adapter.validate_python(body))

    messages = strict(MessageCreateParamsNonStreaming)
    chat = strict(CompletionCreateParamsNonStreaming)
    responses = strict(ResponseCreateParamsNonStreaming)

    def gemini(body):
        # generateContent's body: the model is in the URL, not the body.
        known = {"contents", "systemInstruction", "tools", "generationConfig"}
        unknown = set(body) - known
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)}")
        for content in body.get("contents", []):
            genai.Content.model_validate(content)
        if "systemInstruction" in body:
            genai.Content.model_validate(body["systemInstruction"])
        for tool in body.get("tools", []):
            genai.Tool.model_validate(tool)
        if "generationConfig" in body:
            genai.GenerationConfig.model_validate(body["generationConfig"])

    return {
        "anthropic": messages,
        "text-only": messages,
        "openai-chat": chat,
        "openai-responses": responses,
        "gemini": gemini,
    }


def drain(value):
    """Reads every item of every lazily validated iterable in `value`, at any depth."""
    if isinstance(value, dict):
        for item in value.values():
            drain(item)
    elif isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return
    elif hasattr(value, "__iter__"):
        for item in value:
            drain(item)


def demo_bodies(demo):
    """Each call of a `mcpl demo --json` output as the smallest request that carries it."""
    route = demo["route"]
    for call in demo["calls"]:
        live, follow_up = call["live"], call["follow_up"]
        call_id, name = f"call_{call['round']}", f"demo__{call['tool']}"
        if route in ("anthropic", "text-only"):
            body = {"model": "m", "max_tokens": 16, "messages": [
                {"role": "user", "content": "Go."},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": call_id, "name": name, "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": call_id, "content": live}]},
            ]}
        elif route == "openai-chat":
            messages = [
                {"role": "user", "content": "Go."},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": call_id, "type": "function",
                     "function": {"name": name, "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": call_id, "content": live},
            ]
            if follow_up is not None:
                messages.append({"role": "user", "content": follow_up})
            body = {"model": "m", "messages": messages}
        elif route == "openai-responses":
            body = {"model": "m", "input": [
                {"role": "user", "content": "Go."},
                {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"},
                {"type": "function_call_output", "call_id": call_id, "output": live},
            ]}
        else:
            body = {"contents": [
                {"role": "user", "parts": [{"text": "Go."}]},
                {"role": "model", "parts": [{"functionCall": {"id": call_id, "name": name}}]},
                {"role": "user", "parts": live},
            ]}
        yield route, f"demo {route} {call['tool']}", body


def self_test(validate):
    """A good body of each route passes; the same body with one wrong block type fails."""
    png = "iVBORw0KGgo="
    cases = {
        "anthropic": ({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": png}}]}]}, "image", "picture"),
        "openai-chat": ({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + png}}]}]},
            "image_url", "picture"),
        "openai-responses": ({"model": "m", "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/png;base64," + png,
             "detail": "auto"}]}]}, "input_image", "input_picture"),
        "gemini": ({"contents": [{"role": "user", "parts": [
            {"inline_data": {"mime_type": "image/png", "data": png}}]}]},
            "inline_data", "inline_picture"),
    }
    failures = []
    for route, (body, good, bad) in cases.items():
        try:
            validate[route](body)
        except Exception as error:  # noqa: BLE001
            failures.append(f"{route}: the good body fails: {error}")
        broken = json.loads(json.dumps(body).replace(f'"{good}"', f'"{bad}"', 1))
        try:
            validate[route](broken)
            failures.append(f"{route}: a body with block type {bad!r} passes")
        except Exception:  # noqa: BLE001
            pass
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--route", choices=ROUTES, help="the route of every transcript given")
    parser.add_argument("--demo", nargs="*", default=[], help="`mcpl demo --json` outputs")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument(
        "transcripts", nargs="*", help="files of one request body a line, as PATH or ROUTE=PATH")
    args = parser.parse_args()
    validate = adapters()
    if args.self_test:
        failures = self_test(validate)
        for failure in failures:
            print(f"sdk-validate: {failure}")
        print(f"sdk-validate: self-test {'failed' if failures else 'passed'}")
        return 1 if failures else 0
    bodies = []
    notices = 0
    for arg in args.transcripts:
        route, _, path = arg.partition("=")
        if not path or route not in ROUTES:
            route, path = args.route, arg
        if route is None:
            parser.error(f"{arg}: give --route or ROUTE=PATH")
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                body = json.loads(line)
                # `{"notice": ...}` lines record what a server said while a call ran (progress,
                # a task's status); they are no request body.
                if isinstance(body, dict) and list(body) == ["notice"]:
                    notices += 1
                    continue
                bodies.append((route, f"{path}:{n}", body))
    for path in args.demo:
        with open(path, encoding="utf-8") as f:
            bodies.extend(demo_bodies(json.load(f)))
    invalid = 0
    for route, where, body in bodies:
        try:
            validate[route](body)
        except Exception as error:  # noqa: BLE001
            invalid += 1
            print(f"sdk-validate: {where} ({route}): " + " ".join(str(error).split())[:2000])
    skipped = f" ({notices} notice lines skipped)" if notices else ""
    print(f"sdk-validate: {len(bodies) - invalid} of {len(bodies)} bodies valid{skipped}")
    return 1 if invalid or not bodies else 0


if __name__ == "__main__":
    sys.exit(main())
