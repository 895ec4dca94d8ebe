//! Chat memory stores: buffer, window, sled and Redis.
//!
//! The Redis tests start their own `redis-server` on a Unix socket (no persistence) and skip,
//! printing why, when the binary is not on PATH.

use agentgraph_agents::memory::{
    window_start, BufferMemory, ChatMemory, RedisMemory, SledMemory, WindowMemory,
};
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

fn human(id: &str) -> Value {
    json!({"type": "human", "id": id, "content": format!("hi {id}")})
}

fn ai(id: &str) -> Value {
    json!({"type": "ai", "id": id, "content": format!("answer {id}")})
}

fn ai_calls(id: &str, calls: &[&str]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|c| json!({"id": c, "name": "lookup", "args": {}}))
        .collect();
    json!({"type": "ai", "id": id, "content": "", "tool_calls": calls})
}

fn tool(id: &str, call: &str) -> Value {
    json!({"type": "tool", "id": id, "tool_call_id": call, "content": "42"})
}

fn ids(messages: &[Value]) -> Vec<&str> {
    messages.iter().map(|m| m["id"].as_str().unwrap()).collect()
}

/// Round trip, order, clear and isolation: the contract every store must meet.
async fn contract(mem: &dyn ChatMemory) {
    assert!(mem.load("a").await.unwrap().is_empty());
    mem.append("a", &[human("1"), ai("2")]).await.unwrap();
    mem.append("b", &[human("x")]).await.unwrap();
    mem.append("a", &[human("3")]).await.unwrap();
    mem.append("a", &[]).await.unwrap();
    assert_eq!(
        mem.load("a").await.unwrap(),
        vec![human("1"), ai("2"), human("3")]
    );
    assert_eq!(mem.load("b").await.unwrap(), vec![human("x")]);
    // A session id that is a prefix of another must not see its messages.
    mem.append("ab", &[human("y")]).await.unwrap();
    assert_eq!(ids(&mem.load("a").await.unwrap()), ["1", "2", "3"]);
    mem.clear("a").await.unwrap();
    assert!(mem.load("a").await.unwrap().is_empty());
    assert_eq!(ids(&mem.load("b").await.unwrap()), ["x"]);
    assert_eq!(ids(&mem.load("ab").await.unwrap()), ["y"]);
    mem.append("a", &[ai("4")]).await.unwrap();
    assert_eq!(ids(&mem.load("a").await.unwrap()), ["4"]);
}

#[tokio::test]
async fn buffer_contract_and_sessions() {
    let mem = BufferMemory::new();
    contract(&mem).await;
    assert_eq!(mem.sessions(), ["a", "ab", "b"]);
}

#[tokio::test]
async fn window_keeps_last_n() {
    let mem = WindowMemory::new(BufferMemory::new(), 3);
    contract(&mem).await;
    let msgs: Vec<Value> = (0..6).map(|i| human(&i.to_string())).collect();
    mem.append("w", &msgs).await.unwrap();
    assert_eq!(ids(&mem.load("w").await.unwrap()), ["3", "4", "5"]);
    // The underlying store keeps everything.
    assert_eq!(mem.inner().load("w").await.unwrap().len(), 6);
    let zero = WindowMemory::new(BufferMemory::new(), 0);
    zero.append("w", &msgs).await.unwrap();
    assert!(zero.load("w").await.unwrap().is_empty());
}

#[tokio::test]
async fn window_never_starts_on_orphan_tool_result() {
    let history = vec![
        human("h1"),
        ai_calls("a1", &["c1", "c2"]),
        tool("t1", "c1"),
        tool("t2", "c2"),
        ai("a2"),
        human("h2"),
    ];
    let store = Arc::new(BufferMemory::new());
    store.append("s", &history).await.unwrap();
    // Cuts that keep the call together with its results, or leave both out.
    for (max, want) in [
        (6, vec!["h1", "a1", "t1", "t2", "a2", "h2"]),
        (5, vec!["a1", "t1", "t2", "a2", "h2"]),
        (2, vec!["a2", "h2"]),
        (1, vec!["h2"]),
    ] {
        let w = WindowMemory::new(store.clone(), max);
        assert_eq!(ids(&w.load("s").await.unwrap()), want, "max {max}");
    }
    // Cuts inside the group drop the orphaned results instead of starting on them.
    for max in [3, 4] {
        let w = WindowMemory::new(store.clone(), max);
        assert_eq!(ids(&w.load("s").await.unwrap()), ["a2", "h2"], "max {max}");
    }
    // `role`-style messages are recognised too; a trailing group with no room is dropped.
    let roles = vec![
        json!({"role": "user", "id": "u", "content": "q"}),
        json!({"role": "assistant", "id": "a", "content": "", "tool_calls": [{"id": "c"}]}),
        json!({"role": "tool", "id": "t", "tool_call_id": "c", "content": "r"}),
    ];
    assert_eq!(window_start(&roles, 1), 3);
    assert_eq!(window_start(&roles, 2), 1);
    assert_eq!(window_start(&roles, 10), 0);
}

#[tokio::test]
async fn sled_contract_and_persistence_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mem = SledMemory::open(dir.path()).unwrap();
        contract(&mem).await;
        mem.append("p", &[human("1"), ai_calls("2", &["c"]), tool("3", "c")])
            .await
            .unwrap();
    }
    let mem = SledMemory::open(dir.path()).unwrap();
    assert_eq!(ids(&mem.load("p").await.unwrap()), ["1", "2", "3"]);
    assert_eq!(ids(&mem.load("a").await.unwrap()), ["4"]);
    assert_eq!(ids(&mem.load("b").await.unwrap()), ["x"]);
    // Appends after reopening come after the old messages.
    mem.append("p", &[ai("4")]).await.unwrap();
    assert_eq!(ids(&mem.load("p").await.unwrap()), ["1", "2", "3", "4"]);
    assert_eq!(mem.load("p").await.unwrap()[1], ai_calls("2", &["c"]));
    // A window over sled: the cut [3 (tool), 4] would start on an orphan result.
    let w = WindowMemory::new(mem.clone(), 2);
    assert_eq!(ids(&w.load("p").await.unwrap()), ["4"]);
    let w = WindowMemory::new(mem.clone(), 3);
    assert_eq!(ids(&w.load("p").await.unwrap()), ["2", "3", "4"]);
}

#[tokio::test]
async fn sled_open_twice_in_one_process_shares_the_database() {
    // What live reload does: compile the graph again while the old version still holds its
    // memory. sled locks the folder, so a second plain open would fail with WouldBlock.
    let dir = tempfile::tempdir().unwrap();
    let first = SledMemory::open(dir.path()).unwrap();
    let second = SledMemory::open(dir.path().join(".")).unwrap();
    first.append("s", &[human("1")]).await.unwrap();
    assert_eq!(ids(&second.load("s").await.unwrap()), ["1"]);
    // Closed when the last user goes: another open (or another process) gets the folder.
    drop((first, second));
    let again = SledMemory::open(dir.path()).unwrap();
    assert_eq!(ids(&again.load("s").await.unwrap()), ["1"]);
}

#[tokio::test]
async fn sled_shares_a_db_in_its_own_tree() {
    let db = sled::Config::new().temporary(true).open().unwrap();
    db.insert(b"unrelated", b"v".as_slice()).unwrap();
    let mem = SledMemory::from_db(db.clone()).unwrap();
    mem.append("s", &[human("1")]).await.unwrap();
    assert_eq!(db.len(), 1);
    assert_eq!(ids(&mem.load("s").await.unwrap()), ["1"]);
}

/// A `redis-server` child listening only on a Unix socket in its own temporary directory
/// (no TCP port, so parallel tests cannot race for one), killed on drop.
struct RedisServer {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a server and waits until it answers PING, or `None` (with a printed reason) when
/// `redis-server` is absent.
async fn redis_server() -> Option<RedisServer> {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("redis.sock");
    let child = Command::new("redis-server")
        .args(["--port", "0", "--unixsocket"])
        .arg(&socket)
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("skipping Redis tests: redis-server not found");
            return None;
        }
        Err(e) => panic!("starting redis-server: {e}"),
    };
    let mut server = RedisServer {
        child,
        url: format!("unix://{}", socket.display()),
        _dir: dir,
    };
    let client = redis::Client::open(server.url.as_str()).unwrap();
    let mut last_error = String::from("socket never appeared");
    for _ in 0..500 {
        if let Ok(Some(status)) = server.child.try_wait() {
            let mut stderr = String::new();
            if let Some(mut err) = server.child.stderr.take() {
                use std::io::Read;
                let _ = err.read_to_string(&mut stderr);
            }
            panic!("redis-server exited ({status}) before answering: {stderr}");
        }
        if socket.exists() {
            match client.get_multiplexed_tokio_connection().await {
                Ok(mut conn) => match redis::cmd("PING").query_async::<String>(&mut conn).await {
                    Ok(_) => return Some(server),
                    Err(e) => last_error = e.to_string(),
                },
                Err(e) => last_error = e.to_string(),
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("redis-server did not answer PING within 5 s: {last_error}");
}

#[tokio::test]
async fn redis_contract_and_key_prefix() {
    let Some(server) = redis_server().await else {
        return;
    };
    let mem = RedisMemory::connect(&server.url)
        .await
        .unwrap()
        .with_prefix("test:mem:");
    contract(&mem).await;
    assert_eq!(mem.key("a"), "test:mem:a");
    // The list lives at `{prefix}{session}`, one JSON message per element.
    let client = redis::Client::open(server.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_tokio_connection().await.unwrap();
    let raw: Vec<String> = redis::cmd("LRANGE")
        .arg("test:mem:b")
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(raw.len(), 1);
    assert_eq!(serde_json::from_str::<Value>(&raw[0]).unwrap(), human("x"));
    // Another prefix on the same server is another namespace.
    let other = RedisMemory::connect(&server.url).await.unwrap();
    assert_eq!(other.key("b"), "agent:memory:b");
    assert!(other.load("b").await.unwrap().is_empty());
    other.append("b", &[ai("o")]).await.unwrap();
    assert_eq!(ids(&mem.load("b").await.unwrap()), ["x"]);
    // No TTL: the key persists.
    let ttl: i64 = redis::cmd("TTL")
        .arg("test:mem:b")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(ttl, -1);
}

#[tokio::test]
async fn redis_ttl_expires_and_is_refreshed_on_append() {
    let Some(server) = redis_server().await else {
        return;
    };
    let ttl = Duration::from_secs(3);
    let mem = RedisMemory::connect(&server.url)
        .await
        .unwrap()
        .with_ttl(Some(ttl))
        .with_prefix("t:");
    let client = redis::Client::open(server.url.as_str()).unwrap();
    let conn = client.get_multiplexed_tokio_connection().await.unwrap();
    let pttl = |key: &'static str| {
        let mut conn = conn.clone();
        async move {
            redis::cmd("PTTL")
                .arg(key)
                .query_async::<i64>(&mut conn)
                .await
                .unwrap()
        }
    };
    // Every append sets the expiry to the full TTL.
    mem.append("keep", &[human("k")]).await.unwrap();
    let first = pttl("t:keep").await;
    assert!(first > 0 && first <= 3000, "PTTL after append: {first}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let aged = pttl("t:keep").await;
    assert!(aged < first, "the TTL counts down: {first} then {aged}");
    mem.append("keep", &[ai("k2")]).await.unwrap();
    let refreshed = pttl("t:keep").await;
    assert!(
        refreshed > aged,
        "append refreshes the TTL: {aged} then {refreshed}"
    );
    assert_eq!(ids(&mem.load("keep").await.unwrap()), ["k", "k2"]);
    // A session whose TTL has passed is gone (the wait adapts to how long the TTL had left).
    let short = mem.with_ttl(Some(Duration::from_millis(200)));
    short.append("s", &[human("1")]).await.unwrap();
    let left = pttl("t:s").await;
    assert!(left > 0 && left <= 200, "PTTL with a 200 ms TTL: {left}");
    tokio::time::sleep(Duration::from_millis(left as u64 + 50)).await;
    assert!(short.load("s").await.unwrap().is_empty());
    assert_eq!(pttl("t:s").await, -2, "the key no longer exists");
}
