//! Batches logged but not yet merged into the database: ordered tables of puts and deletes
//! (tombstones) that reads consult before the database, and the merged scan over both.

use std::collections::BTreeMap;
use std::iter::Peekable;

/// The newest state of a key in a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Slot {
    /// Set to this value.
    Put(Vec<u8>),
    /// Set to this value, and known to exist nowhere below this table (its writer said the
    /// key is new): a delete in the same table forgets it instead of leaving a tombstone.
    New(Vec<u8>),
    /// Removed: hides any value below.
    Deleted,
}

impl Slot {
    /// The value, `None` for a tombstone.
    pub(super) fn value(&self) -> Option<&Vec<u8>> {
        match self {
            Slot::Put(v) | Slot::New(v) => Some(v),
            Slot::Deleted => None,
        }
    }
}

/// Keys set or removed by logged batches; the newest batch wins.
pub(super) type Table = BTreeMap<Vec<u8>, Slot>;

/// Records a batch in `table` (deletes first, then puts, as the stores apply them); the first
/// `new` puts are keys that exist nowhere yet. Returns the bytes it added, for the merge
/// threshold.
///
/// A key put as new and deleted before the table is merged leaves nothing: the server's events
/// are put one by one and deleted when the run's end packs them, which would otherwise cost
/// the merge one database lookup per event.
pub(super) fn record(
    table: &mut Table,
    puts: Vec<(Vec<u8>, Vec<u8>)>,
    new: usize,
    deletes: Vec<Vec<u8>>,
) -> usize {
    let mut bytes = 0;
    for k in deletes {
        bytes += k.len() + 16;
        if let Some(Slot::New(_)) = table.get(&k) {
            table.remove(&k);
        } else {
            table.insert(k, Slot::Deleted);
        }
    }
    for (i, (k, v)) in puts.into_iter().enumerate() {
        bytes += k.len() + v.len() + 16;
        let slot = match table.get(&k) {
            // Still nowhere below this table, whatever the writer says now.
            Some(Slot::New(_)) => Slot::New(v),
            // The table held it as possibly below (a plain put, a tombstone): it stays so.
            Some(_) => Slot::Put(v),
            None if i < new => Slot::New(v),
            None => Slot::Put(v),
        };
        table.insert(k, slot);
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
    type Entries<'a> = Box<dyn Iterator<Item = (&'a Vec<u8>, &'a Slot)> + 'a>;
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
            if let Some((k, slot)) = top.next() {
                if let Some(v) = slot.value() {
                    if !visit(k, v) {
                        return Ok(());
                    }
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
            0,
            vec![b"c".to_vec(), b"z".to_vec()],
        );
        let base = [("a", "1"), ("b", "old"), ("c", "3"), ("e", "5")];
        assert_eq!(scan(&t, &base, false), ["a=1", "b=new", "d=4", "e=5"]);
        assert_eq!(scan(&t, &base, true), ["e=5", "d=4", "b=new", "a=1"]);
    }

    #[test]
    fn a_new_key_deleted_in_its_table_leaves_no_tombstone_and_others_do() {
        let mut t = Table::new();
        let kv = |k: &str, v: &str| (k.as_bytes().to_vec(), v.as_bytes().to_vec());
        // "e1" is new; "n" is not (it may be below).
        record(&mut t, vec![kv("e1", "event"), kv("n", "2")], 1, vec![]);
        assert_eq!(t.get(&b"e1"[..]), Some(&Slot::New(b"event".to_vec())));
        assert_eq!(t.get(&b"n"[..]), Some(&Slot::Put(b"2".to_vec())));
        // Put again without the mark: still new (it never left this table).
        record(&mut t, vec![kv("e1", "again")], 0, vec![]);
        assert_eq!(t.get(&b"e1"[..]), Some(&Slot::New(b"again".to_vec())));
        record(
            &mut t,
            vec![kv("pack", "e1")],
            1,
            vec![b"e1".to_vec(), b"n".to_vec()],
        );
        assert_eq!(t.get(&b"e1"[..]), None, "forgotten, not a tombstone");
        assert_eq!(t.get(&b"n"[..]), Some(&Slot::Deleted));
        assert_eq!(t.len(), 2);
        // Over a tombstone, a put said to be new is not trusted: something may be below.
        record(&mut t, vec![kv("n", "3")], 1, vec![]);
        assert_eq!(t.get(&b"n"[..]), Some(&Slot::Put(b"3".to_vec())));
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
