//! The storage invariant: the value rebuilt from stored blobs equals the live value.

use super::*;

/// Runs `steps` of writes through `r` live (prepare, then apply), storing each step as the
/// engine does (a `Set` for value-stored reducers or a reset step, else a `Delta` of the
/// prepared writes linked to the previous blob) in a real checkpointer; then rebuilds the value
/// of every step's checkpoint from `channel_entries`, starting at `default`, and compares.
fn check_storage_invariant(
    r: &dyn Reducer,
    default: Option<Value>,
    steps: Vec<Vec<Value>>,
    resets: Vec<bool>,
) -> Result<(), TestCaseError> {
    let cp = MemoryCheckpointer::new();
    let mut live = default.clone();
    let mut version: Option<CheckpointId> = None;
    let mut history: Vec<(CheckpointId, Option<Value>)> = Vec::new();
    for (i, writes) in steps.into_iter().enumerate() {
        let mut stored = Vec::new();
        for w in writes {
            if let Some(prepared) = prepare_apply(r, &mut live, w) {
                // What the store keeps goes through JSON, as every backend does.
                stored.push(serde_json::from_str(&prepared.to_string()).unwrap());
            }
        }
        let reset = resets.get(i).copied().unwrap_or(false);
        let id = CheckpointId::new();
        let entry = match &live {
            None => None,
            Some(v) if reset || r.storage() == Storage::Value => Some(ChannelEntry::Set(v.clone())),
            Some(_) => Some(ChannelEntry::Delta {
                prev: version,
                writes: stored,
            }),
        };
        let mut c = Checkpoint {
            id,
            parent: history.last().map(|h| h.0),
            step: i as i64,
            source: Source::Loop,
            channel_versions: BTreeMap::new(),
            next: Vec::new(),
            barriers: BTreeMap::new(),
            input: None,
            schema_version: "props".into(),
            event_seq: 0,
            metadata: Map::new(),
        };
        let blobs: Vec<(String, ChannelEntry)> = match entry {
            Some(e) => {
                version = Some(id);
                vec![("ch".to_string(), e)]
            }
            None => Vec::new(),
        };
        if let Some(v) = version {
            c.channel_versions.insert("ch".into(), v);
        }
        futures::executor::block_on(cp.put("t", "", &c, &blobs)).unwrap();
        history.push((id, live.clone()));
    }
    for (id, want) in history {
        let c = futures::executor::block_on(cp.get("t", "", Some(id)))
            .unwrap()
            .unwrap()
            .checkpoint;
        let mut rebuilt = default.clone();
        if let Some(v) = c.channel_versions.get("ch") {
            for (_, e) in
                futures::executor::block_on(cp.channel_entries("t", "", "ch", *v)).unwrap()
            {
                match e {
                    ChannelEntry::Set(v) => rebuilt = Some(v),
                    ChannelEntry::Clear => rebuilt = None,
                    ChannelEntry::Delta { writes, .. } => {
                        for w in writes {
                            r.apply(&mut rebuilt, w).map_err(|e| {
                                TestCaseError::fail(format!("replaying a stored write failed: {e}"))
                            })?;
                        }
                    }
                }
            }
        }
        prop_assert_eq!(
            rebuilt,
            want,
            "{} value rebuilt from storage differs",
            r.name()
        );
    }
    Ok(())
}

fn steps_of<S: Strategy<Value = Value>>(
    w: S,
) -> impl Strategy<Value = (Vec<Vec<Value>>, Vec<bool>)> {
    (vec(vec(w, 0..4), 1..8), vec(prop::bool::weighted(0.2), 8))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn stored_append_equals_live(
        default in prop_oneof![Just(None), Just(Some(json!([])))],
        (steps, resets) in steps_of(append_write()),
    ) {
        check_storage_invariant(&Append, default, steps, resets)?;
    }

    #[test]
    fn stored_add_messages_equals_live(
        default in prop_oneof![Just(None), Just(Some(json!([])))],
        (steps, resets) in steps_of(msg_write()),
    ) {
        check_storage_invariant(&AddMessages, default, steps, resets)?;
    }

    #[test]
    fn stored_add_messages_additions_equal_live((steps, resets) in steps_of(msg_add_write())) {
        check_storage_invariant(&AddMessages, None, steps, resets)?;
    }

    #[test]
    fn stored_merge_equals_live((steps, resets) in steps_of(object().prop_map(Value::Object))) {
        check_storage_invariant(&Merge, Some(json!({})), steps, resets)?;
    }

    #[test]
    fn stored_numeric_and_replace_equal_live((steps, resets) in steps_of(number())) {
        for r in [&Numeric::sum() as &dyn Reducer, &Numeric::min(), &Numeric::max(), &Replace] {
            check_storage_invariant(r, Some(json!(0)), steps.clone(), resets.clone())?;
        }
    }

    #[test]
    fn stored_fn_reducer_equals_live((steps, resets) in steps_of("[a-z]{0,3}".prop_map(Value::from))) {
        check_storage_invariant(&FnReducer::new("concat", concat), None, steps, resets)?;
    }
}

/// Floats read back from a checkpoint equal the live value bit for bit (serde_json's
/// `float_roundtrip` feature; without it 130586.53403353193 comes back as 130586.53403353192).
#[test]
fn stored_floats_round_trip_exactly() {
    let config = Config {
        cases: 512,
        ..config()
    };
    proptest!(config, |(x in -1.0e6..1.0e6f64)| {
        check_storage_invariant(&Replace, None, vec![vec![json!(x)]], vec![false])?;
        check_storage_invariant(&Append, None, vec![vec![json!([x])], vec![json!(x)]], vec![false])?;
    });
}
