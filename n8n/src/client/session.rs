//! A logged-in browser-like session, used only to read the instance's node types
//! (`GET /types/nodes.json`, which the public API does not offer): what n8n's own builder
//! reads, community nodes included.

use super::{error::message_of, normalize_base, ClientError};
use serde_json::{json, Value};
use std::time::Duration;

/// n8n ties its auth cookie to a browser id sent as a header; any stable value will do.
const BROWSER_ID: &str = "agentgraph-cli";

/// A session of one user on one instance.
pub struct Session {
    http: reqwest::Client,
    base: String,
    cookie: String,
}

impl Session {
    /// Logs in as `email` with `password` (`POST /rest/login`).
    pub async fn login(url: &str, email: &str, password: &str) -> Result<Self, ClientError> {
        let base = normalize_base(url)?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| ClientError::Config(format!("cannot build the HTTP client: {e}")))?;
        let login_url = format!("{base}/rest/login");
        let resp = http
            .post(&login_url)
            .header("browser-id", BROWSER_ID)
            .json(&json!({ "emailOrLdapLoginId": email, "password": password }))
            .send()
            .await
            .map_err(|e| super::transport_error(&login_url, &e, Duration::from_secs(60)))?;
        let status = resp.status();
        let cookie: Vec<String> = resp
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.split(';').next())
            .map(str::to_string)
            .collect();
        let body = resp.text().await.unwrap_or_default();
        if status.as_u16() == 401 {
            return Err(ClientError::Config(format!(
                "n8n at {base} refused the login of {email}: check the email and password ({})",
                message_of(&body)
            )));
        }
        if !status.is_success() || cookie.is_empty() {
            return Err(ClientError::Status {
                status: status.as_u16(),
                url: login_url,
                message: message_of(&body),
            });
        }
        Ok(Session {
            http,
            base,
            cookie: cookie.join("; "),
        })
    }

    /// The instance's node-type descriptions (`/types/nodes.json`): an array in the shape of
    /// the npm packages' `nodes.json`, names already prefixed with their package.
    pub async fn node_types(&self) -> Result<Value, ClientError> {
        let url = format!("{}/types/nodes.json", self.base);
        let resp = self
            .http
            .get(&url)
            .header("cookie", &self.cookie)
            .header("browser-id", BROWSER_ID)
            .send()
            .await
            .map_err(|e| super::transport_error(&url, &e, Duration::from_secs(60)))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| ClientError::Decode {
            url: url.clone(),
            reason: e.to_string(),
        })?;
        if !status.is_success() {
            return Err(ClientError::Status {
                status: status.as_u16(),
                url,
                message: message_of(&text),
            });
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| ClientError::Decode {
            url: url.clone(),
            reason: e.to_string(),
        })?;
        if !value.is_array() {
            return Err(ClientError::Decode {
                url,
                reason: "expected an array of node descriptions".into(),
            });
        }
        Ok(value)
    }
}
