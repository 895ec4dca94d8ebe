//! [`HttpPolicy`]: what the tool may reach (allowed hosts, private addresses) and its limits,
//! with [`blocked_reason`], the classification of non-public addresses.

use agentgraph_agents::tools::ToolError;
use serde::Deserialize;
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// What the `http_request` tool may reach and how long it may take.
///
/// The tool's settings (`ToolContext::settings`, e.g. from
/// `ToolExecutorNode::settings("http_request", …)`) override these fields one by one:
/// `{"allow_private": bool, "allowed_hosts": [..], "max_redirects": n, "timeout_secs": n,
/// "max_timeout_secs": n, "max_response_bytes": n, "idempotency_key": bool}`.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpPolicy {
    /// Accept private, loopback, link-local, CGNAT and unspecified addresses (never the
    /// metadata endpoints). Default `false`.
    pub allow_private: bool,
    /// Hosts reachable whatever they resolve to: exact names or IP literals
    /// (case-insensitive), or `*.example.com` for every subdomain. Default empty.
    pub allowed_hosts: Vec<String>,
    /// Redirects followed before `TOO_MANY_REDIRECTS`. Default 5; 0 returns 3xx answers as they
    /// are.
    pub max_redirects: usize,
    /// Limit on the whole call (all hops and the body) when the call gives none. Default 30 s.
    pub timeout: Duration,
    /// Largest `timeout_secs` a call may ask for. Default 120 s.
    pub max_timeout: Duration,
    /// Bytes of response body kept; the rest is dropped with a note. Default 1 MiB.
    pub max_response_bytes: usize,
    /// Send every call's idempotency key (`ToolContext::idempotency_key`) as the
    /// `Idempotency-Key` header, so a service that deduplicates requests sees a call repeated
    /// after a crash as the same request. A call can also ask with `"idempotency_key": true`.
    /// Default `false`.
    pub idempotency_key: bool,
}

impl Default for HttpPolicy {
    fn default() -> Self {
        HttpPolicy {
            allow_private: false,
            allowed_hosts: Vec::new(),
            max_redirects: 5,
            timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(120),
            max_response_bytes: 1024 * 1024,
            idempotency_key: false,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicySettings {
    /// Added by the DSL to every settings object (the graph file's folder); unused here.
    #[serde(default, rename = "base_dir")]
    _base_dir: Option<String>,
    allow_private: Option<bool>,
    allowed_hosts: Option<Vec<String>>,
    max_redirects: Option<usize>,
    timeout_secs: Option<f64>,
    max_timeout_secs: Option<f64>,
    max_response_bytes: Option<usize>,
    idempotency_key: Option<bool>,
}

fn secs(v: f64, field: &str) -> Result<Duration, ToolError> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            ToolError::new(
                "INVALID_SETTINGS",
                format!(
                    "http_request setting `{field}` must be a positive number of seconds, got {v}"
                ),
            )
        })
}

impl HttpPolicy {
    /// This policy with the fields present in `settings` (a JSON object, or `null` for none)
    /// replaced. Unknown fields or wrong types give `INVALID_SETTINGS`.
    pub fn with_settings(&self, settings: &Value) -> Result<HttpPolicy, ToolError> {
        if settings.is_null() {
            return Ok(self.clone());
        }
        let s: PolicySettings = serde_json::from_value(settings.clone()).map_err(|e| {
            ToolError::new(
                "INVALID_SETTINGS",
                format!(
                    "invalid http_request settings: {e}; expected an object with allow_private, \
                     allowed_hosts, max_redirects, timeout_secs, max_timeout_secs, \
                     max_response_bytes, idempotency_key"
                ),
            )
        })?;
        let mut p = self.clone();
        if let Some(v) = s.allow_private {
            p.allow_private = v;
        }
        if let Some(v) = s.allowed_hosts {
            p.allowed_hosts = v;
        }
        if let Some(v) = s.max_redirects {
            p.max_redirects = v;
        }
        if let Some(v) = s.timeout_secs {
            p.timeout = secs(v, "timeout_secs")?;
        }
        if let Some(v) = s.max_timeout_secs {
            p.max_timeout = secs(v, "max_timeout_secs")?;
        }
        if let Some(v) = s.max_response_bytes {
            p.max_response_bytes = v;
        }
        if let Some(v) = s.idempotency_key {
            p.idempotency_key = v;
        }
        Ok(p)
    }

    /// Whether `host` (a name or IP literal, without port or brackets) is in
    /// [`allowed_hosts`](Self::allowed_hosts).
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        self.allowed_hosts.iter().any(|a| {
            let a = a
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim_end_matches('.')
                .to_ascii_lowercase();
            match a.strip_prefix("*.") {
                Some(suffix) => host.len() > suffix.len() && host.ends_with(&format!(".{suffix}")),
                None => host == a,
            }
        })
    }

    /// Why `ip` may not be reached under this policy; `None` when it may.
    pub fn refusal(&self, ip: IpAddr) -> Option<&'static str> {
        let reason = blocked_reason(ip)?;
        if self.allow_private && reason != METADATA {
            None
        } else {
            Some(reason)
        }
    }
}

const METADATA: &str = "a cloud metadata endpoint";

/// Why `ip` is not a public unicast address (private, loopback, link-local, metadata, …), or
/// `None` when it is. IPv6 addresses embedding an IPv4 address are judged by that address.
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    Some(match o {
        [169, 254, 169, 254] | [169, 254, 170, 2] => METADATA,
        [0, ..] => "an unspecified (\"this network\") address",
        [127, ..] => "a loopback address",
        [10, ..] => "a private address (10.0.0.0/8)",
        [172, b, ..] if (16..=31).contains(&b) => "a private address (172.16.0.0/12)",
        [192, 168, ..] => "a private address (192.168.0.0/16)",
        [169, 254, ..] => "a link-local address",
        [100, b, ..] if (64..=127).contains(&b) => "a carrier-grade NAT address (100.64.0.0/10)",
        [192, 0, 0, _] => "an IETF protocol address (192.0.0.0/24)",
        [198, b, ..] if b == 18 || b == 19 => "a benchmarking address (198.18.0.0/15)",
        [a, ..] if (224..=239).contains(&a) => "a multicast address",
        [a, ..] if a >= 240 => "a reserved or broadcast address",
        _ => return None,
    })
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        return Some(METADATA);
    }
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d).
    if s[..5] == [0, 0, 0, 0, 0] && (s[5] == 0xffff || s[5] == 0) {
        return v4_reason(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address too.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return v4_reason(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    if s[0] == 0x2002 {
        return v4_reason(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    match s[0] {
        x if x & 0xfe00 == 0xfc00 => Some("a unique-local (private) address (fc00::/7)"),
        x if x & 0xffc0 == 0xfe80 => Some("a link-local address (fe80::/10)"),
        x if x & 0xffc0 == 0xfec0 => Some("a site-local address (fec0::/10)"),
        x if x & 0xff00 == 0xff00 => Some("a multicast address"),
        _ => None,
    }
}
