import assert from "node:assert/strict";
import { parseToolCall, parseTrajectory, TagStreamParser } from "../../../extension/core/agent/parser";
import golden from "../../../protocol/golden/trajectories.json";

describe("tag grammar: golden trajectories", () => {
  for (const vector of golden.vectors) {
    it(`${vector.name}: whole text`, () => {
      assert.deepEqual(parseTrajectory(vector.raw), vector.steps);
    });
    it(`${vector.name}: streamed in chunks of every size 1-7`, () => {
      for (let size = 1; size <= 7; size++) {
        const parser = new TagStreamParser();
        const chars = [...vector.raw];
        for (let i = 0; i < chars.length; i += size) parser.push(chars.slice(i, i + size).join(""));
        parser.end();
        assert.deepEqual(parser.snapshot(), vector.steps, `chunk size ${size}`);
      }
    });
  }

  it("streams think and translation deltas whose concatenation is the step text", () => {
    const parser = new TagStreamParser();
    const events = [..."<think>ab</think><translation>你好 world</translation>"].flatMap((c) => parser.push(c));
    const think = events.flatMap((e) => (e.type === "think-delta" ? [e.text] : [])).join("");
    const translation = events.flatMap((e) => (e.type === "translation-delta" ? [e.text] : [])).join("");
    assert.equal(think, "ab");
    assert.equal(translation, "你好 world");
    assert.ok(events.some((e) => e.type === "translation-end"));
  });

  it("holds back a partial tag until it is resolved", () => {
    const parser = new TagStreamParser();
    assert.deepEqual(parser.push("<think>x</thi"), [{ type: "think-delta", text: "x" }]);
    assert.deepEqual(parser.push("nk>"), [{ type: "think-end" }]);
  });

  it("closes an open search at the end of a turn", () => {
    const parser = new TagStreamParser();
    parser.push("<think>t</think><search>内卷");
    assert.equal(parser.openRegion, "search");
    const events = parser.closeOpenSearch();
    assert.deepEqual(events, [{ type: "search", query: "内卷", syntax: "search" }]);
  });
});

describe("SRAT tool calls", () => {
  it("reads the query from JSON", () => {
    assert.deepEqual(parseToolCall('{"name":"search","arguments":{"query":" 佛系 "}}'), { query: "佛系" });
  });
  it("accepts arguments encoded as a JSON string", () => {
    assert.deepEqual(parseToolCall('{"name":"search","arguments":"{\\"query\\":\\"q\\"}"}'), { query: "q" });
  });
  it("rejects broken JSON, other tools and missing queries with a reason", () => {
    for (const body of [
      '{"name":"search"',
      '{"name":"calc","arguments":{}}',
      '{"name":"search","arguments":{}}',
      "  ",
    ]) {
      const result = parseToolCall(body);
      assert.ok("reason" in result, body);
    }
  });
});
