/**
 * The translation panel in a real browser: the real TranslationPanel (with a stand-in for the
 * `vscode` module) produces the page, the real webview bundle renders it, and Chromium runs it
 * under the panel's Content-Security-Policy. Messages travel between the two as they would
 * between the extension host and a webview.
 */
import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize, relative, sep } from "node:path";
import type { AgentEvent, Trajectory } from "../../../extension/core/agent/types";
import type { SearchHit } from "../../../extension/core/retrieval/types";
import type { TranslationPanel as PanelClass, PanelDecision, RunInfo } from "../../../extension/host/panel";
import type { WebviewMessage } from "../../../webview/protocol";

const ROOT = join(__dirname, "..", "..", "..");
const PLAYWRIGHT =
  process.env.VSCODE_E2E_PLAYWRIGHT_CORE || "/root/.cache/glossa-e2e/playwright/node_modules/playwright-core";
const CHROMIUM = "/usr/bin/chromium";
const RESULTS = join(ROOT, "test-results");
/** Where the test's HTTP server listens, e.g. http://127.0.0.1:40123. */
let origin = "";

// ---------------------------------------------------------------------------------------------
// the parts of playwright-core this test uses

interface Locator {
  click(): Promise<void>;
  fill(value: string): Promise<void>;
  focus(): Promise<void>;
  textContent(): Promise<string | null>;
  allTextContents(): Promise<string[]>;
  count(): Promise<number>;
  getAttribute(name: string): Promise<string | null>;
  isVisible(): Promise<boolean>;
  first(): Locator;
  nth(index: number): Locator;
}

interface Page {
  goto(url: string): Promise<unknown>;
  reload(): Promise<unknown>;
  on(event: "console", handler: (message: { type(): string; text(): string }) => void): void;
  on(event: "pageerror", handler: (error: Error) => void): void;
  on(event: "request", handler: (request: { url(): string }) => void): void;
  addInitScript(script: { content: string }): Promise<void>;
  exposeFunction(name: string, fn: (arg: unknown) => void): Promise<void>;
  evaluate<R, A>(fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>;
  waitForFunction<A>(fn: (arg: A) => unknown, arg: A, options?: { timeout?: number }): Promise<unknown>;
  locator(selector: string): Locator;
  keyboard: { press(key: string): Promise<void> };
  screenshot(options: { path: string; fullPage?: boolean }): Promise<unknown>;
}

interface Browser {
  newPage(options: { viewport: { width: number; height: number }; deviceScaleFactor?: number }): Promise<Page>;
  close(): Promise<void>;
}

interface PlaywrightCore {
  chromium: { launch(options: { executablePath: string; headless: boolean; args: string[] }): Promise<Browser> };
}

// ---------------------------------------------------------------------------------------------
// a stand-in for the `vscode` module, just what TranslationPanel touches

type Listener<T> = (e: T) => unknown;

class FakeEventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  readonly event = (listener: Listener<T>) => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

interface FakeUri {
  fsPath: string;
  path: string;
  scheme: string;
  toString(): string;
}

const fileUri = (p: string): FakeUri => ({ fsPath: p, path: p, scheme: "file", toString: () => `file://${p}` });

class FakeWebview {
  html = "";
  /** Pages are served from the test's HTTP server, so that is the origin the CSP allows. */
  readonly cspSource = origin;
  /** Delivers a host message into the page; set once the page exists. */
  deliver: (message: unknown) => Promise<void> = async () => {};
  readonly posted: unknown[] = [];
  readonly received = new FakeEventEmitter<unknown>();
  readonly onDidReceiveMessage = this.received.event;
  private chain: Promise<void> = Promise.resolve();
  readonly deliveryErrors: string[] = [];

  asWebviewUri(uri: FakeUri): { toString(): string } {
    const rel = relative(ROOT, uri.fsPath).split(sep).join("/");
    return { toString: () => `${this.cspSource}/${rel}` };
  }

  postMessage(message: unknown): Promise<boolean> {
    this.posted.push(message);
    this.chain = this.chain.then(() =>
      this.deliver(message).catch((e: unknown) => {
        this.deliveryErrors.push(String(e));
      }),
    );
    return Promise.resolve(true);
  }

  /** Resolves once every message posted so far has reached the page. */
  settled(): Promise<void> {
    return this.chain;
  }
}

class FakePanel {
  readonly webview = new FakeWebview();
  private readonly disposed = new FakeEventEmitter<void>();
  readonly onDidDispose = this.disposed.event;
  title = "";
  reveals = 0;
  constructor(
    readonly viewType: string,
    readonly showOptions: unknown,
    readonly options: { localResourceRoots?: FakeUri[]; retainContextWhenHidden?: boolean; enableScripts?: boolean },
  ) {}
  reveal(): void {
    this.reveals += 1;
  }
  dispose(): void {
    this.disposed.fire();
  }
}

const created: FakePanel[] = [];

const fakeVscode = {
  EventEmitter: FakeEventEmitter,
  ViewColumn: { Active: -1, Beside: -2, One: 1, Two: 2 },
  Uri: {
    file: fileUri,
    joinPath: (base: FakeUri, ...segments: string[]) => fileUri(join(base.fsPath, ...segments)),
  },
  window: {
    createWebviewPanel(
      viewType: string,
      title: string,
      showOptions: unknown,
      options: ConstructorParameters<typeof FakePanel>[2],
    ): FakePanel {
      const panel = new FakePanel(viewType, showOptions, options);
      panel.title = title;
      created.push(panel);
      return panel;
    },
  },
};

type ModuleLoad = (request: string, parent: unknown, isMain: boolean) => unknown;

function installFakeVscode(): () => void {
  const Module = require("node:module") as { _load: ModuleLoad };
  const original = Module._load;
  Module._load = function (this: unknown, request, parent, isMain) {
    if (request === "vscode") return fakeVscode;
    return original.call(this, request, parent, isMain);
  };
  return () => {
    Module._load = original;
  };
}

// ---------------------------------------------------------------------------------------------
// a realistic run

const SOURCE = "你真是狗咬吕洞宾，不识好人心。";
const XSS = "<img src=x onerror=alert(1)>";
const HITS: SearchHit[] = [
  {
    id: "cedict:狗咬吕洞宾",
    headword: "狗咬吕洞宾",
    gloss: "lit. the dog bit Lü Dongbin (one of the Eight Immortals); fig. to mistake a kind person for a villain",
    score: 0.97314,
    lang: "zh",
    source: "cedict",
    match: "exact",
    tier: 0,
  },
  {
    id: "xiehouyu:118",
    headword: "狗咬吕洞宾，不识好人心",
    gloss: `to bite the hand that feeds you ${XSS}`,
    score: 12.34567,
    lang: "zh",
    source: "xiehouyu",
    match: "bm25",
    tier: 1,
  },
  {
    id: "idioms:7",
    headword: "好心当作驴肝肺",
    gloss: "to take a kind heart for ill will",
    score: 0.03252,
    lang: "zh",
    source: "idioms",
    match: "hybrid",
    tags: ["idiom", "xiehouyu"],
    online: true,
    reasons: [
      { kind: "bm25", score: 7.25, rank: 2 },
      { kind: "dense", score: 0.8123, rank: 1 },
    ],
    tier: 1,
  },
];
const TRANSLATION = "You're biting the hand that feeds you — you can't tell who's on your side.";
const THINK_1 =
  "The sentence uses the xiehouyu 狗咬吕洞宾，不识好人心. A literal rendering would lose the point; " +
  "I should check how glossaries render it before choosing an English idiom.";
const THINK_2 = "The evidence confirms the figurative sense: mistaking a kind person for an enemy.";

function trajectory(runId: string, overrides: Partial<Trajectory> = {}): Trajectory {
  return {
    schema: "glossa.trajectory/1",
    request: {
      text: SOURCE,
      sourceLang: "zh",
      targetLang: "en",
      mode: "selective",
      style: "neoamt",
      limits: { maxTurns: 3, maxSearches: 3, maxOutputTokens: 2048, topk: 5 },
    },
    policyId: `openai:http://127.0.0.1:8000/v1#qwen2.5-7b-srat (${runId})`,
    corpusIds: ["cedict", "xiehouyu"],
    raw: `<think>${THINK_1}</think>\n<search>狗咬吕洞宾</search>\n<information>…</information>\n<think>${THINK_2}</think>\n<translation>${TRANSLATION}</translation>`,
    steps: [],
    translation: TRANSLATION,
    searches: 1,
    turns: 2,
    completionTokens: 118,
    promptTokens: 642,
    timings: { startedAt: "2025-01-01T00:00:00.000Z", firstEventMs: 80, totalMs: 2350, retrievalMs: 38 },
    warnings: [],
    ...overrides,
  };
}

function runInfo(runId: string): RunInfo {
  return {
    runId,
    source: SOURCE,
    sourceLang: "zh",
    targetLang: "en",
    mode: "selective",
    policyId: "openai:http://127.0.0.1:8000/v1#qwen2.5-7b-srat",
  };
}

/** Splits text into token-sized pieces. */
function pieces(text: string, size = 3): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------

const CONTENT_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
};

describe("translation panel in Chromium", function () {
  this.timeout(180_000);

  let restoreVscode: (() => void) | undefined;
  let server: Server | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let panel: PanelClass;
  let fake: FakePanel;
  const logs: string[] = [];
  const decisions: PanelDecision[] = [];
  const cancels: string[] = [];
  const pageProblems: string[] = [];
  const requests: string[] = [];

  const settle = async () => {
    await sleep(40); // past the panel's 16 ms delta batching
    await fake.webview.settled();
  };
  const text = async (selector: string) => ((await page.locator(selector).first().textContent()) ?? "").trim();
  const value = (selector: string) =>
    page.evaluate((s) => (document.querySelector(s) as HTMLTextAreaElement | null)?.value ?? null, selector);
  const isDisabled = (selector: string) =>
    page.evaluate((s) => document.querySelector(s)?.hasAttribute("disabled") ?? null, selector);
  const postedByPage = () => page.evaluate(() => (window as unknown as { __posted: WebviewMessage[] }).__posted, null);
  const waitForText = (selector: string, pattern: string) =>
    page.waitForFunction(
      ([s, p]) => (document.querySelector(s)?.textContent ?? "").includes(p),
      [selector, pattern] as const,
      { timeout: 10_000 },
    );

  before(async function () {
    for (let waited = 0; !(existsSync(join(PLAYWRIGHT, "package.json")) && existsSync(CHROMIUM)); waited += 5) {
      if (waited >= 120) {
        console.warn(`    (skipped: ${PLAYWRIGHT} or ${CHROMIUM} is not installed)`);
        this.skip();
      }
      await sleep(5000);
    }

    execFileSync(process.execPath, [join(ROOT, "scripts", "build.mjs"), "--only", "webview"], {
      cwd: ROOT,
      stdio: "pipe",
    });

    // Serve the page the panel produced and what the webview may load (its localResourceRoots).
    let roots: string[] = [];
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      requests.push(url.pathname);
      if (url.pathname === "/") {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        res.end(fake.webview.html);
        return;
      }
      const file = normalize(join(ROOT, decodeURIComponent(url.pathname)));
      if (!roots.some((r) => file.startsWith(r)) || !existsSync(file)) {
        if (url.pathname !== "/favicon.ico") pageProblems.push(`not served: ${url.pathname}`);
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": CONTENT_TYPES[extname(file)] ?? "application/octet-stream" });
      res.end(readFileSync(file));
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    restoreVscode = installFakeVscode();
    const { TranslationPanel } =
      require("../../../extension/host/panel") as typeof import("../../../extension/host/panel");
    panel = TranslationPanel.show(fileUri(ROOT) as never, (msg) => logs.push(msg));
    const again = TranslationPanel.show(fileUri(ROOT) as never, (msg) => logs.push(msg));
    assert.equal(again, panel, "show() returns the open panel");
    assert.equal(created.length, 1);
    fake = created[0] as FakePanel;
    assert.equal(fake.reveals, 1);
    roots = (fake.options.localResourceRoots ?? []).map((u) => u.fsPath + sep);
    panel.onDecision((d) => decisions.push(d));
    panel.onCancel((runId) => cancels.push(runId));

    const playwright = require(PLAYWRIGHT) as PlaywrightCore;
    browser = await playwright.chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
    page = await browser.newPage({ viewport: { width: 640, height: 900 }, deviceScaleFactor: 1 });
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warning") pageProblems.push(`console.${m.type()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => pageProblems.push(`pageerror: ${e.message}`));
    page.on("request", (r) => {
      if (!r.url().startsWith(origin)) pageProblems.push(`request outside the page origin: ${r.url()}`);
    });
    await page.exposeFunction("__glossaPost", (message) => fake.webview.received.fire(message));
    await page.addInitScript({
      content: `
        window.__posted = [];
        window.__alerted = false;
        window.__csp = [];
        window.alert = () => { window.__alerted = true; };
        document.addEventListener("securitypolicyviolation", (e) => {
          window.__csp.push(e.violatedDirective + " " + e.blockedURI);
        });
        window.acquireVsCodeApi = () => ({
          postMessage: (m) => { window.__posted.push(JSON.parse(JSON.stringify(m))); window.__glossaPost(m); },
          getState: () => undefined,
          setState: () => undefined,
        });
      `,
    });
    fake.webview.deliver = async (message) => {
      await page.evaluate((m) => window.postMessage(m, "*"), message);
    };
    mkdirSync(RESULTS, { recursive: true });
    await page.goto(`${origin}/`);
  });

  after(async () => {
    panel?.dispose();
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    restoreVscode?.();
  });

  it("opens beside the editor with a strict Content-Security-Policy", () => {
    assert.equal(fake.viewType, "glossa.translation");
    assert.deepEqual(fake.showOptions, { viewColumn: -2, preserveFocus: true });
    assert.equal(fake.options.retainContextWhenHidden, true);
    assert.deepEqual(
      (fake.options.localResourceRoots ?? []).map((u) => relative(ROOT, u.fsPath)),
      [join("dist", "webview"), "media"],
    );
    const csp = /http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(fake.webview.html)?.[1] ?? "";
    assert.match(csp, /^default-src 'none'; script-src 'nonce-[A-Za-z0-9+/=]{20,}'; style-src \S+ 'nonce-/);
    const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
    assert.ok(nonce && fake.webview.html.includes(`<script nonce="${nonce}" src=`), "the script carries the nonce");
    assert.ok(!/<script(?![^>]*nonce=)/.test(fake.webview.html), "no script without the nonce");
  });

  it("posts ready on load, and the host replays a run started before the page loaded", async () => {
    panel.startRun(runInfo("run-1"));
    await waitForText("#source", SOURCE);
    const posted = await postedByPage();
    assert.deepEqual(posted[0], { type: "ready" });
    assert.equal(await text("#lang-pair"), "zh → en");
    assert.equal(await text("#mode"), "selective");
    assert.equal(fake.title, "Glossa: zh → en");
    assert.match(await text("#policy"), /qwen2\.5-7b-srat/);
    assert.equal(await page.locator("#btn-cancel").isVisible(), true);
  });

  it("renders reasoning, the search and its evidence, and the translation as they stream", async () => {
    const sent: AgentEvent[] = [];
    const push = (event: AgentEvent) => {
      sent.push(event);
      panel.pushEvent("run-1", event);
    };
    const before = fake.webview.posted.length;
    push({ type: "turn-start", turn: 1 });
    for (const p of pieces(THINK_1)) push({ type: "think-delta", text: p });
    await settle();
    assert.equal(await page.locator(".step-think").count(), 1);
    assert.equal(await text(".step-think .think-text"), THINK_1);
    assert.equal(await text("#status"), "Thinking…");
    await page.screenshot({ path: join(RESULTS, "panel-streaming.png"), fullPage: true });

    push({ type: "search", query: "狗咬吕洞宾", index: 0 });
    await settle();
    assert.equal(await page.locator(".step-search").count(), 1);
    assert.match(await text(".step-search .search-meta"), /searching/);
    assert.equal(await text("#status"), "Searching for “狗咬吕洞宾”…");

    push({
      type: "evidence",
      query: "狗咬吕洞宾",
      index: 0,
      hits: HITS,
      information: "(1) 狗咬吕洞宾: …",
      elapsedMs: 38.2,
    });
    push({ type: "turn-start", turn: 2 });
    for (const p of pieces(THINK_2)) push({ type: "think-delta", text: p });
    for (const p of pieces(TRANSLATION, 2)) {
      push({ type: "translation-delta", text: p });
      await sleep(1);
    }
    push({ type: "done", trajectory: trajectory("run-1") });
    await waitForText("#status", "Done");
    await settle();

    assert.equal(await page.locator(".step-think").count(), 2);
    assert.equal(await text(".step-search .search-meta"), "3 hits · 38 ms");
    assert.equal(await page.locator(".evidence-row").count(), 3);
    const row1 = await text(".evidence-row:nth-child(1)");
    for (const part of ["狗咬吕洞宾", "cedict", "exact", "0.973", "0"])
      assert.ok(row1.includes(part), `${part} in ${row1}`);
    const row2 = await text(".evidence-row:nth-child(2)");
    for (const part of ["xiehouyu", "bm25", "12.35", "1"]) assert.ok(row2.includes(part), `${part} in ${row2}`);
    assert.equal(await text(".evidence-row:nth-child(3) .headword"), "好心当作驴肝肺idiomxiehouyu");
    assert.deepEqual(await page.locator(".evidence-row:nth-child(3) .tag").allTextContents(), ["idiom", "xiehouyu"]);
    assert.equal(await text(".evidence-row:nth-child(3) .corpus .online"), "online");
    assert.equal(await page.locator(".evidence-row:nth-child(1) .online").count(), 0);
    // A fused result names each engine that found it, with their scores and ranks on hover.
    assert.equal(await text(".evidence-row:nth-child(3) .match"), "bm25 + dense");
    assert.equal(
      await page.locator(".evidence-row:nth-child(3) .match").getAttribute("title"),
      "bm25: score 7.250, rank 2\ndense: score 0.812, rank 1",
    );
    assert.equal(await value("#translation"), TRANSLATION);
    assert.match(await text("#status"), /^Done · 2\.4 s · 1 search · 2 turns · 118 tokens$/);
    assert.equal(await page.locator("#btn-cancel").isVisible(), false);
    for (const id of ["#btn-accept", "#btn-edit", "#btn-reject"]) assert.equal(await isDisabled(id), false, id);

    // Deltas were batched: far fewer messages than events, in the original order.
    const posted = fake.webview.posted.slice(before);
    assert.ok(posted.length < sent.length / 3, `${posted.length} messages for ${sent.length} events`);
    assert.equal(JSON.stringify(posted).includes(TRANSLATION.slice(0, 10)), true);
  });

  it("shows dictionary text literally, never as markup", async () => {
    assert.equal(await text(".evidence-row:nth-child(2) .gloss"), `to bite the hand that feeds you ${XSS}`);
    // (No named inner functions here: the test runner's compiler would wrap them in a helper the page lacks.)
    const found = await page.evaluate(() => {
      let imgs = 0;
      const roots: (Document | ShadowRoot)[] = [document];
      for (let root = roots.pop(); root; root = roots.pop()) {
        imgs += root.querySelectorAll("img").length;
        for (const e of Array.from(root.querySelectorAll("*"))) if (e.shadowRoot) roots.push(e.shadowRoot);
      }
      return { imgs, alerted: (window as unknown as { __alerted: boolean }).__alerted };
    }, null);
    assert.deepEqual(found, { imgs: 0, alerted: false });
  });

  it("rebuilds the same view when the webview reloads", async () => {
    await page.reload();
    await waitForText("#status", "Done");
    assert.equal(await page.locator(".step-think").count(), 2);
    assert.equal(await page.locator(".evidence-row").count(), 3);
    assert.equal(await value("#translation"), TRANSLATION);
    assert.equal(await text(".step-think .think-text"), THINK_1);
    await page.screenshot({ path: join(RESULTS, "panel.png"), fullPage: true });
  });

  it("Edit makes the translation editable and Accept edit sends the edited text", async () => {
    await page.locator("#btn-edit").click();
    assert.equal(await text("#btn-accept"), "Accept edit");
    assert.equal(await text("#btn-edit"), "Discard edit");
    const edited = "You're biting the hand that feeds you.";
    await page.locator("#translation textarea").fill(edited);
    await page.locator("#btn-accept").click();
    await settle();
    const posted = await postedByPage();
    assert.deepEqual(posted[posted.length - 1], { type: "edit-accept", runId: "run-1", text: edited });
    assert.deepEqual(decisions, [{ kind: "edit", runId: "run-1", text: edited }]);
    assert.equal(await isDisabled("#btn-reject"), true, "buttons wait for the host's answer");

    panel.decisionResult("run-1", true, "Saved your edit to the translation memory.");
    await waitForText("#decision-message", "Saved your edit");
    for (const id of ["#btn-accept", "#btn-edit", "#btn-reject"]) assert.equal(await isDisabled(id), true, id);
    assert.equal(await text("#btn-accept"), "Accept");
  });

  it("sends a 1–5 rating with a comment", async () => {
    assert.equal(await isDisabled("#btn-rate"), true, "nothing to send before a rating is chosen");
    await page.locator("#rating button[data-rating='4']").click();
    assert.equal(await page.locator("#rating button[data-rating='4']").getAttribute("aria-pressed"), "true");
    await page.locator("#rating-comment textarea").fill("Good idiom, slightly long.");
    await page.locator("#btn-rate").click();
    await settle();
    assert.deepEqual(decisions[1], { kind: "rate", runId: "run-1", rating: 4, comment: "Good idiom, slightly long." });
    panel.decisionResult("run-1", true, "Thanks — rating saved.");
    await waitForText("#rating-message", "rating saved");
    assert.equal(await isDisabled("#rating button[data-rating='5']"), true);
    assert.equal(await isDisabled("#btn-rate"), true);
    await page.screenshot({ path: join(RESULTS, "panel-decided.png"), fullPage: true });
  });

  it("cancels a running run and shows a typed error with the raw output", async () => {
    panel.startRun(runInfo("run-2"));
    panel.pushEvent("run-2", { type: "turn-start", turn: 1 });
    panel.pushEvent("run-2", { type: "think-delta", text: "Let me think about 好人心…" });
    await settle();
    assert.equal(await page.locator(".step-think").count(), 1, "the previous run is cleared");
    assert.equal(await value("#translation"), "");
    assert.equal(await isDisabled("#btn-accept"), true);
    await page.locator("#btn-cancel").click();
    await settle();
    assert.deepEqual(cancels, ["run-2"]);
    assert.equal(await text("#status"), "Cancelling…");

    panel.pushEvent("run-2", { type: "warning", code: "unclosed-think", message: "The reasoning was never closed." });
    const raw = "<think>Let me think about 好人心…";
    panel.pushEvent("run-2", {
      type: "error",
      code: "truncated",
      message: "The model stopped before writing <translation>.",
      trajectory: trajectory("run-2", { raw, translation: null, searches: 0, turns: 1 }),
    });
    await waitForText("#error-code", "truncated");
    assert.equal(await page.locator("#error").isVisible(), true);
    assert.equal(await text("#error-message"), "The model stopped before writing <translation>.");
    assert.equal(await text("#error-raw-text"), raw);
    assert.equal(await page.locator(".step-warning").count(), 1);
    assert.equal(await page.locator("#btn-cancel").isVisible(), false);
    assert.equal(await isDisabled("#btn-accept"), true, "nothing to accept");
    assert.equal(await isDisabled("#btn-reject"), false);
    await page.screenshot({ path: join(RESULTS, "panel-error.png"), fullPage: true });
  });

  it("Ctrl+Enter accepts the translation", async () => {
    panel.startRun(runInfo("run-3"));
    panel.pushEvent("run-3", { type: "translation-delta", text: TRANSLATION });
    panel.pushEvent("run-3", { type: "done", trajectory: trajectory("run-3", { searches: 0, turns: 1 }) });
    await waitForText("#status", "Done");
    assert.equal(await page.locator("#error").isVisible(), false);
    await page.locator("#btn-reject").focus();
    await page.keyboard.press("Control+Enter");
    await settle();
    assert.deepEqual(decisions[decisions.length - 1], { kind: "accept", runId: "run-3", text: TRANSLATION });
  });

  it("both sides log and ignore invalid messages", async () => {
    const before = decisions.length;
    await page.evaluate(() => {
      const post = (window as unknown as { __glossaPost: (m: unknown) => void }).__glossaPost;
      post({ type: "rate", runId: "run-3", rating: 9, comment: "" });
      post({ type: "reject", runId: "some-other-run" });
      window.postMessage({ type: "agent-event", runId: "run-3", event: { type: "html", html: "<b>x</b>" } }, "*");
    }, null);
    await sleep(200);
    assert.equal(decisions.length, before);
    assert.ok(
      logs.some((l) => /invalid message from the webview: rate\.rating/.test(l)),
      logs.join("\n"),
    );
    assert.ok(
      logs.some((l) => /ignored reject for run some-other-run/.test(l)),
      logs.join("\n"),
    );
    assert.ok(
      logs.some((l) => /webview warn.*unknown agent event type "html"/.test(l)),
      logs.join("\n"),
    );
  });

  it("runs without CSP violations, page errors or outside requests", async () => {
    const csp = await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp, null);
    assert.deepEqual(csp, []);
    const unexpected = pageProblems.filter(
      (p) => !p.includes("ignored a message") && !/Failed to load resource: .* 404/.test(p),
    );
    assert.deepEqual(unexpected, []);
    assert.deepEqual(fake.webview.deliveryErrors, []);
    assert.ok(requests.includes("/dist/webview/main.js") && requests.includes("/media/panel.css"), requests.join(" "));
  });
});
