import assert from "node:assert/strict";
import { appendFile, cp, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type EngineConfig, RetrievalEngine } from "../../../extension/core/retrieval/engine";
import { IndexCorruptError, IndexStore, lexicalSourceKey } from "../../../extension/core/retrieval/indexStore";
import { FrozenLexicalIndex } from "../../../extension/core/retrieval/lexical";
import { DEMO_GLOSSARY, ROOT } from "../../support/paths";
import { SearxngServer } from "../../support/searchBackends";

const TINY_BERT = join(ROOT, "build", "tiny-models", "glossa-tiny-bert");

/** Counts FrozenLexicalIndex.entry calls (every full decode of an entry) until restored. */
function countEntryReads(): { count: number; restore(): void } {
  const original = FrozenLexicalIndex.prototype.entry;
  const counter = {
    count: 0,
    restore: () => {
      FrozenLexicalIndex.prototype.entry = original;
    },
  };
  FrozenLexicalIndex.prototype.entry = function (this: FrozenLexicalIndex, doc: number) {
    counter.count++;
    return original.call(this, doc);
  };
  return counter;
}

describe("retrieval engine (lexical + dense + hierarchy + online, composed)", function () {
  this.timeout(120_000);
  let dir: string;
  let config: EngineConfig;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "glossa-engine-"));
    const de = join(dir, "de.tsv");
    await writeFile(de, "de\ten\nHamsterrad\trat race; treadmill\nFeierabend\tend of the working day\n");
    config = { indexDir: join(dir, "index"), corpora: [{ path: DEMO_GLOSSARY, id: "demo" }, { path: de }] };
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("imports once, then opens the stored index without re-importing", async () => {
    const first = await RetrievalEngine.open(config);
    assert.equal(first.update.rebuilt, true);
    assert.deepEqual([...first.corpusIds].sort(), ["de", "demo"]);
    const again = await RetrievalEngine.open(config);
    assert.equal(again.update.rebuilt, false);
    assert.deepEqual(again.update.unchanged.sort(), ["de", "demo"]);
    const [hit] = await again.search("Feierabend", { topk: 3 });
    assert.deepEqual([hit?.headword, hit?.match, hit?.source], ["Feierabend", "exact", "de"]);
  });

  it("drops a corpus the configuration no longer names", async () => {
    const [demo, de] = config.corpora;
    const without = await RetrievalEngine.open({ ...config, corpora: [demo!] });
    assert.deepEqual(without.update.removed, ["de"]);
    assert.deepEqual([...without.corpusIds], ["demo"]);
    assert.equal((await without.search("Feierabend", { topk: 3 })).filter((h) => h.source === "de").length, 0);
    const back = await RetrievalEngine.open({ ...config, corpora: [demo!, de!] });
    assert.deepEqual(back.update.imported, ["de"], "the demo corpus was not parsed again");
  });

  it("caps glosses to the configured length", async () => {
    const engine = await RetrievalEngine.open({ ...config, maxGlossChars: 20 });
    const [hit] = await engine.search("内卷", { topk: 1 });
    assert.ok((hit?.gloss.length ?? 0) <= 20, hit?.gloss);
  });

  it("searches the query's language first, then the others, then the anchor", async () => {
    const engine = await RetrievalEngine.open({
      ...config,
      hierarchy: { languages: ["zh", "de"], stop: { kind: "all" } },
    });
    const hits = await engine.search("Hamsterrad", { topk: 5 });
    assert.equal(hits[0]?.headword, "Hamsterrad");
    assert.ok(
      hits.every((h) => typeof h.tier === "number"),
      JSON.stringify(hits),
    );
  });

  it("adds the online tier, and keeps working with a warning when it is down", async () => {
    const searx = await SearxngServer.start([
      {
        title: "Involution (sociology)",
        url: "https://example.org/involution",
        content: "<b>内卷</b> describes a rat race",
      },
    ]);
    const warnings: string[] = [];
    try {
      const engine = await RetrievalEngine.open(
        { ...config, online: { kind: "searxng", endpoint: searx.origin, when: "always" } },
        { onWarning: (w) => warnings.push(w) },
      );
      const hits = await engine.search("内卷", { topk: 4 });
      assert.ok(
        hits.some((h) => h.online && h.headword === "Involution (sociology)"),
        JSON.stringify(hits),
      );
      searx.failStatus = 503;
      const offline = await engine.search("佛系", { topk: 4 });
      assert.ok(offline.length > 0);
      assert.ok(
        warnings.some((w) => w.startsWith("online search:")),
        warnings.join("\n"),
      );
    } finally {
      await searx.close();
    }
  });

  it("runs lexically until the dense index is built, then fuses both", async () => {
    const dense = { encoder: { modelPath: TINY_BERT } };
    const warnings: string[] = [];
    const before = await RetrievalEngine.open({ ...config, dense }, { onWarning: (w) => warnings.push(w) });
    assert.equal(before.dense.kind, "needs-build");
    assert.ok((await before.search("佛系", { topk: 3 })).length > 0, "lexical search still works");
    const progress: number[] = [];
    const built = await before.buildDense({ onProgress: (p) => progress.push(p.done) });
    assert.equal(built.manifest.count, before.lexical.size);
    assert.ok(progress.length > 0);
    const after = await RetrievalEngine.open({ ...config, dense });
    assert.equal(after.dense.kind, "ready");
    // The tiny encoder has random weights (its vocabulary maps most CJK characters to [UNK]), so this
    // checks the fusion, not the semantics: results found by both engines carry both reasons.
    const foxi = (await after.search("佛系", { topk: 1 }))[0];
    const hits = await after.search(`佛系: ${foxi?.gloss}`, { topk: 5 });
    const fused = hits.filter((h) => h.match === "hybrid");
    assert.ok(fused.length > 0, JSON.stringify(hits));
    for (const h of fused) {
      assert.ok(
        h.reasons?.some((r) => r.kind === "dense") && h.reasons.some((r) => r.kind === "bm25" || r.kind === "exact"),
      );
    }
  });

  it("knows a dense index built from the current lexical index without reading every entry again", async () => {
    const dense = { encoder: { modelPath: TINY_BERT } };
    const indexDir = join(dir, "index-source-key");
    const first = await RetrievalEngine.open({ ...config, indexDir, dense });
    const built = await first.buildDense();
    const { manifest } = await new IndexStore(indexDir).load();
    assert.equal(built.manifest.sourceKey, lexicalSourceKey(manifest));

    const read = countEntryReads();
    try {
      const again = await RetrievalEngine.open({ ...config, indexDir, dense });
      assert.equal(again.dense.kind, "ready");
      assert.equal(read.count, 0, "the fingerprint came from the dense manifest");
    } finally {
      read.restore();
    }

    // A rebuild of the same entries has the same content key: still nothing to read.
    await new IndexStore(indexDir).update(config.corpora, { force: true, prune: true });
    const rebuilt = countEntryReads();
    try {
      assert.equal((await RetrievalEngine.open({ ...config, indexDir, dense })).dense.kind, "ready");
      assert.equal(rebuilt.count, 0);
    } finally {
      rebuilt.restore();
    }
    // A changed corpus: every entry is read once for the fingerprint, which no longer matches.
    const de = join(dir, "de-changed.tsv");
    await writeFile(de, "de\ten\nHamsterrad\trat race\n");
    const changedRead = countEntryReads();
    try {
      const corpora = [...config.corpora, { path: de }];
      const changed = await RetrievalEngine.open({ ...config, corpora, indexDir, dense });
      assert.equal(changed.dense.kind, "needs-build");
      assert.equal(changedRead.count, changed.lexical.size);
    } finally {
      changedRead.restore();
    }
  });

  it("turns dense search off once, at open, when its encoder can no longer load", async () => {
    const encoderDir = join(dir, "encoder-copy");
    await cp(TINY_BERT, encoderDir, { recursive: true });
    const dense = { encoder: { modelPath: encoderDir } };
    const first = await RetrievalEngine.open({ ...config, indexDir: join(dir, "index-lost-encoder"), dense });
    await first.buildDense();
    await rm(join(encoderDir, "onnx"), { recursive: true });
    const warnings: string[] = [];
    const engine = await RetrievalEngine.open(
      { ...config, indexDir: join(dir, "index-lost-encoder"), dense },
      { onWarning: (w) => warnings.push(w) },
    );
    assert.equal(engine.dense.kind, "failed");
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /^dense search is off: .*encoder-copy/);
    const perSearch: string[] = [];
    const hits = await engine.search("佛系", { topk: 3, onWarning: (m) => perSearch.push(m) });
    assert.ok(hits.length > 0 && hits.every((h) => h.match !== "dense" && h.match !== "hybrid"));
    assert.deepEqual(perSearch, [], "searches run lexically without a warning each");
  });

  it("reports a corrupt lexical index clearly and rebuilds it", async () => {
    const index = config.indexDir;
    const generation = (await readFile(join(index, "CURRENT"), "utf8")).trim();
    assert.ok(generation);
    const files = await readdir(join(index, generation));
    const victim = files.find((f) => f === "posting-docs.i32");
    assert.ok(victim, files.join(" "));
    await appendFile(join(index, generation, victim), "garbage");
    await assert.rejects(RetrievalEngine.open(config), IndexCorruptError);
    const rebuilt = await RetrievalEngine.rebuild(config);
    assert.ok((await rebuilt.search("内卷", { topk: 1 })).length === 1);
  });
});

describe("retrieval engine importing in a worker thread", function () {
  this.timeout(120_000);
  it("imports in the worker, keeps the event loop free, and passes typed errors back", async () => {
    const dir = await mkdtemp(join(tmpdir(), "glossa-engine-worker-"));
    try {
      const config: EngineConfig = { indexDir: join(dir, "index"), corpora: [{ path: DEMO_GLOSSARY, id: "demo" }] };
      const progress: string[] = [];
      let ticks = 0;
      const timer = setInterval(() => ticks++, 5);
      const engine = await RetrievalEngine.open(config, { updateInWorker: true, onProgress: (m) => progress.push(m) });
      clearInterval(timer);
      assert.equal(engine.update.rebuilt, true);
      assert.ok(progress.length > 0);
      assert.ok(ticks > 10, `the main thread kept running timers during the import (${ticks} ticks)`);
      assert.equal((await engine.search("佛系", { topk: 1 }))[0]?.headword, "佛系");
      const again = await RetrievalEngine.open(config, { updateInWorker: true });
      assert.equal(again.update.rebuilt, false);
      await assert.rejects(
        RetrievalEngine.open({ ...config, corpora: [{ path: join(dir, "missing.u8") }] }, { updateInWorker: true }),
        /ENOENT|no such file/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
