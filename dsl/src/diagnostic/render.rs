//! Rendering a diagnostic like rustc, with miette.

use super::{line_col, Diagnostic, Severity};
use crate::ast::Span;
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};
use std::fmt;

struct Report<'a> {
    d: &'a Diagnostic,
    src: NamedSource<String>,
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.d.message)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.d.message)
    }
}

impl std::error::Error for Report<'_> {}

fn source_span(s: Span) -> SourceSpan {
    SourceSpan::new(s.start.into(), s.end.saturating_sub(s.start))
}

impl miette::Diagnostic for Report<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.d.code))
    }
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.d.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }
    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.d
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.src)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let primary = LabeledSpan::new_primary_with_span(
            (!self.d.label.is_empty()).then(|| self.d.label.clone()),
            source_span(self.d.span),
        );
        let rest = self
            .d
            .labels
            .iter()
            .map(|l| LabeledSpan::new_with_span(Some(l.message.clone()), source_span(l.span)));
        Some(Box::new(std::iter::once(primary).chain(rest)))
    }
}

/// Renders a diagnostic like rustc, with the source excerpt. `color` adds ANSI colours; `width`
/// wraps the text.
pub fn render(d: &Diagnostic, src: &str, color: bool, width: usize) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(width)
        .with_links(false);
    let report = Report {
        d,
        src: NamedSource::new(d.file.clone(), src.to_string()),
    };
    let mut out = String::new();
    if handler.render_report(&mut out, &report).is_err() {
        let (line, col) = line_col(src, d.span.start);
        out = format!(
            "{}[{}]: {} at {}:{}:{}\n",
            severity_word(d.severity),
            d.code,
            d.message,
            d.file,
            line,
            col
        );
    }
    out
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}
