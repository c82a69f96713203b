import type { AgentLimits, PromptStyle, RetrievalMode } from "./agent/types";
import type { ContinuationStrategy } from "./policy/openai";

/** Everything a translation needs to know, read from VS Code settings or CLI flags. */
export interface GlossaSettings {
  sourceLang: string;
  targetLang: string;
  backend: "embedded" | "openai";
  endpoint: string;
  model: string;
  continuation: ContinuationStrategy;
  /** A local ONNX model folder for the embedded backend; takes precedence over `modelId`. */
  modelPath: string;
  /** A hub model id downloaded on first use into `modelStorage` when `modelPath` is empty. */
  modelId: string;
  hubUrl: string;
  dtype: string;
  mode: RetrievalMode;
  style: PromptStyle;
  limits: AgentLimits;
  /** Characters of surrounding text given to the policy as context (0 = none). */
  contextChars: number;
  glossaries: string[];
  includeDemoGlossary: boolean;
}

export const DEFAULT_SETTINGS: GlossaSettings = {
  sourceLang: "zh",
  targetLang: "en",
  backend: "embedded",
  endpoint: "http://127.0.0.1:8000/v1",
  model: "",
  continuation: "user-turn",
  modelPath: "",
  modelId: "onnx-community/Qwen2.5-0.5B-Instruct",
  hubUrl: "https://huggingface.co",
  dtype: "q8",
  mode: "selective",
  style: "neoamt",
  limits: { maxTurns: 3, maxSearches: 2, maxOutputTokens: 2048, topk: 5 },
  contextChars: 400,
  glossaries: [],
  includeDemoGlossary: true,
};
