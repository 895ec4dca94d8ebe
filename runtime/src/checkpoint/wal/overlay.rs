//! Batches logged but not yet merged into the database: ordered tables of puts and deletes
//! (tombstones) that reads consult before the database, and the merged scan over both.

use std::collections::BTreeMap;
use std::iter::Peekable;

/// Keys set (`Some`) or removed (`None`) by logged batches; the newest batch wins.
pub(super) type Table = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// Records a batch in `table` (deletes first, then puts, as the stores apply them); returns
/// the bytes it added, for the merge threshold.
pub(super) fn record(
    table: &mut Table,
    puts: Vec<(Vec<u8>, Vec<u8>)>,
    deletes: Vec<Vec<u8>>,
) -> usize {
    let mut bytes = 0;
    for k in deletes {
        bytes += k.len() + 16;
        table.insert(k, None);
    }
    for (k, v) in puts {
        bytes += k.len() + v.len() + 16;
        table.insert(k, Some(v));
    }
    bytes
}

/// Copies the entries of `table` in `[start, end)` into `out`, over what `out` holds.
pub(super) fn copy_range(table: &Table, start: &[u8], end: &[u8], out: &mut Table) {
    for (k, v) in table.range::<[u8], _>((
        std::ops::Bound::Included(start),
        std::ops::Bound::Excluded(end),
    )) {
        out.insert(k.clone(), v.clone());
    }
}

/// Visits, in key order (or reverse), the union of `overlay` and `base` where the overlay wins
/// and its tombstones hide the base's key, until `visit` returns false. `base` yields the
/// database's entries of the same range in the same direction.
pub(super) fn merged_scan<K, V, E>(
    overlay: &Table,
    base: impl Iterator<Item = Result<(K, V), E>>,
    reverse: bool,
    visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) -> Result<(), E>
where
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    type Entries<'a> = Box<dyn Iterator<Item = (&'a Vec<u8>, &'a Option<Vec<u8>>)> + 'a>;
    let entries: Entries<'_> = if reverse {
        Box::new(overlay.iter().rev())
    } else {
        Box::new(overlay.iter())
    };
    let mut top = entries.peekable();
    let mut base: Peekable<_> = base.peekable();
    // `first(a, b)`: whether key `a` comes before key `b` in the scan's direction.
    let first = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
    loop {
        let next_base = match base.peek() {
            Some(Ok((k, _))) => Some(k.as_ref()),
            Some(Err(_)) => {
                if let Some(Err(e)) = base.next() {
                    return Err(e);
                }
                None
            }
            None => None,
        };
        let take_top = match (top.peek(), next_base) {
            (None, None) => return Ok(()),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((tk, _)), Some(bk)) => {
                if tk.as_slice() == bk {
                    // Same key: the overlay is newer; drop the base's entry.
                    base.next();
                    true
                } else {
                    first(tk, bk)
                }
            }
        };
        if take_top {
            if let Some((k, Some(v))) = top.next() {
                if !visit(k, v) {
                    return Ok(());
                }
            }
        } else if let Some(Ok((k, v))) = base.next() {
            if !visit(k.as_ref(), v.as_ref()) {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Row = Result<(Vec<u8>, Vec<u8>), ()>;

    fn scan(overlay: &Table, base: &[(&str, &str)], reverse: bool) -> Vec<String> {
        let mut rows: Vec<Row> = base
            .iter()
            .map(|(k, v)| Ok((k.as_bytes().to_vec(), v.as_bytes().to_vec())))
            .collect();
        if reverse {
            rows.reverse();
        }
        let mut out = Vec::new();
        merged_scan(overlay, rows.into_iter(), reverse, &mut |k, v| {
            out.push(format!(
                "{}={}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(v)
            ));
            true
        })
        .expect("scan");
        out
    }

    #[test]
    fn the_overlay_wins_and_hides_deleted_keys_in_both_directions() {
        let mut t = Table::new();
        record(
            &mut t,
            vec![
                (b"b".to_vec(), b"new".to_vec()),
                (b"d".to_vec(), b"4".to_vec()),
            ],
            vec![b"c".to_vec(), b"z".to_vec()],
        );
        let base = [("a", "1"), ("b", "old"), ("c", "3"), ("e", "5")];
        assert_eq!(scan(&t, &base, false), ["a=1", "b=new", "d=4", "e=5"]);
        assert_eq!(scan(&t, &base, true), ["e=5", "d=4", "b=new", "a=1"]);
    }

    #[test]
    fn a_visitor_stops_the_scan() {
        let t = Table::new();
        let mut seen = 0;
        let base = vec![
            Ok::<_, ()>((b"a".to_vec(), b"1".to_vec())),
            Ok((b"b".to_vec(), b"2".to_vec())),
        ];
        merged_scan(&t, base.into_iter(), false, &mut |_, _| {
            seen += 1;
            false
        })
        .expect("scan");
        assert_eq!(seen, 1);
    }
}
