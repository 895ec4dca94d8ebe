//! Suggestions for a node type that is not in the catalogue: the closest real types by name
//! and by description, so a model that invented `n8n-nodes-emailer.sendEmail` is pointed at
//! `n8n-nodes-base.emailSend`.
//!
//! The unknown name (package and short name) is cut into words (`sendEmail` → `send`,
//! `email`; `scraping_and_research` → `scraping`, `research`), stop-words and words shorter
//! than three letters are dropped, and every visible catalogue type is scored: a word equal to
//! one of the type's own name words counts most, a word inside its short name or display name
//! less, a word of its description or aliases least; the short name written as one word
//! (`openweathermap`) counts as a full match. Only real, visible types are suggested.

use crate::catalogue::{short_name, Catalogue, NodeTypeDescription};

/// Words that say nothing about what a node does.
const STOP_WORDS: [&str; 24] = [
    "and",
    "or",
    "the",
    "of",
    "to",
    "for",
    "with",
    "from",
    "into",
    "in",
    "on",
    "by",
    "a",
    "an",
    "n8n",
    "nodes",
    "node",
    "base",
    "langchain",
    "community",
    "custom",
    "api",
    "app",
    "get",
];

/// Splits a name into lowercase words at non-alphanumeric characters and camelCase humps.
pub fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn meaningful(name: &str) -> Vec<String> {
    let mut w: Vec<String> = words(name)
        .into_iter()
        .filter(|w| w.len() >= 3 && !STOP_WORDS.contains(&w.as_str()))
        .collect();
    w.dedup();
    w
}

fn score(desc: &NodeTypeDescription, asked: &[String], asked_joined: &str) -> u32 {
    let short = short_name(&desc.name).to_lowercase();
    let own: Vec<String> = words(short_name(&desc.name));
    let display = desc.display_name.to_lowercase();
    let description = desc.description.to_lowercase();
    let aliases: Vec<String> = desc
        .codex
        .as_ref()
        .and_then(|c| c.alias.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|a| a.to_lowercase())
        .collect();
    let mut s = 0;
    if !asked_joined.is_empty() && short == asked_joined {
        s += 40;
    }
    for w in asked {
        if own.iter().any(|o| o == w) {
            s += 10;
        } else if short.contains(w.as_str()) || display.contains(w.as_str()) {
            s += 6;
        } else if aliases.iter().any(|a| a.contains(w.as_str())) {
            s += 4;
        } else if description.contains(w.as_str()) {
            s += 2;
        }
    }
    s
}

/// The catalogue types closest to the unknown `node_type`, best first, at most `limit`.
pub fn suggest_types<'a>(
    catalogue: &'a Catalogue,
    node_type: &str,
    limit: usize,
) -> Vec<&'a NodeTypeDescription> {
    // Both the package part (`n8n-nodes-openweathermap`) and the short name carry meaning.
    let asked = meaningful(node_type);
    if asked.is_empty() {
        return Vec::new();
    }
    let joined: String = words(short_name(node_type)).concat();
    let package_joined: String = node_type
        .rsplit_once('.')
        .map(|(pkg, _)| meaningful(pkg).concat())
        .unwrap_or_default();
    let mut scored: Vec<(u32, &NodeTypeDescription)> = catalogue
        .iter()
        .filter(|d| !d.hidden.unwrap_or(false) && !catalogue.is_generated_tool(&d.name))
        .map(|d| {
            let mut s = score(d, &asked, &joined);
            if !package_joined.is_empty() && short_name(&d.name).to_lowercase() == package_joined {
                s += 30;
            }
            (s, d)
        })
        .filter(|(s, _)| *s >= 6)
        .collect();
    // Best score first; ties: the shorter (more general) name first, then by name.
    scored.sort_by(|(a, da), (b, db)| {
        b.cmp(a)
            .then(da.name.len().cmp(&db.name.len()))
            .then(da.name.cmp(&db.name))
    });
    let mut seen = std::collections::HashSet::new();
    scored
        .into_iter()
        .filter(|(_, d)| seen.insert(d.name.as_str()))
        .take(limit)
        .map(|(_, d)| d)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_meaningful_words() {
        assert_eq!(words("sendEmail"), ["send", "email"]);
        assert_eq!(
            words("n8n-nodes-openweathermap.httpRequest"),
            ["n8n", "nodes", "openweathermap", "http", "request"]
        );
        assert_eq!(
            meaningful("scraping_and_research"),
            ["scraping", "research"]
        );
        assert!(meaningful("n8n-nodes-base.and").is_empty());
    }
}
