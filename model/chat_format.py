"""The proxy's chat format, shared by training, export and the golden files.

A conversation is a list of SEGMENTS: control tokens (added, special) and text fields. Every text
field sits between two control tokens, so encoding a rendered string with a tokenizer that splits
special tokens first gives exactly the segment-by-segment encoding; the TypeScript engine encodes
the same segments and never lets untrusted text produce a control token.

    <|bos|>
    <|tool_def|>name(arg: type, opt?: type): description<|end|>             one per registered tool
    <|system|>TEXT<|end|>
    <|user|>TEXT<|end|>
    <|assistant|>TEXT<|call|>{"name": .., "arguments": ..}<|call|>..<|end|>
    <|tool|>TOOL_NAME<|result|>TEXT<|end|>
    <|assistant|><|call|>ACTION_JSON                                          the scored action

JSON is written like Python's json.dumps(ensure_ascii=False) with default separators, which is
also what @huggingface/jinja's `tojson` and the TypeScript engine write.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

SPECIAL_TOKENS = [
    "<|bos|>", "<|eos|>", "<|pad|>",
    "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|result|>",
    "<|tool_def|>", "<|call|>", "<|end|>",
]
BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"

CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- if tools -%}{%- for t in tools -%}"
    "{%- set f = t.function if t.function is defined else t -%}"
    "{%- set p = f.parameters if f.parameters is defined else (f.inputSchema if f.inputSchema is defined else {}) -%}"
    "{%- set req = p.required if p.required is defined else [] -%}"
    "{{- '<|tool_def|>' + f.name + '(' -}}"
    "{%- if p.properties is defined -%}{%- for k, v in p.properties.items() -%}"
    "{{- (', ' if not loop.first else '') + k + ('' if k in req else '?') + ': ' -}}"
    "{{- (v.type if v.type is string else (v.type|join('|') if v.type is defined else 'any')) -}}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '): ' + (f.description if f.description is defined else '') + '<|end|>' -}}"
    "{%- endfor -%}{%- endif -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' -%}{{- '<|system|>' + m.content + '<|end|>' -}}"
    "{%- elif m.role == 'user' -%}{{- '<|user|>' + m.content + '<|end|>' -}}"
    "{%- elif m.role == 'assistant' -%}{{- '<|assistant|>' + (m.content if m.content else '') -}}"
    "{%- if m.tool_calls -%}{%- for c in m.tool_calls -%}"
    "{{- '<|call|>' + ({'name': c.name, 'arguments': c.arguments} | tojson) -}}"
    "{%- endfor -%}{%- endif -%}{{- '<|end|>' -}}"
    "{%- elif m.role == 'tool' -%}{{- '<|tool|>' + m.tool_name + '<|result|>' + m.content + '<|end|>' -}}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}"
)


def _normalise_numbers(v: Any) -> Any:
    # JavaScript has one number type: 450.0 prints as 450 there, so print it so here too.
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e16:
        return int(v)
    if isinstance(v, dict):
        return {k: _normalise_numbers(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_normalise_numbers(x) for x in v]
    return v


def dumps(v: Any) -> str:
    return json.dumps(_normalise_numbers(v), ensure_ascii=False)


def call_json(name: str, arguments: Any) -> str:
    return dumps({"name": name, "arguments": arguments})


def _param_type(schema: Any) -> str:
    t = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(t, str):
        return t
    if isinstance(t, list):
        return "|".join(str(x) for x in t)
    return "any"


def tool_def_text(tool: dict) -> str:
    """A tool as one compact line: `name(arg: type, optional?: type): description`.

    Full JSON schemas cost ~80 tokens a tool (AgentDojo's lists alone fill a 1,024-token window);
    the line keeps what the proxy needs: the name, the argument names and types, the description
    (where tool poisoning hides its instructions).
    """
    f = tool.get("function", tool)
    p = f.get("parameters", f.get("inputSchema")) or {}
    req = p.get("required") or []
    args = ", ".join(f"{k}{'' if k in req else '?'}: {_param_type(v)}" for k, v in (p.get("properties") or {}).items())
    return f"{f['name']}({args}): {f.get('description') or ''}"


Segment = tuple  # ("s", "<|user|>") | ("t", "text")


def segments(messages: Iterable[dict], tools: Iterable[dict] | None = None,
             action: dict | None = None) -> list[Segment]:
    """Segments of a conversation; with `action`, ends with the action call as the last turn."""
    out: list[Segment] = [("s", BOS)]
    for t in tools or []:
        out += [("s", "<|tool_def|>"), ("t", tool_def_text(t)), ("s", "<|end|>")]
    for m in messages:
        role = m["role"]
        content = m.get("content") or ""
        if role in ("system", "user"):
            out += [("s", f"<|{role}|>"), ("t", content), ("s", "<|end|>")]
        elif role == "assistant":
            out += [("s", "<|assistant|>"), ("t", content)]
            for c in m.get("tool_calls") or []:
                out += [("s", "<|call|>"), ("t", call_json(c["name"], c.get("arguments", {})))]
            out.append(("s", "<|end|>"))
        elif role == "tool":
            out += [("s", "<|tool|>"), ("t", m.get("tool_name") or ""), ("s", "<|result|>"),
                    ("t", content), ("s", "<|end|>")]
        else:
            raise ValueError(f"unknown role {role!r}: should be one of system, user, assistant, tool")
    if action is not None:
        out += [("s", "<|assistant|>"), ("s", "<|call|>"),
                ("t", call_json(action["name"], action.get("arguments", {}))), ("s", "<|end|>")]
    return [s for s in out if not (s[0] == "t" and s[1] == "")]


def render(segs: list[Segment]) -> str:
    return "".join(s[1] for s in segs)


def argument_values(v) -> list[str]:
    """Every scalar value in a call's arguments (nested objects and lists included), as text; booleans
    and nulls carry no copied value and are left out."""
    if isinstance(v, dict):
        return [x for y in v.values() for x in argument_values(y)]
    if isinstance(v, list):
        return [x for y in v for x in argument_values(y)]
    return [str(v)] if isinstance(v, (str, int, float)) and not isinstance(v, bool) else []
