// Starts `agentgraph lsp` for .ag files. Plain JavaScript: nothing to compile.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate() {
  const command = vscode.workspace.getConfiguration("agentgraph").get("server.path") || "agentgraph";
  const server = { command, args: ["lsp"] };
  client = new LanguageClient(
    "agentgraph",
    "agentgraph language server",
    { run: server, debug: server },
    { documentSelector: [{ scheme: "file", language: "agentgraph" }] }
  );
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
