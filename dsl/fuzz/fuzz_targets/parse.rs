//! Feeds arbitrary UTF-8 to the parser and the checker: nothing may panic, and every diagnostic
//! must point inside the text, on character boundaries.
//!
//! `cargo +nightly fuzz run parse` from `dsl/` (see docs/dsl-diagnostics.md). The checker runs on
//! the parsed tree directly, so that `use "…"` and `file(…)` in generated inputs never touch
//! the disk.

#![no_main]

use agentgraph_dsl::check::check_graph;
use agentgraph_dsl::{diagnostic, parse, Diagnostic, Registry};
use libfuzzer_sys::fuzz_target;

fn assert_located(text: &str, d: &Diagnostic) {
    for s in std::iter::once(d.span).chain(d.labels.iter().map(|l| l.span)) {
        assert!(
            s.start <= s.end && s.end <= text.len(),
            "{} {:?} outside the text",
            d.code,
            s
        );
        assert!(
            text.is_char_boundary(s.start) && text.is_char_boundary(s.end),
            "{} {:?} splits a character",
            d.code,
            s
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse(text);
    let mut diags = parsed.diagnostics;
    if let Some(file) = &parsed.file {
        let reg = Registry::default();
        for g in &file.graphs {
            check_graph(g, &file.uses, &reg, &mut diags);
        }
    }
    for d in &diags {
        assert_located(text, d);
        let _ = diagnostic::to_json(d, text);
        let _ = diagnostic::render(d, text, false, 80);
    }
});
