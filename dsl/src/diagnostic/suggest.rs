//! `did you mean` suggestions for misspelt names.

/// The closest of `candidates` to `name`, if close enough to suggest.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (c, strsim::jaro_winkler(name, c)))
        .filter(|(c, score)| *score > 0.8 || (c.len() > 3 && strsim::levenshtein(name, c) <= 2))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// `did you mean `x`?` or a list of what exists.
pub fn suggestion<'a>(
    what: &str,
    name: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
) -> String {
    match did_you_mean(name, candidates.clone()) {
        Some(s) => format!("did you mean `{s}`?"),
        None => {
            let all: Vec<&str> = candidates.into_iter().collect();
            if all.is_empty() {
                format!("there are no {what} to choose from")
            } else {
                format!("defined {what}: {}", all.join(", "))
            }
        }
    }
}
