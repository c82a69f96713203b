import * as path from "node:path";
import * as vscode from "vscode";
import { FeedbackStore } from "../core/feedback/store";
import { createPolicy } from "../core/policy/factory";
import type { PolicyBackend } from "../core/policy/types";
import { type EngineConfig, RetrievalEngine } from "../core/retrieval/engine";
import { summarize } from "../core/retrieval/importers/report";
import { IndexCorruptError } from "../core/retrieval/indexStore";
import { engineConfig, type GlossaSettings } from "../core/settings";
import { API_KEY_SECRET, readSettings, resolvePath, SECTION } from "./config";

/**
 * The long-lived objects of one window, built lazily on first use (activation stays cheap) and
 * rebuilt when the settings they depend on change.
 */
export class Services implements vscode.Disposable {
  private policyKey = "";
  private policyPromise: Promise<PolicyBackend> | undefined;
  private retrieverKey = "";
  private retrieverPromise: Promise<RetrievalEngine> | undefined;
  private denseBuild: Thenable<void> | undefined;
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

  /**
   * The retrieval engine over the configured corpora. The first call imports them into the index
   * folder; later calls reuse it (an unchanged file is not parsed again). A corrupt index is offered
   * for rebuilding; a dense index that is missing or stale is built in the background while lexical
   * search serves.
   */
  async retriever(): Promise<RetrievalEngine> {
    const config = engineConfig(this.settings(), this.indexDir(), this.demoGlossary());
    const key = JSON.stringify(config);
    if (!this.retrieverPromise || key !== this.retrieverKey) {
      this.retrieverKey = key;
      const created = this.openEngine(config);
      this.retrieverPromise = created;
      created.catch(() => {
        if (this.retrieverPromise === created) this.retrieverPromise = undefined;
      });
      return created;
    }
    return this.retrieverPromise;
  }

  private async openEngine(config: EngineConfig): Promise<RetrievalEngine> {
    const hooks = { onProgress: this.log, onWarning: (m: string) => this.log(`retrieval: ${m}`), updateInWorker: true };
    let engine: RetrievalEngine;
    try {
      engine = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: "Glossa: loading glossaries" },
        () => RetrievalEngine.open(config, hooks),
      );
    } catch (e) {
      if (!(e instanceof IndexCorruptError)) throw e;
      const choice = await vscode.window.showErrorMessage(
        `Glossa: the glossary index cannot be used (${e.reason}). Rebuild it from your glossaries and ` +
          `dictionaries? Nothing else is lost. (${e.indexDir})`,
        "Rebuild index",
      );
      if (choice !== "Rebuild index") throw e;
      engine = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: "Glossa: rebuilding the glossary index" },
        () => RetrievalEngine.rebuild(config, hooks),
      );
    }
    for (const report of engine.update.reports) {
      this.log(summarize(report));
      if (report.malformed > 0) {
        void vscode.window.showWarningMessage(
          `Glossa: ${path.basename(report.file)}: ${report.malformed} malformed record(s) skipped. See the Glossa output for where.`,
        );
      }
    }
    if (engine.dense.kind === "needs-build") this.buildDenseInBackground(engine);
    return engine;
  }

  /** Dense vectors take minutes to hours for a large dictionary: build them off the main thread, cancellably. */
  private buildDenseInBackground(engine: RetrievalEngine): void {
    if (this.denseBuild) return;
    this.denseBuild = vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Glossa: building the dense index", cancellable: true },
      async (progress, token) => {
        const controller = new AbortController();
        token.onCancellationRequested(() => controller.abort());
        let reported = 0;
        try {
          const result = await engine.buildDense({
            signal: controller.signal,
            onProgress: (p) => {
              const percent = p.total ? (100 * p.done) / p.total : 0;
              progress.report({
                increment: percent - reported,
                message: `${p.done}/${p.total} (${Math.round(p.ratePerSec)}/s, ${Math.round(p.etaSec / 60)} min left)`,
              });
              reported = percent;
            },
          });
          this.log(
            `dense index built: ${result.manifest.count} vectors (${result.encoded} encoded, ${result.reused} reused)`,
          );
          // Open the engine with its dense half now, so the next search does not wait for the load.
          this.retrieverPromise = undefined;
          void this.retriever().catch((e: unknown) => this.log(`retrieval: ${(e as Error).message}`));
        } catch (e) {
          this.log(`dense index build stopped: ${(e as Error).message} (it resumes from its checkpoint next time)`);
        } finally {
          this.denseBuild = undefined;
        }
      },
    );
  }

  private indexDir(): string {
    const configured = vscode.workspace.getConfiguration(SECTION).get<string>("retrieval.indexFolder", "");
    return configured ? resolvePath(configured) : vscode.Uri.joinPath(this.context.globalStorageUri, "index").fsPath;
  }

  private demoGlossary(): string {
    return vscode.Uri.joinPath(this.extensionUri, "media", "glossary", "cc-cedict-idioms-neologisms.u8").fsPath;
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
