"""The policy protocol, read from ``protocol/`` so the trainer and the extension cannot drift apart.

Mirrors ``extension/core/agent/parser.ts`` and ``prompt.ts``: the same prompt templates, evidence format
and tag grammar; both replay ``protocol/golden/*.json`` in their tests.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROTOCOL_DIR = Path(__file__).resolve().parents[2] / "protocol"
PROMPTS: dict[str, Any] = json.loads((PROTOCOL_DIR / "prompts.json").read_text(encoding="utf-8"))

OPEN = {
    "<think>": "think",
    "<search>": "search",
    "<tool_call>": "tool_call",
    "<information>": "information",
    "<translation>": "translation",
    "<answer>": "answer",
}
CLOSE = {
    "</think>": "think",
    "</search>": "search",
    "</tool_call>": "tool_call",
    "</information>": "information",
    "</translation>": "translation",
    "</answer>": "answer",
    # NeoAMT's Table 9 example closes think with "<think/>"; models trained on it copy it.
    "<think/>": "think",
}
ALL_TAGS = list(OPEN) + list(CLOSE)
LONGEST_TAG = max(len(t) for t in ALL_TAGS)

Step = dict[str, Any]


def language_name(code: str) -> str:
    names: dict[str, str] = PROMPTS["languages"]
    return names.get(code) or names.get(code.split("-")[0]) or code


def fill_template(template: str, values: dict[str, str]) -> str:
    """Single-pass substitution, so source text containing ``{tgt_lang}`` is left alone."""
    return re.sub(r"\{([a-z_]+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


def build_messages(
    text: str,
    source_lang: str,
    target_lang: str,
    mode: str = "selective",
    style: str = "neoamt",
    context: str | None = None,
    information: str | None = None,
) -> list[dict[str, str]]:
    template = PROMPTS["styles"][style][mode]
    context_block = fill_template(PROMPTS["context_block"], {"context": context}) if context and context.strip() else ""
    content = fill_template(
        template,
        {
            "src_lang": language_name(source_lang),
            "tgt_lang": language_name(target_lang),
            "context_block": context_block,
            "src_text": text,
            "information": information or "",
        },
    )
    return [{"role": "user", "content": content}]


def format_evidence(hits: list[dict[str, Any]]) -> str:
    spec = PROMPTS["information"]
    if not hits:
        return spec["no_results"]
    lines = []
    for i, hit in enumerate(hits):
        line = fill_template(
            spec["result_line"],
            {
                "n": str(i + 1),
                "headword": _one_line(hit["headword"]),
                "gloss": _one_line(hit["gloss"]),
                "source": hit["source"],
                "lang": hit["lang"],
            },
        )
        cap = spec["max_chars_per_result"]
        # Characters are counted in UTF-16 code units, as the extension does.
        if _utf16_len(line) > cap:
            line = _utf16_prefix(line, cap - 1) + "…"
        lines.append(line)
    return "\n".join(lines)


def information_block(body: str) -> str:
    """The exact text the runtime appends after a search; these characters are masked out of the loss."""
    spec = PROMPTS["information"]
    return f"{spec['before']}{body}{spec['after']}"


def information_spans(raw: str) -> list[tuple[int, int]]:
    """Character spans of runtime-written information blocks in a trajectory (for loss masking)."""
    before, after = PROMPTS["information"]["before"], PROMPTS["information"]["after"]
    pattern = re.escape(before) + r".*?" + re.escape(after)
    return [(m.start(), m.end()) for m in re.finditer(pattern, raw, flags=re.S)]


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _utf16_prefix(text: str, units: int) -> str:
    return text.encode("utf-16-le")[: units * 2].decode("utf-16-le", errors="ignore")


def parse_tool_call(body: str) -> dict[str, str]:
    """SRAT's ``{"name": "search", "arguments": {"query": ...}}``; non-JSON text is the query itself."""
    trimmed = body.strip()
    if not trimmed:
        return {"reason": "empty tool call"}
    if not trimmed.startswith("{"):
        return {"query": trimmed, "warning": "tool call was not JSON; its text was used as the query"}
    try:
        value = json.loads(trimmed)
    except json.JSONDecodeError as e:
        return {"reason": f"tool call is not valid JSON ({e})"}
    if not isinstance(value, dict):
        return {"reason": "tool call is not a JSON object"}
    if value.get("name") != "search":
        return {"reason": f'unknown tool {json.dumps(value.get("name"))}; only "search" exists'}
    args = value.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return {"reason": "tool call arguments are not valid JSON"}
    query = args.get("query") if isinstance(args, dict) else None
    if not isinstance(query, str) or not query.strip():
        return {"reason": "tool call has no string 'query' argument"}
    return {"query": query.strip()}


@dataclass
class TagStreamParser:
    """Incremental parser: text may arrive in any chunks; a possible tag prefix is held back until resolved."""

    region: str = "none"
    pending: str = ""
    collected: str = ""
    translation: str = ""
    steps: list[Step] = field(default_factory=list)

    def push(self, chunk: str) -> None:
        self.pending += chunk
        while True:
            lt = self.pending.find("<")
            if lt < 0:
                self._text(self.pending)
                self.pending = ""
                return
            if lt > 0:
                self._text(self.pending[:lt])
                self.pending = self.pending[lt:]
            tag = next((t for t in ALL_TAGS if self.pending.startswith(t)), None)
            if tag:
                self.pending = self.pending[len(tag) :]
                self._tag(tag)
                continue
            if len(self.pending) < LONGEST_TAG and any(t.startswith(self.pending) for t in ALL_TAGS):
                return
            self._text("<")
            self.pending = self.pending[1:]

    def end(self) -> None:
        if self.pending:
            self._text(self.pending)
            self.pending = ""

    def snapshot(self) -> list[Step]:
        steps = [dict(s) for s in self.steps if s["kind"] != "text" or s["text"].strip()]
        if self.region == "think":
            steps.append({"kind": "think", "text": self.collected, "closed": False})
        if self.region in ("translation", "answer"):
            steps.append({"kind": "translation", "text": self.translation, "syntax": self.region, "closed": False})
        return steps

    def _text(self, text: str) -> None:
        if not text:
            return
        if self.region in ("translation", "answer"):
            self.translation += text
        elif self.region == "none":
            if self.steps and self.steps[-1]["kind"] == "text":
                self.steps[-1]["text"] += text
            else:
                self.steps.append({"kind": "text", "text": text})
        else:
            self.collected += text

    def _tag(self, tag: str) -> None:
        opens, closes = OPEN.get(tag), CLOSE.get(tag)
        if opens and self.region == "none":
            self.region, self.collected, self.translation = opens, "", ""
            return
        if closes and closes == self.region:
            self._close()
            return
        if tag == "<think/>" and self.region == "none":
            return
        self._text(tag)

    def _close(self) -> None:
        region, body = self.region, self.collected
        self.region, self.collected = "none", ""
        if region == "think":
            self.steps.append({"kind": "think", "text": body, "closed": True})
        elif region == "search":
            self.steps.append({"kind": "search", "query": body.strip(), "syntax": "search"})
        elif region == "tool_call":
            parsed = parse_tool_call(body)
            if "query" in parsed:
                self.steps.append({"kind": "search", "query": parsed["query"], "syntax": "tool_call"})
            else:
                self.steps.append({"kind": "text", "text": f"<tool_call>{body}</tool_call>"})
        elif region == "information":
            self.steps.append({"kind": "information", "text": body, "hits": []})
        elif region in ("translation", "answer"):
            self.steps.append({"kind": "translation", "text": self.translation, "syntax": region, "closed": True})
            self.translation = ""


def parse_trajectory(raw: str) -> list[Step]:
    parser = TagStreamParser()
    parser.push(raw)
    parser.end()
    return parser.snapshot()
