//! The assistant's markdown for a terminal: headings, emphasis, code, lists, links and rules,
//! parsed with `pulldown-cmark` (CommonMark, the dialect models write) and drawn with ANSI
//! styles. Without colour (`NO_COLOR`) the structure stays (bullets, numbers, indented code,
//! inline code in backticks) and the emphasis markers go.

use nu_ansi_term::{Color, Style};
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// `md` drawn for a terminal; ends with one newline.
pub fn render(md: &str, color: bool) -> String {
    let mut r = Renderer {
        out: String::new(),
        color,
        strong: 0,
        emphasis: 0,
        heading: None,
        code_block: false,
        lists: Vec::new(),
        quote: 0,
        link: None,
    };
    for ev in Parser::new_ext(md, Options::ENABLE_STRIKETHROUGH) {
        r.event(ev);
    }
    let mut out = r.out.trim_end().to_string();
    out.push('\n');
    out
}

struct Renderer {
    out: String,
    color: bool,
    strong: usize,
    emphasis: usize,
    heading: Option<HeadingLevel>,
    code_block: bool,
    /// Open lists: the next number of an ordered one, `None` for bullets.
    lists: Vec<Option<u64>>,
    quote: usize,
    /// The open link: its target and where its text starts in `out`.
    link: Option<(String, usize)>,
}

impl Renderer {
    fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                if self.code_block {
                    self.code_lines(&t);
                } else {
                    let style = self.style();
                    self.push_styled(&t, style);
                }
            }
            Event::Code(t) => {
                if self.color {
                    self.push_styled(&t, Style::new().fg(Color::Cyan));
                } else {
                    self.out.push('`');
                    self.out.push_str(&t);
                    self.out.push('`');
                }
            }
            Event::SoftBreak | Event::HardBreak => self.newline(),
            Event::Rule => {
                self.block();
                let rule = "─".repeat(40);
                self.push_styled(&rule, Style::new().dimmed());
            }
            Event::Html(t) | Event::InlineHtml(t) => self.out.push_str(&t),
            Event::TaskListMarker(done) => self.out.push_str(if done { "[x] " } else { "[ ] " }),
            Event::FootnoteReference(t) => self.out.push_str(&format!("[{t}]")),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            // A paragraph inside a list item stays on the item's line.
            Tag::Paragraph if self.out.ends_with(' ') => {}
            Tag::Paragraph => self.block(),
            Tag::Heading { level, .. } => {
                self.block();
                self.heading = Some(level);
            }
            Tag::BlockQuote(_) => {
                self.block();
                self.quote += 1;
                self.out.push_str("│ ");
            }
            Tag::CodeBlock(kind) => {
                self.block();
                self.code_block = true;
                if let CodeBlockKind::Fenced(lang) = kind {
                    if !lang.is_empty() {
                        let label = format!("  {lang}");
                        self.push_styled(&label, Style::new().dimmed());
                        self.out.push('\n');
                    }
                }
            }
            Tag::List(first) => {
                if self.lists.is_empty() {
                    self.block();
                }
                self.lists.push(first);
            }
            Tag::Item => {
                if !self.out.is_empty() && !self.out.ends_with('\n') {
                    self.out.push('\n');
                }
                let depth = self.lists.len().saturating_sub(1);
                self.out.push_str(&"  ".repeat(depth));
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                self.out.push_str(&marker);
            }
            Tag::Emphasis => self.emphasis += 1,
            Tag::Strong => self.strong += 1,
            Tag::Link { dest_url, .. } => self.link = Some((dest_url.to_string(), self.out.len())),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => self.heading = None,
            TagEnd::BlockQuote(_) => self.quote = self.quote.saturating_sub(1),
            TagEnd::CodeBlock => self.code_block = false,
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::Emphasis => self.emphasis = self.emphasis.saturating_sub(1),
            TagEnd::Strong => self.strong = self.strong.saturating_sub(1),
            TagEnd::Link => {
                if let Some((url, at)) = self.link.take() {
                    let text = strip_ansi(&self.out[at..]);
                    if text != url && !url.is_empty() {
                        let shown = format!(" ({url})");
                        self.push_styled(&shown, Style::new().dimmed());
                    }
                }
            }
            _ => {}
        }
    }

    /// The style of running text.
    fn style(&self) -> Style {
        let mut s = Style::new();
        if let Some(level) = self.heading {
            s = s.bold();
            if level == HeadingLevel::H1 || level == HeadingLevel::H2 {
                s = s.underline().fg(Color::Blue);
            }
        }
        if self.strong > 0 {
            s = s.bold();
        }
        if self.emphasis > 0 || self.quote > 0 {
            s = s.italic();
        }
        if self.link.is_some() {
            s = s.underline();
        }
        s
    }

    fn push_styled(&mut self, text: &str, style: Style) {
        if self.color && style != Style::new() {
            self.out.push_str(&style.paint(text).to_string());
        } else {
            self.out.push_str(text);
        }
    }

    /// A code block's text: each line indented, dimmed.
    fn code_lines(&mut self, text: &str) {
        for line in text.lines() {
            self.out.push_str("    ");
            let style = Style::new().fg(Color::Yellow);
            self.push_styled(line, style);
            self.out.push('\n');
        }
    }

    /// A line break inside a block, keeping list and quote indentation.
    fn newline(&mut self) {
        self.out.push('\n');
        if !self.lists.is_empty() {
            self.out.push_str(&"  ".repeat(self.lists.len()));
        }
        if self.quote > 0 {
            self.out.push_str("│ ");
        }
    }

    /// Starts a block: a blank line after whatever came before.
    fn block(&mut self) {
        if self.out.is_empty() {
            return;
        }
        while !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }
}

/// The width text is wrapped to on this terminal: its columns, at most 100.
pub fn terminal_width() -> usize {
    crossterm::terminal::size()
        .map(|(cols, _)| usize::from(cols))
        .unwrap_or(100)
        .clamp(20, 100)
}

/// Each line of `text` wrapped at `width` visible columns (ANSI styles take none) between
/// words; a continuation line is indented like the text after the line's indent and marker
/// (`  • `, `1. `, `│ `).
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split('\n') {
        if !out.is_empty() {
            out.push('\n');
        }
        let visible = strip_ansi(line);
        if visible.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent = continuation_indent(&visible);
        let mut col = 0;
        for (i, word) in line.split(' ').enumerate() {
            let w = strip_ansi(word).chars().count();
            if i > 0 {
                if col + 1 + w > width && col > indent {
                    out.push('\n');
                    out.push_str(&" ".repeat(indent));
                    col = indent;
                } else {
                    out.push(' ');
                    col += 1;
                }
            }
            out.push_str(word);
            col += w;
        }
    }
    out
}

/// The columns of a line's indent and list or quote marker.
fn continuation_indent(line: &str) -> usize {
    let lead = line.chars().take_while(|c| *c == ' ').count();
    let rest: String = line.chars().skip(lead).collect();
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let marker = if rest.starts_with("• ") || rest.starts_with("│ ") {
        2
    } else if digits > 0 && rest[digits..].starts_with(". ") {
        digits + 2
    } else {
        0
    };
    lead + marker
}

/// `s` without ANSI escape sequences.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = "I built **Weekly Email Summary**: every Monday.\n\n\
**⚙️ How to Setup**\n1. Connect `Gmail`.\n2. Add your key.\n\n- one\n- two\n\n\
```json\n{\"a\": 1}\n```\n\nSee [the docs](https://docs.n8n.io).";

    #[test]
    fn without_colour_the_structure_stays_and_markers_go() {
        let text = render(ANSWER, false);
        assert_eq!(
            text,
            "I built Weekly Email Summary: every Monday.\n\n\
⚙️ How to Setup\n\n1. Connect `Gmail`.\n2. Add your key.\n\n• one\n• two\n\n  json\n    \
{\"a\": 1}\n\nSee the docs (https://docs.n8n.io).\n"
        );
    }

    #[test]
    fn with_colour_bold_is_an_ansi_style_and_text_is_unchanged() {
        let text = render("say **hi** and `x`", true);
        assert!(text.contains("\u{1b}[1mhi\u{1b}[0m"), "{text:?}");
        assert!(text.contains("\u{1b}[36mx\u{1b}[0m"), "{text:?}");
        assert_eq!(strip_ansi(&text), "say hi and x\n");
    }

    #[test]
    fn long_lines_wrap_between_words_under_their_marker() {
        assert_eq!(
            wrap("1. one two three four", 13),
            "1. one two\n   three four"
        );
        let styled = format!("{} b c", Style::new().bold().paint("aaaa"));
        assert_eq!(strip_ansi(&wrap(&styled, 6)), "aaaa b\nc");
    }

    #[test]
    fn nested_lists_are_indented() {
        let text = render("- a\n  - b\n- c", false);
        assert_eq!(text, "• a\n  • b\n• c\n");
    }
}
