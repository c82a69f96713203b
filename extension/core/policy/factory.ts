import type { GlossaSettings } from "../settings";
import { EmbeddedPolicy } from "./embedded";
import { ensureModel } from "./modelStore";
import { OpenAIPolicy } from "./openai";
import { type PolicyBackend, PolicyError } from "./types";

export interface PolicyEnvironment {
  /** Where first-use model downloads go (the extension's global storage, or ~/.cache/glossa/models). */
  modelStorage: string;
  apiKey?: string;
  onProgress?: (message: string) => void;
  signal?: AbortSignal;
  /** How the user of this front end points Glossa at a model, ending errors about a missing one. */
  hint?: string;
}

/** Builds the policy backend the settings name; fails with a PolicyError a translator can act on. */
export async function createPolicy(settings: GlossaSettings, env: PolicyEnvironment): Promise<PolicyBackend> {
  if (settings.backend === "openai") {
    if (!settings.endpoint) throw new PolicyError("config", "No policy endpoint is set: set glossa.policy.endpoint.");
    return new OpenAIPolicy({
      endpoint: settings.endpoint,
      model: settings.model || "default",
      apiKey: env.apiKey,
      continuation: settings.continuation,
    });
  }
  let modelPath = settings.modelPath;
  if (!modelPath) {
    if (!settings.modelId) {
      throw new PolicyError(
        "config",
        "No embedded model is set: set glossa.policy.modelPath to a local ONNX model folder, or glossa.policy.modelId.",
      );
    }
    modelPath = await ensureModel({
      modelId: settings.modelId,
      storageDir: env.modelStorage,
      hubUrl: settings.hubUrl,
      dtype: settings.dtype,
      signal: env.signal,
      hint: env.hint,
      onProgress: (p) =>
        env.onProgress?.(
          `downloading ${settings.modelId}: ${p.file} ${formatBytes(p.bytes)}${p.total ? ` / ${formatBytes(p.total)}` : ""}`,
        ),
    });
  }
  return new EmbeddedPolicy({ modelPath, dtype: settings.dtype, hint: env.hint });
}

function formatBytes(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${Math.round(n / 1e3)} kB`;
}
