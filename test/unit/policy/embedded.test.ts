import assert from "node:assert/strict";
import { existsSync, promises as fs, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { EmbeddedPolicy, IncrementalDecoder, StopScanner } from "../../../extension/core/policy/embedded";
import { ensureModel } from "../../../extension/core/policy/modelStore";
import type {
  ChatMessage,
  GenerateDelta,
  GenerateRequest,
  GenerateSummary,
} from "../../../extension/core/policy/types";
import { HubServer } from "../../support/hubServer";
import { expectPolicyError } from "../../support/policyErrors";

const TINY = path.resolve("build/tiny-models/glossa-tiny-qwen2");
const STOP = "</search>";

interface Example {
  messages: ChatMessage[];
  assistant: string;
  masked: [number, number][];
}
const examples = (
  JSON.parse(readFileSync(path.resolve("test/fixtures/embedded-trajectories.json"), "utf8")) as { examples: Example[] }
).examples;

interface Run {
  text: string;
  deltas: GenerateDelta[];
  summary: GenerateSummary;
}

async function run(policy: EmbeddedPolicy, request: GenerateRequest): Promise<Run> {
  const deltas: GenerateDelta[] = [];
  const stream = policy.stream(request);
  for (;;) {
    const next = await stream.next();
    if (next.done) return { text: deltas.map((d) => d.text).join(""), deltas, summary: next.value };
    deltas.push(next.value);
  }
}

function firstTurn(ex: Example, extra: Partial<GenerateRequest> = {}): GenerateRequest {
  return { messages: ex.messages, assistantPrefix: "", stop: [STOP], maxTokens: 512, ...extra };
}

describe("EmbeddedPolicy (tiny trained Qwen2, ONNX)", function () {
  this.timeout(30_000);
  let policy: EmbeddedPolicy;
  const searching = examples.find((ex) => ex.assistant.includes(STOP) && ex.masked.length > 0);
  const plain = examples.find((ex) => !ex.assistant.includes(STOP));

  before(async () => {
    if (!existsSync(path.join(TINY, "onnx/model.onnx"))) {
      throw new Error(`${TINY} is missing; run \`bash scripts/build-tiny-models.sh\` first`);
    }
    assert.ok(searching && plain, "the fixture has a searching and a plain example");
    policy = new EmbeddedPolicy({ modelPath: TINY });
    await policy.load();
  });

  after(async () => {
    await policy?.dispose();
  });

  it("is named after the model folder", () => {
    assert.equal(policy.id, "embedded:glossa-tiny-qwen2");
  });

  examples.forEach((ex, n) => {
    it(`streams the first turn of fixture example ${n + 1} exactly`, async () => {
      const { text, deltas, summary } = await run(policy, firstTurn(ex));
      const { tokenizer } = await policy.load();
      const cut = ex.assistant.indexOf(STOP);
      if (cut >= 0) {
        assert.equal(text, ex.assistant.slice(0, cut));
        assert.equal(summary.finishReason, "stop");
        assert.equal(summary.stopString, STOP);
        const tokens = tokenizer.encode(ex.assistant.slice(0, cut + STOP.length), { add_special_tokens: false });
        assert.equal(summary.completionTokens, tokens.length);
      } else {
        assert.equal(text, ex.assistant);
        assert.equal(summary.finishReason, "eos");
        assert.equal(summary.stopString, undefined);
        const tokens = tokenizer.encode(ex.assistant, { add_special_tokens: false });
        assert.equal(summary.completionTokens, tokens.length + 1, "text tokens plus <|im_end|>");
      }
      const prompt = tokenizer.apply_chat_template(ex.messages, { tokenize: false, add_generation_prompt: true });
      assert.equal(summary.promptTokens, tokenizer.encode(prompt as string, { add_special_tokens: false }).length);
      assert.ok(deltas.length > 3, "text arrives in pieces");
      if (/[\u0080-\uffff]/.test(text)) {
        const ids = tokenizer.encode(text, { add_special_tokens: false });
        const split = ids.filter((id) => tokenizer.decode([id]).includes("\uFFFD")).length;
        assert.ok(split > 0, "some characters are split across byte tokens");
      }
      for (const d of deltas) {
        assert.ok(d.text.length > 0);
        assert.ok(!d.text.includes("\uFFFD"), `no half-formed character in ${JSON.stringify(d.text)}`);
        assert.ok(!d.text.includes(STOP));
      }
    });
  });

  it("continues after the runtime's information block and ends at EOS", async () => {
    const ex = searching!;
    const end = ex.masked[0]![1];
    const { text, summary } = await run(policy, firstTurn(ex, { assistantPrefix: ex.assistant.slice(0, end) }));
    assert.equal(text, ex.assistant.slice(end));
    assert.equal(summary.finishReason, "eos");
  });

  it("holds back a multi-token stop string and never emits it", async () => {
    const ex = plain!;
    const open = ex.assistant.indexOf("<translation>") + "<translation>".length;
    const stop = ex.assistant.slice(open + 4, open + 12);
    const at = ex.assistant.indexOf(stop);
    const { text, deltas, summary } = await run(policy, firstTurn(ex, { stop: ["never-produced", stop] }));
    assert.equal(text, ex.assistant.slice(0, at));
    assert.equal(summary.finishReason, "stop");
    assert.equal(summary.stopString, stop);
    assert.ok(deltas.every((d) => !d.text.includes(stop)));
  });

  it("reports length at maxTokens", async () => {
    const { text, summary } = await run(policy, firstTurn(plain!, { maxTokens: 5 }));
    assert.equal(summary.finishReason, "length");
    assert.equal(summary.completionTokens, 5);
    assert.ok(plain!.assistant.startsWith(text) && text.length > 0);
  });

  it("stops promptly on abort with PolicyError aborted, and stays usable", async () => {
    const controller = new AbortController();
    const stream = policy.stream(firstTurn(plain!, { signal: controller.signal }));
    const first = await stream.next();
    assert.equal(first.done, false);
    controller.abort();
    await expectPolicyError(
      (async () => {
        for (let r = await stream.next(); !r.done; r = await stream.next());
      })(),
      "aborted",
    );
    await expectPolicyError(run(policy, firstTurn(plain!, { signal: AbortSignal.abort() })), "aborted");
    assert.equal((await run(policy, firstTurn(plain!))).text, plain!.assistant);
  });

  it("ends generation when the caller stops reading, and serves concurrent streams one at a time", async () => {
    for await (const _ of policy.stream(firstTurn(plain!))) break;
    const [a, b] = await Promise.all([run(policy, firstTurn(plain!)), run(policy, firstTurn(searching!))]);
    assert.equal(a.text, plain!.assistant);
    assert.equal(b.summary.finishReason, "stop");
  });

  it("loads the int8 weights (dtype q8) and reproduces the fixture", async function () {
    if (!existsSync(path.join(TINY, "onnx/model_quantized.onnx"))) this.skip();
    const q8 = new EmbeddedPolicy({ modelPath: TINY, dtype: "q8" });
    try {
      for (const ex of examples) {
        const cut = ex.assistant.indexOf(STOP);
        assert.equal((await run(q8, firstTurn(ex))).text, cut >= 0 ? ex.assistant.slice(0, cut) : ex.assistant);
      }
    } finally {
      await q8.dispose();
    }
  });

  it("names the missing folder or file (model-missing)", async () => {
    const missing = path.join(os.tmpdir(), "glossa-no-such-model");
    let err = await expectPolicyError(
      run(new EmbeddedPolicy({ modelPath: missing }), firstTurn(plain!)),
      "model-missing",
    );
    assert.match(err.message, /glossa-no-such-model does not exist/);
    assert.match(err.message, /glossa\.policy\.modelPath/);
    err = await expectPolicyError(
      run(new EmbeddedPolicy({ modelPath: missing, hint: "pass --model-path DIR" }), firstTurn(plain!)),
      "model-missing",
    );
    assert.match(err.message, /does not exist; pass --model-path DIR\.$/);

    const partial = await fs.mkdtemp(path.join(os.tmpdir(), "glossa-partial-"));
    try {
      await fs.copyFile(path.join(TINY, "config.json"), path.join(partial, "config.json"));
      await fs.copyFile(path.join(TINY, "tokenizer.json"), path.join(partial, "tokenizer.json"));
      err = await expectPolicyError(
        run(new EmbeddedPolicy({ modelPath: partial }), firstTurn(plain!)),
        "model-missing",
      );
      assert.match(err.message, /has no tokenizer_config\.json/);
      await fs.copyFile(path.join(TINY, "tokenizer_config.json"), path.join(partial, "tokenizer_config.json"));
      err = await expectPolicyError(
        run(new EmbeddedPolicy({ modelPath: partial, dtype: "q8" }), firstTurn(plain!)),
        "model-missing",
      );
      assert.match(err.message, /has no onnx\/model_quantized\.onnx/);

      await fs.mkdir(path.join(partial, "onnx"));
      await fs.writeFile(path.join(partial, "onnx/model.onnx"), "not a model");
      err = await expectPolicyError(run(new EmbeddedPolicy({ modelPath: partial }), firstTurn(plain!)), "model-load");
      assert.match(err.message, /^Cannot load the embedded model from /);
    } finally {
      await fs.rm(partial, { recursive: true, force: true });
    }
  });

  it("generates identically from a folder downloaded through the hub layout", async () => {
    const hub = await HubServer.start({ models: { "glossa/tiny-qwen2": TINY } });
    const storage = await fs.mkdtemp(path.join(os.tmpdir(), "glossa-store-"));
    const downloaded = new EmbeddedPolicy({
      modelPath: await ensureModel({ modelId: "glossa/tiny-qwen2", storageDir: storage, hubUrl: hub.url }),
      modelId: "glossa/tiny-qwen2",
    });
    try {
      assert.equal(downloaded.id, "embedded:glossa/tiny-qwen2");
      for (const ex of examples) {
        const [want, got] = [await run(policy, firstTurn(ex)), await run(downloaded, firstTurn(ex))];
        assert.deepEqual(got, want);
      }
    } finally {
      await downloaded.dispose();
      await hub.close();
      await fs.rm(storage, { recursive: true, force: true });
    }
  });
});

describe("IncrementalDecoder and StopScanner", () => {
  const bytes = (ids: number[]) => new TextDecoder().decode(new Uint8Array(ids));

  it("emits a character only once all its UTF-8 bytes arrived", () => {
    const decoder = new IncrementalDecoder(bytes);
    const out = [...Buffer.from("a狗b", "utf8")].map((b) => decoder.push(b));
    assert.deepEqual(out, ["a", "", "", "狗", "b"]);
    assert.equal(decoder.count, 5);
  });

  it("flushes an incomplete character at the end", () => {
    const decoder = new IncrementalDecoder(bytes);
    const [first, second] = [...Buffer.from("狗", "utf8")];
    assert.equal(decoder.push(first!) + decoder.push(second!), "");
    assert.equal(decoder.flush(), "\uFFFD");
  });

  it("cuts at the first stop string and holds back a possible start of one", () => {
    const scanner = new StopScanner(["</search>", "END"]);
    assert.equal(scanner.append("abc</se"), "abc");
    assert.equal(scanner.append("arch>tail"), "");
    assert.equal(scanner.stopString, "</search>");
    assert.equal(scanner.append("more"), "");

    const other = new StopScanner(["</search>"]);
    assert.equal(other.append("x</s"), "x");
    assert.equal(other.append("ay"), "</say");
    assert.equal(other.append("<"), "");
    assert.equal(other.finish(), "<");
  });
});
