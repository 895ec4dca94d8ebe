//! The canonical result strings the spec defines (`WORKLOADS.md` §2, mirrored from
//! `expected_checksums.py`), built from N alone, without running anything. The harness compares
//! the checksum of what a run actually returned against these (`checksum_ok`).

use crate::config::Workload;

/// `entry(i)` of the chain: `n{i}`, or `n{i}:` right-padded with `x` to `width` characters.
pub fn chain_entry(i: usize, width: Option<usize>) -> String {
    let name = format!("n{i}");
    match width {
        None => name,
        Some(w) => {
            let mut s = format!("{name}:{}", "x".repeat(w));
            s.truncate(w);
            s
        }
    }
}

fn chain_trace(n: usize, width: Option<usize>) -> String {
    (0..n)
        .map(|i| chain_entry(i, width))
        .collect::<Vec<_>>()
        .join(",")
}

/// The expected canonical string of `workload` at size `n`.
pub fn expected_canonical(workload: Workload, n: usize) -> String {
    match workload {
        Workload::Chain => format!("chain;count={n};trace={}", chain_trace(n, None)),
        Workload::Fanout => {
            let squares: Vec<u128> = (0..n as u128).map(|i| i * i).collect();
            let total: u128 = squares.iter().sum();
            let list: Vec<String> = squares.iter().map(u128::to_string).collect();
            format!("fanout;total={total};results={}", list.join(","))
        }
        Workload::Loop => {
            let mut msgs = vec!["human:human-0:start".to_string()];
            for i in 0..n {
                msgs.push(format!("ai:ai-{i}:call {i}"));
                msgs.push(format!("tool:tool-{i}:{}", i * i));
            }
            msgs.push("ai:ai-final:done".into());
            format!("loop;iterations={n};messages={}", msgs.join("|"))
        }
        Workload::Wide => {
            let mut items: Vec<(String, usize)> = (0..n).map(|i| (format!("k{i}"), i)).collect();
            items.sort();
            let out: Vec<String> = items.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            let total = n * n.saturating_sub(1) / 2;
            format!("wide;count={n};total={total};out={}", out.join(","))
        }
        Workload::Threads => {
            let trace = chain_trace(3, None);
            let runs: Vec<String> = (0..n).map(|t| format!("{t}:3:{trace}")).collect();
            format!("threads;threads={n};{}", runs.join("|"))
        }
        Workload::Resume => format!("resume;count={n};trace={}", chain_trace(n, Some(100))),
        Workload::ThreadsConcurrent => {
            let trace = chain_trace(3, None);
            let runs: Vec<String> = (0..n).map(|t| format!("{t}:3:{trace}")).collect();
            format!("threads-concurrent;threads={n};{}", runs.join("|"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::checksum_hex;

    #[test]
    fn spec_examples() {
        assert_eq!(
            expected_canonical(Workload::Chain, 3),
            "chain;count=3;trace=n0,n1,n2"
        );
        assert_eq!(
            expected_canonical(Workload::Fanout, 5),
            "fanout;total=30;results=0,1,4,9,16"
        );
        assert_eq!(
            expected_canonical(Workload::Loop, 2),
            "loop;iterations=2;messages=human:human-0:start|ai:ai-0:call 0|tool:tool-0:0|\
             ai:ai-1:call 1|tool:tool-1:1|ai:ai-final:done"
        );
        assert!(expected_canonical(Workload::Wide, 12)
            .starts_with("wide;count=12;total=66;out=k0:0,k1:1,k10:10,k11:11,k2:2,"));
        assert_eq!(chain_entry(7, Some(100)).len(), 100);
        assert!(chain_entry(7, Some(100)).starts_with("n7:xxx"));
    }

    #[test]
    fn oracle_matches_the_spec_table() {
        assert_eq!(
            checksum_hex(&expected_canonical(Workload::Chain, 1000)),
            "56f985bce3b91739"
        );
        assert_eq!(
            checksum_hex(&expected_canonical(Workload::Fanout, 10000)),
            "a93b2e22f1768f86"
        );
        assert_eq!(
            checksum_hex(&expected_canonical(Workload::Resume, 1000)),
            "0c034758990e6651"
        );
    }
}
