import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, promises as fs, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { readCorpus } from "../../../extension/core/retrieval/corpora";
import { buildDenseIndexInBackground } from "../../../extension/core/retrieval/dense/backgroundBuild";
import { buildDenseIndex, DenseBuildCancelled } from "../../../extension/core/retrieval/dense/denseBuild";
import { type DenseEntry, DenseRetriever } from "../../../extension/core/retrieval/dense/denseRetriever";
import {
  EncoderError,
  SentenceEncoder,
  type SentenceEncoderOptions,
  type TextEncoder,
} from "../../../extension/core/retrieval/dense/encoder";
import {
  corpusFingerprint,
  corpusFingerprintOf,
  type DensePassage,
  passagesOf,
} from "../../../extension/core/retrieval/dense/passages";
import { ABANDONED_AFTER_MS, DenseIndex, DenseIndexError } from "../../../extension/core/retrieval/dense/vectorIndex";
import type { Entry } from "../../../extension/core/retrieval/types";
import { DEMO_GLOSSARY, ROOT } from "../../support/paths";

const TINY_BERT = join(ROOT, "build", "tiny-models", "glossa-tiny-bert");
const ENCODER: SentenceEncoderOptions = { modelPath: TINY_BERT, batchSize: 64, threads: 1 };
const SMALL_HNSW = { m: 8, efConstruction: 64, efSearch: 64 };

/** Counts the texts each call sends to the real encoder, to prove what an incremental build re-encodes. */
class CountingEncoder implements TextEncoder {
  passagesEncoded = 0;
  constructor(private readonly inner: TextEncoder) {}
  get id(): string {
    return this.inner.id;
  }
  dimension(): Promise<number> {
    return this.inner.dimension();
  }
  encodeQueries(texts: string[]): Promise<Float32Array[]> {
    return this.inner.encodeQueries(texts);
  }
  encodePassages(texts: string[]): Promise<Float32Array[]> {
    this.passagesEncoded += texts.length;
    return this.inner.encodePassages(texts);
  }
}

async function tempDir(name: string): Promise<string> {
  return fs.mkdtemp(join(tmpdir(), `glossa-dense-${name}-`));
}

describe("dense retrieval (tiny random-weight BERT: mechanics, not semantics)", function () {
  this.timeout(120_000);
  let entries: Entry[];
  let encoder: SentenceEncoder;

  before(async () => {
    if (!existsSync(join(TINY_BERT, "onnx", "model.onnx"))) {
      throw new Error(`${TINY_BERT} is missing: run \`bash scripts/build-tiny-models.sh\` first`);
    }
    entries = [];
    const report = await readCorpus({ path: DEMO_GLOSSARY, id: "demo" }, (e) => entries.push(e));
    assert.ok(report.imported > 6000, JSON.stringify(report));
    encoder = new SentenceEncoder(ENCODER);
  });

  after(() => encoder.dispose());

  const lookupOf =
    (list: Entry[]) =>
    (ordinal: number): DenseEntry | undefined => {
      const e = list[ordinal];
      return e && { id: e.id, headword: e.headword, gloss: e.gloss, lang: e.lang, source: "demo" };
    };

  describe("SentenceEncoder", () => {
    it("matches the PyTorch reference embeddings (mean pooling, normalized)", async () => {
      const parity = JSON.parse(readFileSync(join(TINY_BERT, "parity.json"), "utf8")) as {
        texts: Array<{ text: string; embedding: number[] }>;
      };
      const got = await encoder.encodePassages(parity.texts.map((t) => t.text));
      let worst = 0;
      parity.texts.forEach((t, i) => {
        t.embedding.forEach((v, d) => {
          worst = Math.max(worst, Math.abs(v - (got[i]?.[d] ?? Number.NaN)));
        });
      });
      assert.ok(worst < 1e-4, `max abs diff ${worst}`);
      assert.equal(await encoder.dimension(), 32);
    });

    it("applies prefixes, CLS pooling and normalization, and names them in its id", async () => {
      const text = "to bite the hand that feeds";
      const e5 = new SentenceEncoder({ ...ENCODER, queryPrefix: "query: ", passagePrefix: "passage: " });
      const cls = new SentenceEncoder({ ...ENCODER, pooling: "cls", normalize: false });
      try {
        const [plain] = await encoder.encodeQueries([text]);
        const [prefixed] = await e5.encodeQueries([text]);
        const [prefixedByHand] = await encoder.encodeQueries([`query: ${text}`]);
        assert.deepEqual(prefixed, prefixedByHand);
        assert.notDeepEqual(plain, prefixed);
        const [raw] = await cls.encodePassages([text]);
        const norm = Math.hypot(...(raw ?? []));
        assert.ok(Math.abs(norm - 1) > 1e-3, `unnormalized CLS vector has norm ${norm}`);
        assert.equal(new Set([encoder.id, e5.id, cls.id]).size, 3);
        assert.match(encoder.id, /^glossa-tiny-bert@[0-9a-f]{12}$/);
      } finally {
        await e5.dispose();
        await cls.dispose();
      }
    });

    it("truncates long input to the model's length instead of failing", async () => {
      const [long] = await encoder.encodePassages(["word ".repeat(2000)]);
      assert.equal(long?.length, 32);
    });

    it("names the missing folder or file and the setting to fix", async () => {
      const missing = new SentenceEncoder({ modelPath: join(tmpdir(), "no-such-encoder") });
      await assert.rejects(missing.encodeQueries(["x"]), (err: unknown) => {
        assert.ok(err instanceof EncoderError);
        assert.equal(err.code, "encoder-missing");
        assert.match(err.message, /no-such-encoder.*does not exist.*glossa\.retrieval\.encoderPath/);
        return true;
      });
      const partial = await tempDir("partial-model");
      await fs.copyFile(join(TINY_BERT, "config.json"), join(partial, "config.json"));
      await assert.rejects(new SentenceEncoder({ modelPath: partial }).encodeQueries(["x"]), /has no tokenizer\.json/);
    });
  });

  it("computes the corpus fingerprint in slices that let timers run, equal to the one-pass fingerprint", async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const sliced = await corpusFingerprintOf(entries, 500);
    clearInterval(timer);
    assert.equal(sliced, corpusFingerprint(passagesOf(entries)));
    assert.ok(ticks >= 2, `${ticks} timer ticks while ${entries.length} entries were hashed`);
    const edited = entries.map((e, i) => (i === 10 ? { ...e, gloss: `${e.gloss}!` } : e));
    assert.notEqual(await corpusFingerprintOf(edited), sliced);
  });

  describe("index build, search and persistence", () => {
    let passages: DensePassage[];
    let dir: string;

    before(async () => {
      passages = passagesOf(entries.slice(0, 400));
      dir = await tempDir("index");
    });

    it("finds an entry by its own text as top-1 with cosine ≈ 1, after a save and reload", async () => {
      const result = await buildDenseIndex({ dir, passages, params: SMALL_HNSW }, encoder);
      assert.equal(result.encoded, 400);
      assert.equal(result.manifest.count, 400);
      assert.equal(result.manifest.complete, true);
      assert.equal(result.manifest.dimension, 32);
      assert.equal(result.manifest.encoderId, encoder.id);
      const retriever = await DenseRetriever.open(dir, encoder, corpusFingerprint(passages), lookupOf(entries), [
        "demo",
      ]);
      for (const ordinal of [0, 57, 211, 399]) {
        const p = passages[ordinal] as DensePassage;
        const hits = await retriever.search(p.text, { topk: 5 });
        const top = hits[0];
        assert.equal(top?.match, "dense");
        assert.ok(top && Math.abs(top.score - 1) < 1e-4, `top score ${top?.score}`);
        // Texts that the tiny vocabulary maps to the same tokens tie; the entry itself must be among the ties.
        const ties = hits.filter((h) => Math.abs(h.score - 1) < 1e-4).map((h) => h.id);
        assert.ok(ties.includes(p.id), `${p.id} not in ${ties.join(", ")}`);
      }
      assert.ok(retriever.lastTiming.encodeMs >= 0 && retriever.lastTiming.searchMs >= 0);
    });

    it("filters by language and honours an aborted signal", async () => {
      const retriever = await DenseRetriever.open(dir, encoder, corpusFingerprint(passages), lookupOf(entries), [
        "demo",
      ]);
      assert.deepEqual(await retriever.search("hello", { topk: 5, langs: ["ja"] }), []);
      assert.equal((await retriever.search("hello", { topk: 5, langs: ["zh"] })).length, 5);
      const controller = new AbortController();
      controller.abort();
      await assert.rejects(retriever.search("hello", { topk: 5, signal: controller.signal }), /abort/i);
    });

    it("refuses a stale index: another encoder, or a changed corpus", async () => {
      const other = new SentenceEncoder({ ...ENCODER, passagePrefix: "passage: " });
      await assert.rejects(
        DenseRetriever.open(dir, other, corpusFingerprint(passages), lookupOf(entries), []),
        (err: unknown) => err instanceof DenseIndexError && err.code === "stale" && /encoder/.test(err.message),
      );
      const edited = passages.map((p, i) => (i === 3 ? { ...p, text: `${p.text} (edited)` } : p));
      await assert.rejects(
        DenseRetriever.open(dir, encoder, corpusFingerprint(edited), lookupOf(entries), []),
        (err: unknown) =>
          err instanceof DenseIndexError && err.code === "stale" && /corpus has changed/.test(err.message),
      );
      const rebuilt = await buildDenseIndex({ dir: await copyDir(dir), passages, params: SMALL_HNSW }, other);
      assert.match(rebuilt.rebuiltBecause ?? "", /encoder/);
      assert.equal(rebuilt.encoded, 400);
      await other.dispose();
    });

    it("reports a corrupt index file or manifest as a typed error, and a build replaces it", async () => {
      const copy = await copyDir(dir);
      const manifest = await DenseIndex.readManifest(copy);
      assert.ok(manifest);
      const indexFile = join(copy, manifest.files.index.name);
      const bytes = await fs.readFile(indexFile);
      bytes.fill(7, 100, 200);
      await fs.writeFile(indexFile, bytes);
      await assert.rejects(
        DenseIndex.open(copy),
        (err: unknown) => err instanceof DenseIndexError && err.code === "corrupt" && err.rebuild,
      );
      const counter = new CountingEncoder(encoder);
      const repaired = await buildDenseIndex({ dir: copy, passages, params: SMALL_HNSW }, counter);
      assert.match(repaired.rebuiltBecause ?? "", /does not match its manifest/);
      assert.equal(counter.passagesEncoded, 400);
      await DenseIndex.open(copy, { corpusFingerprint: corpusFingerprint(passages) });

      await fs.writeFile(join(copy, "manifest.json"), "{ not json");
      await assert.rejects(
        DenseIndex.open(copy),
        (err: unknown) => err instanceof DenseIndexError && err.code === "corrupt",
      );
      // Bytes that hnswlib itself rejects, behind a manifest that vouches for them: still an error, not a crash.
      const forged = await copyDir(dir);
      const forgedManifest = (await DenseIndex.readManifest(forged)) as NonNullable<
        Awaited<ReturnType<typeof DenseIndex.readManifest>>
      >;
      const garbage = Buffer.alloc(1000, 7);
      await fs.writeFile(join(forged, forgedManifest.files.index.name), garbage);
      const { createHash } = await import("node:crypto");
      forgedManifest.files.index.bytes = garbage.length;
      forgedManifest.files.index.sha256 = createHash("sha256").update(garbage).digest("hex");
      await fs.writeFile(join(forged, "manifest.json"), JSON.stringify(forgedManifest));
      await assert.rejects(
        DenseIndex.open(forged),
        (err: unknown) =>
          err instanceof DenseIndexError && err.code === "corrupt" && /Cannot read the dense index/.test(err.message),
      );
    });

    it("clears generation files a lost save race or a killed process left behind, and no save in progress", async () => {
      const copy = await copyDir(dir);
      const manifest = await DenseIndex.readManifest(copy);
      assert.ok(manifest);
      const bytes = await fs.readFile(join(copy, manifest.files.index.name));
      const deadPid = spawnSync(process.execPath, ["-e", ""]).pid;
      const write = async (name: string, ageMs = 0) => {
        await fs.writeFile(join(copy, name), bytes);
        const at = new Date(Date.now() - ageMs);
        await fs.utimes(join(copy, name), at, at);
      };
      const lost = [`index.m1-${deadPid}-aaaaaa.hnsw`, `ledger.m1-${deadPid}-aaaaaa.tsv`];
      const killedMidSave = [`index.m2-${deadPid}-bbbbbb.hnsw.tmp`, `ledger.m2-${deadPid}-bbbbbb.tsv.${deadPid}.tmp`];
      const inProgress = [
        `index.m3-${process.pid}-cccccc.hnsw`,
        `ledger.m3-${process.pid}-cccccc.tsv.${process.pid}.tmp`,
      ];
      const leftLongAgo = [`index.m4-${process.pid}-dddddd.hnsw`];
      for (const name of [...lost, ...killedMidSave, ...inProgress]) await write(name);
      for (const name of leftLongAgo) await write(name, ABANDONED_AFTER_MS + 60_000);
      await fs.writeFile(join(copy, "notes.txt"), "not ours");

      const { index } = await DenseIndex.open(copy);
      const saved = await index.save(copy, {
        encoderId: manifest.encoderId,
        corpusFingerprint: manifest.corpusFingerprint,
        complete: true,
        progress: manifest.progress,
      });
      const left = (await fs.readdir(copy)).sort();
      assert.deepEqual(
        left,
        [...inProgress, "manifest.json", "notes.txt", saved.files.index.name, saved.files.ledger.name].sort(),
      );
      await DenseIndex.open(copy, { corpusFingerprint: manifest.corpusFingerprint });
    });

    it("encodes only new or edited entries, reuses moved text and drops removed ordinals", async () => {
      const copy = await copyDir(dir);
      const counter = new CountingEncoder(encoder);
      const grown = passagesOf(entries.slice(0, 430));
      const added = await buildDenseIndex({ dir: copy, passages: grown, params: SMALL_HNSW }, counter);
      assert.equal(counter.passagesEncoded, 30);
      assert.deepEqual([added.kept, added.encoded, added.removed], [400, 30, 0]);
      assert.equal(added.manifest.count, 430);

      counter.passagesEncoded = 0;
      const unchanged = await buildDenseIndex({ dir: copy, passages: grown, params: SMALL_HNSW }, counter);
      assert.equal(counter.passagesEncoded, 0);
      assert.equal(unchanged.kept, 430);

      // Edit one gloss, drop the last ten entries, and swap two texts between ordinals.
      const changed = grown.slice(0, 420).map((p) => ({ ...p }));
      (changed[5] as DensePassage).text += " (edited)";
      const a = changed[10] as DensePassage;
      const b = changed[11] as DensePassage;
      [a.id, a.text, b.id, b.text] = [b.id, b.text, a.id, a.text];
      const updated = await buildDenseIndex({ dir: copy, passages: changed, params: SMALL_HNSW }, counter);
      assert.equal(counter.passagesEncoded, 1);
      assert.deepEqual([updated.encoded, updated.reused, updated.removed], [1, 2, 10]);
      assert.equal(updated.manifest.count, 420);
      const retriever = await DenseRetriever.open(
        copy,
        encoder,
        corpusFingerprint(changed),
        (o) => {
          const p = changed[o];
          return p && { id: p.id, headword: p.id, gloss: p.text, lang: "zh", source: "demo" };
        },
        ["demo"],
      );
      const hits = await retriever.search(a.text, { topk: 3 });
      assert.ok(
        hits.some((h) => h.id === a.id && Math.abs(h.score - 1) < 1e-4),
        JSON.stringify(hits),
      );
      const gone = grown[425] as DensePassage;
      assert.ok(!(await retriever.search(gone.text, { topk: 10 })).some((h) => h.id === gone.id));
    });
  });

  describe("background build in a worker thread", () => {
    it("reports progress, stops on cancel with a checkpoint, and resumes to the same count", async () => {
      const passages = passagesOf(entries.slice(0, 1500));
      const dir = await tempDir("resume");
      const controller = new AbortController();
      const seen: number[] = [];
      await assert.rejects(
        buildDenseIndexInBackground(
          { dir, passages, params: SMALL_HNSW, chunkSize: 50, checkpointSeconds: 0 },
          ENCODER,
          {
            signal: controller.signal,
            onProgress: (p) => {
              if (p.phase !== "building") return;
              seen.push(p.done);
              assert.equal(p.total, 1500);
              assert.ok(p.ratePerSec > 0 && Number.isFinite(p.etaSec));
              if (p.done >= 300) controller.abort();
            },
          },
        ),
        (err: unknown) => err instanceof DenseBuildCancelled && err.progress.done >= 300 && err.progress.done < 1500,
      );
      assert.ok(seen.length >= 6, `progress reports: ${seen.join(",")}`);
      const checkpoint = await DenseIndex.readManifest(dir);
      assert.equal(checkpoint?.complete, false);
      const saved = checkpoint?.progress.done ?? 0;
      assert.ok(saved >= 300, `checkpoint at ${saved}`);
      await assert.rejects(
        DenseIndex.open(dir),
        (err: unknown) => err instanceof DenseIndexError && err.code === "incomplete",
      );

      const counter = new CountingEncoder(encoder);
      const resumed = await buildDenseIndex({ dir, passages, params: SMALL_HNSW, chunkSize: 50 }, counter);
      assert.equal(resumed.kept, saved);
      assert.equal(counter.passagesEncoded, 1500 - saved);
      assert.equal(resumed.manifest.count, 1500);
      assert.equal(resumed.manifest.complete, true);
      const { index } = await DenseIndex.open(dir, { corpusFingerprint: corpusFingerprint(passages) });
      assert.equal(index.ledger.size, 1500);
    });

    it("keeps the event loop free while it builds, unlike the same build on this thread", async () => {
      const passages = passagesOf(entries.slice(0, 2000));
      const request = async (name: string) => ({
        dir: await tempDir(name),
        passages,
        params: SMALL_HNSW,
        chunkSize: 500,
      });
      // Timer lateness also counts time the OS did not schedule this thread, which a busy machine adds to both
      // runs; event-loop utilization counts only time spent running callbacks. Both are compared to the
      // in-thread build under the same load.
      const measure = async (build: () => Promise<unknown>) => {
        const delay = monitorEventLoopDelay({ resolution: 10 });
        const before = performance.eventLoopUtilization();
        delay.enable();
        await build();
        delay.disable();
        return { maxMs: delay.max / 1e6, utilization: performance.eventLoopUtilization(before).utilization };
      };
      const inThread = await measure(async () => buildDenseIndex(await request("thread"), encoder));
      let result: Awaited<ReturnType<typeof buildDenseIndexInBackground>> | undefined;
      const inWorker = await measure(async () => {
        result = await buildDenseIndexInBackground(await request("worker"), ENCODER);
      });
      assert.equal(result?.manifest.count, 2000);
      assert.ok((result?.encodeRatePerSec ?? 0) > 0 && (result?.insertRatePerSec ?? 0) > 0);
      const figures = `worker: max delay ${inWorker.maxMs.toFixed(1)} ms, utilization ${inWorker.utilization.toFixed(3)}; same thread: ${inThread.maxMs.toFixed(1)} ms, ${inThread.utilization.toFixed(3)}`;
      assert.ok(inWorker.utilization < 0.3 && inWorker.utilization < inThread.utilization / 3, figures);
      assert.ok(inWorker.maxMs < inThread.maxMs / 2, figures);
    });

    it("reports a failure in the worker (a missing encoder folder) as an error naming the path", async () => {
      await assert.rejects(
        buildDenseIndexInBackground(
          { dir: await tempDir("fail"), passages: passagesOf(entries.slice(0, 10)) },
          { modelPath: join(tmpdir(), "no-such-encoder") },
        ),
        (err: unknown) =>
          err instanceof Error &&
          (err as { code?: string }).code === "encoder-missing" &&
          /no-such-encoder/.test(err.message),
      );
    });
  });
});

async function copyDir(from: string): Promise<string> {
  const to = await fs.mkdtemp(`${from}-copy-`);
  await fs.cp(from, to, { recursive: true });
  return to;
}
