import json

import pytest

from glossa_trainer.protocol import (
    PROTOCOL_DIR,
    TagStreamParser,
    build_messages,
    format_evidence,
    information_block,
    information_spans,
    parse_trajectory,
)

GOLDEN = json.loads((PROTOCOL_DIR / "golden" / "trajectories.json").read_text(encoding="utf-8"))["vectors"]
PROMPTS = json.loads((PROTOCOL_DIR / "golden" / "prompts.json").read_text(encoding="utf-8"))["vectors"]


@pytest.mark.parametrize("vector", GOLDEN, ids=[v["name"] for v in GOLDEN])
def test_golden_whole(vector: dict) -> None:
    assert parse_trajectory(vector["raw"]) == vector["steps"]


@pytest.mark.parametrize("vector", GOLDEN, ids=[v["name"] for v in GOLDEN])
@pytest.mark.parametrize("size", range(1, 8))
def test_golden_chunked(vector: dict, size: int) -> None:
    parser = TagStreamParser()
    raw = vector["raw"]
    for i in range(0, len(raw), size):
        parser.push(raw[i : i + size])
    parser.end()
    assert parser.snapshot() == vector["steps"]


@pytest.mark.parametrize("vector", PROMPTS, ids=[v["name"] for v in PROMPTS])
def test_prompts_match_the_extension(vector: dict) -> None:
    args = vector["input"]
    assert (
        build_messages(
            args["text"],
            args["sourceLang"],
            args["targetLang"],
            args["mode"],
            args["style"],
            args.get("context"),
            args.get("information"),
        )
        == vector["messages"]
    )
    if "hits" in vector:
        assert format_evidence(vector["hits"]) == vector["evidence"]


def test_information_spans_cover_exactly_the_runtime_text() -> None:
    block = information_block("[1] 内卷 — involution (demo, zh)")
    raw = "<think>t</think><search>内卷</search>" + block + "<translation>x</translation>"
    [(start, end)] = information_spans(raw)
    assert raw[start:end] == block
