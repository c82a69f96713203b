import assert from "node:assert/strict";
import { existsSync, promises as fs } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readCorpus } from "../../../extension/core/retrieval/corpora";
import { buildDenseIndex } from "../../../extension/core/retrieval/dense/denseBuild";
import { DenseRetriever, type EntryLookup } from "../../../extension/core/retrieval/dense/denseRetriever";
import { SentenceEncoder } from "../../../extension/core/retrieval/dense/encoder";
import { corpusFingerprint, passagesOf } from "../../../extension/core/retrieval/dense/passages";
import { DenseIndex } from "../../../extension/core/retrieval/dense/vectorIndex";
import {
  type HybridEngine,
  HybridRetriever,
  HybridSearchError,
  type HybridWarning,
} from "../../../extension/core/retrieval/hybrid";
import { LexicalIndex } from "../../../extension/core/retrieval/lexical";
import type { Entry, SearchHit } from "../../../extension/core/retrieval/types";
import { DEMO_GLOSSARY, ROOT } from "../../support/paths";

const TINY_BERT = join(ROOT, "build", "tiny-models", "glossa-tiny-bert");
const DEPTH = 20;

/** Reciprocal-rank fusion written out from its definition, as the oracle for the fused order. */
function rrfOrder(lists: SearchHit[][], weights: number[], k = 60): string[] {
  const scores = new Map<string, number>();
  lists.forEach((list, e) => {
    list.forEach((hit, i) => {
      scores.set(hit.id, (scores.get(hit.id) ?? 0) + (weights[e] ?? 1) / (k + i + 1));
    });
  });
  return [...scores].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([id]) => id);
}

describe("hybrid retrieval (reciprocal-rank fusion)", function () {
  this.timeout(60_000);
  let entries: Entry[];
  let first: LexicalIndex;
  let second: LexicalIndex;

  before(async () => {
    entries = [];
    await readCorpus({ path: DEMO_GLOSSARY, id: "demo" }, (e) => entries.push(e));
    // Two overlapping halves of the demo glossary: entries 2000–3999 are in both.
    first = new LexicalIndex();
    second = new LexicalIndex();
    for (const e of entries.slice(0, 4000)) first.add(e, "demo");
    for (const e of entries.slice(2000)) second.add(e, "demo");
  });

  const engines = (weights: [number, number] = [1, 1]): HybridEngine[] => [
    { name: "lexical:first", retriever: first, weight: weights[0] },
    { name: "lexical:second", retriever: second, weight: weights[1] },
  ];

  it("fuses two engines by reciprocal rank, de-duplicates, and says why each result matched", async () => {
    const query = "rat race";
    const a = await first.search(query, { topk: DEPTH });
    const b = await second.search(query, { topk: DEPTH });
    const both = a.filter((h) => b.some((x) => x.id === h.id));
    assert.ok(both.length >= 2 && a.length > both.length, "the halves must share some results and not others");

    const hybrid = new HybridRetriever(engines(), { depth: DEPTH });
    const hits = await hybrid.search(query, { topk: 10 });
    assert.deepEqual(
      hits.map((h) => h.id),
      rrfOrder([a, b], [1, 1]).slice(0, 10),
    );
    assert.equal(new Set(hits.map((h) => h.id)).size, hits.length);
    for (const hit of hits) {
      const inA = a.findIndex((h) => h.id === hit.id);
      const inB = b.findIndex((h) => h.id === hit.id);
      const expected = [
        ...(inA >= 0 ? [{ kind: a[inA]?.match, score: a[inA]?.score, rank: inA + 1 }] : []),
        ...(inB >= 0 ? [{ kind: b[inB]?.match, score: b[inB]?.score, rank: inB + 1 }] : []),
      ];
      assert.deepEqual(hit.reasons, expected, hit.id);
      assert.equal(hit.match, expected.length > 1 ? "hybrid" : expected[0]?.kind);
      const rrf = (inA >= 0 ? 1 / (61 + inA) : 0) + (inB >= 0 ? 1 / (61 + inB) : 0);
      assert.ok(Math.abs(hit.score - rrf) < 1e-12);
    }
    assert.equal(hits[0]?.match, "hybrid", "a result both engines found beats one found by a single engine");
  });

  it("weights engines", async () => {
    const query = "rat race";
    const a = await first.search(query, { topk: DEPTH });
    const b = await second.search(query, { topk: DEPTH });
    const weighted = await new HybridRetriever(engines([3, 1]), { depth: DEPTH }).search(query, { topk: 10 });
    const expected = rrfOrder([a, b], [3, 1]).slice(0, 10);
    assert.deepEqual(
      weighted.map((h) => h.id),
      expected,
    );
    assert.notDeepEqual(expected, rrfOrder([a, b], [1, 1]).slice(0, 10), "the weight must change this order");
  });

  it("caps glosses, keeps to topk and langs, and honours an aborted signal", async () => {
    const hybrid = new HybridRetriever(engines(), { glossCap: 12 });
    const hits = await hybrid.search("dog", { topk: 3 });
    assert.equal(hits.length, 3);
    for (const h of hits) {
      assert.ok([...h.gloss].length <= 12, h.gloss);
      const original = entries.find((e) => e.id === h.id)?.gloss ?? "";
      if ([...original].length > 12) assert.ok(h.gloss.endsWith("…"));
      else assert.equal(h.gloss, original);
    }
    assert.deepEqual(await hybrid.search("dog", { topk: 3, langs: ["ja"] }), []);
    assert.equal((await hybrid.search("dog", { topk: 3, langs: ["zh"] })).length, 3);
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(hybrid.search("dog", { topk: 3, signal: controller.signal }), /abort/i);
  });

  describe("with a dense engine (tiny BERT)", () => {
    let dir: string;
    let encoder: SentenceEncoder;
    let lookup: EntryLookup;
    const subset = () => entries.slice(0, 300);

    before(async () => {
      if (!existsSync(join(TINY_BERT, "onnx", "model.onnx"))) {
        throw new Error(`${TINY_BERT} is missing: run \`bash scripts/build-tiny-models.sh\` first`);
      }
      dir = await fs.mkdtemp(join(tmpdir(), "glossa-hybrid-"));
      encoder = new SentenceEncoder({ modelPath: TINY_BERT, threads: 1 });
      await buildDenseIndex({ dir, passages: passagesOf(subset()), params: { m: 8, efConstruction: 64 } }, encoder);
      lookup = (o) => {
        const e = subset()[o];
        return e && { id: e.id, headword: e.headword, gloss: e.gloss, lang: e.lang, source: "demo" };
      };
    });
    after(() => encoder.dispose());

    it("lists a lexical and a dense reason for an entry both engines found", async () => {
      const dense = await DenseRetriever.open(dir, encoder, corpusFingerprint(passagesOf(subset())), lookup, ["demo"]);
      const target = subset()[42] as Entry;
      const query = `${target.headword}: ${target.gloss}`;
      const hybrid = new HybridRetriever([
        { name: "lexical", retriever: first },
        { name: "dense", retriever: dense },
      ]);
      const hits = await hybrid.search(query, { topk: 5 });
      const found = hits.find((h) => h.id === target.id);
      assert.equal(found?.match, "hybrid", JSON.stringify(hits));
      const kinds = found?.reasons?.map((r) => r.kind) ?? [];
      assert.ok(kinds.includes("dense") && kinds.length === 2, kinds.join(","));
      const denseReason = found?.reasons?.find((r) => r.kind === "dense");
      assert.ok(denseReason && Math.abs(denseReason.score - 1) < 1e-4);
    });

    it("returns the other engines' results and a warning when one engine fails", async () => {
      const { index, manifest } = await DenseIndex.open(dir);
      const broken = new DenseRetriever(
        index,
        new SentenceEncoder({ modelPath: join(tmpdir(), "encoder-that-was-deleted") }),
        lookup,
        ["demo"],
        manifest,
      );
      const warnings: HybridWarning[] = [];
      const hybrid = new HybridRetriever(
        [
          { name: "lexical", retriever: first },
          { name: "dense", retriever: broken },
        ],
        { onWarning: (w) => warnings.push(w) },
      );
      const perSearch: string[] = [];
      const result = await hybrid.searchWithWarnings("rat race", { topk: 5, onWarning: (m) => perSearch.push(m) });
      const lexicalOnly = await first.search("rat race", { topk: 5 });
      assert.deepEqual(
        result.hits.map((h) => h.id),
        lexicalOnly.map((h) => h.id),
      );
      assert.equal(result.warnings.length, 1);
      assert.equal(result.warnings[0]?.engine, "dense");
      assert.match(result.warnings[0]?.message ?? "", /encoder-that-was-deleted.*does not exist/);
      assert.deepEqual(warnings, result.warnings);
      assert.deepEqual(perSearch, [`dense search: ${result.warnings[0]?.message}`]);

      const allBroken = new HybridRetriever([{ name: "dense", retriever: broken }]);
      perSearch.length = 0;
      await assert.rejects(
        allBroken.search("rat race", { topk: 5, onWarning: (m) => perSearch.push(m) }),
        HybridSearchError,
      );
      assert.deepEqual(perSearch, [], "a search that fails outright is an error, not a warning");
    });
  });
});
