import * as path from "node:path";
import * as vscode from "vscode";
import type { AgentLimits, PromptStyle, RetrievalMode } from "../core/agent/types";
import type { ContinuationStrategy } from "../core/policy/openai";
import { DEFAULT_SETTINGS, type GlossaSettings, type RetrievalSettings } from "../core/settings";

export const SECTION = "glossa";
export const API_KEY_SECRET = "glossa.policy.apiKey";

/** Reads the `glossa.*` settings into the core's settings shape. */
export function readSettings(): GlossaSettings {
  const c = vscode.workspace.getConfiguration(SECTION);
  const get = <T>(key: string, fallback: T): T => c.get<T>(key, fallback);
  const limits: AgentLimits = {
    maxTurns: positive(get("agent.maxTurns", DEFAULT_SETTINGS.limits.maxTurns), DEFAULT_SETTINGS.limits.maxTurns),
    maxSearches: Math.max(0, get("agent.maxSearches", DEFAULT_SETTINGS.limits.maxSearches)),
    maxOutputTokens: positive(
      get("agent.maxOutputTokens", DEFAULT_SETTINGS.limits.maxOutputTokens),
      DEFAULT_SETTINGS.limits.maxOutputTokens,
    ),
    topk: positive(get("retrieval.topK", DEFAULT_SETTINGS.limits.topk), DEFAULT_SETTINGS.limits.topk),
  };
  return {
    sourceLang: get("languages.source", DEFAULT_SETTINGS.sourceLang),
    targetLang: get("languages.target", DEFAULT_SETTINGS.targetLang),
    backend: get<GlossaSettings["backend"]>("policy.backend", DEFAULT_SETTINGS.backend),
    endpoint: get("policy.endpoint", DEFAULT_SETTINGS.endpoint),
    model: get("policy.model", DEFAULT_SETTINGS.model),
    continuation: get<ContinuationStrategy>("policy.continuation", DEFAULT_SETTINGS.continuation),
    modelPath: resolvePath(get("policy.modelPath", DEFAULT_SETTINGS.modelPath)),
    modelId: get("policy.modelId", DEFAULT_SETTINGS.modelId),
    hubUrl: get("policy.hubUrl", DEFAULT_SETTINGS.hubUrl),
    dtype: get("policy.dtype", DEFAULT_SETTINGS.dtype),
    mode: get<RetrievalMode>("agent.mode", DEFAULT_SETTINGS.mode),
    style: get<PromptStyle>("agent.promptStyle", DEFAULT_SETTINGS.style),
    limits,
    contextChars: Math.max(0, get("agent.contextChars", DEFAULT_SETTINGS.contextChars)),
    glossaries: get<string[]>("retrieval.glossaries", []).map(resolvePath),
    includeDemoGlossary: get("retrieval.includeDemoGlossary", DEFAULT_SETTINGS.includeDemoGlossary),
    retrieval: readRetrievalSettings(get),
  };
}

function readRetrievalSettings(get: <T>(key: string, fallback: T) => T): RetrievalSettings {
  const d = DEFAULT_SETTINGS.retrieval;
  return {
    maxGlossChars: positive(get("retrieval.maxGlossChars", d.maxGlossChars), d.maxGlossChars),
    encoderPath: resolvePath(get("retrieval.encoderPath", d.encoderPath)),
    encoderDtype: get<RetrievalSettings["encoderDtype"]>("retrieval.encoderDtype", d.encoderDtype),
    encoderQueryPrefix: get("retrieval.encoderQueryPrefix", d.encoderQueryPrefix),
    encoderPassagePrefix: get("retrieval.encoderPassagePrefix", d.encoderPassagePrefix),
    encoderPooling: get<RetrievalSettings["encoderPooling"]>("retrieval.encoderPooling", d.encoderPooling),
    denseSearchEf: positive(get("retrieval.denseSearchEf", d.denseSearchEf), d.denseSearchEf),
    hierarchyLanguages: get<string[]>("retrieval.hierarchy.languages", d.hierarchyLanguages),
    hierarchyAnchor: get("retrieval.hierarchy.anchor", d.hierarchyAnchor),
    hierarchyStop: get<RetrievalSettings["hierarchyStop"]>("retrieval.hierarchy.stop", d.hierarchyStop),
    online: get<RetrievalSettings["online"]>("retrieval.online.provider", d.online),
    onlineEndpoint: get("retrieval.online.endpoint", d.onlineEndpoint),
    onlineWhen: get<RetrievalSettings["onlineWhen"]>("retrieval.online.when", d.onlineWhen),
  };
}

function positive(value: number, fallback: number): number {
  return Number.isFinite(value) && value >= 1 ? Math.floor(value) : fallback;
}

/** Settings may name files relative to the first workspace folder, or with ~ for the home folder. */
export function resolvePath(p: string): string {
  if (!p) return p;
  if (p.startsWith("~/")) return path.join(process.env.HOME ?? "", p.slice(2));
  if (path.isAbsolute(p)) return p;
  const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return root ? path.join(root, p) : p;
}
