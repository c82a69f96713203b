/**
 * Worker-thread entry of the background dense build: it owns its own encoder session and HNSW graph, so
 * neither encoding nor insertion ever runs on the thread that started it. Messages in: `start`, `abort`;
 * out: `progress`, `done`, `cancelled`, `failed`.
 */
import { parentPort } from "node:worker_threads";
import { buildDenseIndex, DenseBuildCancelled } from "./denseBuild";
import { SentenceEncoder } from "./encoder";
import type { WorkerReply, WorkerRequest } from "./workerProtocol";
import { unpackPassages } from "./workerProtocol";

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
  const { packed, ...rest } = message.request;
  buildDenseIndex({ ...rest, passages: unpackPassages(packed) }, encoder, {
    signal: controller.signal,
    onProgress: (progress) => reply({ type: "progress", progress }),
  })
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
