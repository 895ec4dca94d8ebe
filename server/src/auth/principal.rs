//! Who a request acts for: a user of a tenant with scopes, and the namespace that keeps what
//! it owns (threads, memory sessions) apart from everyone else's.

use serde::{Deserialize, Serialize};

/// The scope that sees and acts on every thread.
pub const ADMIN_SCOPE: &str = "admin";

/// The tenant of a key or token that names none.
pub const DEFAULT_TENANT: &str = "default";

/// An authenticated caller: `(user, tenant, scopes)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// The user (an API key's user, a JWT's `sub`).
    pub user: String,
    /// The tenant (an API key's tenant, a JWT's `tenant` claim; [`DEFAULT_TENANT`] when absent).
    pub tenant: String,
    /// Scopes; [`ADMIN_SCOPE`] sees every thread.
    pub scopes: Vec<String>,
}

impl Principal {
    /// A principal of `tenant` (empty: [`DEFAULT_TENANT`]).
    pub fn new(user: impl Into<String>, tenant: impl Into<String>, scopes: Vec<String>) -> Self {
        let tenant = tenant.into();
        Principal {
            user: user.into(),
            tenant: if tenant.is_empty() {
                DEFAULT_TENANT.to_string()
            } else {
                tenant
            },
            scopes,
        }
    }

    /// Whether it holds the `admin` scope.
    pub fn is_admin(&self) -> bool {
        self.scopes.iter().any(|s| s == ADMIN_SCOPE)
    }

    /// Its namespace, `tenant/user` with `%` and `/` escaped in both parts, so two different
    /// principals never share one: the owner recorded beside a thread and the prefix of its
    /// memory sessions.
    pub fn namespace(&self) -> String {
        format!("{}/{}", escape(&self.tenant), escape(&self.user))
    }

    /// `session` confined to this principal's namespace (`namespace/session`).
    pub fn scoped(&self, session: &str) -> String {
        format!("{}/{session}", self.namespace())
    }
}

fn escape(s: &str) -> String {
    s.replace('%', "%25").replace('/', "%2F")
}

/// Who a request acts for: the [`Principal`] when authentication is on, `Anonymous` when the
/// server runs without it (everything is visible then, as before authentication existed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// No authentication configured.
    Anonymous,
    /// An authenticated principal.
    Principal(Principal),
}

impl Caller {
    /// The principal, if authenticated.
    pub fn principal(&self) -> Option<&Principal> {
        match self {
            Caller::Principal(p) => Some(p),
            Caller::Anonymous => None,
        }
    }

    /// Whether it may see every thread (no authentication, or the `admin` scope).
    pub fn sees_all(&self) -> bool {
        self.principal().is_none_or(Principal::is_admin)
    }

    /// Whether it may see a thread owned by `owner` (a namespace; `None`: nobody's).
    pub fn may_see(&self, owner: Option<&str>) -> bool {
        match self.principal() {
            None => true,
            Some(p) => p.is_admin() || owner == Some(p.namespace().as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_never_collide() {
        let a = Principal::new("a/b", "t", vec![]);
        let b = Principal::new("b", "t/a", vec![]);
        assert_ne!(a.namespace(), b.namespace());
        assert_eq!(a.namespace(), "t/a%2Fb");
        assert_eq!(Principal::new("u", "", vec![]).tenant, DEFAULT_TENANT);
    }

    #[test]
    fn only_owner_and_admin_see_a_thread() {
        let a = Principal::new("a", "t", vec![]);
        let admin = Caller::Principal(Principal::new("root", "t", vec!["admin".into()]));
        let owner = a.namespace();
        let b = Caller::Principal(Principal::new("b", "t", vec![]));
        assert!(Caller::Principal(a).may_see(Some(&owner)));
        assert!(!b.may_see(Some(&owner)));
        assert!(!b.may_see(None));
        assert!(admin.may_see(Some(&owner)));
        assert!(Caller::Anonymous.may_see(None));
    }
}
