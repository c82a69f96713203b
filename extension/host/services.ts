import * as path from "node:path";
import * as vscode from "vscode";
import { FeedbackStore } from "../core/feedback/store";
import { createPolicy } from "../core/policy/factory";
import type { PolicyBackend } from "../core/policy/types";
import { type CorpusSpec, loadIndex } from "../core/retrieval/corpora";
import { summarize } from "../core/retrieval/importers/report";
import type { LexicalIndex } from "../core/retrieval/lexical";
import type { GlossaSettings } from "../core/settings";
import { API_KEY_SECRET, readSettings, resolvePath, SECTION } from "./config";

/**
 * The long-lived objects of one window, built lazily on first use (activation stays cheap) and
 * rebuilt when the settings they depend on change.
 */
export class Services implements vscode.Disposable {
  private policyKey = "";
  private policyPromise: Promise<PolicyBackend> | undefined;
  private retrieverKey = "";
  private retrieverPromise: Promise<LexicalIndex> | undefined;
  private feedbackStore: FeedbackStore | undefined;
  private readonly output: vscode.LogOutputChannel;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel("Glossa", { log: true });
    this.subscriptions.push(
      this.output,
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${SECTION}.feedback`)) this.feedbackStore = undefined;
      }),
    );
  }

  get extensionUri(): vscode.Uri {
    return this.context.extensionUri;
  }

  readonly log = (message: string): void => {
    this.output.info(message);
  };

  settings(): GlossaSettings {
    return readSettings();
  }

  async policy(signal?: AbortSignal): Promise<PolicyBackend> {
    const s = this.settings();
    const apiKey = s.backend === "openai" ? await this.context.secrets.get(API_KEY_SECRET) : undefined;
    const key = JSON.stringify([
      s.backend,
      s.endpoint,
      s.model,
      s.continuation,
      s.modelPath,
      s.modelId,
      s.hubUrl,
      s.dtype,
      apiKey ?? "",
    ]);
    if (!this.policyPromise || key !== this.policyKey) {
      const previous = this.policyPromise;
      void previous?.then((p) => p.dispose?.()).catch(() => {});
      this.policyKey = key;
      const storage = vscode.Uri.joinPath(this.context.globalStorageUri, "models").fsPath;
      const created = Promise.resolve(
        vscode.window.withProgress(
          {
            location: vscode.ProgressLocation.Notification,
            title: "Glossa: preparing the policy model",
            cancellable: false,
          },
          (progress) =>
            createPolicy(s, {
              modelStorage: storage,
              apiKey,
              signal,
              onProgress: (message) => progress.report({ message }),
            }),
        ),
      );
      this.policyPromise = created;
      // A failed setup is not cached: the next command tries again (e.g. after the user fixes a path).
      created.catch(() => {
        if (this.policyPromise === created) this.policyPromise = undefined;
      });
      return created;
    }
    return this.policyPromise;
  }

  async retriever(): Promise<LexicalIndex> {
    const s = this.settings();
    const specs: CorpusSpec[] = s.glossaries.map((p) => ({
      path: p,
      sourceLang: s.sourceLang,
      targetLang: s.targetLang,
    }));
    if (s.includeDemoGlossary) {
      specs.unshift({
        path: vscode.Uri.joinPath(this.extensionUri, "media", "glossary", "cc-cedict-idioms-neologisms.u8").fsPath,
        id: "demo-cc-cedict",
      });
    }
    const key = JSON.stringify(specs);
    if (!this.retrieverPromise || key !== this.retrieverKey) {
      this.retrieverKey = key;
      this.retrieverPromise = loadIndex(specs).then(({ index, reports }) => {
        for (const report of reports) this.log(summarize(report));
        const bad = reports.filter((r) => r.malformed > 0);
        if (bad.length) {
          void vscode.window.showWarningMessage(
            `Glossa: ${bad.map((r) => `${path.basename(r.file)}: ${r.malformed} malformed line(s)`).join("; ")}. See the Glossa output for where.`,
          );
        }
        return index;
      });
      const created = this.retrieverPromise;
      created.catch(() => {
        if (this.retrieverPromise === created) this.retrieverPromise = undefined;
      });
      return created;
    }
    return this.retrieverPromise;
  }

  feedback(): FeedbackStore {
    if (!this.feedbackStore) {
      const configured = vscode.workspace.getConfiguration(SECTION).get<string>("feedback.file", "");
      const file = configured
        ? resolvePath(configured)
        : vscode.Uri.joinPath(this.context.globalStorageUri, "feedback", "feedback.jsonl").fsPath;
      this.feedbackStore = new FeedbackStore(file);
    }
    return this.feedbackStore;
  }

  dispose(): void {
    void this.policyPromise?.then((p) => p.dispose?.()).catch(() => {});
    for (const s of this.subscriptions) s.dispose();
  }
}
