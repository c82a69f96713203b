import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serveRetrieverCommand } from "../../../extension/cli/serveRetriever";
import { loadIndex } from "../../../extension/core/retrieval/corpora";
import type { LexicalIndex } from "../../../extension/core/retrieval/lexical";
import { RetrievalServer, type RetrievedItem } from "../../../extension/core/retrieval/server";
import type { Retriever, SearchHit, SearchOptions } from "../../../extension/core/retrieval/types";
import { DEMO_GLOSSARY, ROOT } from "../../support/paths";

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: Record<string, unknown>;
}

/** One HTTP request with full control over method, headers and raw body bytes. */
function request(
  base: string,
  options: { method?: string; path?: string; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const url = new URL(options.path ?? "/retrieve", base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: options.method ?? "POST", headers: { "content-type": "application/json", ...options.headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          let json: Record<string, unknown> = {};
          try {
            json = body ? (JSON.parse(body) as Record<string, unknown>) : {};
          } catch {
            // Left empty: the assertions on status and body say what went wrong.
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json });
        });
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

function retrieve(base: string, payload: unknown): Promise<Reply> {
  return request(base, { body: JSON.stringify(payload) });
}

function results(reply: Reply): RetrievedItem[][] {
  assert.equal(reply.status, 200, reply.body);
  return reply.json.result as RetrievedItem[][];
}

/** Counts the searches that reach the real index (cache hits do not). */
class CountingRetriever implements Retriever {
  searches = 0;
  constructor(private readonly base: Retriever) {}
  get corpusIds(): readonly string[] {
    return this.base.corpusIds;
  }
  search(query: string, options: SearchOptions): Promise<SearchHit[]> {
    this.searches++;
    return this.base.search(query, options);
  }
}

describe("retrieval server", function () {
  this.timeout(60_000);
  let index: LexicalIndex;
  let counting: CountingRetriever;
  let server: RetrievalServer;
  const logged: string[] = [];

  before(async () => {
    const dir = await mkdtemp(join(tmpdir(), "glossa-server-"));
    const english = join(dir, "en.tsv");
    await writeFile(english, "en\tzh\ninvolution\t内卷: a society becoming a rat race\nrat race\t内卷; 激烈竞争\n");
    index = (
      await loadIndex([
        { path: DEMO_GLOSSARY, id: "demo-cc-cedict" },
        { path: english, id: "glossary-en" },
      ])
    ).index;
    counting = new CountingRetriever(index);
    server = await RetrievalServer.start({ retriever: counting, port: 0, maxQueries: 64, log: (l) => logged.push(l) });
  });
  after(() => server.close());

  it("binds loopback and answers Search-R1's request shape, one list per query", async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const reply = await retrieve(server.url, {
      queries: ["内卷", "躺平", "qqqzzzxxx"],
      topk: 3,
      return_scores: true,
    });
    const [first, second, none] = results(reply);
    assert.ok(first!.length >= 1 && first!.length <= 3);
    assert.deepEqual(none, []);
    const top = first![0]!;
    assert.match(top.id, /^demo-cc-cedict:/);
    assert.equal(top.headword, "内卷");
    assert.equal(top.score, 1);
    assert.equal(top.lang, "zh");
    assert.equal(top.source, "demo-cc-cedict");
    assert.equal(top.match, "exact");
    assert.match(top.text, /^内卷 — \(embryology\) to involute; involution; \(neologism c\. 2017\)/);
    assert.equal(second![0]!.headword, "躺平");
    // What Search-R1's rollout code reads: item["document"]["contents"] (title line, then text) and item["score"].
    for (const item of first!) {
      const [title, ...text] = item.document.contents.split("\n");
      assert.equal(title, item.headword);
      assert.equal(text.join("\n"), item.gloss.replace(/\s+/g, " ").trim());
      assert.equal(item.document.id, item.id);
      assert.equal(typeof item.score, "number");
    }
  });

  it("returns the engine's own results and scores", async () => {
    for (const query of ["狗咬吕洞宾，不识好人心", "rat race", "躺平"]) {
      const direct = await index.search(query, { topk: 5 });
      const [served] = results(await retrieve(server.url, { queries: [query], topk: 5, return_scores: true }));
      assert.deepEqual(
        served!.map((i) => [i.id, i.score, i.match]),
        direct.map((h) => [h.id, h.score, h.match]),
        query,
      );
    }
  });

  it("leaves scores out unless asked, and defaults topk to 5", async () => {
    const query = "rat race";
    assert.ok((await index.search(query, { topk: 20 })).length > 5, "the query must have more than 5 results");
    for (const payload of [{ queries: [query] }, { queries: [query], topk: null, return_scores: false }]) {
      const [items] = results(await retrieve(server.url, payload));
      assert.equal(items!.length, 5);
      assert.ok(items!.every((i) => !("score" in i) && i.document.contents.length > 0));
    }
  });

  it("restricts results to the requested languages", async () => {
    const [en] = results(await retrieve(server.url, { queries: ["rat race"], topk: 5, langs: ["en"] }));
    assert.ok(en!.length > 0 && en!.every((i) => i.lang === "en"), JSON.stringify(en));
    const [zh] = results(await retrieve(server.url, { queries: ["rat race"], topk: 5, langs: ["zh"] }));
    assert.ok(zh!.length > 0 && zh!.every((i) => i.lang === "zh"));
    const [all] = results(await retrieve(server.url, { queries: ["rat race"], topk: 5, langs: [] }));
    assert.ok(all!.some((i) => i.lang === "en") && all!.some((i) => i.lang === "zh"));
  });

  it("answers a repeated query from its cache without searching again", async () => {
    const payload = { queries: ["佛系", "摆烂"], topk: 4, return_scores: true };
    const first = await retrieve(server.url, payload);
    const searches = counting.searches;
    const again = await retrieve(server.url, payload);
    assert.equal(counting.searches, searches, "no search reached the index");
    assert.deepEqual(again.json, first.json);
    await retrieve(server.url, { ...payload, topk: 3 });
    assert.equal(counting.searches, searches + 2, "another topk is another key");
    const health = await request(server.url, { method: "GET", path: "/health" });
    assert.equal(health.status, 200);
    assert.equal(health.json.status, "ok");
    assert.deepEqual(health.json.corpora, ["demo-cc-cedict", "glossary-en"]);
    assert.ok((health.json.cache as { hits: number }).hits >= 2);
  });

  const bad: Array<[string, Parameters<typeof request>[1], number, string]> = [
    ["malformed JSON", { body: '{"queries": ["a"' }, 400, "bad_json"],
    ["invalid UTF-8", { body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]) }, 400, "not_utf8"],
    ["a JSON list instead of an object", { body: '["a"]' }, 400, "bad_request"],
    ["no queries field", { body: '{"topk": 3}' }, 400, "bad_request"],
    ["a string instead of a list", { body: '{"queries": "内卷"}' }, 400, "bad_request"],
    ["a number among the queries", { body: '{"queries": ["a", 5]}' }, 400, "bad_request"],
    ["an empty queries list", { body: '{"queries": []}' }, 400, "no_queries"],
    ["topk as a string", { body: '{"queries": ["a"], "topk": "3"}' }, 400, "bad_topk"],
    ["topk 0", { body: '{"queries": ["a"], "topk": 0}' }, 400, "bad_topk"],
    ["topk above the limit", { body: '{"queries": ["a"], "topk": 51}' }, 400, "bad_topk"],
    ["a fractional topk", { body: '{"queries": ["a"], "topk": 2.5}' }, 400, "bad_topk"],
    ["return_scores as a string", { body: '{"queries": ["a"], "return_scores": "yes"}' }, 400, "bad_request"],
    ["langs as a string", { body: '{"queries": ["a"], "langs": "zh"}' }, 400, "bad_langs"],
    ["a language that is not a tag", { body: '{"queries": ["a"], "langs": ["z h"]}' }, 400, "bad_langs"],
    [
      "text/plain",
      { body: '{"queries": ["a"]}', headers: { "content-type": "text/plain" } },
      415,
      "unsupported_media_type",
    ],
    [
      "form data",
      { body: "queries=a", headers: { "content-type": "application/x-www-form-urlencoded" } },
      415,
      "unsupported_media_type",
    ],
    ["GET /retrieve", { method: "GET" }, 405, "method_not_allowed"],
    ["POST /health", { path: "/health", body: "{}" }, 405, "method_not_allowed"],
    ["an unknown path", { path: "/search", body: "{}" }, 404, "not_found"],
  ];
  for (const [what, options, status, code] of bad) {
    it(`refuses ${what} with ${status} ${code}`, async () => {
      const reply = await request(server.url, options);
      assert.equal(reply.status, status, reply.body);
      assert.equal(reply.json.code, code);
      assert.equal(typeof reply.json.error, "string");
      assert.match(reply.headers["content-type"] ?? "", /^application\/json/);
    });
  }

  it("names the allowed methods on a 405, and says what is wrong in the message", async () => {
    const get = await request(server.url, { method: "GET" });
    assert.equal(get.headers.allow, "POST");
    const topk = await retrieve(server.url, { queries: ["a"], topk: 99 });
    assert.equal(topk.json.error, '"topk" must be an integer from 1 to 50, not 99');
    const which = await retrieve(server.url, { queries: ["a", "b", null] });
    assert.equal(which.json.error, "queries[2] is null, not a string");
  });

  it("refuses more queries than the limit in one request", async () => {
    const reply = await retrieve(server.url, { queries: Array.from({ length: 65 }, (_, i) => `q${i}`) });
    assert.equal(reply.status, 400);
    assert.equal(reply.json.code, "too_many_queries");
    assert.match(reply.json.error as string, /65 queries .* limit is 64/);
  });

  it("answers a 100 KB query with a bounded result, cut at the documented length", async () => {
    const sentence = "你别狗咬吕洞宾，不识好人心，我是真心帮你的。";
    const huge = sentence.repeat(Math.ceil(100_000 / Buffer.byteLength(sentence)));
    assert.ok(Buffer.byteLength(huge) >= 100_000);
    const started = Date.now();
    const reply = await retrieve(server.url, {
      queries: [huge, "躺平\u0000\u0007\ud800"],
      topk: 5,
      return_scores: true,
    });
    const [items, controls] = results(reply);
    assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
    assert.deepEqual(reply.json.truncated, [0]);
    assert.equal(items!.length, 5);
    assert.equal(items![0]!.headword, "狗咬吕洞宾，不识好人心");
    assert.equal(controls![0]!.headword, "躺平");
  });

  it("refuses a body over the limit with 413, declared or streamed", async () => {
    const small = await RetrievalServer.start({ retriever: index, port: 0, maxBodyBytes: 1000 });
    try {
      const body = JSON.stringify({ queries: ["x".repeat(5000)] });
      const declared = await request(small.url, { body });
      assert.equal(declared.status, 413);
      assert.equal(declared.json.code, "body_too_large");
      const streamed = await request(small.url, { body, headers: { "transfer-encoding": "chunked" } });
      assert.equal(streamed.status, 413);
      assert.match(streamed.json.error as string, /over the limit of 1000 bytes/);
      const fine = await retrieve(small.url, { queries: ["躺平"] });
      assert.equal(fine.status, 200);
    } finally {
      await small.close();
    }
  });

  it("handles 50 parallel requests, each with its own answer", async () => {
    // Fifty different headwords spread over the demo glossary, each with its first character as a second query.
    const lines = (await readFile(DEMO_GLOSSARY, "utf8")).split("\n").filter((l) => l && !l.startsWith("#"));
    const queries = Array.from({ length: 50 }, (_, i) => lines[i * Math.floor(lines.length / 50)]!.split(" ")[1]!);
    assert.equal(new Set(queries).size, 50);
    const expected = await Promise.all(queries.map((q) => index.search(q, { topk: 4 })));
    const fresh = await RetrievalServer.start({ retriever: index, port: 0, cacheEntries: 0 });
    try {
      const replies = await Promise.all(
        queries.map((q) => retrieve(fresh.url, { queries: [q, q.slice(0, 1)], topk: 4, return_scores: true })),
      );
      replies.forEach((reply, i) => {
        const [items] = results(reply);
        assert.deepEqual(
          items!.map((item) => item.id),
          expected[i]!.map((h) => h.id),
          queries[i],
        );
      });
      assert.equal(fresh.stats.queries, queries.length * 2);
    } finally {
      await fresh.close();
    }
  });

  it("reports a failing engine as a 500 with its message, and keeps serving", async () => {
    let fail = true;
    const flaky: Retriever = {
      corpusIds: ["flaky"],
      search: async (query, options) => {
        if (fail) throw new Error("index file /tmp/x.idx is corrupt: bad magic");
        return index.search(query, options);
      },
    };
    const lines: string[] = [];
    const broken = await RetrievalServer.start({ retriever: flaky, port: 0, log: (l) => lines.push(l) });
    try {
      const reply = await retrieve(broken.url, { queries: ["躺平"] });
      assert.equal(reply.status, 500);
      assert.deepEqual(reply.json, {
        error: "Internal error: index file /tmp/x.idx is corrupt: bad magic",
        code: "internal",
      });
      assert.match(lines[0] ?? "", /internal error/);
      fail = false;
      assert.equal((await retrieve(broken.url, { queries: ["躺平"] })).status, 200);
    } finally {
      await broken.close();
    }
  });

  it("refuses a non-loopback address unless allowed, and warns when it is", async () => {
    await assert.rejects(
      RetrievalServer.start({ retriever: index, host: "0.0.0.0", port: 0 }),
      /not a loopback address/,
    );
    const lines: string[] = [];
    const open = await RetrievalServer.start({
      retriever: index,
      host: "0.0.0.0",
      port: 0,
      allowNonLoopback: true,
      log: (l) => lines.push(l),
    });
    try {
      assert.match(lines[0] ?? "", /warning: serving on 0\.0\.0\.0, not loopback/);
      const reply = await retrieve(`http://127.0.0.1:${open.port}`, { queries: ["躺平"] });
      assert.equal(reply.status, 200);
    } finally {
      await open.close();
    }
  });
});

describe("glossa serve-retriever", function () {
  this.timeout(90_000);

  function launch(args: string[]): { child: ChildProcess; output: () => string; exit: Promise<number | null> } {
    const script = `require(${JSON.stringify(join(ROOT, "extension/cli/serveRetriever.ts"))}).serveRetrieverCommand(process.argv.slice(1)).then((code) => { process.exitCode = code; })`;
    const child = spawn(process.execPath, ["-r", "tsx/cjs", "-e", script, "--", ...args], { cwd: ROOT });
    let text = "";
    child.stdout?.on("data", (c: Buffer) => {
      text += c.toString();
    });
    child.stderr?.on("data", (c: Buffer) => {
      text += c.toString();
    });
    const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    return { child, output: () => text, exit };
  }

  /** The URL the server prints once it listens; rejects with the output if the process exits first. */
  function listening(run: ReturnType<typeof launch>): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const found = run.output().match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
        if (found) {
          clearInterval(timer);
          resolve(found[1]!);
        }
      }, 50);
      void run.exit.then((code) => {
        clearInterval(timer);
        reject(new Error(`exited ${code} before listening:\n${run.output()}`));
      });
    });
  }

  it("loads the demo glossary, prints the URL, serves, and exits 0 on SIGTERM", async () => {
    const dir = await mkdtemp(join(tmpdir(), "glossa-serve-"));
    const glossary = join(dir, "terms.tsv");
    await writeFile(glossary, "source\ttarget\n内卷\tinvolution (house style)\nbroken line without a tab\n");
    const run = launch(["--port", "0", "--glossary", glossary, "--topk-max", "7"]);
    const url = await listening(run);
    assert.match(run.output(), /terms\.tsv: 1 imported, 1 skipped, 1 malformed/);
    const [items] = results(await retrieve(url, { queries: ["内卷"], topk: 7, return_scores: true }));
    assert.deepEqual(
      items!.slice(0, 2).map((i) => [i.source, i.gloss]),
      [
        ["demo-cc-cedict", items![0]!.gloss],
        ["terms", "involution (house style)"],
      ],
    );
    assert.equal((await retrieve(url, { queries: ["内卷"], topk: 8 })).json.code, "bad_topk");
    run.child.kill("SIGTERM");
    assert.equal(await run.exit, 0);
    assert.match(run.output(), /SIGTERM: shutting down/);
  });

  it("exits 2 with a message for a non-loopback host, a bad port or a missing glossary", async () => {
    for (const [args, message] of [
      [["--host", "0.0.0.0"], /not a loopback address; add --allow-remote/],
      [["--port", "http"], /--port must be an integer from 0 to 65535/],
      [["--glossary", "/nonexistent/terms.tsv", "--no-demo-glossary"], /cannot load the corpora: .*ENOENT/],
      [["--no-demo-glossary"], /nothing to serve/],
      [["--bogus"], /Unknown option '--bogus'/],
    ] as const) {
      const run = launch([...args]);
      assert.equal(await run.exit, 2, run.output());
      assert.match(run.output(), message);
    }
  });

  it("names a corrupt --index folder, exits 2, and serves it after --rebuild", async () => {
    const dir = await mkdtemp(join(tmpdir(), "glossa-serve-corrupt-"));
    const indexDir = join(dir, "index");
    const glossary = join(dir, "terms.tsv");
    await writeFile(glossary, "source\ttarget\n内卷\tinvolution (house style)\n");
    const args = ["--port", "0", "--no-demo-glossary", "--glossary", glossary, "--index", indexDir];
    const first = launch(args);
    await listening(first);
    first.child.kill("SIGTERM");
    assert.equal(await first.exit, 0);
    const records = join(indexDir, (await readFile(join(indexDir, "CURRENT"), "utf8")).trim(), "records.utf8");
    const bytes = await readFile(records);
    bytes[0] = (bytes[0] ?? 0) ^ 0xff;
    await writeFile(records, bytes);

    const refused = launch(args);
    assert.equal(await refused.exit, 2, refused.output());
    assert.match(refused.output(), /records\.utf8 fails its checksum.*Run again with --rebuild to rebuild it\./);

    const rebuilt = launch([...args, "--rebuild"]);
    const url = await listening(rebuilt);
    const [items] = results(await retrieve(url, { queries: ["内卷"], topk: 3 }));
    assert.equal(items?.[0]?.gloss, "involution (house style)");
    rebuilt.child.kill("SIGTERM");
    assert.equal(await rebuilt.exit, 0);
  });

  it("is callable in-process for usage errors", async () => {
    const written: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string) => {
      written.push(chunk);
      return true;
    }) as typeof process.stderr.write;
    try {
      assert.equal(await serveRetrieverCommand(["--topk-max", "0"]), 2);
    } finally {
      process.stderr.write = write;
    }
    assert.match(written.join(""), /--topk-max must be an integer from 1 to 10000/);
  });
});
