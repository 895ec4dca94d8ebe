//! The server loop: open documents, requests answered one at a time, diagnostics published
//! after every change.

use crate::diagnostics::{self, file_key};
use crate::features;
use crate::LspError;
use agentgraph_dsl::Registry;
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
    Notification as _, PublishDiagnostics,
};
use lsp_types::request::{Completion, Formatting, GotoDefinition, HoverRequest, Request as _};
use lsp_types::{
    CompletionOptions, GotoDefinitionResponse, OneOf, PublishDiagnosticsParams, ServerCapabilities,
    TextDocumentPositionParams, TextDocumentSyncCapability, TextDocumentSyncKind, Url,
};
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// An open document.
struct Doc {
    text: String,
    /// Its file, when the URI is a `file:` one.
    path: Option<PathBuf>,
}

/// The server's state.
struct Server<'c> {
    conn: &'c Connection,
    reg: Registry,
    docs: BTreeMap<Url, Doc>,
}

/// What the server offers.
pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(lsp_types::HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![":".into(), ".".into()]),
            ..CompletionOptions::default()
        }),
        document_formatting_provider: Some(OneOf::Left(true)),
        ..ServerCapabilities::default()
    }
}

/// Runs the initialize handshake, then serves until `exit` (or the client goes away).
pub fn serve(conn: &Connection, reg: Registry) -> Result<(), LspError> {
    let caps = serde_json::to_value(capabilities())?;
    conn.initialize(caps)?;
    let mut server = Server {
        conn,
        reg,
        docs: BTreeMap::new(),
    };
    for msg in &conn.receiver {
        match msg {
            Message::Request(req) => {
                if conn.handle_shutdown(&req)? {
                    return Ok(());
                }
                let resp = server.request(req);
                server.send(Message::Response(resp))?;
            }
            Message::Notification(n) if n.method == "exit" => return Ok(()),
            Message::Notification(n) => server.notification(n)?,
            Message::Response(_) => {}
        }
    }
    Ok(())
}

fn params<P: DeserializeOwned>(value: serde_json::Value) -> Result<P, String> {
    serde_json::from_value(value).map_err(|e| format!("invalid params: {e}"))
}

impl Server<'_> {
    fn send(&self, msg: Message) -> Result<(), LspError> {
        self.conn.sender.send(msg).map_err(|_| LspError::Closed)
    }

    fn request(&self, req: Request) -> Response {
        let id = req.id.clone();
        match self.answer(req) {
            Ok(Ok(value)) => Response::new_ok(id, value),
            Ok(Err(message)) => Response::new_err(id, ErrorCode::InvalidParams as i32, message),
            Err(method) => Response::new_err(
                id,
                ErrorCode::MethodNotFound as i32,
                format!("unsupported request {method}"),
            ),
        }
    }

    /// `Err(method)` for a request the server does not know; `Ok(Err(_))` for bad params.
    fn answer(&self, req: Request) -> Result<Result<serde_json::Value, String>, String> {
        let at = |p: &TextDocumentPositionParams| {
            self.docs.get(&p.text_document.uri).map(|d| (d, p.position))
        };
        let result =
            match req.method.as_str() {
                HoverRequest::METHOD => params::<lsp_types::HoverParams>(req.params).map(|p| {
                    let found = at(&p.text_document_position_params)
                        .and_then(|(d, pos)| features::hover(&self.reg, &d.text, pos));
                    serde_json::to_value(found)
                }),
                GotoDefinition::METHOD => params::<lsp_types::GotoDefinitionParams>(req.params)
                    .map(|p| {
                        let tdp = &p.text_document_position_params;
                        let found = at(tdp).and_then(|(d, pos)| {
                            let uri = &tdp.text_document.uri;
                            features::definition(&self.reg, uri, d.path.as_deref(), &d.text, pos)
                        });
                        serde_json::to_value(found.map(GotoDefinitionResponse::Scalar))
                    }),
                Completion::METHOD => params::<lsp_types::CompletionParams>(req.params).map(|p| {
                    let items = at(&p.text_document_position)
                        .map(|(d, pos)| features::completion(&self.reg, &d.text, pos))
                        .unwrap_or_default();
                    serde_json::to_value(items)
                }),
                Formatting::METHOD => params::<lsp_types::DocumentFormattingParams>(req.params)
                    .map(|p| {
                        let edits = self
                            .docs
                            .get(&p.text_document.uri)
                            .map(|d| features::formatting(&d.text))
                            .unwrap_or_default();
                        serde_json::to_value(edits)
                    }),
                _ => return Err(req.method),
            };
        Ok(result.and_then(|v| v.map_err(|e| e.to_string())))
    }

    fn notification(&mut self, n: Notification) -> Result<(), LspError> {
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                if let Ok(p) = params::<lsp_types::DidOpenTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    let path = uri.to_file_path().ok();
                    self.docs.insert(
                        uri,
                        Doc {
                            text: p.text_document.text,
                            path,
                        },
                    );
                    self.publish_all()?;
                }
            }
            DidChangeTextDocument::METHOD => {
                if let Ok(p) = params::<lsp_types::DidChangeTextDocumentParams>(n.params) {
                    // Full sync: the last change holds the whole text.
                    let text = p.content_changes.into_iter().last().map(|c| c.text);
                    if let (Some(doc), Some(text)) = (self.docs.get_mut(&p.text_document.uri), text)
                    {
                        doc.text = text;
                        self.publish_all()?;
                    }
                }
            }
            DidSaveTextDocument::METHOD => self.publish_all()?,
            DidCloseTextDocument::METHOD => {
                if let Ok(p) = params::<lsp_types::DidCloseTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    self.docs.remove(&uri);
                    self.publish(uri, Vec::new())?;
                    self.publish_all()?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn publish(&self, uri: Url, diagnostics: Vec<lsp_types::Diagnostic>) -> Result<(), LspError> {
        let params = PublishDiagnosticsParams::new(uri, diagnostics, None);
        let n = Notification::new(PublishDiagnostics::METHOD.to_string(), params);
        self.send(Message::Notification(n))
    }

    /// Checks every open document (one may `use` another that changed) and publishes.
    fn publish_all(&self) -> Result<(), LspError> {
        let open: HashMap<PathBuf, String> = self
            .docs
            .values()
            .filter_map(|d| Some((file_key(d.path.as_ref()?), d.text.clone())))
            .collect();
        for (uri, doc) in &self.docs {
            let path = doc
                .path
                .clone()
                .unwrap_or_else(|| PathBuf::from(uri.path()));
            let ds = diagnostics::check(&self.reg, uri, &path, &doc.text, &open);
            self.publish(uri.clone(), ds)?;
        }
        Ok(())
    }
}
