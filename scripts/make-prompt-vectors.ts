import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PromptInput } from "../extension/core/agent/prompt";
import { buildMessages, formatEvidence } from "../extension/core/agent/prompt";
import { packageRoot } from "../extension/core/resources";
import type { SearchHit } from "../extension/core/retrieval/types";

/** Writes protocol/golden/prompts.json: prompt and evidence renderings both languages must reproduce. */
export function promptVectors() {
  const inputs: Array<{ name: string; input: PromptInput; hits?: SearchHit[] }> = [
    {
      name: "neoamt-selective",
      input: {
        text: "你别狗咬吕洞宾，不识好人心。",
        sourceLang: "zh",
        targetLang: "en",
        mode: "selective",
        style: "neoamt",
      },
    },
    {
      name: "neoamt-never-template-braces-in-source",
      input: { text: "keep {tgt_lang} as is", sourceLang: "en", targetLang: "de", mode: "never", style: "neoamt" },
    },
    {
      name: "srat-always-with-context",
      input: {
        text: "这个行业太内卷了。",
        sourceLang: "zh",
        targetLang: "ja",
        mode: "always",
        style: "srat",
        context: "前文……后文",
        information: "[1] 内卷 — involution (demo, zh)",
      },
    },
    {
      name: "evidence-lines-and-cap",
      input: { text: "x", sourceLang: "zh-Hant", targetLang: "pt-BR", mode: "selective", style: "srat" },
      hits: [
        {
          id: "a",
          headword: "内卷",
          gloss: "involution;\n rat race",
          score: 1,
          lang: "zh",
          source: "demo",
          match: "exact",
        },
        {
          id: "b",
          headword: "長",
          gloss: `${"長い".repeat(1200)}🙂`,
          score: 0.5,
          lang: "ja",
          source: "edict",
          match: "bm25",
        },
      ],
    },
  ];
  return {
    schema: "glossa.golden-prompts/1",
    doc: "Prompt and evidence renderings from the extension's prompt builder; the trainer must produce the same.",
    vectors: inputs.map(({ name, input, hits }) => ({
      name,
      input,
      messages: buildMessages(input),
      ...(hits ? { hits, evidence: formatEvidence(hits) } : {}),
    })),
  };
}

if (require.main === module) {
  const out = join(packageRoot(), "protocol", "golden", "prompts.json");
  writeFileSync(out, `${JSON.stringify(promptVectors(), null, 2)}\n`);
  console.log(`wrote ${out}`);
}
