import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readCorpus } from "../../../extension/core/retrieval/corpora";
import { IndexStore } from "../../../extension/core/retrieval/indexStore";
import { FrozenLexicalIndex, readRecordHead } from "../../../extension/core/retrieval/lexical";
import { LexicalIndexBuilder } from "../../../extension/core/retrieval/lexicalBuilder";
import { MAX_QUERY_CHARS, queryTerms } from "../../../extension/core/retrieval/lexicalTerms";
import { ScriptFolding, ScriptFoldingCollector } from "../../../extension/core/retrieval/scriptVariants";
import { CEDICT_FULL } from "../../support/paths";

describe("lexical index saved to disk and loaded back (full CC-CEDICT)", function () {
  this.timeout(120_000);
  let index: FrozenLexicalIndex;

  before(async () => {
    const store = new IndexStore(await mkdtemp(join(tmpdir(), "glossa-lexical-")));
    const result = await store.update([{ path: CEDICT_FULL, id: "cc-cedict" }]);
    assert.equal(result.reports[0]?.imported, 124_260);
    const loaded = await store.load();
    index = loaded.index;
    assert.equal(loaded.manifest.entryCount, 124_260);
    assert.deepEqual(index.corpusIds, ["cc-cedict"]);
  });

  it("finds 内卷 exactly and 內卷 through the Traditional/Simplified map learnt from the data", async () => {
    const [simplified] = await index.search("内卷", { topk: 3 });
    assert.equal(simplified?.headword, "内卷");
    assert.equal(simplified?.match, "exact");
    assert.match(simplified?.gloss ?? "", /rat race/);
    assert.equal(simplified?.source, "cc-cedict");
    // Traditional characters inside a longer key, not only whole variants, fold to Simplified.
    assert.equal(index.key("內卷"), "内卷");
    assert.equal(index.key("狗咬呂洞賓"), "狗咬吕洞宾");
    const [traditional] = await index.search("內卷", { topk: 3 });
    assert.equal(traditional?.id, simplified?.id);
    assert.equal(traditional?.match, "normalized");
  });

  it("scans a whole sentence for the idiom in it", async () => {
    const hits = await index.search("你别狗咬吕洞宾，不识好人心，我是真心帮你的。", { topk: 5 });
    assert.equal(hits[0]?.headword, "狗咬吕洞宾，不识好人心");
    assert.equal(hits[0]?.match, "contained");
    assert.equal(hits.length, 5);
  });

  it("ranks English glosses with BM25 as before", async () => {
    const hits = await index.search("rat race", { topk: 10 });
    const headwords = hits.map((h) => h.headword);
    assert.equal(headwords[0], "躺平", JSON.stringify(headwords));
    assert.ok(headwords.includes("内卷"), JSON.stringify(headwords));
    assert.ok(hits.every((h) => h.match === "bm25"));
    const scores = hits.map((h) => h.score);
    assert.deepEqual(
      scores,
      [...scores].sort((a, b) => b - a),
    );
  });

  it("finds headwords one edit away, scored below exact matches", async () => {
    const typo = await index.search("狗咬吕洞滨", { topk: 3 });
    assert.equal(typo[0]?.headword, "狗咬吕洞宾，不识好人心", JSON.stringify(typo));
    assert.equal(typo[0]?.match, "fuzzy");
    assert.ok((typo[0]?.score ?? 1) < 1);
    // Latin headwords and pinyin readings (variants) are keys too.
    const latin = await index.search("coserr", { topk: 3 });
    assert.equal(latin[0]?.headword, "coser", JSON.stringify(latin));
    assert.equal(latin[0]?.match, "fuzzy");
    const reading = await index.search("tang3pin2", { topk: 3 });
    assert.ok(
      reading.some((h) => h.match === "fuzzy" && h.headword === "躺平"),
      JSON.stringify(reading),
    );
    const fuzzy = index.fuzzyKeys(index.key("tang3pin2"), 5);
    assert.ok(fuzzy.length > 0);
    assert.ok(fuzzy.every((m, i) => i === 0 || m.score <= fuzzy[i - 1]!.score));
  });

  it("filters by language, caps glosses and bounds hostile queries", async () => {
    assert.deepEqual(await index.search("内卷", { topk: 3, langs: ["ja"] }), []);
    assert.equal((await index.search("内卷", { topk: 3, langs: ["zh"] }))[0]?.headword, "内卷");
    const [capped] = await index.search("内卷", { topk: 1, maxGlossChars: 20 });
    assert.equal(capped?.gloss.length, 20);
    assert.ok(capped?.gloss.endsWith("…"));
    assert.deepEqual(await index.search("\u0000\u0001   ", { topk: 3 }), []);
    for (const hostile of ["内卷".repeat(50_000), "\u0007".repeat(100_000), "a ".repeat(50_000)]) {
      const started = performance.now();
      const hits = await index.search(hostile, { topk: 3 });
      assert.ok(hits.length <= 3);
      assert.ok(performance.now() - started < 2_000, `took ${performance.now() - started} ms`);
    }
    assert.ok(queryTerms("x".repeat(MAX_QUERY_CHARS * 3)).every((t) => t.length <= MAX_QUERY_CHARS));
  });

  it("searches a CJK query by its bigrams, and a lone character by itself", () => {
    assert.deepEqual(queryTerms("内卷"), ["内卷"]);
    assert.deepEqual(queryTerms("卷"), ["卷"]);
  });

  it("returns the same answers as the index before it was saved", async () => {
    const built = new LexicalIndexBuilder();
    await readCorpus({ path: CEDICT_FULL, id: "cc-cedict" }, (e) => built.add(e, "cc-cedict"));
    const { arrays, meta } = built.finish();
    const inMemory = new FrozenLexicalIndex(arrays, meta);
    for (const query of ["rat race", "内卷", "狗咬吕洞宾", "dog bites", "你别狗咬吕洞宾，不识好人心"]) {
      assert.deepEqual(await index.search(query, { topk: 10 }), await inMemory.search(query, { topk: 10 }), query);
    }
  });
});

describe("script folding", () => {
  it("learns character pairs from same-length variants and ignores readings", () => {
    const collector = new ScriptFoldingCollector();
    collector.observe("内卷", ["內卷", "nei4 juan3"]);
    collector.observe("内容", ["內容"]);
    const folding = new ScriptFolding(collector.finish());
    assert.equal(folding.size, 1);
    assert.equal(folding.fold("內部"), "内部");
    assert.equal(folding.fold("abc"), "abc");
  });
});

describe("one-shot builds", () => {
  it("lay out exactly the arrays a reusable build does, and refuse entries afterwards", async function () {
    this.timeout(60_000);
    const reusable = new LexicalIndexBuilder();
    const oneShot = new LexicalIndexBuilder();
    await readCorpus({ path: CEDICT_FULL, id: "cc-cedict" }, (entry) => {
      reusable.add(entry, "cc-cedict");
      oneShot.add(entry, "cc-cedict");
    });
    const kept = reusable.finish();
    const released = oneShot.finish({ release: true });
    assert.deepEqual(released.meta, kept.meta);
    for (const name of Object.keys(kept.arrays) as (keyof typeof kept.arrays)[]) {
      assert.ok(
        Buffer.from(
          released.arrays[name].buffer,
          released.arrays[name].byteOffset,
          released.arrays[name].byteLength,
        ).equals(Buffer.from(kept.arrays[name].buffer, kept.arrays[name].byteOffset, kept.arrays[name].byteLength)),
        name,
      );
    }
    assert.throws(
      () => oneShot.add({ id: "x:1", headword: "x", gloss: "x", lang: "en" }, "x"),
      /finished with \{ release: true \}/,
    );
    // The reusable builder goes on.
    reusable.add({ id: "x:1", headword: "新词", gloss: "a new word", lang: "zh" }, "x");
    assert.equal(reusable.finish().meta.docCount, kept.meta.docCount + 1);
  });
});

describe("record heads", () => {
  it("read id, gloss and tags exactly as a full JSON parse would, escapes and all", () => {
    const records: unknown[][] = [
      ["demo:1", "plain", null, null, null, null],
      ["demo:2", 'with "quotes", commas, ] brackets and \\ backslashes', ["idiom", 'odd"tag]'], ["v1"], "en", "n"],
      ["demo:3", "line\nbreak\ttab \u2028 and 🙂 and 内卷", [], null, null, null],
      ["de\\mo:4", "", ["a", "b"], Array.from({ length: 50 }, (_, i) => `form ${i}`), null, null],
    ];
    for (const record of records) {
      const text = JSON.stringify(record);
      const bytes = Buffer.from(`xx${text}yy`);
      assert.deepEqual(readRecordHead(bytes, 2, bytes.length - 2), record.slice(0, 3), text);
    }
  });
});
