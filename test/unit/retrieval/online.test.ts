import assert from "node:assert/strict";
import { appendFile, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonlLruCache, LruCache } from "../../../extension/core/retrieval/cache";
import { loadIndex } from "../../../extension/core/retrieval/corpora";
import type { LexicalIndex } from "../../../extension/core/retrieval/lexical";
import {
  type CachedOnlineResult,
  htmlToText,
  OnlineSearchError,
  OnlineSearchProvider,
  WithOnlineTier,
} from "../../../extension/core/retrieval/online";
import { deadPort } from "../../support/deadPort";
import { DEMO_GLOSSARY } from "../../support/paths";
import { MediaWikiServer, SearxngServer, type WebDocument } from "../../support/searchBackends";

const WEB: WebDocument[] = [
  {
    title: "Involution (内卷) &ndash; explained",
    url: "https://example.org/neijuan",
    content: "<p><b>Neijuan</b> means the &quot;rat race&quot; of <i>pointless</i> competition &amp; burnout.</p>",
  },
  {
    title: "Rat race",
    url: "https://example.org/rat-race",
    content: "An endless, self-defeating <em>rat race</em> pursuit; rat race rat race.",
  },
  { title: "Lying flat", url: "https://example.org/tangping", content: "躺平 &#8212; rejecting the rat race" },
  { title: "Unrelated", url: "https://example.org/other", content: "Nothing about competition here." },
];

async function failure(promise: Promise<unknown>): Promise<OnlineSearchError> {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OnlineSearchError, `expected an OnlineSearchError, got ${String(e)}`);
    return e;
  }
  assert.fail("the search should have failed");
}

describe("online tier: HTML snippets to text", () => {
  it("drops tags and decodes named and numeric character references", () => {
    assert.equal(
      htmlToText(
        '<span class="searchmatch">rat</span> race &amp; &quot;内卷&quot;&#x2014;&#8212;<br/>x&nbsp;y &bogus;',
      ),
      'rat race & "内卷"—— x y &bogus;',
    );
    assert.equal(htmlToText("<script>alert(1)</script>ok <style>p{}</style>done"), "ok done");
  });
});

describe("online tier: SearxNG", () => {
  let searx: SearxngServer;
  before(async () => {
    searx = await SearxngServer.start(WEB);
  });
  after(() => searx.close());
  beforeEach(() => {
    searx.delayMs = 0;
    searx.failStatus = undefined;
    searx.garbage = false;
  });

  it("maps results to online hits with plain-text glosses, best first", async () => {
    const provider = new OnlineSearchProvider({ kind: "searxng", endpoint: searx.origin });
    const hits = await provider.search("rat race", { topk: 5 });
    assert.deepEqual(
      hits.map((h) => h.headword),
      ["Rat race", "Involution (内卷) – explained", "Lying flat"],
    );
    const neijuan = hits[1]!;
    assert.equal(neijuan.gloss, 'Neijuan means the "rat race" of pointless competition & burnout.');
    assert.equal(neijuan.match, "online");
    assert.equal(neijuan.online, true);
    assert.equal(neijuan.source, new URL(searx.origin).host);
    assert.equal(neijuan.id, `online:${new URL(searx.origin).host}:https://example.org/neijuan`);
    assert.equal(neijuan.lang, "und");
    assert.ok(hits[0]!.score > neijuan.score, "SearxNG's own scores are kept");
    assert.equal(hits[2]!.gloss, "躺平 — rejecting the rat race");
    assert.equal((await provider.search("rat race", { topk: 1 })).length, 1);
  });

  it("passes a single requested language on and labels hits with it", async () => {
    const provider = new OnlineSearchProvider({ kind: "searxng", endpoint: `${searx.origin}/` });
    const hits = await provider.search("lying flat", { topk: 3, langs: ["zh"] });
    assert.equal(hits[0]?.lang, "zh");
    assert.match(searx.requests.at(-1)!, /^\/search\?q=lying\+flat&format=json&language=zh$/);
  });

  it("answers a repeat query from the cache without a request, until the TTL passes", async () => {
    let now = 1_000_000;
    const cache = new LruCache<CachedOnlineResult>({ maxEntries: 10, ttlMs: 60_000, now: () => now });
    const provider = new OnlineSearchProvider({ kind: "searxng", endpoint: searx.origin, cache });
    const first = await provider.search("competition", { topk: 5 });
    const before = searx.requests.length;
    assert.deepEqual(await provider.search("  competition ", { topk: 5 }), first);
    assert.deepEqual(await provider.search("competition", { topk: 1 }), first.slice(0, 1));
    assert.equal(searx.requests.length, before, "cache hits send no request");
    assert.equal(provider.requests, 1);
    // Fewer results than asked for is the whole answer: a larger topk is still a hit.
    assert.equal(first.length, 2);
    await provider.search("competition", { topk: 9 });
    assert.equal(searx.requests.length, before);
    await provider.search("competition", { topk: 5, langs: ["en"] });
    assert.equal(searx.requests.length, before + 1, "another language is another key");
    now += 60_001;
    await provider.search("competition", { topk: 5 });
    assert.equal(searx.requests.length, before + 2, "an expired entry is fetched again");
  });

  it("gives up after the timeout with a timeout error", async () => {
    searx.delayMs = 2000;
    const provider = new OnlineSearchProvider({ kind: "searxng", endpoint: searx.origin, timeoutMs: 150 });
    const started = Date.now();
    const error = await failure(provider.search("rat", { topk: 3 }));
    assert.equal(error.failure, "timeout");
    assert.match(error.message, /no answer within 150 ms/);
    assert.ok(Date.now() - started < 1500, `took ${Date.now() - started} ms`);
  });

  it("rejects with the caller's abort reason when cancelled, not an online failure", async () => {
    searx.delayMs = 2000;
    const provider = new OnlineSearchProvider({ kind: "searxng", endpoint: searx.origin, timeoutMs: 5000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(provider.search("rat", { topk: 3, signal: controller.signal }), (e: Error) => {
      assert.equal(e.name, "AbortError");
      assert.ok(!(e instanceof OnlineSearchError));
      return true;
    });
    await assert.rejects(provider.search("rat", { topk: 3, signal: AbortSignal.abort() }), { name: "AbortError" });
  });

  it("reports a 5xx answer, a body that is not JSON and an oversized answer", async () => {
    const provider = new OnlineSearchProvider({ kind: "searxng", endpoint: searx.origin });
    searx.failStatus = 500;
    const http500 = await failure(provider.search("rat", { topk: 3 }));
    assert.equal(http500.failure, "http");
    assert.match(http500.message, /HTTP 500 Internal Server Error/);
    searx.failStatus = undefined;
    searx.garbage = true;
    const garbage = await failure(provider.search("rat", { topk: 3 }));
    assert.equal(garbage.failure, "malformed");
    assert.match(garbage.message, /not JSON/);
    searx.garbage = false;
    const small = new OnlineSearchProvider({ kind: "searxng", endpoint: searx.origin, maxResponseBytes: 100 });
    const large = await failure(small.search("rat", { topk: 3 }));
    assert.equal(large.failure, "malformed");
    assert.match(large.message, /larger than 100 bytes/);
  });

  it("reports a dead endpoint as unreachable", async () => {
    const provider = new OnlineSearchProvider({ kind: "searxng", endpoint: `http://127.0.0.1:${await deadPort()}` });
    const error = await failure(provider.search("rat", { topk: 3 }));
    assert.equal(error.failure, "unreachable");
    assert.match(error.message, /ECONNREFUSED/);
  });

  it("refuses an endpoint that is not an http(s) URL", () => {
    assert.throws(() => new OnlineSearchProvider({ kind: "searxng", endpoint: "not a url" }), /not a URL/);
    assert.throws(() => new OnlineSearchProvider({ kind: "searxng", endpoint: "file:///etc" }), /http\(s\)/);
  });
});

describe("online tier: MediaWiki / Wiktionary API", () => {
  let wiki: MediaWikiServer;
  before(async () => {
    wiki = await MediaWikiServer.start([
      {
        pageid: 11,
        title: "内卷",
        text: 'Chinese noun: involution; the "rat race" of pointless competition <in> work & study.',
      },
      { pageid: 12, title: "躺平", text: "Chinese verb: to lie flat; to opt out of the rat race." },
      { pageid: 13, title: "rat race", text: "English noun: a pointless, exhausting competition." },
    ]);
  });
  after(() => wiki.close());

  it("maps search results, stripping the searchmatch spans and entities from snippets", async () => {
    const provider = new OnlineSearchProvider({ kind: "mediawiki", endpoint: wiki.apiUrl });
    const hits = await provider.search("rat race", { topk: 2 });
    assert.deepEqual(
      hits.map((h) => [h.headword, h.score]),
      [
        ["内卷", 1],
        ["躺平", 0.5],
      ],
    );
    assert.equal(
      hits[0]!.gloss,
      'Chinese noun: involution; the "rat race" of pointless competition <in> work & study.',
    );
    assert.equal(hits[0]!.id, `online:${new URL(wiki.apiUrl).host}:${wiki.apiUrl}?curid=11`);
    assert.equal(hits[0]!.online, true);
    const sent = new URL(wiki.requests.at(-1)!, wiki.origin).searchParams;
    assert.equal(sent.get("list"), "search");
    assert.equal(sent.get("srlimit"), "2");
  });

  it("uses page extracts as glosses when asked, with a second request", async () => {
    const provider = new OnlineSearchProvider({
      kind: "mediawiki",
      endpoint: wiki.apiUrl,
      extracts: true,
      extractChars: 20,
    });
    const before = wiki.requests.length;
    const hits = await provider.search("competition", { topk: 5 });
    assert.equal(wiki.requests.length, before + 2);
    assert.deepEqual(
      hits.map((h) => h.gloss),
      ["Chinese noun: involu…", "English noun: a poin…"],
    );
    assert.match(wiki.requests.at(-1)!, /prop=extracts.*pageids=11%7C13/);
  });

  it("labels hits with the wiki's language and skips a search restricted to other languages", async () => {
    const provider = new OnlineSearchProvider({ kind: "mediawiki", endpoint: wiki.apiUrl, lang: "en" });
    assert.equal((await provider.search("rat race", { topk: 1 }))[0]?.lang, "en");
    const before = wiki.requests.length;
    assert.deepEqual(await provider.search("rat race", { topk: 1, langs: ["zh"] }), []);
    assert.equal(wiki.requests.length, before);
    const wiktionary = new OnlineSearchProvider({ kind: "mediawiki", endpoint: "https://de.wiktionary.org/w/api.php" });
    assert.deepEqual(await wiktionary.search("Wort", { topk: 1, langs: ["fr"] }), [], "de. host means German");
  });

  it("turns a MediaWiki error answer (status 200) and a wrong API path into errors", async () => {
    const provider = new OnlineSearchProvider({ kind: "mediawiki", endpoint: wiki.apiUrl });
    wiki.lagged = true;
    const lagged = await failure(provider.search("rat", { topk: 1 }));
    wiki.lagged = false;
    assert.equal(lagged.failure, "http");
    assert.match(lagged.message, /API error maxlag: Waiting for a database server/);
    const wrongPath = new OnlineSearchProvider({ kind: "mediawiki", endpoint: `${wiki.origin}/api.php` });
    const error = await failure(wrongPath.search("rat", { topk: 1 }));
    assert.equal(error.failure, "http");
    assert.match(error.message, /HTTP 404/);
  });
});

describe("online tier: the JSONL result cache", () => {
  let searx: SearxngServer;
  before(async () => {
    searx = await SearxngServer.start(WEB);
  });
  after(() => searx.close());

  it("persists results so a new provider answers a repeat query without a request", async () => {
    const file = join(await mkdtemp(join(tmpdir(), "glossa-online-")), "cache", "online.jsonl");
    const first = await JsonlLruCache.open<CachedOnlineResult>(file, { maxEntries: 100, ttlMs: 3_600_000 });
    assert.deepEqual(first.report, { file, loaded: 0, expired: 0, malformed: 0 });
    const a = new OnlineSearchProvider({ kind: "searxng", endpoint: searx.origin, cache: first.cache });
    const hits = await a.search("lying flat", { topk: 3 });
    await a.search("burnout", { topk: 3 });
    await first.cache.flush();
    await appendFile(file, '{"key": "torn line\n\n{"key": "x", "value": 1}\n');

    const second = await JsonlLruCache.open<CachedOnlineResult>(file, { maxEntries: 100, ttlMs: 3_600_000 });
    assert.deepEqual(second.report, { file, loaded: 2, expired: 0, malformed: 2 });
    const b = new OnlineSearchProvider({ kind: "searxng", endpoint: searx.origin, cache: second.cache });
    const before = searx.requests.length;
    assert.deepEqual(await b.search("lying flat", { topk: 3 }), hits);
    assert.equal(searx.requests.length, before);
    assert.equal(b.requests, 0);

    const later = await JsonlLruCache.open<CachedOnlineResult>(file, {
      maxEntries: 100,
      ttlMs: 3_600_000,
      now: () => Date.now() + 3_600_001,
    });
    assert.deepEqual(later.report, { file, loaded: 0, expired: 2, malformed: 2 });
  });

  it("keeps the file bounded by rewriting it with the live entries", async () => {
    const file = join(await mkdtemp(join(tmpdir(), "glossa-online-")), "online.jsonl");
    const { cache } = await JsonlLruCache.open<number>(file, { maxEntries: 3 });
    for (let i = 0; i < 20; i++) cache.set(`k${i}`, i);
    await cache.flush();
    const lines = (await readFile(file, "utf8")).trim().split("\n");
    assert.ok(lines.length <= 6, `${lines.length} lines`);
    const reopened = await JsonlLruCache.open<number>(file, { maxEntries: 3 });
    assert.deepEqual(
      [...reopened.cache.memory.entries()].map(([k, v]) => [k, v]),
      [
        ["k17", 17],
        ["k18", 18],
        ["k19", 19],
      ],
    );
  });

  it("refuses an unreadable cache file and reports a failed write on flush, keeping the entries in memory", async () => {
    const dir = await mkdtemp(join(tmpdir(), "glossa-online-"));
    await assert.rejects(JsonlLruCache.open(dir, { maxEntries: 3 }), /Cannot read the result cache .*EISDIR/);
    const { cache } = await JsonlLruCache.open<number>(join(dir, "sub", "online.jsonl"), { maxEntries: 3 });
    await writeFile(join(dir, "sub"), "a file where the cache folder should be");
    cache.set("b", 2);
    await assert.rejects(cache.flush(), /Cannot write the result cache/);
    assert.equal(cache.get("b"), 2);
  });
});

describe("online tier: failures become warnings beside the offline tiers", () => {
  let index: LexicalIndex;
  let searx: SearxngServer;
  before(async () => {
    index = (await loadIndex([{ path: DEMO_GLOSSARY, id: "demo" }])).index;
    searx = await SearxngServer.start(WEB);
  });
  after(() => searx.close());

  it("returns the offline hits and a warning when the endpoint is dead", async () => {
    const warnings: string[] = [];
    const online = new OnlineSearchProvider({ kind: "searxng", endpoint: `http://127.0.0.1:${await deadPort()}` });
    const retriever = new WithOnlineTier(index, online, { when: "always", onWarning: (m) => warnings.push(m) });
    const perSearch: string[] = [];
    const hits = await retriever.search("内卷", { topk: 3, onWarning: (m) => perSearch.push(m) });
    assert.equal(hits[0]?.headword, "内卷");
    assert.ok(hits.every((h) => !h.online));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /Online search .* failed: ECONNREFUSED/);
    // The same warning reaches whoever ran this search (the agent shows it in the panel).
    assert.deepEqual(perSearch, [`online search: ${warnings[0]}`]);
  });

  it("adds online hits after the offline ones, marked and tiered", async () => {
    const online = new OnlineSearchProvider({ kind: "searxng", endpoint: searx.origin });
    const always = new WithOnlineTier(index, online, { when: "always", onWarning: assert.fail });
    const hits = await always.search("rat race", { topk: 4 });
    assert.equal(hits.length, 4);
    assert.deepEqual(
      hits.map((h) => Boolean(h.online)),
      [false, false, true, true],
    );
    assert.deepEqual(
      hits.filter((h) => h.online).map((h) => h.tier),
      [3, 3],
    );
    const before = searx.requests.length;
    const fallback = new WithOnlineTier(index, online, { onWarning: assert.fail });
    const offlineOnly = await fallback.search("rat race", { topk: 2 });
    assert.ok(offlineOnly.every((h) => !h.online));
    assert.equal(searx.requests.length, before, "offline filled topk: no online request");
    const filled = await fallback.search("躺平", { topk: 50 });
    assert.ok(filled.some((h) => h.online) && filled.some((h) => !h.online));
  });

  it("still rejects a cancelled search instead of warning", async () => {
    searx.delayMs = 1000;
    const online = new OnlineSearchProvider({ kind: "searxng", endpoint: searx.origin });
    const retriever = new WithOnlineTier(index, online, { when: "always", onWarning: assert.fail });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(retriever.search("rat race", { topk: 3, signal: controller.signal }), { name: "AbortError" });
    searx.delayMs = 0;
  });
});
