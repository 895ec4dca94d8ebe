//! Byte offsets (the dsl's spans) to and from LSP positions, whose `character` counts UTF-16
//! code units.

use agentgraph_dsl::ast::Span;
use lsp_types::{Position, Range};

/// The line starts of one text, for converting positions both ways.
pub struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Indexes `text`.
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    /// The position of byte `offset` (clamped to the text, and back to a char boundary).
    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.starts.get(line).copied().unwrap_or(0);
        let character: usize = self.text[start..offset].chars().map(char::len_utf16).sum();
        Position::new(to_u32(line), to_u32(character))
    }

    /// The byte offset of `pos`; a position past the end of its line is the line's end, one
    /// past the last line the end of the text.
    pub fn offset(&self, pos: Position) -> usize {
        let Some(&start) = self.starts.get(pos.line as usize) else {
            return self.text.len();
        };
        let end = self
            .starts
            .get(pos.line as usize + 1)
            .map_or(self.text.len(), |&e| e.saturating_sub(1));
        let mut units = 0usize;
        for (i, c) in self.text[start..end].char_indices() {
            if units >= pos.character as usize {
                return start + i;
            }
            units += c.len_utf16();
        }
        end
    }

    /// The range of `span`.
    pub fn range(&self, span: Span) -> Range {
        Range::new(self.position(span.start), self.position(span.end))
    }

    /// The range of the whole text.
    pub fn whole(&self) -> Range {
        Range::new(Position::new(0, 0), self.position(self.text.len()))
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_ascii_lines_count_utf16_units() {
        let text = "a\nprompt p = \"héllo 😀\" x\nz";
        let idx = LineIndex::new(text);
        let x = text.find(" x").unwrap_or(0) + 1;
        // `prompt p = "` is 12 units, `héllo ` 6, the emoji 2, `"` and a space 2.
        assert_eq!(idx.position(x), Position::new(1, 22));
        assert_eq!(idx.offset(Position::new(1, 22)), x);
        assert_eq!(idx.offset(Position::new(2, 0)), text.len() - 1);
        assert_eq!(
            idx.offset(Position::new(1, 999)),
            text.find("\nz").unwrap_or(0)
        );
        assert_eq!(idx.offset(Position::new(9, 0)), text.len());
        assert_eq!(idx.position(text.len()), Position::new(2, 1));
    }
}
