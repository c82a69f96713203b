/**
 * Worker-thread entry of the background dense build: it owns its own encoder session and HNSW graph, so
 * neither encoding nor insertion ever runs on the thread that started it. Messages in: `start`, `abort`;
 * out: `progress`, `done`, `cancelled`, `failed`.
 */
import { parentPort } from "node:worker_threads";
import { IndexStore, lexicalSourceKey } from "../indexStore";
import { buildDenseIndex, DenseBuildCancelled, type DenseBuildRequest } from "./denseBuild";
import { SentenceEncoder } from "./encoder";
import { passagesOf } from "./passages";
import type { WorkerReply, WorkerRequest } from "./workerProtocol";
import { unpackPassages } from "./workerProtocol";

/** The build request with its passages, read from the lexical index when the caller named one. */
async function readRequest(request: Extract<WorkerRequest, { type: "start" }>["request"]): Promise<DenseBuildRequest> {
  if ("packed" in request) {
    const { packed, ...rest } = request;
    return { ...rest, passages: unpackPassages(packed) };
  }
  const { lexicalIndex, ...rest } = request;
  const { index, manifest } = await new IndexStore(lexicalIndex).load();
  return { ...rest, passages: passagesOf(index.entries()), sourceKey: lexicalSourceKey(manifest) };
}

const port = parentPort;
if (!port) throw new Error("denseBuildWorker must run in a worker thread");
const controller = new AbortController();
const reply = (message: WorkerReply) => port.postMessage(message);

port.on("message", (message: WorkerRequest) => {
  if (message.type === "abort") {
    controller.abort();
    return;
  }
  const encoder = new SentenceEncoder(message.encoder);
  readRequest(message.request)
    .then((request) =>
      buildDenseIndex(request, encoder, {
        signal: controller.signal,
        onProgress: (progress) => reply({ type: "progress", progress }),
      }),
    )
    .then((result) => reply({ type: "done", result }))
    .catch((err: unknown) => {
      if (err instanceof DenseBuildCancelled) reply({ type: "cancelled", progress: err.progress });
      else {
        const e = err instanceof Error ? err : new Error(String(err));
        const code = (e as { code?: unknown }).code;
        reply({
          type: "failed",
          error: { name: e.name, message: e.message, ...(typeof code === "string" ? { code } : {}) },
        });
      }
    })
    .finally(() => encoder.dispose().finally(() => port.close()));
});
