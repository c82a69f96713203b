import assert from "node:assert/strict";
import { buildMessages, fillTemplate, formatEvidence, languageName } from "../../../extension/core/agent/prompt";
import type { SearchHit } from "../../../extension/core/retrieval/types";
import committedPrompts from "../../../protocol/golden/prompts.json";
import { promptVectors } from "../../../scripts/make-prompt-vectors";

const hit = (gloss: string): SearchHit => ({
  id: "c:1",
  headword: "内卷",
  gloss,
  score: 1,
  lang: "zh",
  source: "cc-cedict",
  match: "exact",
});

describe("prompts", () => {
  it("renders NeoAMT Table 9 with language names and the source text", () => {
    const [message] = buildMessages({
      text: "我今天很忙。",
      sourceLang: "zh",
      targetLang: "en",
      mode: "selective",
      style: "neoamt",
    });
    assert.equal(message?.role, "user");
    assert.ok(message?.content.startsWith("You are a professional Chinese to English translator."));
    assert.ok(message?.content.includes("<search> and </search>"));
    assert.ok(message?.content.endsWith("Chinese text: 我今天很忙。"));
  });

  it("leaves placeholders inside the source text alone", () => {
    const [message] = buildMessages({
      text: "use {tgt_lang} literally",
      sourceLang: "en",
      targetLang: "de",
      mode: "never",
      style: "neoamt",
    });
    assert.ok(message?.content.endsWith("English text: use {tgt_lang} literally"));
    assert.ok(!message?.content.includes("<search>"), "never mode does not offer the search tool");
  });

  it("adds context only when given, and evidence in always mode", () => {
    const [withContext] = buildMessages({
      text: "x",
      context: "before. after.",
      sourceLang: "en",
      targetLang: "de",
      mode: "always",
      style: "srat",
      information: "[1] a — b (c, en)",
    });
    assert.ok(withContext?.content.includes("Surrounding text, for reference only"));
    assert.ok(withContext?.content.includes("<information>[1] a — b (c, en)</information>"));
    assert.ok(withContext?.content.includes("<tool_call>"));
  });

  it("formats evidence one line per hit and caps each at 2000 characters", () => {
    const text = formatEvidence([hit("involution;\nrat race"), hit("x".repeat(5000))]);
    const lines = text.split("\n");
    assert.equal(lines[0], "[1] 内卷 — involution; rat race (cc-cedict, zh)");
    assert.equal(lines[1]?.length, 2000);
    assert.equal(formatEvidence([]), "No results found for this query.");
  });

  it("names languages and passes unknown codes through", () => {
    assert.equal(languageName("zh-CN"), "Chinese");
    assert.equal(languageName("tlh"), "tlh");
    assert.equal(fillTemplate("{a}{b}", { a: "1" }), "1{b}");
  });
});

describe("prompt golden vectors (shared with the trainer)", () => {
  it("are what the prompt builder produces today", () => {
    assert.deepEqual(
      JSON.parse(JSON.stringify(promptVectors())),
      committedPrompts,
      "run `npx tsx scripts/make-prompt-vectors.ts`",
    );
  });
});
