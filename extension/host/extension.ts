import * as vscode from "vscode";
import { languageName } from "../core/agent/prompt";
import { readCorpus } from "../core/retrieval/corpora";
import { summarize } from "../core/retrieval/importers/report";
import { API_KEY_SECRET, SECTION } from "./config";
import { Services } from "./services";
import { TranslateController } from "./translateCommand";

/** Constructs the services once and registers the commands; everything heavy is loaded on first use. */
export function activate(context: vscode.ExtensionContext): void {
  const started = performance.now();
  const services = new Services(context);
  const translate = new TranslateController(services);
  const status = vscode.window.createStatusBarItem("glossa.languagePair", vscode.StatusBarAlignment.Right, 100);
  status.name = "Glossa language pair";
  status.command = "glossa.setLanguagePair";
  const updateStatus = () => {
    const s = services.settings();
    status.text = `$(globe) ${s.sourceLang} → ${s.targetLang}`;
    status.tooltip = `Glossa translates ${languageName(s.sourceLang)} into ${languageName(s.targetLang)} (${s.mode} retrieval). Click to change.`;
    status.show();
  };
  updateStatus();

  context.subscriptions.push(
    services,
    translate,
    status,
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(SECTION)) updateStatus();
    }),
    vscode.commands.registerCommand("glossa.translateSelection", () => translate.translateSelection()),
    vscode.commands.registerCommand("glossa.cancel", () => translate.cancel()),
    vscode.commands.registerCommand("glossa.setLanguagePair", () => setLanguagePair()),
    vscode.commands.registerCommand("glossa.setApiKey", () => setApiKey(context)),
    vscode.commands.registerCommand("glossa.importGlossary", () => importGlossary(services.log)),
    vscode.commands.registerCommand("glossa.openFeedbackLog", async () => {
      const file = services.feedback().file;
      try {
        await vscode.window.showTextDocument(vscode.Uri.file(file));
      } catch {
        void vscode.window.showInformationMessage(`Glossa: no decisions recorded yet (${file}).`);
      }
    }),
  );
  services.log(`activated in ${(performance.now() - started).toFixed(1)} ms`);
}

export function deactivate(): void {}

async function setLanguagePair(): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const ask = (prompt: string, value: string) =>
    vscode.window.showInputBox({
      prompt,
      value,
      validateInput: (v) =>
        /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(v.trim()) ? null : "A language code such as zh, en, de or pt-BR",
    });
  const source = await ask("Source language code", config.get("languages.source", "zh"));
  if (!source) return;
  const target = await ask("Target language code", config.get("languages.target", "en"));
  if (!target) return;
  const scope = vscode.workspace.workspaceFolders
    ? vscode.ConfigurationTarget.Workspace
    : vscode.ConfigurationTarget.Global;
  await config.update("languages.source", source.trim(), scope);
  await config.update("languages.target", target.trim(), scope);
}

async function setApiKey(context: vscode.ExtensionContext): Promise<void> {
  const key = await vscode.window.showInputBox({
    prompt: "API key for the policy endpoint (stored in VS Code's secret storage; leave empty to remove it)",
    password: true,
    ignoreFocusOut: true,
  });
  if (key === undefined) return;
  if (key) await context.secrets.store(API_KEY_SECRET, key);
  else await context.secrets.delete(API_KEY_SECRET);
  void vscode.window.showInformationMessage(key ? "Glossa: API key saved." : "Glossa: API key removed.");
}

async function importGlossary(log: (m: string) => void): Promise<void> {
  const picked = await vscode.window.showOpenDialog({
    canSelectMany: false,
    openLabel: "Import glossary",
    filters: { Glossaries: ["tsv", "csv", "u8", "txt", "gz", "jsonl"] },
  });
  const uri = picked?.[0];
  if (!uri) return;
  const config = vscode.workspace.getConfiguration(SECTION);
  try {
    const report = await readCorpus(
      {
        path: uri.fsPath,
        sourceLang: config.get("languages.source", "zh"),
        targetLang: config.get("languages.target", "en"),
      },
      () => {},
    );
    log(summarize(report));
    const list = config.get<string[]>("retrieval.glossaries", []);
    if (!list.includes(uri.fsPath)) {
      await config.update("retrieval.glossaries", [...list, uri.fsPath], vscode.ConfigurationTarget.Global);
    }
    const extra = report.malformed ? `, ${report.malformed} malformed (see the Glossa output)` : "";
    void vscode.window.showInformationMessage(
      `Glossa: imported ${report.imported} entries from ${uri.fsPath}${extra}.`,
    );
  } catch (e) {
    void vscode.window.showErrorMessage(`Glossa: cannot import ${uri.fsPath}: ${(e as Error).message}`);
  }
}
