//! The per-hop gate: a URL's scheme and host, and the addresses its host resolves to, checked
//! against the [`HttpPolicy`].

use super::err;
use super::policy::HttpPolicy;
use agentgraph_agents::tools::ToolError;
use std::net::{IpAddr, SocketAddr};
use url::{Host, Url};

fn blocked(url: &Url, ip: IpAddr, reason: &str) -> ToolError {
    err(
        "BLOCKED_ADDRESS",
        format!(
            "refused to request {url}: its host resolves to {ip}, {reason}; only public \
             internet addresses may be requested (an operator can allow the host in the tool's \
             `allowed_hosts` setting)"
        ),
    )
}

/// Parses and checks the scheme and host of `raw`.
pub(super) fn parse_url(raw: &str) -> Result<Url, ToolError> {
    let url = Url::parse(raw.trim()).map_err(|e| {
        err(
            "INVALID_URL",
            format!(
                "`{raw}` is not a valid absolute URL ({e}); give e.g. https://example.com/path"
            ),
        )
    })?;
    check_scheme(&url)?;
    Ok(url)
}

pub(super) fn check_scheme(url: &Url) -> Result<(), ToolError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(err(
            "INVALID_URL",
            format!(
                "scheme `{}` is not allowed in {url}; only http and https URLs can be requested",
                url.scheme()
            ),
        ));
    }
    if url.host().is_none() {
        return Err(err("INVALID_URL", format!("{url} has no host")));
    }
    Ok(())
}

/// The addresses to pin for `url`'s host: `None` when the host is allowed by name (resolve
/// normally) or is an IP literal (nothing to resolve). Fails with `BLOCKED_ADDRESS` when any
/// resolved address is refused.
pub(super) async fn check_host(
    url: &Url,
    policy: &HttpPolicy,
) -> Result<Option<(String, Vec<SocketAddr>)>, ToolError> {
    let host_str = url.host_str().unwrap_or_default();
    if policy.host_allowed(host_str) {
        return Ok(None);
    }
    let port = url.port_or_known_default().unwrap_or(80);
    match url.host() {
        Some(Host::Ipv4(ip)) => match policy.refusal(IpAddr::V4(ip)) {
            Some(reason) => Err(blocked(url, IpAddr::V4(ip), reason)),
            None => Ok(None),
        },
        Some(Host::Ipv6(ip)) => match policy.refusal(IpAddr::V6(ip)) {
            Some(reason) => Err(blocked(url, IpAddr::V6(ip), reason)),
            None => Ok(None),
        },
        Some(Host::Domain(domain)) => {
            // `localhost.` and `localhost` name the same host; some resolvers know only the
            // latter.
            let lookup = domain.strip_suffix('.').unwrap_or(domain);
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((lookup, port))
                .await
                .map_err(|e| {
                    err(
                        "REQUEST_FAILED",
                        format!("cannot resolve host `{domain}`: {e}; check the URL"),
                    )
                })?
                .collect();
            if addrs.is_empty() {
                return Err(err(
                    "REQUEST_FAILED",
                    format!("host `{domain}` resolves to no address; check the URL"),
                ));
            }
            for a in &addrs {
                if let Some(reason) = policy.refusal(a.ip()) {
                    return Err(blocked(url, a.ip(), reason));
                }
            }
            Ok(Some((domain.to_string(), addrs)))
        }
        None => Err(err("INVALID_URL", format!("{url} has no host"))),
    }
}
