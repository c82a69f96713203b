import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildMessages, formatEvidence, informationBlock } from "../extension/core/agent/prompt";
import { DEFAULT_LIMITS } from "../extension/core/agent/types";
import { demoGlossaryPath, packageRoot } from "../extension/core/resources";
import { loadIndex } from "../extension/core/retrieval/corpora";

/**
 * Writes test/fixtures/embedded-trajectories.json: trajectories built with the product's own prompt
 * builder, retriever (the demo glossary) and evidence format, which the tiny test policy is trained to
 * reproduce. `masked` spans are the runtime-written information blocks (left out of the loss).
 */
export async function embeddedFixture() {
  const { index } = await loadIndex([{ path: demoGlossaryPath(), id: "demo-cc-cedict" }]);
  const example = async (text: string, parts: Array<string | { search: string }>) => {
    const messages = buildMessages({ text, sourceLang: "zh", targetLang: "en", mode: "selective", style: "neoamt" });
    let assistant = "";
    const masked: Array<[number, number]> = [];
    for (const part of parts) {
      if (typeof part === "string") {
        assistant += part;
        continue;
      }
      assistant += `<search>${part.search}</search>`;
      const hits = await index.search(part.search, { topk: DEFAULT_LIMITS.topk });
      const block = informationBlock(formatEvidence(hits));
      masked.push([assistant.length, assistant.length + block.length]);
      assistant += block;
    }
    return { messages, assistant, masked };
  };
  return {
    schema: "glossa.embedded-fixture/1",
    examples: [
      await example("你别狗咬吕洞宾，不识好人心，我是真心帮你的。", [
        "<think>狗咬吕洞宾 is an idiom; I should check what it means.</think>\n",
        { search: "狗咬吕洞宾" },
        "<think>It means repaying kindness with ill will.</think>\n",
        "<translation>\nDon't bite the hand that's trying to help you; I really mean well.\n</translation>",
      ]),
      await example("我今天很忙。", [
        "<think>A plain sentence; no lookup needed.</think>\n",
        "<translation>\nI am very busy today.\n</translation>",
      ]),
    ],
  };
}

if (require.main === module) {
  void embeddedFixture().then((fixture) => {
    const out = join(packageRoot(), "test", "fixtures", "embedded-trajectories.json");
    writeFileSync(out, `${JSON.stringify(fixture, null, 2)}\n`);
    console.log(`wrote ${out}`);
  });
}
