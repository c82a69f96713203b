import assert from "node:assert/strict";
import { createWriteStream } from "node:fs";
import { copyFile, mkdir, mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CorpusFormat, detectFormat, readCorpus } from "../../../extension/core/retrieval/corpora";
import { chunkDocument, splitSentences } from "../../../extension/core/retrieval/importers/documents";
import type { ImportReport } from "../../../extension/core/retrieval/importers/report";
import { XmlTokenizer } from "../../../extension/core/retrieval/importers/xml";
import type { Entry } from "../../../extension/core/retrieval/types";
import { CEDICT_FULL, DEMO_GLOSSARY, SHARED_DATA } from "../../support/paths";

const SAMPLES = join(SHARED_DATA, "wiktextract-kaikki-samples");
const EDICT = "/usr/share/edict/edict";
const FREEDICT_INDEX = "/usr/share/dictd/freedict-eng-jpn.index";
const FREEDICT_DICT = "/usr/share/dictd/freedict-eng-jpn.dict.dz";

async function importAll(
  path: string,
  extra: { format?: CorpusFormat; id?: string; sourceLang?: string; targetLang?: string } = {},
): Promise<{ entries: Entry[]; report: ImportReport }> {
  const entries: Entry[] = [];
  const report = await readCorpus({ path, ...extra }, (e) => entries.push(e));
  return { entries, report };
}

function byHeadword(entries: Entry[], headword: string): Entry[] {
  return entries.filter((e) => e.headword === headword);
}

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "glossa-importers-"));
});

describe("wiktextract / kaikki.org JSONL", () => {
  // [file stem, imported, skipped, gloss language]; every sample file, malformed is 0 for all of them.
  const expected: Array<[string, number, number, string]> = [
    ["ar-en", 2, 0, "en"],
    ["cs-en", 4, 0, "en"],
    ["de-de", 15, 1, "de"],
    ["de-en", 8, 0, "en"],
    ["el-el", 9, 1, "el"],
    ["el-en", 1, 0, "en"],
    ["en-de", 1, 0, "de"],
    ["en-en", 10, 0, "en"],
    ["en-es", 1, 0, "es"],
    ["en-ru", 1, 0, "ru"],
    ["es-en", 2, 0, "en"],
    ["es-es", 2, 0, "es"],
    ["fa-en", 2, 0, "en"],
    ["fi-en", 2, 0, "en"],
    ["fr-en", 5, 0, "en"],
    ["fr-fr", 4, 0, "fr"],
    ["ga-en", 2, 0, "en"],
    ["grc-en", 1, 0, "en"],
    ["is-en", 1, 0, "en"],
    ["it-it", 7, 0, "it"],
    ["ja-en", 9, 0, "en"],
    ["ja-ja", 13, 1, "ja"],
    ["ko-en", 5, 0, "en"],
    ["la-en", 9, 0, "en"],
    ["la-ja", 1, 0, "ja"],
    ["nl-nl", 1, 0, "nl"],
    ["pl-pl", 1, 0, "pl"],
    ["pt-pt", 2, 0, "pt"],
    ["ru-en", 6, 0, "en"],
    ["ru-ru", 2, 0, "ru"],
    ["simple-simple", 1, 0, "en"],
    ["sq-en", 3, 0, "en"],
    ["th-en", 1, 0, "en"],
    ["zh-en", 1, 0, "en"],
    ["zh-zh", 1, 1, "zh"],
  ];

  it("imports every sample file with the counts and gloss language of its edition", async () => {
    let lines = 0;
    for (const [stem, imported, skipped, glossLang] of expected) {
      const file = join(SAMPLES, `${stem}-extract.jsonl`);
      assert.equal(await detectFormat(file), "wiktextract", stem);
      const { entries, report } = await importAll(file);
      assert.deepEqual([report.imported, report.skipped, report.malformed], [imported, skipped, 0], stem);
      assert.deepEqual([...new Set(entries.map((e) => e.glossLang))], [glossLang], stem);
      assert.ok(
        entries.every((e) => e.id.startsWith(`${stem}-extract:`) && e.gloss.length > 0),
        stem,
      );
      lines += (await readFile(file, "utf8")).split("\n").filter((l) => l.trim()).length;
    }
    assert.equal(lines, 140);
    assert.equal(expected.length, 35);
  });

  it("keeps senses, register tags, examples, translations and forms (en-en bring, ru-en снег)", async () => {
    const en = await importAll(join(SAMPLES, "en-en-extract.jsonl"));
    const [bring] = byHeadword(en.entries, "bring");
    assert.ok(bring);
    assert.equal(bring.pos, "verb");
    assert.equal(bring.lang, "en");
    assert.match(bring.gloss, /^1\. To transport toward somebody\/somewhere\. 2\. To supply or contribute\./);
    assert.match(bring.gloss, /\nTranslations: af: bring; sq: sjell, bie, prun;/);
    assert.ok(bring.variants?.includes("brought"));
    assert.equal(bring.examples?.[0], "Waiter, please bring me a single malt whiskey.");

    const ru = await importAll(join(SAMPLES, "ru-en-extract.jsonl"));
    const [sneg] = byHeadword(ru.entries, "снег");
    assert.deepEqual(sneg?.tags, ["figurative", "slang"]);
    assert.equal(
      sneg?.gloss,
      "1. snow 2. snow, the white electrical noise on a TV set when there is no TV signal 3. cocaine",
    );
    assert.equal(sneg?.examples?.[0], "идёт снег — it is snowing");
    assert.ok(sneg?.variants?.includes("sneg"), "the romanization finds the entry");

    const ja = await importAll(join(SAMPLES, "ja-en-extract.jsonl"));
    const [tanoshii] = byHeadword(ja.entries, "楽しい");
    assert.deepEqual(tanoshii?.variants?.slice(0, 2), ["たのしい", "tanoshii"], "the kana reading from ruby");
  });

  it("normalizes neologism and Internet + slang tags on a real record", async () => {
    // None of the 140 samples carries these tags, so one real record gets them as the full dumps write them.
    const [line] = (await readFile(join(SAMPLES, "zh-en-extract.jsonl"), "utf8")).split("\n");
    const record = JSON.parse(line!) as { senses: Array<{ tags?: string[] }> };
    record.senses[0]!.tags = ["neologism", "Internet", "slang"];
    const file = join(dir, "zh-en-tagged.jsonl");
    await writeFile(file, `${JSON.stringify(record)}\n`);
    const { entries } = await importAll(file);
    assert.deepEqual(entries[0]?.tags, ["neologism", "internet-slang"]);
  });

  it("infers the edition from the entries when the file name does not say it", async () => {
    for (const [stem, edition] of [
      ["de-de", "de"],
      ["el-el", "el"],
      ["en-en", "en"],
      ["la-ja", "ja"],
      ["fr-fr", "fr"],
    ]) {
      const file = join(dir, "dump.jsonl");
      await copyFile(join(SAMPLES, `${stem}-extract.jsonl`), file);
      const { entries } = await importAll(file);
      assert.equal(entries[0]?.glossLang, edition, stem);
    }
    const { entries } = await importAll(join(SAMPLES, "de-de-extract.jsonl"), { targetLang: "xx" });
    assert.equal(entries[0]?.glossLang, "xx", "an explicit gloss language wins");
  });

  it("gives the same ids on re-import and changes only the edited record's id", async () => {
    const file = join(dir, "de-de-extract.jsonl");
    const original = await readFile(join(SAMPLES, "de-de-extract.jsonl"), "utf8");
    await writeFile(file, original);
    const first = (await importAll(file)).entries.map((e) => e.id);
    const again = (await importAll(file)).entries.map((e) => e.id);
    assert.deepEqual(again, first);
    assert.equal(new Set(first).size, first.length);
    const lines = original.split("\n");
    lines[3] = lines[3]!.replace("Garage", "Garrage");
    await writeFile(file, lines.join("\n"));
    const edited = (await importAll(file)).entries.map((e) => e.id);
    const changed = edited.filter((id, i) => id !== first[i]);
    assert.equal(changed.length, 1);
    // Line 4 is the third imported entry (line 8 is skipped, so indexes before it match lines - 1).
    assert.notEqual(edited[3], first[3]);
  });

  it("numbers identical duplicates ~2, ~3 in file order", async () => {
    const line = (await readFile(join(SAMPLES, "en-en-extract.jsonl"), "utf8")).split("\n")[1]!;
    const file = join(dir, "dups-en-extract.jsonl");
    await writeFile(file, `${line}\n${line}\n${line}\n`);
    const ids = (await importAll(file)).entries.map((e) => e.id);
    assert.equal(ids[1], `${ids[0]}~2`);
    assert.equal(ids[2], `${ids[0]}~3`);
  });

  it("streams a 100k-line dump in bounded memory and reports broken lines by number", async function () {
    this.timeout(120_000);
    const file = join(dir, "big-en-extract.jsonl");
    const broken = new Set([17, 50_000, 99_999]);
    const out = createWriteStream(file);
    const filler = "x".repeat(600);
    for (let n = 1; n <= 100_000; n++) {
      const record = {
        word: `word${n}`,
        lang: "English",
        lang_code: "en",
        pos: "noun",
        senses: [{ glosses: [`meaning number ${n} ${filler}`], tags: n % 1000 === 0 ? ["neologism"] : [] }],
        forms: [{ form: `word${n}s`, tags: ["plural"] }],
      };
      const text = broken.has(n) ? `{"word": "word${n}", "senses": [` : JSON.stringify(record);
      if (!out.write(`${text}\n`)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
    }
    await new Promise<void>((resolve) => out.end(resolve));
    const size = (await stat(file)).size;
    const baseline = process.memoryUsage().heapUsed;
    let peak = baseline;
    let imported = 0;
    let neologisms = 0;
    const report = await readCorpus({ path: file }, (entry) => {
      imported++;
      if (entry.tags?.includes("neologism")) neologisms++;
      if (imported % 2000 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed);
    });
    assert.equal(report.imported, 100_000 - broken.size);
    assert.equal(imported, report.imported);
    assert.equal(neologisms, 99, "every 1000th record, less broken line 50,000");
    assert.equal(report.malformed, 3);
    assert.deepEqual(
      report.firstErrors.map((e) => Number(e.slice(file.length + 1).split(":")[0])),
      [17, 50_000, 99_999],
    );
    assert.match(report.firstErrors[0] ?? "", /not valid JSON/);
    const growth = peak - baseline;
    console.log(`      100k lines, ${(size / 1e6).toFixed(0)} MB: heap grew at most ${(growth / 1e6).toFixed(1)} MB`);
    assert.ok(growth < size / 3, `heap grew ${growth} bytes for a ${size}-byte file`);
  });
});

describe("CC-CEDICT and TSV ids", () => {
  it("are content hashes: stable on re-import, only an edited line's id changes", async () => {
    const file = join(dir, "glossary.u8");
    const original = await readFile(DEMO_GLOSSARY, "utf8");
    await writeFile(file, original);
    const first = (await importAll(file)).entries;
    const again = (await importAll(file)).entries;
    assert.deepEqual(
      again.map((e) => e.id),
      first.map((e) => e.id),
    );
    assert.ok(first.every((e) => /^glossary:[0-9a-z]{13}(~\d+)?$/.test(e.id)));
    const target = first[5]!;
    // An inserted comment line shifts every line number but no id.
    const lines = original.split("\n");
    const at = lines.findIndex((l) => l.includes(` ${target.headword} [`));
    lines[at] = lines[at]!.replace(/\/[^/]+\//, "/edited gloss/");
    await writeFile(file, `# added comment\n${lines.join("\n")}`);
    const edited = (await importAll(file)).entries;
    const changed = edited.filter((e, i) => e.id !== first[i]?.id);
    assert.deepEqual(
      changed.map((e) => e.headword),
      [target.headword],
    );
  });

  it("keeps the traditional form and pinyin as variants", async () => {
    const { entries } = await importAll(DEMO_GLOSSARY);
    const [neijuan] = byHeadword(entries, "内卷");
    assert.deepEqual(neijuan?.variants, ["內卷", "nei4 juan3"]);
  });

  it("TSV ids survive reordering", async () => {
    const file = join(dir, "terms.tsv");
    await writeFile(file, "en\tde\nrat race\tHamsterrad\nburnout\tBurn-out\n");
    const a = (await importAll(file)).entries;
    await writeFile(file, "en\tde\nburnout\tBurn-out\nrat race\tHamsterrad\n");
    const b = (await importAll(file)).entries;
    assert.equal(a.find((e) => e.headword === "burnout")?.id, b.find((e) => e.headword === "burnout")?.id);
  });

  it("measures import throughput of the full CC-CEDICT", async function () {
    this.timeout(120_000);
    const started = performance.now();
    const { report } = await importAll(CEDICT_FULL, { id: "cc-cedict" });
    const seconds = (performance.now() - started) / 1000;
    console.log(`      CC-CEDICT: ${report.imported} entries, ${Math.round(report.imported / seconds)} entries/s`);
    assert.equal(report.imported, 124_260);
  });
});

describe("EDICT (EUC-JP)", function () {
  this.timeout(120_000);
  let entries: Entry[];
  let report: ImportReport;
  before(async () => {
    const started = performance.now();
    ({ entries, report } = await importAll(EDICT));
    const seconds = (performance.now() - started) / 1000;
    console.log(`      EDICT: ${report.imported} entries, ${Math.round(report.imported / seconds)} entries/s`);
  });

  it("imports every line but the header and one gloss-less line", async () => {
    assert.equal(await detectFormat(EDICT), "edict");
    assert.equal(report.imported, 267_379);
    assert.equal(report.skipped, 1, "the header line");
    // Line 567 is `４° [しど] /` in the Debian file: a reading but no gloss.
    assert.equal(report.malformed, 1);
    assert.deepEqual(report.firstErrors, [`${EDICT}:567: not \`KANJI [KANA] /gloss/…/\``]);
    assert.equal(new Set(entries.map((e) => e.id)).size, entries.length);
  });

  it("makes kana readings variants of the kanji headword", async () => {
    const nihon = byHeadword(entries, "日本");
    assert.deepEqual(
      nihon.map((e) => e.variants),
      [["にっぽん"], ["にほん"]],
    );
    assert.equal(nihon[1]?.gloss, "Japan");
    assert.equal(nihon[1]?.pos, "n");
  });

  it("tags idioms and Internet slang, numbers senses, and keeps kana-only entries", async () => {
    const [top5] = byHeadword(entries, "５本の指に入る");
    assert.deepEqual(top5?.tags, ["idiom"]);
    assert.equal(top5?.gloss, "(id) to be among the top five; to be one of the five best");
    assert.equal(top5?.pos, "exp,v5r");
    assert.deepEqual(byHeadword(entries, "８８")[0]?.tags, ["internet-slang"]);
    const [shime] = byHeadword(entries, "〆");
    assert.match(shime?.gloss ?? "", /^1\. tie up; bind; fastening; tightening; 2\. sum; total amount;/);
    const [kudachai] = byHeadword(entries, "くだちゃい");
    assert.equal(kudachai?.variants, undefined);
    assert.deepEqual(kudachai?.tags, ["colloquial"]);
    assert.equal(entries.filter((e) => e.tags?.includes("idiom")).length, 1626);
  });

  it("reads EDICT2 lines with several forms and drops the EntL sequence token", async () => {
    const file = join(dir, "edict2");
    const line =
      "明白;明々白々(iK) [めいはく;めいめいはくはく] /(adj-na) (1) obvious/clear/(2) (id) plain as day/EntL1597010X/\n";
    await writeFile(file, Buffer.concat([new TextEncoder().encode(line)]));
    const { entries: two, report: twoReport } = await importAll(file);
    assert.equal(twoReport.imported, 1);
    assert.deepEqual(two[0], {
      id: "edict2:EntL1597010",
      headword: "明白",
      variants: ["明々白々", "めいはく", "めいめいはくはく"],
      gloss: "1. obvious; clear; 2. (id) plain as day",
      lang: "ja",
      glossLang: "en",
      pos: "adj-na",
      tags: ["idiom"],
    });
  });
});

describe("dictd (FreeDict eng-jpn)", function () {
  this.timeout(60_000);
  it("streams the dictzip and cuts each article from the index, from either path", async () => {
    assert.equal(await detectFormat(FREEDICT_INDEX), "dictd");
    assert.equal(await detectFormat(FREEDICT_DICT), "dictd");
    const started = performance.now();
    const { entries, report } = await importAll(FREEDICT_DICT, { id: "freedict" });
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `      FreeDict eng-jpn: ${report.imported} entries, ${Math.round(report.imported / seconds)} entries/s`,
    );
    assert.deepEqual([report.imported, report.skipped, report.malformed], [33_700, 6, 0]);
    const [dog] = byHeadword(entries, "dog");
    assert.deepEqual(dog, {
      id: dog?.id,
      headword: "dog",
      gloss:
        "1. 犬, 狗; animal; 2. ぶす; dull, unattractive girl or woman; 3. 牡犬, 雄犬, 犬; male canine; 4. 悪党, 犬; morally reprehensible person, See also scoundrel",
      lang: "en",
      glossLang: "ja",
      pos: "n",
    });
    const fromIndex = await importAll(FREEDICT_INDEX, { id: "freedict" });
    assert.deepEqual(
      fromIndex.entries.map((e) => e.id),
      entries.map((e) => e.id),
    );
  });

  it("reports index lines that point past the end of the data", async () => {
    const stem = join(dir, "freedict-eng-jpn");
    await copyFile(FREEDICT_DICT, `${stem}.dict.dz`);
    const index = await readFile(FREEDICT_INDEX, "utf8");
    await writeFile(`${stem}.index`, `${index}beyond\t////\tB\nbroken line\n`);
    const { report } = await importAll(`${stem}.index`);
    assert.equal(report.imported, 33_700);
    assert.equal(report.malformed, 2);
    assert.match(report.firstErrors.join("\n"), /index:33708: not `headword<TAB>offset<TAB>length`/);
    assert.match(report.firstErrors.join("\n"), /index:33707: article lies beyond the end/);
  });
});

const TBX_V2 = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE martif SYSTEM "TBXcoreStructV02.dtd">
<martif type="TBX-Basic" xml:lang="en">
  <martifHeader><fileDesc><sourceDesc><p>Glossa test termbase</p></sourceDesc></fileDesc></martifHeader>
  <text><body>
    <termEntry id="c1">
      <descripGrp><descrip type="definition">A device that converts &amp; routes data &lt;packets&gt;.</descrip></descripGrp>
      <langSet xml:lang="en">
        <tig><term>router</term><termNote type="partOfSpeech">noun</termNote></tig>
      </langSet>
      <langSet xml:lang="de-DE">
        <ntig><termGrp><term>Router</term></termGrp></ntig>
        <ntig><termGrp><term>Leitwegrechner</term></termGrp></ntig>
      </langSet>
      <langSet xml:lang="zh"><tig><term>路由器</term></tig></langSet>
    </termEntry>
    <termEntry id="c2">
      <langSet xml:lang="en"><tig><term>broken <b>markup</term></tig></langSet>
      <langSet xml:lang="de"><tig><term>kaputt</term></tig></langSet>
    </termEntry>
    <termEntry id="c3">
      <langSet xml:lang="en"><tig><term>firewall</term></tig><tig><term>packet filter</term></tig></langSet>
      <langSet xml:lang="de"><tig><term>Brandmauer &#x2014; Firewall</term></tig></langSet>
    </termEntry>
    <termEntry id="c4">
      <langSet xml:lang="en"><tig><term>switch</term></tig></langSet>
      <langSet xml:lang="de"><tig><term>Swi`;

const TBX_V3 = `<?xml version="1.0" encoding="UTF-8"?>
<tbx type="TBX-Core" style="dct" xml:lang="en" xmlns="urn:iso:std:iso:30042:ed-2" xmlns:basic="http://www.tbxinfo.net/ns/basic">
  <tbxHeader><fileDesc><sourceDesc><p>v3</p></sourceDesc></fileDesc></tbxHeader>
  <text><body>
    <conceptEntry id="k-7">
      <langSec xml:lang="en">
        <basic:definition>Money paid for work.</basic:definition>
        <termSec><term>salary</term><basic:partOfSpeech>noun</basic:partOfSpeech></termSec>
      </langSec>
      <langSec xml:lang="fr"><termSec><term><![CDATA[salaire]]></term></termSec></langSec>
      <langSec xml:lang="ja"><termSec><term>給料</term></termSec></langSec>
    </conceptEntry>
  </body></text>
</tbx>
`;

describe("TBX termbases", () => {
  it("imports TBX-Basic: one entry per concept and source term, a bad concept and a truncated end reported", async () => {
    const file = join(dir, "terms.tbx");
    await writeFile(file, TBX_V2);
    assert.equal(await detectFormat(file), "tbx");
    const { entries, report } = await importAll(file, { targetLang: "de" });
    assert.deepEqual(
      entries.map((e) => [e.id, e.headword, e.gloss, e.lang, e.glossLang, e.pos]),
      [
        [
          "terms:c1:en",
          "router",
          "Router; Leitwegrechner — A device that converts & routes data <packets>.",
          "en",
          "de",
          "noun",
        ],
        ["terms:c3:en", "firewall", "Brandmauer — Firewall", "en", "de", undefined],
        ["terms:c3:en:2", "packet filter", "Brandmauer — Firewall", "en", "de", undefined],
      ],
    );
    assert.equal(report.imported, 3);
    assert.equal(report.malformed, 2, JSON.stringify(report));
    assert.match(
      report.firstErrors[0] ?? "",
      /terms\.tbx:18: concept from line 17 skipped: <b> from line 18 is not closed/,
    );
    assert.match(report.firstErrors[1] ?? "", /terms\.tbx:25: .*file ends inside <termEntry> opened at line 25/);
  });

  it("without a target language, glosses with every other language", async () => {
    const file = join(dir, "all.tbx");
    await writeFile(file, TBX_V2);
    const { entries } = await importAll(file);
    assert.equal(
      entries[0]?.gloss,
      "de: Router, Leitwegrechner; zh: 路由器 — A device that converts & routes data <packets>.",
    );
    assert.equal(entries[0]?.glossLang, undefined);
  });

  it("imports TBX v3 (TBX-Core, DCT style) with CDATA and namespaced definitions", async () => {
    const file = join(dir, "v3.tbx");
    await writeFile(file, TBX_V3);
    const { entries, report } = await importAll(file, { targetLang: "fr" });
    assert.deepEqual([report.imported, report.malformed], [1, 0]);
    assert.deepEqual(entries[0], {
      id: "v3:k-7:en",
      headword: "salary",
      gloss: "salaire — Money paid for work.",
      lang: "en",
      glossLang: "fr",
      pos: "noun",
    });
  });
});

const TMX = `<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4">
  <header creationtool="test" creationtoolversion="1" datatype="plaintext" segtype="sentence"
          adminlang="en" srclang="en-US" o-tmf="none"/>
  <body>
    <tu tuid="42">
      <tuv xml:lang="en-US"><seg>Click <bpt i="1">&lt;b&gt;</bpt>Save<ept i="1">&lt;/b&gt;</ept> to keep <hi type="em">all</hi> changes.</seg></tuv>
      <tuv xml:lang="de-DE"><seg>Klicken Sie auf <bpt i="1">&lt;b&gt;</bpt>Speichern<ept i="1">&lt;/b&gt;</ept>, um <ph x="1">{0}</ph>alle Änderungen zu behalten.</seg></tuv>
    </tu>
    <tu tuid="43">
      <tuv xml:lang="en-US"><seg>Broken &bogus; entity</seg></tuv>
      <tuv xml:lang="de-DE"><seg>Kaputt</seg></tuv>
    </tu>
    <tu>
      <tuv lang="EN-US"><seg>Open the file.</seg></tuv>
      <tuv lang="DE-DE"><seg>Öffnen Sie die Datei.</seg></tuv>
      <tuv lang="FR-FR"><seg>Ouvrez le fichier.</seg></tuv>
    </tu>
    <tu tuid="44">
      <tuv xml:lang="de-DE"><seg>Nur Deutsch.</seg></tuv>
    </tu>
    <tu tuid="45">
      <tuv xml:lang="en-US"><seg>Cut off`;

describe("TMX translation memories", () => {
  it("makes source segments headwords and target segments glosses, without inline codes", async () => {
    const file = join(dir, "memory.tmx");
    await writeFile(file, TMX);
    assert.equal(await detectFormat(file), "tmx");
    const { entries, report } = await importAll(file, { targetLang: "de" });
    assert.deepEqual(
      entries.map((e) => [e.id, e.headword, e.gloss, e.lang, e.glossLang]),
      [
        [
          "memory:42",
          "Click Save to keep all changes.",
          "Klicken Sie auf Speichern, um alle Änderungen zu behalten.",
          "en",
          "de",
        ],
        [entries[1]?.id, "Open the file.", "Öffnen Sie die Datei.", "en", "de"],
      ],
    );
    assert.match(entries[1]?.id ?? "", /^memory:[0-9a-z]{13}$/);
    assert.deepEqual([report.imported, report.skipped, report.malformed], [2, 1, 2]);
    assert.match(
      report.firstErrors[0] ?? "",
      /memory\.tmx:11: unit from line 10 skipped: unknown or unterminated entity &bogus;/,
    );
    assert.match(report.firstErrors[1] ?? "", /file ends inside <tu> opened at line 22/);
  });

  it("reads UTF-16 files and glosses with every other language when no target is set", async () => {
    const file = join(dir, "utf16.tmx");
    const text = TMX.replace('encoding="UTF-8"', 'encoding="UTF-16"');
    await writeFile(file, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]));
    const { entries } = await importAll(file);
    assert.equal(entries[1]?.gloss, "de: Öffnen Sie die Datei.; fr: Ouvrez le fichier.");
    assert.equal(entries[1]?.glossLang, undefined);
  });
});

describe("streaming XML reader", () => {
  /** Events with adjacent text merged, since chunking may split a text run; errors listed after them. */
  function events(xml: string, chunkSize: number): string[] {
    const out: string[] = [];
    const errors: string[] = [];
    const tokenizer = new XmlTokenizer({
      open: (name, attributes, line) => out.push(`open ${name} ${JSON.stringify(attributes)} @${line}`),
      close: (name, line) => out.push(`close ${name} @${line}`),
      text: (text) => {
        if (out.at(-1)?.startsWith("text ")) out[out.length - 1] += text;
        else out.push(`text ${text}`);
      },
      error: (message, line) => errors.push(`error ${message} @${line}`),
    });
    for (let i = 0; i < xml.length; i += chunkSize) tokenizer.write(xml.slice(i, i + chunkSize));
    tokenizer.end();
    return [...out, ...errors];
  }

  it("gives the same events however the input is cut into chunks", () => {
    for (const xml of [TBX_V2, TBX_V3, TMX]) {
      const whole = events(xml, xml.length);
      assert.ok(whole.length > 20);
      for (const size of [1, 2, 7, 64]) assert.deepEqual(events(xml, size), whole, `chunks of ${size}`);
    }
  });
});

describe("IdiomKB-style JSON", () => {
  it("reads an array with <lang>_meaning keys and reports a bad element by line", async () => {
    const file = join(dir, "idiomkb_zh.json");
    await writeFile(
      file,
      `[
  {"idiom": "画蛇添足", "en_meaning": "to ruin something by adding something superfluous", "zh_meaning": "比喻做了多余的事，反而不恰当"},
  {"idiom": "对牛弹琴", "en_meaning": },
  {"idiom": "一石二鸟", "meaning_en": "to kill two birds with one stone", "meaning_ja": "一つの行為で二つの利益を得ること"},
  {"idiom": "无米之炊", "note": "no meaning given"}
]
`,
    );
    assert.equal(await detectFormat(file), "idiomkb");
    const { entries, report } = await importAll(file);
    assert.deepEqual([report.imported, report.skipped, report.malformed], [2, 1, 1]);
    assert.match(report.firstErrors[0] ?? "", /idiomkb_zh\.json:3: not valid JSON/);
    assert.deepEqual(entries[0], {
      id: entries[0]?.id,
      headword: "画蛇添足",
      gloss: "en: to ruin something by adding something superfluous\nzh: 比喻做了多余的事，反而不恰当",
      lang: "zh",
      glossLang: "en",
      tags: ["idiom"],
    });
    assert.equal(entries[1]?.gloss, "en: to kill two birds with one stone\nja: 一つの行為で二つの利益を得ること");
  });

  it("reads JSON Lines, a meanings object, an object keyed by idiom, and a plain meaning", async () => {
    const lines = join(dir, "idioms.jsonl");
    await writeFile(
      lines,
      '{"idiom": "break the ice", "meanings": {"en": "to relieve tension", "de": "das Eis brechen"}}\n\nnot json\n',
    );
    assert.equal(await detectFormat(lines), "idiomkb");
    const fromLines = await importAll(lines, { targetLang: "de" });
    assert.deepEqual([fromLines.report.imported, fromLines.report.malformed], [1, 1]);
    assert.equal(fromLines.entries[0]?.gloss, "de: das Eis brechen\nen: to relieve tension");
    assert.equal(fromLines.entries[0]?.lang, "en");
    assert.equal(fromLines.entries[0]?.glossLang, "de");

    const keyed = join(dir, "keyed.json");
    await writeFile(
      keyed,
      '{\n  "猫の手も借りたい": {"meaning": "extremely busy"},\n  "花より団子": {"en_meaning": "substance over style"}\n}\n',
    );
    const fromMap = await importAll(keyed, { targetLang: "en" });
    assert.deepEqual(
      fromMap.entries.map((e) => [e.headword, e.gloss, e.lang, e.glossLang]),
      [
        ["猫の手も借りたい", "extremely busy", "ja", "en"],
        ["花より団子", "substance over style", "ja", "en"],
      ],
    );
  });
});

describe("documents", () => {
  it("chunks Markdown by paragraph under headings, merging tiny and splitting long paragraphs", async () => {
    const file = join(dir, "guide.md");
    const long = Array.from({ length: 30 }, (_, i) => `Sentence number ${i + 1} is about style rules.`).join(" ");
    await writeFile(
      file,
      `Intro line one
continues here.

# Terminology

Short.

Also short.

${long}

## 中文

这是第一句。这是第二句！这是第三句？
`,
    );
    assert.equal(await detectFormat(file), "documents");
    const chunks = [];
    for await (const chunk of chunkDocument(file, { maxChars: 400, minChars: 50 })) chunks.push(chunk);
    assert.deepEqual(chunks[0], { headword: "Intro line one continues here.", text: "Intro line one continues here." });
    assert.equal(chunks[1]?.headword, "Terminology (1)");
    assert.match(chunks[1]?.text ?? "", /^Short\. Also short\. Sentence number 1 is/);
    assert.ok(chunks.slice(1, -1).every((c) => c.title === "Terminology" && c.text.length <= 400));
    assert.ok(chunks.slice(2, -1).every((c) => /^Sentence number \d+ is about style rules\./.test(c.text)));
    assert.deepEqual(chunks.at(-1), {
      title: "中文",
      headword: "中文 (1)",
      text: "这是第一句。这是第二句！这是第三句？",
    });
    // Through readCorpus the default limit (1,200 characters) applies: the 30 sentences (about 1,350 characters)
    // make two pieces, the first opened by the two short paragraphs.
    const { entries, report } = await importAll(file, { sourceLang: "en" });
    assert.deepEqual(
      entries.map((e) => e.headword),
      ["Intro line one continues here.", "Terminology (1)", "Terminology (2)", "中文 (1)"],
    );
    assert.equal(report.imported, 4);
    assert.ok(entries.every((e) => e.lang === "en"));
  });

  it("splits Chinese text at 。！？ and keeps closing quotes with their sentence", () => {
    assert.deepEqual(splitSentences("他说：“走吧。”我们就走了！真的吗？好。", 11), [
      "他说：“走吧。”",
      "我们就走了！真的吗？",
      "好。",
    ]);
    assert.deepEqual(splitSentences("Version 3.5 is out. Update now!", 22), ["Version 3.5 is out.", "Update now!"]);
  });

  it("walks a folder of .txt and .md files in name order", async () => {
    const folder = join(dir, "notes");
    await mkdir(join(folder, "sub"), { recursive: true });
    await writeFile(join(folder, "b.txt"), "第二个文件的内容。\n");
    await writeFile(join(folder, "a.md"), "# A\n\nalpha text\n");
    await writeFile(join(folder, "sub", "c.txt"), "# not a heading in plain text\n");
    await writeFile(join(folder, "skip.bin"), "binary");
    assert.equal(await detectFormat(folder), "documents");
    const { entries, report } = await importAll(folder);
    assert.deepEqual(
      entries.map((e) => [e.headword, e.lang]),
      [
        ["A (1)", "und"],
        ["第二个文件的内容。", "zh"],
        ["# not a heading in plain text", "und"],
      ],
    );
    assert.equal(report.imported, 3);
    const again = await importAll(folder);
    assert.deepEqual(
      again.entries.map((e) => e.id),
      entries.map((e) => e.id),
    );
  });
});

describe("format detection", () => {
  it("tells formats apart by extension and content, and names the supported ones otherwise", async () => {
    assert.equal(await detectFormat(CEDICT_FULL), "cedict");
    assert.equal(await detectFormat(DEMO_GLOSSARY), "cedict");
    const entriesFile = join(dir, "entries.jsonl");
    await writeFile(entriesFile, '{"id": "x:1", "headword": "a", "gloss": "b", "lang": "en"}\n');
    assert.equal(await detectFormat(entriesFile), "jsonl");
    const cedictTxt = join(dir, "cedict.txt");
    await writeFile(cedictTxt, "內卷 内卷 [nei4 juan3] /involution/\n");
    assert.equal(await detectFormat(cedictTxt), "cedict");
    const unknown = join(dir, "data.bin");
    await writeFile(unknown, "just bytes\n");
    await assert.rejects(detectFormat(unknown), /Cannot tell the format of .*data\.bin/);
  });
});
