import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../../support/paths";
import { type ScriptedCompletion, ScriptedOpenAIServer } from "../../support/scriptedServer";

/** Runs the CLI from its TypeScript source in a child process, as a user would run dist/cli.js. */
function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["-r", "tsx/cjs", join(ROOT, "extension", "cli", "main.ts"), ...args],
      { cwd: ROOT, env: { ...process.env, GLOSSA_ENDPOINT: "", GLOSSA_MODEL_PATH: "", ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("command line", function () {
  this.timeout(90_000);
  const server = new ScriptedOpenAIServer([]);
  let url: string;
  let dir: string;
  before(async () => {
    url = await server.start();
    dir = await mkdtemp(join(tmpdir(), "glossa-cli-"));
  });
  after(() => server.stop());

  it("translates the samples against an endpoint, one JSON trajectory per line", async () => {
    const scripts: ScriptedCompletion[] = [
      {
        when: { contains: "狗咬吕洞宾", turn: 1 },
        text: "<think>idiom</think><search>狗咬吕洞宾</search>",
        repeat: true,
      },
      { when: { turn: 2 }, text: "<translation>Don't bite the hand that helps you.</translation>", repeat: true },
      { when: { turn: 1 }, text: "<think>plain</think><translation>A plain translation.</translation>", repeat: true },
    ];
    server.setScripts(scripts);
    const { code, stdout, stderr } = await cli([
      "translate",
      "--samples",
      "--json",
      "--endpoint",
      url,
      "--model",
      "scripted",
    ]);
    assert.equal(code, 0, stderr);
    const lines = stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { translation: string; searches: number });
    assert.equal(lines.length, 6);
    assert.equal(lines[0]?.translation, "Don't bite the hand that helps you.");
    assert.equal(lines[0]?.searches, 1);
    assert.ok(lines.slice(1).every((t) => t.translation === "A plain translation." && t.searches === 0));
  });

  it("says in one line that no model is available, and how to point at one", async () => {
    const { code, stdout, stderr } = await cli(["translate", "--samples"], {
      GLOSSA_HOME: dir,
      GLOSSA_HUB_URL: "http://127.0.0.1:1",
    });
    assert.equal(code, 2);
    assert.equal(stdout, "");
    const lines = stderr.trim().split("\n");
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0] ?? "", /GLOSSA_MODEL_PATH/);
    assert.match(lines[0] ?? "", /GLOSSA_ENDPOINT/);
  });

  it("stops at once when the endpoint is dead", async () => {
    const dead = new ScriptedOpenAIServer([]);
    const deadUrl = await dead.start();
    await dead.stop();
    const { code, stderr } = await cli(["translate", "--samples", "--endpoint", deadUrl]);
    assert.equal(code, 1);
    assert.match(stderr, /Cannot reach the policy endpoint/);
  });

  it("imports a glossary with a report and searches it", async () => {
    const tsv = join(dir, "terms.tsv");
    await writeFile(tsv, "en\tde\nrat race\tHamsterrad\nbroken-line\nburnout\tBurn-out\n");
    const out = join(dir, "terms.jsonl");
    const imported = await cli(["import", tsv, "--out", out]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /2 imported, 1 skipped, 1 malformed/);
    assert.match(imported.stdout, /terms\.tsv:3: expected a source and a target column/);
    assert.equal((await readFile(out, "utf8")).trim().split("\n").length, 2);
    const found = await cli(["search", "rat race", "--glossary", out, "--no-demo-glossary", "--json"]);
    assert.equal(found.code, 0, found.stderr);
    const hits = JSON.parse(found.stdout) as Array<{ headword: string; gloss: string; match: string }>;
    assert.deepEqual([hits[0]?.headword, hits[0]?.gloss, hits[0]?.match], ["rat race", "Hamsterrad", "exact"]);
  });

  it("rejects bad usage with exit code 2", async () => {
    const { code, stderr } = await cli(["translate", "x", "--mode", "sometimes"]);
    assert.equal(code, 2);
    assert.match(stderr, /--mode must be one of selective, always, never/);
  });
});
