//! The one key layout of every backend: each namespace element followed by `0x1f`, then
//! `0x1e`, then the key. Byte order is namespace order then key order, and the items under a
//! namespace prefix are one contiguous range starting with [`encode_prefix`].

use super::StoreError;

const ELEMENT_END: char = '\u{1f}';
const NAMESPACE_END: char = '\u{1e}';

/// Refuses namespaces no backend can key: empty, or with an empty element or an element
/// holding one of the separator characters `\u{1e}`, `\u{1f}`.
pub fn validate_namespace(namespace: &[String]) -> Result<(), StoreError> {
    let bad = |reason| {
        Err(StoreError::InvalidNamespace {
            namespace: namespace.to_vec(),
            reason,
        })
    };
    if namespace.is_empty() {
        return bad("a namespace has at least one element");
    }
    if namespace.iter().any(String::is_empty) {
        return bad("namespace elements are not empty");
    }
    if namespace
        .iter()
        .any(|e| e.contains(ELEMENT_END) || e.contains(NAMESPACE_END))
    {
        return bad("namespace elements hold no \\u{1e} or \\u{1f} characters");
    }
    Ok(())
}

/// The text every key under `prefix` starts with (empty for the empty prefix).
pub fn encode_prefix(prefix: &[String]) -> String {
    let mut out = String::with_capacity(prefix.iter().map(|e| e.len() + 1).sum());
    for e in prefix {
        out.push_str(e);
        out.push(ELEMENT_END);
    }
    out
}

/// The key of `namespace`/`key`.
pub fn encode_key(namespace: &[String], key: &str) -> Vec<u8> {
    let mut out = encode_prefix(namespace);
    out.push(NAMESPACE_END);
    out.push_str(key);
    out.into_bytes()
}

/// The namespace and key of an encoded key.
pub fn decode_key(bytes: &[u8]) -> Result<(Vec<String>, String), StoreError> {
    let corrupt = |reason: &str| StoreError::Corrupt {
        key: String::from_utf8_lossy(bytes).into_owned(),
        reason: reason.to_string(),
    };
    let text = std::str::from_utf8(bytes).map_err(|_| corrupt("not UTF-8"))?;
    let (ns, key) = text
        .split_once(NAMESPACE_END)
        .ok_or_else(|| corrupt("no namespace end"))?;
    let ns = ns
        .strip_suffix(ELEMENT_END)
        .ok_or_else(|| corrupt("no element end"))?;
    Ok((
        ns.split(ELEMENT_END).map(str::to_string).collect(),
        key.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ns;

    #[test]
    fn keys_round_trip_and_prefixes_do_not_match_longer_elements() {
        let k = encode_key(&ns(&["users", "u1"]), "profile");
        assert_eq!(
            decode_key(&k).expect("decodes"),
            (ns(&["users", "u1"]), "profile".to_string())
        );
        assert!(k.starts_with(encode_prefix(&ns(&["users"])).as_bytes()));
        assert!(!k.starts_with(encode_prefix(&ns(&["user"])).as_bytes()));
    }

    #[test]
    fn bad_namespaces_are_refused() {
        assert!(validate_namespace(&[]).is_err());
        assert!(validate_namespace(&ns(&["a", ""])).is_err());
        assert!(validate_namespace(&ns(&["a\u{1f}b"])).is_err());
        assert!(validate_namespace(&ns(&["a", "b"])).is_ok());
    }
}

#[cfg(test)]
mod order {
    use super::*;
    use crate::store::ns;

    /// Byte order of keys is namespace order (element by element), then key order.
    #[test]
    fn keys_sort_by_namespace_then_key() {
        let mut keys = [
            encode_key(&ns(&["docs", "b"]), "1"),
            encode_key(&ns(&["docsx"]), "0"),
            encode_key(&ns(&["docs"]), "z"),
            encode_key(&ns(&["docs", "a"]), "2"),
            encode_key(&ns(&["docs", "a"]), "10"),
        ];
        keys.sort();
        let decoded: Vec<(Vec<String>, String)> = keys
            .iter()
            .map(|k| decode_key(k).expect("decodes"))
            .collect();
        let want = [
            (ns(&["docs"]), "z"),
            (ns(&["docs", "a"]), "10"),
            (ns(&["docs", "a"]), "2"),
            (ns(&["docs", "b"]), "1"),
            (ns(&["docsx"]), "0"),
        ];
        let want: Vec<(Vec<String>, String)> =
            want.into_iter().map(|(n, k)| (n, k.to_string())).collect();
        assert_eq!(decoded, want);
    }
}
