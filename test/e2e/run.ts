/**
 * End-to-end test in a real VS Code (code-server 4.100.3 = VS Code 1.100.3) driven by Debian chromium
 * through playwright-core. A translator's path: open a file, select a sentence, run
 * "Glossa: Translate Selection" from the command palette, watch the steps and the evidence arrive in
 * the panel, click Accept, and find the translation in the editor (one Ctrl+Z undoes it) and the
 * decision in the feedback log. The policy is the scripted OpenAI-compatible server on 127.0.0.1.
 *
 *   node dist/e2e.js            (after `source $GLOSSA_E2E_DIR/env.sh`; see scripts/test.sh)
 * Environment: VSCODE_E2E_CODE_SERVER, VSCODE_E2E_PLAYWRIGHT_CORE, VSCODE_E2E_CHROMIUM,
 * GLOSSA_E2E_EXTENSION (a .vsix or the built extension folder; default: the .vsix if present),
 * GLOSSA_E2E_SHOTS (screenshot folder, default test-results/).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { IndexStore } from "../../extension/core/retrieval/indexStore";
import { type ScriptedCompletion, ScriptedOpenAIServer } from "../support/scriptedServer";
import { SearxngServer } from "../support/searchBackends";

interface Locator {
  waitFor(options?: { timeout?: number; state?: string }): Promise<void>;
  click(options?: { timeout?: number }): Promise<void>;
  fill(text: string): Promise<void>;
  first(): Locator;
  count(): Promise<number>;
  textContent(): Promise<string | null>;
  allTextContents(): Promise<string[]>;
  evaluate<R>(fn: string | ((el: Element & { value?: string }) => R)): Promise<R>;
  locator(selector: string, options?: { hasText?: string }): Locator;
}
interface FrameLocator {
  locator(selector: string, options?: { hasText?: string; has?: Locator }): Locator;
  frameLocator(selector: string): FrameLocator;
}
interface Page {
  goto(url: string): Promise<unknown>;
  locator(selector: string, options?: { hasText?: string }): Locator;
  frameLocator(selector: string): FrameLocator;
  keyboard: { press(key: string): Promise<void> };
  waitForFunction(fn: string, arg?: unknown, options?: { timeout?: number }): Promise<unknown>;
  screenshot(options: { path: string }): Promise<unknown>;
  on(event: string, handler: (arg: { message?: string; text?: () => string }) => void): void;
}
interface Browser {
  newContext(options: { viewport: { width: number; height: number } }): Promise<{ newPage(): Promise<Page> }>;
  close(): Promise<void>;
}

const ROOT = resolve(__dirname, "..");
const SOURCE = "你别狗咬吕洞宾，不识好人心，我是真心帮你的。";
/** The sentence encoder the suite builds (scripts/build-tiny-models.sh): random weights, real ONNX. */
const TINY_ENCODER = join(ROOT, "build", "tiny-models", "glossa-tiny-bert");
const TRANSLATION = "Don't bite the hand that's trying to help you — I really mean well.";
const SCRIPTS: ScriptedCompletion[] = [
  {
    when: { turn: 1 },
    repeat: true,
    delayMs: 15,
    text: "<think>「狗咬吕洞宾」 looks like a fixed idiom; a literal rendering would confuse readers, so I should check its meaning.</think>\n<search>狗咬吕洞宾</search>",
  },
  {
    when: { turn: 2 },
    repeat: true,
    delayMs: 15,
    text: `<think>The dictionary says it means repaying kindness with ill will.</think>\n<translation>\n${TRANSLATION}\n</translation>`,
  },
];

const t0 = Date.now();
const log = (...parts: unknown[]) => console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...parts);
let failures = 0;
let passes = 0;
function check(name: string, ok: boolean, detail = ""): void {
  console.log(`${ok ? "PASS" : "FAIL"} ${name}${detail ? ` — ${detail}` : ""}`);
  if (ok) passes++;
  else failures++;
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run \`source $GLOSSA_E2E_DIR/env.sh\` (scripts/test.sh does this)`);
  return value;
}

async function startCodeServer(
  codeServer: string,
  dirs: { ext: string; user: string },
): Promise<{ url: string; proc: ChildProcess; logText: () => string }> {
  const proc = spawn(
    codeServer,
    [
      "--config",
      "/dev/null",
      "--bind-addr",
      "127.0.0.1:0",
      "--auth",
      "none",
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--disable-getting-started-override",
      "--extensions-dir",
      dirs.ext,
      "--user-data-dir",
      dirs.user,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  proc.stdout?.on("data", (d) => (output += String(d)));
  proc.stderr?.on("data", (d) => (output += String(d)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const m = /HTTP server listening on (http:\/\/[^\s]+?)\/?\s*$/m.exec(output);
    if (m?.[1]) {
      const url = m[1];
      try {
        const res = await fetch(`${url}/healthz`);
        if (res.ok) return { url, proc, logText: () => output };
      } catch {
        // not up yet
      }
    }
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`code-server did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The extension logs its activation time to its output channel, which VS Code writes under the user-data dir. */
function glossaLog(userDir: string): string {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
    );
  const logs = existsSync(join(userDir, "logs"))
    ? walk(join(userDir, "logs")).filter((f) => f.endsWith("Glossa.log"))
    : [];
  return logs.map((f) => readFileSync(f, "utf8")).join("\n");
}

function activationMs(log: string): number | null {
  const m = /activated in ([\d.]+) ms/.exec(log);
  return m?.[1] ? Number(m[1]) : null;
}

async function main(): Promise<void> {
  const codeServer = env("VSCODE_E2E_CODE_SERVER");
  const playwright = createRequire(`${env("VSCODE_E2E_PLAYWRIGHT_CORE")}/`)("./index.js") as {
    chromium: { launch(options: { executablePath: string; args: string[] }): Promise<Browser> };
  };
  const shots = resolve(process.env.GLOSSA_E2E_SHOTS ?? join(ROOT, "test-results"));
  mkdirSync(shots, { recursive: true });

  const server = new ScriptedOpenAIServer(SCRIPTS);
  const endpoint = await server.start();
  // The online tier, on every search, against a real HTTP server that speaks SearxNG's JSON API.
  const web = await SearxngServer.start([
    {
      title: "狗咬吕洞宾 — Chinese xiehouyu",
      url: "https://example.org/xiehouyu/gouyao",
      content: "狗咬吕洞宾，不识好人心: to mistake a good person&#39;s kindness for malice",
    },
  ]);
  const run = mkdtempSync(join(tmpdir(), "glossa-e2e-"));
  const dirs = { ext: join(run, "extensions"), user: join(run, "user"), ws: join(run, "workspace") };
  for (const d of [dirs.ext, join(dirs.user, "User"), dirs.ws]) mkdirSync(d, { recursive: true });
  const feedbackFile = join(run, "feedback.jsonl");
  const indexDir = join(run, "index");
  writeFileSync(join(dirs.ws, "letter.md"), `# 给小王的信\n\n${SOURCE}\n\n下周见。\n`);
  writeFileSync(
    join(dirs.user, "User", "settings.json"),
    JSON.stringify({
      "workbench.startupEditor": "none",
      "workbench.tips.enabled": false,
      "telemetry.telemetryLevel": "off",
      "update.mode": "none",
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      "extensions.ignoreRecommendations": true,
      "security.workspace.trust.enabled": false,
      "git.enabled": false,
      "window.restoreWindows": "none",
      "chat.disableAIFeatures": true,
      "glossa.policy.backend": "openai",
      "glossa.policy.endpoint": endpoint,
      "glossa.policy.model": "scripted",
      "glossa.feedback.file": feedbackFile,
      // Dense search with the suite's tiny encoder: its index is built in the background after the first
      // search, and the second run below must search it.
      "glossa.retrieval.encoderPath": TINY_ENCODER,
      "glossa.retrieval.indexFolder": indexDir,
      "glossa.retrieval.online.provider": "searxng",
      "glossa.retrieval.online.endpoint": web.origin,
      "glossa.retrieval.online.when": "always",
    }),
  );

  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    publisher: string;
    name: string;
    version: string;
  };
  const vsix = join(ROOT, "glossa-linux-x64.vsix");
  const extension = process.env.GLOSSA_E2E_EXTENSION ?? (existsSync(vsix) ? vsix : ROOT);
  if (extension.endsWith(".vsix")) {
    execFileSync(
      codeServer,
      [
        "--config",
        "/dev/null",
        "--extensions-dir",
        dirs.ext,
        "--user-data-dir",
        dirs.user,
        "--install-extension",
        extension,
      ],
      { stdio: "pipe" },
    );
    log(`installed ${extension}`);
  } else {
    symlinkSync(extension, join(dirs.ext, `${manifest.publisher}.${manifest.name}-${manifest.version}`));
    log(`linked ${extension}`);
  }

  // The index folder holds an index of the demo glossary whose records file has a flipped byte: the first
  // translation must offer to rebuild it, not fail or crash the extension host.
  const demoGlossary = join(
    dirs.ext,
    `${manifest.publisher}.${manifest.name}-${manifest.version}`,
    "media",
    "glossary",
    "cc-cedict-idioms-neologisms.u8",
  );
  await new IndexStore(indexDir).update([{ path: demoGlossary, id: "demo-cc-cedict" }], { prune: true });
  const records = join(indexDir, readFileSync(join(indexDir, "CURRENT"), "utf8").trim(), "records.utf8");
  const bytes = readFileSync(records);
  const flipped = Math.floor(bytes.length / 2);
  bytes[flipped] = (bytes[flipped] ?? 0) ^ 0xff;
  writeFileSync(records, bytes);

  const cs = await startCodeServer(codeServer, dirs);
  log(`code-server at ${cs.url}`);
  const browser = await playwright.chromium.launch({
    executablePath: process.env.VSCODE_E2E_CHROMIUM ?? "/usr/bin/chromium",
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
  let page: Page | undefined;
  try {
    const context = await browser.newContext({ viewport: { width: 1500, height: 900 } });
    page = await context.newPage();
    page.on("pageerror", (e) => log("pageerror:", e.message));
    await page.goto(`${cs.url}/?folder=${encodeURIComponent(dirs.ws)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
    await page
      .locator(".explorer-folders-view .monaco-list-row", { hasText: "letter.md" })
      .waitFor({ timeout: 60_000 });
    log("workbench ready");

    const status = page.locator(".statusbar-item", { hasText: "zh → en" });
    await status.first().waitFor({ timeout: 60_000 });
    check("status bar shows the language pair", true);

    const quickInput = page.locator(".quick-input-widget input");
    await page.keyboard.press("Control+P");
    await quickInput.waitFor();
    await quickInput.fill("letter.md");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "letter.md" }).first().waitFor();
    await page.keyboard.press("Enter");
    const lines = page.locator(".editor-instance .monaco-editor .view-lines").first();
    await lines.waitFor();
    await page.waitForFunction(
      `(document.querySelector('.editor-instance .monaco-editor .view-lines')?.textContent || '').includes(${JSON.stringify(SOURCE.slice(0, 6))})`,
    );
    const workbench = page;
    // Selects the sentence: line 3 (Ctrl+G goes to a line), Home, Shift+End.
    const selectSentence = async () => {
      await lines.click();
      await workbench.keyboard.press("Control+G");
      await quickInput.waitFor();
      await quickInput.fill(":3");
      await workbench.keyboard.press("Enter");
      await workbench.keyboard.press("Home");
      await workbench.keyboard.press("Shift+End");
    };
    await selectSentence();
    log("sentence selected");

    await page.keyboard.press("F1");
    await quickInput.waitFor();
    await quickInput.fill(">Glossa: Translate Selection");
    await page
      .locator(".quick-input-list .monaco-list-row", { hasText: "Glossa: Translate Selection" })
      .first()
      .waitFor();
    const commandAt = Date.now();
    await page.keyboard.press("Enter");

    const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "cannot be used" }).first();
    await toast.waitFor({ timeout: 60_000 });
    const toastText = (await toast.textContent()) ?? "";
    check(
      "a corrupt index is reported with an offer to rebuild it",
      /records\.utf8 fails its checksum/.test(toastText) && /Rebuild index/.test(toastText),
      toastText.slice(0, 200),
    );
    await page.screenshot({ path: join(shots, "e2e-corrupt-index.png") });
    await toast.locator(".monaco-button", { hasText: "Rebuild index" }).first().click();
    log(`rebuild chosen ${Date.now() - commandAt} ms after the command`);
    // From here on the run is what a first translation in a fresh profile is: the index is built, the panel boots.
    const rebuildAt = Date.now();

    const panel = page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
    await panel.locator(".step-think").first().waitFor({ timeout: 60_000 });
    const firstStepMs = Date.now() - rebuildAt;
    log(`first step shown ${firstStepMs} ms after the rebuild was chosen`);
    await panel.locator(".step-search", { hasText: "狗咬吕洞宾" }).first().waitFor({ timeout: 30_000 });
    check("the search query is shown", true);
    const evidence = panel.locator(".evidence-row", { hasText: "狗咬吕洞宾，不识好人心" }).first();
    await evidence.waitFor({ timeout: 30_000 });
    const evidenceText = (await evidence.textContent()) ?? "";
    check(
      "the evidence shows headword, gloss and source",
      /ill reward a person's kindness/.test(evidenceText) && /demo-cc-cedict/.test(evidenceText),
      evidenceText,
    );
    const online = panel.locator(".evidence-row", { has: panel.locator(".corpus .online") }).first();
    await online.waitFor({ timeout: 30_000 });
    const onlineText = (await online.textContent()) ?? "";
    check(
      "results of the online tier are shown and marked online",
      /mistake a good person's kindness for malice/.test(onlineText) &&
        web.requests.some((r) => r.includes("format=json")),
      onlineText,
    );
    const translation = panel.locator("#translation");
    // The translation field is inside two nested iframes: poll it through the frame locator.
    const deadline = Date.now() + 30_000;
    let shown = "";
    while (Date.now() < deadline) {
      shown = ((await translation.evaluate((el) => el.value ?? el.textContent ?? "")) as string).trim();
      if (shown === TRANSLATION) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    check("the translation streams into the panel", shown === TRANSLATION, shown);
    const allShownMs = Date.now() - rebuildAt;
    await page.screenshot({ path: join(shots, "e2e-panel.png") });

    await panel.locator("#btn-accept").click();
    await page.waitForFunction(
      `(document.querySelector('.editor-instance .monaco-editor .view-lines')?.textContent || '').replace(/\\u00a0/g, ' ').includes(${JSON.stringify(TRANSLATION.slice(0, 12))})`,
      undefined,
      { timeout: 20_000 },
    );
    // The editor's DOM holds only the visible, wrapped lines in no fixed order: save and read the file instead.
    const letter = join(dirs.ws, "letter.md");
    const saved = async (what: (text: string) => boolean) => {
      await lines.click();
      await workbench.keyboard.press("Control+S");
      const until = Date.now() + 10_000;
      let text = readFileSync(letter, "utf8");
      while (!what(text) && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100));
        text = readFileSync(letter, "utf8");
      }
      return text;
    };
    const afterAccept = await saved((t) => t.includes(TRANSLATION));
    check(
      "Accept replaces the selection in the file",
      afterAccept === `# 给小王的信\n\n${TRANSLATION}\n\n下周见。\n`,
      JSON.stringify(afterAccept),
    );

    const recordDeadline = Date.now() + 10_000;
    while (!existsSync(feedbackFile) && Date.now() < recordDeadline) await new Promise((r) => setTimeout(r, 100));
    const records = existsSync(feedbackFile)
      ? readFileSync(feedbackFile, "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as Record<string, unknown>)
      : [];
    const record = records[0] as
      | {
          schema: string;
          decision: string;
          finalText: string;
          source: string;
          location: { file: string; startLine: number };
          trajectory: { searches: number; steps: Array<{ kind: string }>; raw: string };
        }
      | undefined;
    check("one feedback record was appended", records.length === 1, `${records.length} record(s)`);
    check(
      "the record says accepted, with the final text and location",
      record?.decision === "accepted" &&
        record.finalText === TRANSLATION &&
        record.source === SOURCE &&
        record.location.file === "letter.md" &&
        record.location.startLine === 2,
      JSON.stringify(record && { d: record.decision, f: record.finalText, l: record.location }),
    );
    check(
      "the record holds the full trajectory",
      record?.schema === "glossa.feedback/1" &&
        record.trajectory.searches === 1 &&
        record.trajectory.steps.some((s) => s.kind === "information") &&
        record.trajectory.raw.includes("<information>"),
    );

    // One Ctrl+Z restores the source: the replacement was a single edit.
    await lines.click();
    await page.keyboard.press("Control+Z");
    const afterUndo = await saved((t) => t.includes(SOURCE));
    check(
      "one Ctrl+Z undoes the insert",
      afterUndo === `# 给小王的信\n\n${SOURCE}\n\n下周见。\n`,
      JSON.stringify(afterUndo),
    );
    check(
      "the policy server saw two turns with the evidence",
      server.requests.length === 2 && /<information>/.test(JSON.stringify(server.requests[1]?.body.messages)),
    );
    await page.screenshot({ path: join(shots, "e2e-after-undo.png") });

    // The dense index is built in a worker while the editor stays usable; the extension logs the result.
    const denseDeadline = Date.now() + 180_000;
    let denseLine = "";
    while (!denseLine && Date.now() < denseDeadline) {
      denseLine = /dense index (built|build stopped)[^\n]*/.exec(glossaLog(dirs.user))?.[0] ?? "";
      if (!denseLine) await new Promise((r) => setTimeout(r, 250));
    }
    check("the dense index is built in the background", /^dense index built: \d+ vectors/.test(denseLine), denseLine);

    // A second translation of the same sentence, started with the keybinding, rejected this time: the
    // index and the panel exist now, so this also measures a warm start.
    await selectSentence();
    const panelStatus = panel.locator("#status");
    const secondAt = Date.now();
    await page.keyboard.press("Control+Alt+T");
    const until = Date.now() + 30_000;
    while (((await panelStatus.textContent()) ?? "").startsWith("Done") && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await panel.locator(".step-think").first().waitFor({ timeout: 30_000 });
    const warmFirstStepMs = Date.now() - secondAt;
    log(`second run: first step shown ${warmFirstStepMs} ms after the keybinding`);
    while (server.requests.length < 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    check("the keybinding starts a translation", server.requests.length === 4, `${server.requests.length} requests`);
    const denseRow = panel.locator(".evidence-row .match", { hasText: "dense" }).first();
    const denseShown = await denseRow.waitFor({ timeout: 30_000 }).then(
      () => true,
      () => false,
    );
    const matches = await panel.locator(".evidence-row .match").allTextContents();
    check(
      "the second search fuses lexical and dense results, and says which engine found each",
      denseShown && matches.some((m) => /exact|normalized|fuzzy|contained|bm25/.test(m)),
      matches.join(" | "),
    );
    await page.screenshot({ path: join(shots, "e2e-hybrid.png") });
    await panel.locator("#btn-reject:not([disabled])").waitFor({ timeout: 30_000 });
    await panel.locator("#btn-reject").click();
    const rejectDeadline = Date.now() + 10_000;
    let decisions: string[] = [];
    while (Date.now() < rejectDeadline) {
      decisions = readFileSync(feedbackFile, "utf8")
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { decision: string }).decision);
      if (decisions.length === 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    check(
      "Reject appends a second record and leaves the text alone",
      decisions.join(",") === "accepted,rejected" && readFileSync(letter, "utf8").includes(SOURCE),
      decisions.join(","),
    );
    const extensionLog = glossaLog(dirs.user);
    writeFileSync(join(shots, "e2e-glossa.log"), extensionLog);
    const activation = activationMs(extensionLog);
    check("the extension logged its activation time", activation !== null, `${activation} ms`);
    writeFileSync(
      join(shots, "e2e-timings.json"),
      JSON.stringify(
        {
          activationMs: activation,
          commandToFirstStepMs: firstStepMs,
          commandToTranslationMs: allShownMs,
          warmCommandToFirstStepMs: warmFirstStepMs,
        },
        null,
        2,
      ),
    );
  } catch (e) {
    failures++;
    console.log("FAIL", (e as Error).stack ?? e);
    if (page) await page.screenshot({ path: join(shots, "e2e-failure.png") }).catch(() => {});
    console.log(cs.logText().slice(-3000));
  } finally {
    await browser.close();
    cs.proc.kill();
    await server.stop();
    await web.close();
    rmSync(run, { recursive: true, force: true });
  }
  console.log(`e2e: ${passes} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
