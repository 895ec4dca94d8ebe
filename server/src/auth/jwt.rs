//! Bearer JWTs: HS256 with a shared secret and RS256 with public keys from a JWKS file,
//! verified with the `jsonwebtoken` crate. `exp` is required and checked, `nbf` checked when
//! present (30 s of leeway for clock skew); `aud`/`iss` when configured. Claims map to a
//! [`Principal`]: `sub` → user, `tenant` → tenant, `scope` (space-separated) or `scopes` (a list
//! or a space-separated string) → scopes.

use super::principal::Principal;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Why the JWT settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum JwtConfigError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The JWKS file is not a JWK set.
    #[error("{path} is not a JWK set: {source}")]
    Jwks {
        /// The file.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
    /// A JWK in the set is not a usable RSA key.
    #[error("{path}: key {kid}: {source}")]
    Key {
        /// The file.
        path: PathBuf,
        /// The key's `kid`.
        kid: String,
        /// The error.
        source: jsonwebtoken::errors::Error,
    },
    /// The HS256 secret is empty.
    #[error("the JWT secret is empty")]
    EmptySecret,
}

/// How bearer JWTs are verified. Build it with [`JwtConfig::default`] and the `with_*` methods.
#[derive(Clone, Default)]
pub struct JwtConfig {
    hs256: Option<DecodingKey>,
    /// RS256 keys with their `kid` (`None` when the JWK has none).
    rs256: Vec<(Option<String>, DecodingKey)>,
    audience: Option<String>,
    issuer: Option<String>,
}

impl std::fmt::Debug for JwtConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtConfig")
            .field("hs256", &self.hs256.is_some())
            .field("rs256_keys", &self.rs256.len())
            .field("audience", &self.audience)
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// The claims a token's principal is made of.
#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scopes: Option<Scopes>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Scopes {
    List(Vec<String>),
    Spaced(String),
}

impl JwtConfig {
    /// Accepts HS256 tokens signed with `secret`.
    pub fn with_hs256_secret(mut self, secret: &[u8]) -> Result<Self, JwtConfigError> {
        if secret.is_empty() {
            return Err(JwtConfigError::EmptySecret);
        }
        self.hs256 = Some(DecodingKey::from_secret(secret));
        Ok(self)
    }

    /// Accepts HS256 tokens signed with the secret in `file` (surrounding whitespace dropped).
    pub fn with_hs256_secret_file(self, file: &Path) -> Result<Self, JwtConfigError> {
        let text = std::fs::read(file).map_err(|source| JwtConfigError::Io {
            path: file.to_path_buf(),
            source,
        })?;
        self.with_hs256_secret(text.trim_ascii())
    }

    /// Accepts RS256 tokens signed by a key of the JWK set in `file` (picked by the token's
    /// `kid`; a token without `kid` is tried against every key).
    pub fn with_jwks_file(mut self, file: &Path) -> Result<Self, JwtConfigError> {
        let text = std::fs::read(file).map_err(|source| JwtConfigError::Io {
            path: file.to_path_buf(),
            source,
        })?;
        let set: JwkSet = serde_json::from_slice(&text).map_err(|source| JwtConfigError::Jwks {
            path: file.to_path_buf(),
            source,
        })?;
        for jwk in &set.keys {
            let kid = jwk.common.key_id.clone();
            let key = DecodingKey::from_jwk(jwk).map_err(|source| JwtConfigError::Key {
                path: file.to_path_buf(),
                kid: kid.clone().unwrap_or_default(),
                source,
            })?;
            self.rs256.push((kid, key));
        }
        Ok(self)
    }

    /// Requires tokens' `aud` to be `audience`.
    pub fn with_audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// Requires tokens' `iss` to be `issuer`.
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// What it accepts, for a start-up line: `JWT (HS256, RS256 with 2 keys)`.
    pub fn describe(&self) -> String {
        let mut algs = Vec::new();
        if self.hs256.is_some() {
            algs.push("HS256".to_string());
        }
        if !self.rs256.is_empty() {
            algs.push(format!("RS256 with {} key(s)", self.rs256.len()));
        }
        format!("JWT ({})", algs.join(", "))
    }

    /// Whether any key is configured.
    pub fn is_configured(&self) -> bool {
        self.hs256.is_some() || !self.rs256.is_empty()
    }

    /// Whether `token` looks like a JWT (three dot-separated parts) rather than an API key.
    pub fn looks_like_jwt(token: &str) -> bool {
        token.split('.').count() == 3
    }

    /// The principal of a valid token; `None` for a bad signature, an expired or not yet
    /// valid token, an unknown key or algorithm, or missing claims.
    pub fn verify(&self, token: &str) -> Option<Principal> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        let keys: Vec<&DecodingKey> = match header.alg {
            Algorithm::HS256 => self.hs256.iter().collect(),
            Algorithm::RS256 => self
                .rs256
                .iter()
                .filter(|(kid, _)| header.kid.is_none() || *kid == header.kid)
                .map(|(_, k)| k)
                .collect(),
            _ => Vec::new(),
        };
        let mut validation = Validation::new(header.alg);
        validation.leeway = 30;
        validation.validate_nbf = true;
        match &self.audience {
            Some(a) => validation.set_audience(&[a]),
            None => validation.validate_aud = false,
        }
        if let Some(i) = &self.issuer {
            validation.set_issuer(&[i]);
        }
        let claims = keys.into_iter().find_map(|key| {
            jsonwebtoken::decode::<Claims>(token, key, &validation)
                .ok()
                .map(|d| d.claims)
        })?;
        if claims.sub.is_empty() {
            return None;
        }
        let scopes = match (claims.scopes, claims.scope) {
            (Some(Scopes::List(l)), _) => l,
            (Some(Scopes::Spaced(s)), _) | (None, Some(s)) => {
                s.split_whitespace().map(str::to_string).collect()
            }
            (None, None) => Vec::new(),
        };
        Some(Principal::new(
            claims.sub,
            claims.tenant.unwrap_or_default(),
            scopes,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{encode, EncodingKey, Header};
    use serde_json::json;

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    fn hs(claims: serde_json::Value, secret: &[u8]) -> String {
        encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(secret),
        )
        .expect("encode")
    }

    #[test]
    fn hs256_claims_map_to_a_principal_and_times_are_checked() {
        let cfg = JwtConfig::default()
            .with_hs256_secret(b"s3cret")
            .expect("secret");
        let t = hs(
            json!({"sub": "ann", "tenant": "acme", "scope": "read admin", "exp": now() + 600}),
            b"s3cret",
        );
        let p = cfg.verify(&t).expect("valid");
        assert_eq!((p.user.as_str(), p.tenant.as_str()), ("ann", "acme"));
        assert!(p.is_admin());
        let t = hs(
            json!({"sub": "bo", "scopes": ["x"], "exp": now() + 600}),
            b"s3cret",
        );
        assert_eq!(cfg.verify(&t).expect("valid").scopes, ["x"]);
        let expired = hs(json!({"sub": "ann", "exp": now() - 3600}), b"s3cret");
        assert_eq!(cfg.verify(&expired), None);
        let early = hs(
            json!({"sub": "ann", "exp": now() + 7200, "nbf": now() + 3600}),
            b"s3cret",
        );
        assert_eq!(cfg.verify(&early), None);
        let no_exp = hs(json!({"sub": "ann"}), b"s3cret");
        assert_eq!(cfg.verify(&no_exp), None);
        let wrong = hs(json!({"sub": "ann", "exp": now() + 600}), b"other");
        assert_eq!(cfg.verify(&wrong), None);
        // No key configured at all.
        assert_eq!(JwtConfig::default().verify(&wrong), None);
        let t = hs(
            json!({"sub": "cy", "scopes": "a b", "aud": "api", "iss": "idp", "exp": now() + 600}),
            b"s3cret",
        );
        assert_eq!(cfg.verify(&t).expect("aud not required").scopes, ["a", "b"]);
        let strict = cfg.clone().with_audience("api").with_issuer("idp");
        assert!(strict.verify(&t).is_some());
        assert_eq!(cfg.clone().with_audience("other").verify(&t), None);
        assert_eq!(cfg.clone().with_issuer("other").verify(&t), None);
    }
}
