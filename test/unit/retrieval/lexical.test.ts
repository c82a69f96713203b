import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadIndex, readCorpus, writeEntriesJsonl } from "../../../extension/core/retrieval/corpora";
import type { LexicalIndex } from "../../../extension/core/retrieval/lexical";
import { headwordKey, tokenize } from "../../../extension/core/retrieval/normalize";
import type { Entry } from "../../../extension/core/retrieval/types";
import { CEDICT_FULL, DEMO_GLOSSARY } from "../../support/paths";

describe("normalization and tokens", () => {
  it("folds width and case, drops punctuation in headword keys", () => {
    assert.equal(headwordKey("ＡＢＣ，不识好人心"), "abc不识好人心");
    assert.equal(headwordKey("Rat Race!"), "ratrace");
  });
  it("makes CJK unigrams and bigrams and Latin words", () => {
    assert.deepEqual(tokenize("内卷 of the Rat-race"), ["内", "内卷", "卷", "rat", "race"]);
  });
});

describe("CC-CEDICT, full dictionary", function () {
  this.timeout(60_000);
  let index: LexicalIndex;
  let reportText: string;

  before(async () => {
    const { index: built, reports } = await loadIndex([{ path: CEDICT_FULL, id: "cc-cedict" }]);
    index = built;
    reportText = JSON.stringify(reports[0]);
    assert.equal(reports[0]?.imported, 124_260, reportText);
    assert.equal(reports[0]?.malformed, 0, reportText);
  });

  it("finds a headword exactly, in either script", async () => {
    const [simplified] = await index.search("内卷", { topk: 3 });
    assert.equal(simplified?.headword, "内卷");
    assert.equal(simplified?.match, "exact");
    assert.match(simplified?.gloss ?? "", /rat race/);
    const [traditional] = await index.search("內卷", { topk: 3 });
    assert.equal(traditional?.id, simplified?.id);
    assert.equal(traditional?.match, "normalized");
  });

  it("finds the idiom inside a whole sentence, longest term first", async () => {
    const hits = await index.search("你别狗咬吕洞宾，不识好人心，我是真心帮你的。", { topk: 5 });
    assert.equal(hits[0]?.headword, "狗咬吕洞宾，不识好人心");
    assert.equal(hits[0]?.match, "contained");
    assert.ok(hits.length === 5);
  });

  it("finds the idiom from a part of it with BM25 over character bigrams", async () => {
    const hits = await index.search("狗咬吕洞宾", { topk: 5 });
    assert.ok(
      hits.some((h) => h.headword === "狗咬吕洞宾，不识好人心"),
      JSON.stringify(hits),
    );
  });

  it("searches English glosses", async () => {
    const hits = await index.search("rat race", { topk: 10 });
    const headwords = hits.map((h) => h.headword);
    assert.equal(headwords[0], "躺平", JSON.stringify(headwords));
    assert.ok(headwords.includes("内卷"), JSON.stringify(headwords));
    assert.ok(hits.every((h) => h.match === "bm25"));
  });

  it("records searchable labels as tags", async () => {
    const entries: Entry[] = [];
    await readCorpus({ path: DEMO_GLOSSARY }, (e) => entries.push(e));
    const foxi = entries.find((e) => e.headword === "佛系");
    assert.deepEqual(foxi?.tags, ["neologism", "colloquial"]);
    assert.deepEqual(foxi?.variants, ["fo2 xi4"]);
  });

  it("filters by language and bounds hostile queries", async () => {
    assert.deepEqual(await index.search("内卷", { topk: 3, langs: ["ja"] }), []);
    assert.deepEqual(await index.search("\u0000\u0001   ", { topk: 3 }), []);
    const long = "内卷".repeat(50_000);
    const hits = await index.search(long, { topk: 3 });
    assert.ok(hits.length <= 3);
  });
});

describe("glossary files", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "glossa-gloss-"));
  });

  it("imports TSV with a header naming the languages, and reports malformed lines with file:line", async () => {
    const file = join(dir, "terms.tsv");
    await writeFile(file, "en\tde\nrat race\tHamsterrad\n\nonly-one-column\nburnout\tBurn-out\tmedicine\n");
    const entries: Entry[] = [];
    const report = await readCorpus({ path: file }, (e) => entries.push(e));
    assert.equal(report.imported, 2);
    assert.equal(report.malformed, 1);
    assert.equal(report.firstErrors[0], `${file}:4: expected a source and a target column, got 1 field(s)`);
    assert.deepEqual(
      entries.map((e) => [e.headword, e.gloss, e.lang, e.glossLang]),
      [
        ["rat race", "Hamsterrad", "en", "de"],
        ["burnout", "Burn-out (medicine)", "en", "de"],
      ],
    );
  });

  it("imports CSV with quoted fields and named columns", async () => {
    const file = join(dir, "terms.csv");
    await writeFile(
      file,
      'note,source,target\n"IT, legacy","null modem","零调制解调器"\n,"say ""hi""",打招呼\n"unterminated,x,y\n',
    );
    const entries: Entry[] = [];
    const report = await readCorpus({ path: file, sourceLang: "en", targetLang: "zh" }, (e) => entries.push(e));
    assert.deepEqual(
      entries.map((e) => [e.headword, e.gloss]),
      [
        ["null modem", "零调制解调器 (IT, legacy)"],
        ['say "hi"', "打招呼"],
      ],
    );
    assert.equal(report.malformed, 1);
    assert.match(report.firstErrors[0] ?? "", /unterminated quoted field/);
  });

  it("round-trips a corpus through entry JSONL written atomically", async () => {
    const out = join(dir, "corpora", "demo.jsonl");
    const written = await writeEntriesJsonl({ path: DEMO_GLOSSARY }, out);
    const { index, reports } = await loadIndex([{ path: out, id: "demo" }]);
    assert.equal(reports[0]?.imported, written.imported);
    const [hit] = await index.search("佛系", { topk: 1 });
    assert.equal(hit?.source, "demo");
  });

  it("says clearly when a file's format is unknown or it does not exist", async () => {
    const file = join(dir, "notes.xyz");
    await writeFile(file, "just some text\n");
    await assert.rejects(
      readCorpus({ path: file }, () => {}),
      /Cannot tell the format/,
    );
    await assert.rejects(
      readCorpus({ path: join(dir, "missing.tsv") }, () => {}),
      /ENOENT/,
    );
  });
});
