import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { appendFile, copyFile, mkdtemp, readdir, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { INDEX_FORMAT_VERSION, IndexCorruptError, IndexStore } from "../../../extension/core/retrieval/indexStore";
import { CEDICT_FULL, DEMO_GLOSSARY, ROOT } from "../../support/paths";

const run = promisify(execFile);

async function generationDir(root: string): Promise<string> {
  return join(root, (await readFile(join(root, "CURRENT"), "utf8")).trim());
}

describe("index store", function () {
  this.timeout(120_000);
  let dir: string;
  let glossary: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "glossa-store-"));
    glossary = join(dir, "idioms.u8");
    await copyFile(DEMO_GLOSSARY, glossary);
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("imports once, treats an unchanged file as a no-op and re-imports a changed one", async () => {
    const store = new IndexStore(join(dir, "index"));
    const first = await store.update([{ path: glossary, id: "idioms" }]);
    assert.deepEqual([first.imported, first.rebuilt], [["idioms"], true]);
    const before = await generationDir(store.root);

    const again = await store.update([{ path: glossary, id: "idioms" }]);
    assert.deepEqual([again.imported, again.unchanged, again.rebuilt], [[], ["idioms"], false]);
    assert.equal(await generationDir(store.root), before);

    await appendFile(glossary, "新詞 新词 [xin1 ci2] /neologism; new word/\n");
    const changed = await store.update([{ path: glossary, id: "idioms" }]);
    assert.deepEqual(changed.imported, ["idioms"]);
    const { index, manifest } = await store.load();
    assert.equal(manifest.corpora[0]?.entries, first.reports[0]!.imported + 1);
    assert.equal((await index.search("新詞", { topk: 1 }))[0]?.headword, "新词");
  });

  it("adds a second corpus without re-parsing the first, and keeps both", async () => {
    const store = new IndexStore(join(dir, "index"));
    await store.update([{ path: glossary, id: "idioms" }]);
    const tsv = join(dir, "terms.tsv");
    await writeFile(tsv, "en\tde\nrat race\tHamsterrad\nnot-a-pair\n");
    const second = await store.update([{ path: tsv, id: "terms" }]);
    assert.deepEqual(second.imported, ["terms"]);
    assert.equal(second.reports[0]?.malformed, 1);
    const { index, manifest } = await store.load();
    assert.deepEqual(
      manifest.corpora.map((c) => c.id),
      ["idioms", "terms"],
    );
    assert.equal((await index.search("rat race", { topk: 1, langs: ["en"] }))[0]?.gloss, "Hamsterrad");
    assert.equal((await index.search("佛系", { topk: 1 }))[0]?.source, "idioms");
  });

  describe("a damaged index raises IndexCorruptError that says how to rebuild", () => {
    const damages: Array<[string, (gen: string) => Promise<void>, RegExp]> = [
      [
        "a flipped byte",
        async (gen) => {
          const file = join(gen, "posting-docs.i32");
          const data = await readFile(file);
          data[data.length >> 1]! ^= 0x40;
          await writeFile(file, data);
        },
        /posting-docs\.i32 fails its checksum/,
      ],
      ["a truncated file", (gen) => truncate(join(gen, "records.utf8"), 100), /records\.utf8 is 100 bytes/],
      ["a missing file", (gen) => rm(join(gen, "key-table.i32")), /key-table\.i32 is missing/],
      [
        "an unknown format version",
        async (gen) => {
          const manifest = JSON.parse(await readFile(join(gen, "manifest.json"), "utf8"));
          manifest.formatVersion = INDEX_FORMAT_VERSION + 1;
          await writeFile(join(gen, "manifest.json"), JSON.stringify(manifest));
        },
        /format version/,
      ],
      ["a manifest that is not JSON", (gen) => writeFile(join(gen, "manifest.json"), "{"), /not valid JSON/],
    ];
    for (const [what, damage, reason] of damages) {
      it(what, async () => {
        const store = new IndexStore(join(dir, "index"));
        await store.update([{ path: glossary, id: "idioms" }]);
        await damage(await generationDir(store.root));
        const error = await store.load().then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(error instanceof IndexCorruptError, String(error));
        assert.match(error.message, reason);
        assert.match(error.message, /can be rebuilt/);
        const rebuilt = await store.update([{ path: glossary, id: "idioms" }], { force: true });
        assert.deepEqual(rebuilt.imported, ["idioms"]);
        assert.ok((await store.load()).index.size > 0);
      });
    }

    it("no index at all", async () => {
      await assert.rejects(new IndexStore(join(dir, "nothing")).load(), IndexCorruptError);
    });
  });

  it("lets two processes write one index without corrupting it", async () => {
    const root = join(dir, "index");
    const writer = (path: string, id: string) =>
      run(
        process.execPath,
        [
          "-r",
          "tsx/cjs",
          "-e",
          `const { IndexStore } = require(${JSON.stringify(join(ROOT, "extension/core/retrieval/indexStore.ts"))});
           new IndexStore(process.argv[1]).update([{ path: process.argv[2], id: process.argv[3] }])
             .then((r) => console.log(JSON.stringify(r.imported)));`,
          root,
          path,
          id,
        ],
        { cwd: ROOT },
      );
    const [a, b] = await Promise.all([writer(CEDICT_FULL, "cc-cedict"), writer(glossary, "idioms")]);
    assert.deepEqual([a.stdout.trim(), b.stdout.trim()], ['["cc-cedict"]', '["idioms"]']);
    const { index, manifest } = await new IndexStore(root).load();
    assert.deepEqual(manifest.corpora.map((c) => c.id).sort(), ["cc-cedict", "idioms"]);
    assert.equal(manifest.entryCount, 124_260 + manifest.corpora.find((c) => c.id === "idioms")!.entries);
    assert.equal((await index.search("内卷", { topk: 1 }))[0]?.headword, "内卷");
    const left = await readdir(root);
    assert.ok(!left.includes(".lock"), left.join(","));
    assert.ok(!left.some((name) => name.startsWith(".tmp-")), left.join(","));
  });

  it("takes over a lock left by a process that no longer runs", async () => {
    const root = join(dir, "index");
    const store = new IndexStore(root, { lockTimeoutMs: 5_000 });
    await store.update([{ path: glossary, id: "idioms" }]);
    const dead = await run(process.execPath, ["-e", "console.log(process.pid)"]);
    await writeFile(
      join(root, ".lock"),
      JSON.stringify({ pid: Number(dead.stdout), host: require("node:os").hostname(), token: "x", since: 0 }),
    );
    await appendFile(glossary, "新詞 新词 [xin1 ci2] /new word/\n");
    const result = await store.update([{ path: glossary, id: "idioms" }]);
    assert.deepEqual(result.imported, ["idioms"]);
  });
});
