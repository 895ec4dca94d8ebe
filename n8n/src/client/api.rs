//! The public API v1 calls: workflows, executions, tags, credential schemas, and webhooks.

use super::{payload::workflow_for_n8n, ClientError, N8nClient, Target};
use reqwest::Method;
use serde_json::{json, Value};

/// Filters for [`N8nClient::list_workflows`].
#[derive(Debug, Clone, Default)]
pub struct WorkflowQuery {
    /// Only active (`Some(true)`) or inactive workflows.
    pub active: Option<bool>,
    /// Only workflows with this name.
    pub name: Option<String>,
    /// Only workflows carrying all these tags (names).
    pub tags: Vec<String>,
}

/// Filters for [`N8nClient::list_executions`].
#[derive(Debug, Clone, Default)]
pub struct ExecutionQuery {
    /// Only executions of this workflow.
    pub workflow_id: Option<String>,
    /// `success`, `error`, `waiting`, …
    pub status: Option<String>,
    /// Include each execution's run data.
    pub include_data: bool,
    /// At most this many (n8n's page size; default 100).
    pub limit: Option<u32>,
}

fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

impl N8nClient {
    /// Creates a workflow (inactive) from `workflow`, keeping only what n8n accepts
    /// ([`workflow_for_n8n`]). Returns n8n's workflow, with its `id`.
    pub async fn create_workflow(&self, workflow: &Value) -> Result<Value, ClientError> {
        let body = workflow_for_n8n(workflow);
        let target = Target {
            sent: Some(&body),
            ..Target::new("workflow", "")
        };
        self.request(Method::POST, "/workflows", Some(&body), target)
            .await
    }

    /// The workflow `id`.
    pub async fn get_workflow(&self, id: &str) -> Result<Value, ClientError> {
        let path = format!("/workflows/{}", enc(id));
        self.request(Method::GET, &path, None, Target::new("workflow", id))
            .await
    }

    /// Replaces workflow `id`'s name, nodes, connections and settings with `workflow`'s.
    pub async fn update_workflow(&self, id: &str, workflow: &Value) -> Result<Value, ClientError> {
        let body = workflow_for_n8n(workflow);
        let path = format!("/workflows/{}", enc(id));
        let target = Target {
            sent: Some(&body),
            ..Target::new("workflow", id)
        };
        self.request(Method::PUT, &path, Some(&body), target).await
    }

    /// Deletes workflow `id`; returns it as it was.
    pub async fn delete_workflow(&self, id: &str) -> Result<Value, ClientError> {
        let path = format!("/workflows/{}", enc(id));
        self.request(Method::DELETE, &path, None, Target::new("workflow", id))
            .await
    }

    /// Activates workflow `id` (its triggers start listening). n8n checks the workflow here
    /// (a trigger, node issues): a refusal is [`ClientError::Rejected`] with what `activation`.
    pub async fn activate_workflow(&self, id: &str) -> Result<Value, ClientError> {
        let path = format!("/workflows/{}/activate", enc(id));
        let target = Target {
            repeatable: true,
            ..Target::new("activation", id)
        };
        self.request(Method::POST, &path, None, target).await
    }

    /// Deactivates workflow `id`.
    pub async fn deactivate_workflow(&self, id: &str) -> Result<Value, ClientError> {
        let path = format!("/workflows/{}/deactivate", enc(id));
        let target = Target {
            repeatable: true,
            ..Target::new("workflow", id)
        };
        self.request(Method::POST, &path, None, target).await
    }

    /// Every workflow matching `query` (all pages).
    pub async fn list_workflows(&self, query: &WorkflowQuery) -> Result<Vec<Value>, ClientError> {
        let mut params = vec!["limit=250".to_string()];
        if let Some(active) = query.active {
            params.push(format!("active={active}"));
        }
        if let Some(name) = &query.name {
            params.push(format!("name={}", enc(name)));
        }
        if !query.tags.is_empty() {
            params.push(format!("tags={}", enc(&query.tags.join(","))));
        }
        self.paged("/workflows", params, usize::MAX).await
    }

    /// Executions matching `query`, newest first.
    pub async fn list_executions(&self, query: &ExecutionQuery) -> Result<Vec<Value>, ClientError> {
        let limit = query.limit.unwrap_or(100).clamp(1, 250);
        let mut params = vec![format!("limit={limit}")];
        if let Some(id) = &query.workflow_id {
            params.push(format!("workflowId={}", enc(id)));
        }
        if let Some(status) = &query.status {
            params.push(format!("status={}", enc(status)));
        }
        if query.include_data {
            params.push("includeData=true".into());
        }
        self.paged("/executions", params, limit as usize).await
    }

    /// Execution `id`, with its run data when `include_data`.
    pub async fn get_execution(&self, id: &str, include_data: bool) -> Result<Value, ClientError> {
        let path = format!("/executions/{}?includeData={include_data}", enc(id));
        self.request(Method::GET, &path, None, Target::new("execution", id))
            .await
    }

    /// Every tag.
    pub async fn list_tags(&self) -> Result<Vec<Value>, ClientError> {
        self.paged("/tags", vec!["limit=250".into()], usize::MAX)
            .await
    }

    /// Creates tag `name`; returns it with its id.
    pub async fn create_tag(&self, name: &str) -> Result<Value, ClientError> {
        let body = json!({ "name": name });
        self.request(Method::POST, "/tags", Some(&body), Target::new("tag", name))
            .await
    }

    /// The tags of workflow `id`.
    pub async fn workflow_tags(&self, id: &str) -> Result<Vec<Value>, ClientError> {
        let path = format!("/workflows/{}/tags", enc(id));
        let v = self
            .request(Method::GET, &path, None, Target::new("workflow", id))
            .await?;
        Ok(v.as_array().cloned().unwrap_or_default())
    }

    /// Sets workflow `id`'s tags to the tags with these ids.
    pub async fn set_workflow_tags(
        &self,
        id: &str,
        tag_ids: &[String],
    ) -> Result<Vec<Value>, ClientError> {
        let path = format!("/workflows/{}/tags", enc(id));
        let body: Value = tag_ids.iter().map(|t| json!({ "id": t })).collect();
        let target = Target {
            repeatable: true,
            ..Target::new("workflow", id)
        };
        let v = self
            .request(Method::PUT, &path, Some(&body), target)
            .await?;
        Ok(v.as_array().cloned().unwrap_or_default())
    }

    /// The JSON schema of credential type `type_name` (e.g. `slackApi`): the fields a user
    /// fills in n8n. No credential values are read.
    pub async fn credential_schema(&self, type_name: &str) -> Result<Value, ClientError> {
        let path = format!("/credentials/schema/{}", enc(type_name));
        self.request(
            Method::GET,
            &path,
            None,
            Target::new("credential type", type_name),
        )
        .await
    }

    /// Calls a production webhook (`/webhook/{path}`) with `method` and `body` (for GET and
    /// HEAD, the body's top-level scalars become the query); returns n8n's status and answer
    /// (JSON, or the text as a JSON string). Not retried: a webhook has effects.
    pub async fn call_webhook(
        &self,
        method: &str,
        path: &str,
        body: &Value,
    ) -> Result<(u16, Value), ClientError> {
        let url = format!("{}/webhook/{}", self.base, path.trim_start_matches('/'));
        let method = Method::from_bytes(method.to_ascii_uppercase().as_bytes())
            .map_err(|_| ClientError::Config(format!("{method:?} is not an HTTP method")))?;
        let mut req = self.http.request(method.clone(), &url);
        if method == Method::GET || method == Method::HEAD {
            let query: Vec<(String, String)> = body
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| !v.is_object() && !v.is_array())
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect();
            req = req.query(&query);
        } else {
            req = req.json(body);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| super::transport_error(&url, &e, self.retry.timeout))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(|e| ClientError::Decode {
            url: url.clone(),
            reason: e.to_string(),
        })?;
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Ok((status, value))
    }

    /// Follows n8n's `nextCursor` until `max` items or the last page.
    async fn paged(
        &self,
        path: &str,
        params: Vec<String>,
        max: usize,
    ) -> Result<Vec<Value>, ClientError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut q = params.clone();
            if let Some(c) = &cursor {
                q.push(format!("cursor={}", enc(c)));
            }
            let url = format!("{path}?{}", q.join("&"));
            let page = self
                .request(Method::GET, &url, None, Target::new("page", path))
                .await?;
            let data = page["data"].as_array().cloned().unwrap_or_default();
            items.extend(data);
            cursor = page["nextCursor"].as_str().map(str::to_string);
            if cursor.is_none() || items.len() >= max {
                items.truncate(max);
                return Ok(items);
            }
        }
    }
}
