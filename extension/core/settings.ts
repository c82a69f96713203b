import type { AgentLimits, PromptStyle, RetrievalMode } from "./agent/types";
import type { ContinuationStrategy } from "./policy/openai";
import type { CorpusSpec } from "./retrieval/corpora";
import { DEFAULT_HNSW_PARAMS } from "./retrieval/dense/hnswParams";
import type { EngineConfig } from "./retrieval/engine";

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
  retrieval: RetrievalSettings;
}

/** The optional layers of the retrieval engine; each is off when its main field is empty. */
export interface RetrievalSettings {
  maxGlossChars: number;
  /** A local ONNX sentence-encoder folder: dense search fused with lexical search when set. */
  encoderPath: string;
  encoderDtype: "fp32" | "q8";
  encoderQueryPrefix: string;
  encoderPassagePrefix: string;
  encoderPooling: "mean" | "cls";
  /** HNSW candidate list size per dense query: higher finds more of the true neighbours, more slowly. */
  denseSearchEf: number;
  /** Corpus languages for the LcRL hierarchy (query language first, then these, then the anchor); empty = off. */
  hierarchyLanguages: string[];
  hierarchyAnchor: string;
  hierarchyStop: "enough" | "all";
  online: "off" | "searxng" | "mediawiki";
  onlineEndpoint: string;
  onlineWhen: "fallback" | "always";
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
  retrieval: {
    maxGlossChars: 2000,
    encoderPath: "",
    encoderDtype: "fp32",
    encoderQueryPrefix: "",
    encoderPassagePrefix: "",
    encoderPooling: "mean",
    denseSearchEf: DEFAULT_HNSW_PARAMS.efSearch,
    hierarchyLanguages: [],
    hierarchyAnchor: "en",
    hierarchyStop: "enough",
    online: "off",
    onlineEndpoint: "",
    onlineWhen: "fallback",
  },
};

/** The corpora the settings name: the bundled demo glossary (unless turned off) and the user's glossaries. */
export function corpusSpecs(settings: GlossaSettings, demoGlossary: string): CorpusSpec[] {
  const specs: CorpusSpec[] = settings.glossaries.map((path) => ({
    path,
    sourceLang: settings.sourceLang,
    targetLang: settings.targetLang,
  }));
  if (settings.includeDemoGlossary) specs.unshift({ path: demoGlossary, id: "demo-cc-cedict" });
  return specs;
}

/** The retrieval engine the settings describe, over the index folder `indexDir`. */
export function engineConfig(settings: GlossaSettings, indexDir: string, demoGlossary: string): EngineConfig {
  const r = settings.retrieval;
  return {
    indexDir,
    corpora: corpusSpecs(settings, demoGlossary),
    maxGlossChars: r.maxGlossChars,
    ...(r.encoderPath
      ? {
          dense: {
            encoder: {
              modelPath: r.encoderPath,
              dtype: r.encoderDtype,
              queryPrefix: r.encoderQueryPrefix,
              passagePrefix: r.encoderPassagePrefix,
              pooling: r.encoderPooling,
            },
            efSearch: r.denseSearchEf,
          },
        }
      : {}),
    ...(r.hierarchyLanguages.length
      ? {
          hierarchy: { languages: r.hierarchyLanguages, anchors: [r.hierarchyAnchor], stop: { kind: r.hierarchyStop } },
        }
      : {}),
    ...(r.online !== "off" && r.onlineEndpoint
      ? { online: { kind: r.online, endpoint: r.onlineEndpoint, when: r.onlineWhen } }
      : {}),
  };
}
