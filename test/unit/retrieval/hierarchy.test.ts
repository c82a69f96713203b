import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadIndex } from "../../../extension/core/retrieval/corpora";
import {
  detectQueryLanguage,
  HierarchicalRetriever,
  type HierarchySettings,
  tierLanguages,
} from "../../../extension/core/retrieval/hierarchy";
import type { Retriever, SearchHit, SearchOptions } from "../../../extension/core/retrieval/types";
import { DEMO_GLOSSARY } from "../../support/paths";

/** Glossaries in five languages around the same neologisms as the (Chinese) demo glossary. */
const GLOSSARIES: Record<string, string> = {
  ja: [
    "ja\ten",
    "社畜\tcorporate drone; a salaried worker owned by the company",
    "寝そべり族\tlying-flat people, who opt out of the rat race (Chinese 躺平)",
    "内巻き\tinvolution; the rat race of competition (Chinese 内卷)",
  ].join("\n"),
  ko: [
    "ko\ten",
    "내권\tinvolution, the rat race (from Chinese 内卷)",
    "탕핑\tlying flat; opting out (from Chinese 躺平)",
  ].join("\n"),
  ru: [
    "ru\ten",
    "крысиные бега\trat race; pointless competition (Chinese 内卷)",
    "лежать плашмя\tto lie flat, opt out of the rat race (Chinese 躺平)",
  ].join("\n"),
  de: [
    "de\ten",
    "Hamsterrad\trat race; treadmill of pointless competition (Chinese 内卷)",
    "flach liegen\tlying flat, opting out (Chinese 躺平)",
  ].join("\n"),
  en: [
    "en\tzh",
    "involution\t内卷: a society becoming a rat race",
    "lying flat\t躺平: opting out of the rat race",
  ].join("\n"),
};
const LANGUAGES = ["zh", "ja", "ko", "ru", "de", "en"];

/** Passes every call through to the real index and records the languages each call asked for. */
class RecordingRetriever implements Retriever {
  readonly calls: Array<string[] | undefined> = [];
  constructor(private readonly base: Retriever) {}
  get corpusIds(): readonly string[] {
    return this.base.corpusIds;
  }
  search(query: string, options: SearchOptions): Promise<SearchHit[]> {
    this.calls.push(options.langs);
    return this.base.search(query, options);
  }
}

describe("LcRL hierarchy: query language from the script", () => {
  it("maps scripts to languages", () => {
    const cases: Array<[string, string]> = [
      ["内卷", "zh"],
      ["東京に行きたい", "ja"],
      ["カラオケ", "ja"],
      ["탕핑", "ko"],
      ["крысиные бега", "ru"],
      ["αγών δρόμου", "el"],
      ["سباق الفئران", "ar"],
      ["การแข่งขัน", "th"],
      ["rat race", "en"],
      ["内卷 is the new rat race", "zh"],
      ["", "en"],
      ["123 !?", "en"],
    ];
    for (const [query, lang] of cases) assert.equal(detectQueryLanguage(query), lang, query);
    assert.equal(detectQueryLanguage("Hamsterrad", "de"), "de");
  });

  it("puts the query language first, the other languages next, the anchor last, each once", () => {
    const settings: HierarchySettings = { languages: LANGUAGES };
    assert.deepEqual(tierLanguages("zh", settings), { 0: ["zh"], 1: ["ja", "ko", "ru", "de"], 2: ["en"] });
    assert.deepEqual(tierLanguages("en", settings), { 0: ["en"], 1: ["zh", "ja", "ko", "ru", "de"], 2: [] });
    assert.deepEqual(tierLanguages("fr", { languages: LANGUAGES, anchors: ["en", "zh"] }), {
      0: ["fr"],
      1: ["ja", "ko", "ru", "de"],
      2: ["en", "zh"],
    });
  });

  it("refuses a tier order that is not a set of tiers 0-2", () => {
    const base: Retriever = { corpusIds: [], search: async () => [] };
    assert.throws(
      () => new HierarchicalRetriever(base, { languages: LANGUAGES, order: [0, 0, 1] }),
      /distinct tiers out of 0, 1, 2/,
    );
  });
});

describe("LcRL hierarchy over a real multilingual corpus", function () {
  this.timeout(60_000);
  let base: Retriever;

  before(async () => {
    const dir = await mkdtemp(join(tmpdir(), "glossa-hierarchy-"));
    const specs = [{ path: DEMO_GLOSSARY, id: "demo-cc-cedict" }];
    for (const [lang, text] of Object.entries(GLOSSARIES)) {
      const path = join(dir, `${lang}.tsv`);
      await writeFile(path, `${text}\n`);
      specs.push({ path, id: `glossary-${lang}` });
    }
    const { index, reports } = await loadIndex(specs);
    for (const report of reports) assert.equal(report.malformed, 0, JSON.stringify(report));
    base = index;
  });

  function hierarchy(settings: Partial<HierarchySettings> = {}) {
    const recording = new RecordingRetriever(base);
    return { recording, retriever: new HierarchicalRetriever(recording, { languages: LANGUAGES, ...settings }) };
  }

  it("searches native, then other languages, then the anchor, through the base's langs option", async () => {
    const { recording, retriever } = hierarchy({ stop: { kind: "all" }, perTier: 3 });
    const result = await retriever.searchTiers("内卷", { topk: 9 });
    assert.equal(result.queryLang, "zh");
    assert.deepEqual(recording.calls, [["zh"], ["ja", "ko", "ru", "de"], ["en"]]);
    assert.deepEqual(
      result.searched.map((t) => t.tier),
      [0, 1, 2],
    );
    assert.equal(result.stoppedBy, "exhausted");
    const { hits } = result;
    assert.deepEqual(
      hits.map((h) => h.tier),
      [...hits.map((h) => h.tier!)].sort(),
      "tier-first order",
    );
    assert.equal(hits[0]?.headword, "内卷");
    assert.equal(hits[0]?.source, "demo-cc-cedict");
    for (const hit of hits) {
      assert.ok(hit.tier !== undefined);
      const allowed = [["zh"], ["ja", "ko", "ru", "de"], ["en"]][hit.tier]!;
      assert.ok(allowed.includes(hit.lang), `${hit.headword} (${hit.lang}) in tier ${hit.tier}`);
    }
    assert.ok(hits.some((h) => h.tier === 1 && h.headword === "Hamsterrad"));
    assert.ok(hits.some((h) => h.tier === 2 && h.headword === "involution"));
    assert.ok(hits.filter((h) => h.tier === 1).length <= 3, "perTier caps a tier");
  });

  it("stops after the native tier when it already gives enough results", async () => {
    const { recording, retriever } = hierarchy();
    const result = await retriever.searchTiers("躺平", { topk: 1 });
    assert.equal(result.stoppedBy, "enough");
    assert.deepEqual(recording.calls, [["zh"]]);
    assert.deepEqual(
      result.hits.map((h) => [h.headword, h.tier, h.lang]),
      [["躺平", 0, "zh"]],
    );
  });

  it("keeps going while results are below the score threshold", async () => {
    // The exact native hit scores 1; the threshold 2 lets only the BM25 hits of the next tier count.
    const { recording, retriever } = hierarchy({ stop: { kind: "enough", minResults: 1, minScore: 2 } });
    const result = await retriever.searchTiers("内卷", { topk: 5 });
    assert.deepEqual(
      result.searched.map((t) => t.tier),
      [0, 1],
    );
    assert.equal(recording.calls.length, 2);
    assert.equal(result.stoppedBy, "enough");
    assert.equal(result.hits[0]?.tier, 0);
    assert.ok(result.hits.slice(1).every((h) => h.tier === 1 && h.score >= 2));

    const never = hierarchy({ stop: { kind: "enough", minResults: 1, minScore: 1e9 } });
    const exhausted = await never.retriever.searchTiers("内卷", { topk: 5 });
    assert.equal(exhausted.stoppedBy, "exhausted");
    assert.equal(never.recording.calls.length, 3);
  });

  it("counts results over the tiers searched so far for minResults", async () => {
    const { retriever } = hierarchy({ stop: { kind: "enough", minResults: 4 } });
    const result = await retriever.searchTiers("躺平", { topk: 10 });
    const perTier = result.searched.map((t) => t.found);
    const total = perTier.reduce((a, b) => a + b, 0);
    assert.ok(total >= 4, JSON.stringify(result.searched));
    assert.ok(total - perTier.at(-1)! < 4, "it stopped at the first tier that reached the count");
    assert.equal(result.stoppedBy, "enough");
  });

  it("detects each script's language and starts there", async () => {
    const { retriever } = hierarchy({ stop: { kind: "all" } });
    for (const [query, lang] of [
      ["крысиные бега", "ru"],
      ["寝そべり族", "ja"],
      ["탕핑", "ko"],
    ] as const) {
      const result = await retriever.searchTiers(query, { topk: 5 });
      assert.equal(result.queryLang, lang);
      assert.deepEqual([result.hits[0]?.headword, result.hits[0]?.tier, result.hits[0]?.lang], [query, 0, lang]);
    }
  });

  it("uses the configured default for Latin script, or an explicit language", async () => {
    const german = hierarchy({ latinDefault: "de", stop: { kind: "all" } });
    const result = await german.retriever.searchTiers("Hamsterrad", { topk: 5 });
    assert.equal(result.queryLang, "de");
    assert.deepEqual(german.recording.calls[0], ["de"]);
    assert.equal(result.hits[0]?.headword, "Hamsterrad");
    assert.equal(result.hits[0]?.tier, 0);

    const english = hierarchy({ stop: { kind: "all" } });
    const en = await english.retriever.searchTiers("rat race", { topk: 10 });
    assert.deepEqual(english.recording.calls, [["en"], ["zh", "ja", "ko", "ru", "de"]], "no anchor tier for English");
    assert.ok(en.hits.filter((h) => h.tier === 0).every((h) => h.lang === "en"));
    const explicit = await english.retriever.searchTiers("rat race", { topk: 3, queryLang: "ru" });
    assert.deepEqual(english.recording.calls.at(-3), ["ru"]);
    assert.equal(explicit.queryLang, "ru");
  });

  it("searches in the configured order but keeps each tier's number", async () => {
    const { recording, retriever } = hierarchy({ order: [2, 0, 1], stop: { kind: "all" }, perTier: 2 });
    const hits = await retriever.search("躺平", { topk: 6 });
    assert.deepEqual(recording.calls, [["en"], ["zh"], ["ja", "ko", "ru", "de"]]);
    assert.deepEqual([hits[0]?.headword, hits[0]?.tier], ["lying flat", 2]);
    assert.equal(hits[1]?.tier, 0);
    assert.ok(hits.slice(2).every((h) => h.tier === 1));
  });

  it("searches only the tiers asked for (one per agent round, as in the paper)", async () => {
    const { recording, retriever } = hierarchy();
    const round2 = await retriever.search("躺平", { topk: 5, tiers: [1] });
    assert.deepEqual(recording.calls, [["ja", "ko", "ru", "de"]]);
    assert.ok(round2.length > 0 && round2.every((h) => h.tier === 1));
  });

  it("narrows every tier to the caller's langs and skips tiers left empty", async () => {
    const { recording, retriever } = hierarchy({ stop: { kind: "all" } });
    const hits = await retriever.search("躺平", { topk: 5, langs: ["zh", "en"] });
    assert.deepEqual(recording.calls, [["zh"], ["en"]]);
    assert.deepEqual(
      hits.map((h) => h.tier),
      [0, 2],
    );
  });

  it("honours cancellation between tiers", async () => {
    const { recording, retriever } = hierarchy({ stop: { kind: "all" } });
    await assert.rejects(retriever.search("躺平", { topk: 5, signal: AbortSignal.abort() }), { name: "AbortError" });
    assert.equal(recording.calls.length, 0);
  });
});
