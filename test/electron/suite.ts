/**
 * Runs inside the VS Code extension host started by test/electron/run.ts: the extension activates,
 * contributes its commands and settings, and translates a selection against the scripted server.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as vscode from "vscode";
import { ScriptedOpenAIServer } from "../support/scriptedServer";

export async function run(): Promise<void> {
  const extension = vscode.extensions.getExtension("glossa.glossa");
  assert.ok(extension, "the extension is installed");
  await extension.activate();
  const commands = await vscode.commands.getCommands(true);
  for (const id of [
    "glossa.translateSelection",
    "glossa.setLanguagePair",
    "glossa.setApiKey",
    "glossa.importGlossary",
  ]) {
    assert.ok(commands.includes(id), `${id} is registered`);
  }

  const server = new ScriptedOpenAIServer([
    { when: { turn: 1 }, text: "<think>idiom</think><search>狗咬吕洞宾</search>" },
    { when: { turn: 2 }, text: "<translation>Don't bite the hand that helps you.</translation>" },
  ]);
  const endpoint = await server.start();
  const dir = mkdtempSync(join(tmpdir(), "glossa-electron-"));
  const config = vscode.workspace.getConfiguration("glossa");
  await config.update("policy.backend", "openai", vscode.ConfigurationTarget.Global);
  await config.update("policy.endpoint", endpoint, vscode.ConfigurationTarget.Global);
  await config.update("retrieval.indexFolder", join(dir, "index"), vscode.ConfigurationTarget.Global);
  try {
    const document = await vscode.workspace.openTextDocument({
      content: "你别狗咬吕洞宾，不识好人心。",
      language: "plaintext",
    });
    const editor = await vscode.window.showTextDocument(document);
    editor.selection = new vscode.Selection(0, 0, 0, document.lineAt(0).text.length);
    await vscode.commands.executeCommand("glossa.translateSelection");
    assert.equal(server.requests.length, 2, "two policy turns, the second with the evidence");
    assert.match(JSON.stringify(server.requests[1]?.body.messages), /<information>\[1\] 狗咬吕洞宾，不识好人心/);
    assert.ok(existsSync(join(dir, "index")), "the glossary index was built");
    assert.ok(readFileSync(join(dir, "index", "CURRENT"), "utf8").trim().length > 0);
  } finally {
    await server.stop();
  }
}
