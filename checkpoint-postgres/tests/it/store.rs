//! The PostgreSQL store against the in-memory one, through the key-value interface the shared
//! checkpoint logic uses: ordered and reverse range scans across page boundaries, early stops,
//! keys with 0x00/0xff bytes, and atomic batches with the same last-put-wins outcome.

use crate::common;

use agentgraph_postgres::{PostgresCheckpointer, PostgresOptions};
use agentgraph_runtime::checkpoint::{AsyncKvStore, MemoryStore};

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

async fn scan(
    s: &dyn AsyncKvStore,
    start: &[u8],
    end: &[u8],
    reverse: bool,
    stop_after: usize,
) -> Pairs {
    let mut out = Vec::new();
    s.scan_async(start, end, reverse, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        out.len() < stop_after
    })
    .await
    .expect("scan");
    out
}

/// A small deterministic generator (no extra dependency).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn key(&mut self) -> Vec<u8> {
        let len = 1 + self.next() as usize % 4;
        (0..len)
            .map(|_| [0u8, 1, b'a', b'b', 0xfe, 0xff][self.next() as usize % 6])
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_matches_memory_store() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let cp = PostgresCheckpointer::connect_with(&url, PostgresOptions::default().schema(&*schema))
        .await
        .expect("connect");
    let pg = cp.store();
    let mem = MemoryStore::default();
    let mut rng = Lcg(7);
    for round in 0..6 {
        let puts: Pairs = (0..300)
            .map(|i| (rng.key(), format!("{round}-{i}").into_bytes()))
            .collect();
        let deletes: Vec<Vec<u8>> = (0..40).map(|_| rng.key()).collect();
        pg.apply_async(puts.clone(), deletes.clone())
            .await
            .expect("pg apply");
        mem.apply_async(puts, deletes).await.expect("mem apply");
        for _ in 0..20 {
            let (a, b) = (rng.key(), rng.key());
            let (start, end) = if a <= b { (a, b) } else { (b, a) };
            for reverse in [false, true] {
                for stop in [1, 17, 70, usize::MAX] {
                    assert_eq!(
                        scan(pg, &start, &end, reverse, stop).await,
                        scan(&mem, &start, &end, reverse, stop).await,
                        "scan [{start:?}, {end:?}) reverse={reverse} stop={stop}"
                    );
                }
            }
        }
        for _ in 0..20 {
            let k = rng.key();
            assert_eq!(
                pg.get_async(&k).await.expect("get"),
                mem.get_async(&k).await.expect("get"),
                "get {k:?}"
            );
        }
    }
    let all = scan(&mem, &[], &[0xff; 8], false, usize::MAX).await;
    assert!(all.len() > 100, "the scans crossed page boundaries");
    assert_eq!(scan(pg, &[], &[0xff; 8], false, usize::MAX).await, all);
    common::drop_schema(&url, &schema).await;
}
