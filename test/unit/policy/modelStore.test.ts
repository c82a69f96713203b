import assert from "node:assert/strict";
import { existsSync, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { EmbeddedPolicy } from "../../../extension/core/policy/embedded";
import {
  type DownloadProgress,
  ensureModel,
  externalDataFiles,
  modelFolder,
  sha256File,
} from "../../../extension/core/policy/modelStore";
import { HubServer } from "../../support/hubServer";
import { expectPolicyError } from "../../support/policyErrors";

const TINY = path.resolve("build/tiny-models/glossa-tiny-qwen2");
/** The same model with its weights in two external data files, declared in its config.json. */
const SPLIT = path.resolve("build/tiny-models/glossa-tiny-qwen2-split");
const MODEL = "glossa/tiny-qwen2";
const SPLIT_MODEL = "glossa/tiny-qwen2-split";
const ONNX = "onnx/model.onnx";
const NEEDED = ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", ONNX];

describe("modelStore", function () {
  this.timeout(20_000);
  let hub: HubServer;
  let storage: string;

  before(() => {
    for (const folder of [TINY, SPLIT]) {
      if (!existsSync(path.join(folder, ONNX))) {
        throw new Error(`${folder} is missing; run \`bash scripts/build-tiny-models.sh\` first`);
      }
    }
  });

  beforeEach(async () => {
    hub = await HubServer.start({ models: { [MODEL]: TINY, [SPLIT_MODEL]: SPLIT } });
    storage = await fs.mkdtemp(path.join(os.tmpdir(), "glossa-store-"));
  });

  afterEach(async () => {
    await hub.close();
    await fs.rm(storage, { recursive: true, force: true });
  });

  async function assertSameFiles(folder: string): Promise<void> {
    for (const file of NEEDED) {
      assert.equal(await sha256File(path.join(folder, file)), await sha256File(path.join(TINY, file)), file);
    }
  }

  it("downloads the files a decoder needs into a hub-layout folder, once", async () => {
    const progress: DownloadProgress[] = [];
    const folder = await ensureModel({
      modelId: MODEL,
      storageDir: storage,
      hubUrl: hub.url,
      onProgress: (p) => progress.push(p),
    });
    assert.equal(folder, modelFolder(storage, MODEL));
    await assertSameFiles(folder);
    assert.ok(!existsSync(path.join(folder, "onnx/model.onnx_data")), "optional 404 file is skipped");
    assert.ok(!existsSync(path.join(folder, "model.safetensors")), "only what the runtime needs");
    assert.ok(hub.requests.every((r) => r.url.startsWith(`/${MODEL}/resolve/main/`)));
    const size = (await fs.stat(path.join(TINY, ONNX))).size;
    const last = progress.filter((p) => p.file === ONNX).at(-1);
    assert.deepEqual(last, { file: ONNX, bytes: size, total: size });

    const before = hub.requests.length;
    assert.equal(await ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: hub.url }), folder);
    assert.equal(hub.requests.length, before, "a complete folder needs no network");
  });

  it("fetches the ONNX file of the requested dtype", async () => {
    const folder = await ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: hub.url, dtype: "q8" });
    const file = "onnx/model_quantized.onnx";
    assert.equal(await sha256File(path.join(folder, file)), await sha256File(path.join(TINY, file)));
    assert.ok(!existsSync(path.join(folder, ONNX)));
  });

  it("resumes a cut download with a Range request and verifies the sha256", async () => {
    hub.cutOnce = { file: ONNX, afterBytes: 200_000 };
    const folder = await ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: hub.url });
    const onnx = hub.requestsFor(ONNX);
    assert.equal(onnx.length, 2);
    assert.equal(onnx[0]?.range, undefined);
    assert.match(onnx[1]?.range ?? "", /^bytes=[1-9]\d*-$/);
    assert.equal(onnx[1]?.status, 206);
    await assertSameFiles(folder);
    assert.ok(!existsSync(path.join(folder, `${ONNX}.part`)));
  });

  it("starts over when the server answers a Range request with the whole file", async () => {
    hub.cutOnce = { file: ONNX, afterBytes: 150_000 };
    hub.ignoreRange = true;
    const folder = await ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: hub.url });
    const onnx = hub.requestsFor(ONNX);
    assert.equal(onnx.length, 2);
    assert.ok(onnx[1]?.range, "the retry asked for a range");
    assert.equal(onnx[1]?.status, 200);
    await assertSameFiles(folder);
  });

  it("follows LFS redirects to another path", async () => {
    hub.redirectLfs = true;
    hub.cutOnce = { file: ONNX, afterBytes: 100_000 };
    const folder = await ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: hub.url });
    const onnx = hub.requestsFor(ONNX);
    assert.deepEqual(
      onnx.map((r) => [r.url.split("?")[0], r.status]),
      [
        [`/${MODEL}/resolve/main/${ONNX}`, 302],
        [`/cdn/${MODEL}/${ONNX}`, 200],
        [`/${MODEL}/resolve/main/${ONNX}`, 302],
        [`/cdn/${MODEL}/${ONNX}`, 206],
      ],
    );
    await assertSameFiles(folder);
  });

  it("rejects a file whose sha256 does not match and leaves no file behind", async () => {
    hub.wrongEtag.add(ONNX);
    const err = await expectPolicyError(
      ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: hub.url }),
      "download",
    );
    assert.match(err.message, /checksum mismatch for onnx\/model\.onnx/i);
    const folder = modelFolder(storage, MODEL);
    assert.ok(!existsSync(path.join(folder, ONNX)));
    assert.ok(!existsSync(path.join(folder, `${ONNX}.part`)));
  });

  it("says clearly when the hub cannot be reached", async () => {
    const err = await expectPolicyError(
      ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: "http://127.0.0.1:1" }),
      "download",
    );
    assert.match(err.message, /^Cannot reach 127\.0\.0\.1:1 to download glossa\/tiny-qwen2/);
    assert.match(err.message, /glossa\.policy\.modelPath/);
    const hinted = await expectPolicyError(
      ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: "http://127.0.0.1:1", hint: "pass --model-path DIR" }),
      "download",
    );
    assert.match(hinted.message, /\(ECONNREFUSED\); pass --model-path DIR\.$/);
  });

  it("uses a folder with every required file when the hub is out of reach", async () => {
    const folder = await ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: hub.url });
    await fs.rm(path.join(folder, ".glossa-download.json"));
    await fs.rm(path.join(folder, "generation_config.json"));
    const offline = { modelId: MODEL, storageDir: storage, hubUrl: "http://127.0.0.1:1" };
    assert.equal(await ensureModel(offline), folder);
    await fs.rm(path.join(folder, "tokenizer.json"));
    await expectPolicyError(ensureModel(offline), "download");
  });

  it("names a required file the hub does not have", async () => {
    const partial = await fs.mkdtemp(path.join(os.tmpdir(), "glossa-partial-"));
    try {
      await fs.copyFile(path.join(TINY, "config.json"), path.join(partial, "config.json"));
      const other = await HubServer.start({ models: { [MODEL]: partial } });
      try {
        const err = await expectPolicyError(
          ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: other.url }),
          "download",
        );
        assert.match(err.message, /has no tokenizer\.json/);
      } finally {
        await other.close();
      }
    } finally {
      await fs.rm(partial, { recursive: true, force: true });
    }
  });

  it("reads the external weight files a config declares, as @huggingface/transformers does", () => {
    const declare = (setting: unknown) => ({ "transformers.js_config": { use_external_data_format: setting } });
    assert.deepEqual(externalDataFiles({}, "fp32"), []);
    assert.deepEqual(externalDataFiles(declare(true), "fp32"), ["onnx/model.onnx_data"]);
    assert.deepEqual(externalDataFiles(declare(3), "q4"), [
      "onnx/model_q4.onnx_data",
      "onnx/model_q4.onnx_data_1",
      "onnx/model_q4.onnx_data_2",
    ]);
    const perFile = declare({ "model_fp16.onnx": 2, model: 1 });
    assert.deepEqual(externalDataFiles(perFile, "fp16"), ["onnx/model_fp16.onnx_data", "onnx/model_fp16.onnx_data_1"]);
    assert.deepEqual(externalDataFiles(perFile, "q8"), ["onnx/model_quantized.onnx_data"]);
    assert.deepEqual(externalDataFiles(declare(false), "fp32"), []);
    assert.throws(() => externalDataFiles(declare(-1), "fp32"), /expected a whole number from 0 to 100/);
    assert.throws(() => externalDataFiles(declare("many"), "fp32"), /external data files/);
  });

  it("downloads every external weight file a model declares, and the model then runs", async () => {
    const folder = await ensureModel({ modelId: SPLIT_MODEL, storageDir: storage, hubUrl: hub.url });
    for (const file of [ONNX, "onnx/model.onnx_data", "onnx/model.onnx_data_1", "config.json"]) {
      assert.equal(await sha256File(path.join(folder, file)), await sha256File(path.join(SPLIT, file)), file);
    }
    const before = hub.requests.length;
    assert.equal(await ensureModel({ modelId: SPLIT_MODEL, storageDir: storage, hubUrl: hub.url }), folder);
    assert.equal(hub.requests.length, before, "a complete folder needs no network");

    // The downloaded folder generates exactly what the single-file model generates.
    const prompt = {
      messages: [{ role: "user" as const, content: "Translate: 你好" }],
      assistantPrefix: "",
      stop: [],
      maxTokens: 12,
    };
    const textOf = async (policy: EmbeddedPolicy) => {
      let text = "";
      try {
        for await (const d of policy.stream(prompt)) text += d.text;
      } finally {
        await policy.dispose();
      }
      return text;
    };
    const split = await textOf(new EmbeddedPolicy({ modelPath: folder }));
    assert.ok(split.length > 0);
    assert.equal(split, await textOf(new EmbeddedPolicy({ modelPath: TINY })));

    // A folder that lost a declared chunk is refused by name before the runtime sees it.
    await fs.rm(path.join(folder, "onnx/model.onnx_data_1"));
    const err = await expectPolicyError(textOf(new EmbeddedPolicy({ modelPath: folder })), "model-missing");
    assert.match(err.message, /has no onnx\/model\.onnx_data_1 \(its config\.json declares 2 external weight files\)/);
  });

  it("names a declared external weight file the hub does not have", async () => {
    const partial = await fs.mkdtemp(path.join(os.tmpdir(), "glossa-partial-"));
    try {
      await fs.cp(SPLIT, partial, { recursive: true });
      await fs.rm(path.join(partial, "onnx/model.onnx_data_1"));
      const other = await HubServer.start({ models: { [SPLIT_MODEL]: partial } });
      try {
        const err = await expectPolicyError(
          ensureModel({ modelId: SPLIT_MODEL, storageDir: storage, hubUrl: other.url }),
          "download",
        );
        assert.match(err.message, /has no onnx\/model\.onnx_data_1/);
      } finally {
        await other.close();
      }
    } finally {
      await fs.rm(partial, { recursive: true, force: true });
    }
  });

  it("cancels on abort, keeps the partial file and resumes from it", async () => {
    hub.stallOnce = { file: ONNX, afterBytes: 100_000 };
    const controller = new AbortController();
    await expectPolicyError(
      ensureModel({
        modelId: MODEL,
        storageDir: storage,
        hubUrl: hub.url,
        signal: controller.signal,
        onProgress: (p) => {
          if (p.file === ONNX && p.bytes >= 100_000) controller.abort();
        },
      }),
      "aborted",
    );
    const folder = modelFolder(storage, MODEL);
    const part = path.join(folder, `${ONNX}.part`);
    assert.ok(!existsSync(path.join(folder, ONNX)));
    assert.ok((await fs.stat(part)).size > 0, "partial file kept");
    const kept = (await fs.stat(part)).size;

    await ensureModel({ modelId: MODEL, storageDir: storage, hubUrl: hub.url });
    assert.equal(hub.requestsFor(ONNX).at(-1)?.range, `bytes=${kept}-`);
    await assertSameFiles(folder);
  });
});
