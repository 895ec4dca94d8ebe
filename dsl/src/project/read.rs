//! Reading the files a project needs: regular files only, at most [`MAX_FILE_BYTES`], in UTF-8
//! (the first bad byte is reported with its line and column).

use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// The largest file a project reads (a graph, a module, a prompt).
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Reads `p` as text, refusing what is not a regular file, is larger than [`MAX_FILE_BYTES`] or
/// is not UTF-8.
pub fn read_text(p: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(p)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "not a regular file (a device, a pipe or a folder)",
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("larger than {} MB", MAX_FILE_BYTES / (1024 * 1024)),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let (line, column) = position(&bytes[..at]);
        Error::new(
            ErrorKind::InvalidData,
            format!("not valid UTF-8: a bad byte at line {line}, column {column}"),
        )
    })
}

/// The 1-based line and column (in characters) just after `before`, which is valid UTF-8.
fn position(before: &[u8]) -> (usize, usize) {
    let text = String::from_utf8_lossy(before);
    let line = text.matches('\n').count() + 1;
    let last = text.rsplit('\n').next().unwrap_or("");
    (line, last.chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_reported_with_line_and_column() {
        let dir = tempfile::tempdir().expect("temp dir");
        let p = dir.path().join("bad.ag");
        std::fs::write(&p, b"graph g {\n  n\xc3\xa9 \xff x\n}\n").expect("written");
        let e = read_text(&p).expect_err("refused").to_string();
        assert!(e.contains("line 2, column 6"), "{e}");
    }

    #[test]
    fn non_regular_and_huge_files_are_refused() {
        let e = read_text(Path::new("/dev/zero")).expect_err("refused");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let dir = tempfile::tempdir().expect("temp dir");
        let p = dir.path().join("big.txt");
        std::fs::write(&p, vec![b'a'; 10 * 1024 * 1024 + 1]).expect("written");
        let e = read_text(&p).expect_err("refused");
        assert!(e.to_string().contains("larger than 10 MB"), "{e}");
    }
}
