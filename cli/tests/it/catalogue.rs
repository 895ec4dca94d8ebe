//! `agentgraph catalogue fetch|from-n8n|show` and the catalogue order of `chat`, `serve` and
//! `validate`, through the binary with an environment each test controls: a loopback fake npm
//! registry, data folders in temp dirs, and the real n8n of `scripts/n8n` for `from-n8n`
//! (skipped without it, a failure under `CI=true`).

use serde_json::{json, Value};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Variables of the caller's environment that would change what the commands pick.
const CLEARED: [&str; 10] = [
    "AGENTGRAPH_N8N_CATALOGUE",
    "AGENTGRAPH_DATA_DIR",
    "XDG_DATA_HOME",
    "NPM_CONFIG_REGISTRY",
    "npm_config_registry",
    "N8N_EMAIL",
    "N8N_PASSWORD",
    "AGENTGRAPH_PROVIDER",
    "AGENTGRAPH_SCRIPT_DIR",
    "RUST_LOG",
];

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `agentgraph ARGS` from the repository root with only `env` set of [`CLEARED`].
fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.current_dir(root()).args(args).env("NO_COLOR", "1");
    for var in CLEARED {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn ag(args: &[&str], env: &[(&str, &str)]) -> Out {
    let o = command(args, env)
        .stdin(Stdio::null())
        .output()
        .expect("the agentgraph binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// [`ag`] off the async workers (the fake registry answers on them).
async fn ag_async(args: &[&str], env: &[(&str, &str)]) -> Out {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        ag(&args, &env)
    })
    .await
    .expect("the command ran")
}

fn json_of(o: &Out) -> Value {
    serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", o.stdout, o.stderr))
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// An npm tarball whose `package/dist/types/nodes.json` lists `names`.
fn tarball(names: &[&str]) -> Vec<u8> {
    let nodes: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "displayName": n, "version": 1}))
        .collect();
    let nodes = Value::Array(nodes).to_string();
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    for (path, data) in [
        ("package/package.json", "{}".as_bytes()),
        ("package/dist/types/nodes.json", nodes.as_bytes()),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, path, data).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// A registry whose `latest` is n8n-nodes-base 2.0.1 (3 types) and
/// @n8n/n8n-nodes-langchain 2.0.0 (2 types); no integrity is announced.
async fn registry() -> MockServer {
    let server = MockServer::start().await;
    let packages = [
        (
            "n8n-nodes-base",
            "/n8n-nodes-base",
            "2.0.1",
            &["webhook", "set", "httpRequest"][..],
        ),
        (
            "@n8n/n8n-nodes-langchain",
            "/@n8n%2fn8n-nodes-langchain",
            "2.0.0",
            &["agent", "lmChatOpenAi"][..],
        ),
    ];
    for (name, doc_path, version, names) in packages {
        let rel = format!("/tarballs/{}-{version}.tgz", name.replace('/', "-"));
        Mock::given(method("GET"))
            .and(path(rel.as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(tarball(names)))
            .mount(&server)
            .await;
        let doc = json!({
            "name": name,
            "dist-tags": {"latest": version},
            "versions": {version: {"dist": {"tarball": format!("{}{rel}", server.uri())}}}
        });
        Mock::given(method("GET"))
            .and(path(doc_path))
            .respond_with(ResponseTemplate::new(200).set_body_json(doc))
            .mount(&server)
            .await;
    }
    // n8n's own document, for versions that are not dist-tags of the node packages.
    Mock::given(method("GET"))
        .and(path("/n8n"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"name": "n8n", "dist-tags": {"latest": "2.0.2"}, "versions": {"2.0.2": {}}}),
        ))
        .mount(&server)
        .await;
    server
}

/// A workflow file in `dir`.
fn workflow(dir: &Path) -> String {
    let wf = json!({
        "nodes": [{"id": "a", "name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 1,
                   "position": [0, 0], "parameters": {}}],
        "connections": {}
    });
    let p = dir.join("wf.json");
    std::fs::write(&p, wf.to_string()).unwrap();
    s(&p)
}

#[tokio::test(flavor = "multi_thread")]
async fn fetch_stores_the_catalogue_that_validate_then_uses() {
    let server = registry().await;
    let data = tempfile::tempdir().unwrap();
    let file = workflow(data.path());
    let (uri, dir) = (server.uri(), s(data.path()));
    let env = [
        ("NPM_CONFIG_REGISTRY", uri.as_str()),
        ("AGENTGRAPH_DATA_DIR", dir.as_str()),
    ];

    let o = ag_async(&["catalogue", "fetch"], &env).await;
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert_eq!(
        o.stdout,
        format!(
            "fetched n8n-nodes-base 2.0.1 + @n8n/n8n-nodes-langchain 2.0.0: 5 node types into {dir}/catalogue/npm\n"
        )
    );
    assert!(
        o.stderr.contains("downloading n8n-nodes-base 2.0.1"),
        "{}",
        o.stderr
    );

    let o = ag_async(&["validate", &file], &env[1..]).await;
    assert_eq!(
        o.stdout.lines().next(),
        Some("catalogue: npm n8n-nodes-base 2.0.1 + @n8n/n8n-nodes-langchain 2.0.0 (5 node types)"),
        "{}{}",
        o.stdout,
        o.stderr
    );
    let v = json_of(&ag_async(&["--json", "validate", &file], &env[1..]).await);
    assert_eq!(
        v["catalogue"],
        json!({"source": "npm", "path": format!("{dir}/catalogue/npm"), "types": 5})
    );

    // A failed fetch exits 1 and leaves the stored catalogue.
    let o = ag_async(&["catalogue", "fetch", "--version", "7.7.7"], &env).await;
    assert_eq!(o.code, 1, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains("error: `7.7.7` is neither a dist-tag"),
        "{}",
        o.stderr
    );
    let v = json_of(&ag_async(&["--json", "validate", &file], &env[1..]).await);
    assert_eq!(v["catalogue"]["types"], 5);

    // The lower-case variable, as npm scripts set it, names the registry too.
    let lower = [
        ("npm_config_registry", uri.as_str()),
        ("AGENTGRAPH_DATA_DIR", dir.as_str()),
    ];
    let o = ag_async(&["--json", "catalogue", "fetch"], &lower).await;
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert_eq!(json_of(&o)["source"]["node_types"], 5);
}

#[test]
fn without_a_registry_or_a_data_folder_fetch_says_what_to_set() {
    let data = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    // No registry variable, and no npm on PATH to ask.
    let o = ag(
        &["catalogue", "fetch"],
        &[
            ("AGENTGRAPH_DATA_DIR", &s(data.path())),
            ("PATH", &s(empty.path())),
        ],
    );
    assert_eq!(o.code, 2, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stderr.starts_with("error: no npm registry: "),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("set NPM_CONFIG_REGISTRY"), "{}", o.stderr);

    // No data folder: nothing is fetched.
    let mut cmd = command(
        &["catalogue", "fetch"],
        &[("NPM_CONFIG_REGISTRY", "http://127.0.0.1:9")],
    );
    let o = cmd.env_remove("HOME").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: no data folder: set AGENTGRAPH_DATA_DIR, XDG_DATA_HOME or HOME\n"
    );
}

/// The npm step's note of `catalogue show --json`: where the fetched catalogue is looked for.
fn npm_note(env: &[(&str, &str)], remove_home: bool) -> String {
    let mut cmd = command(&["--json", "catalogue", "show"], env);
    if remove_home {
        cmd.env_remove("HOME");
    }
    let o = cmd.output().unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["steps"][2]["note"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_data_folder_is_agentgraph_data_dir_else_xdg_data_home_else_home() {
    // Folders that are never created: only where the commands look is checked.
    let tmp = tempfile::tempdir().unwrap();
    let [a, b, c] = ["a", "b", "c"].map(|n| s(&tmp.path().join(n)));
    let env = [
        ("AGENTGRAPH_DATA_DIR", a.as_str()),
        ("XDG_DATA_HOME", &b),
        ("HOME", &c),
    ];
    let note = npm_note(&env, false);
    assert!(
        note.starts_with(&format!("{a}/catalogue/npm: none")),
        "{note}"
    );
    let note = npm_note(&env[1..], false);
    assert!(
        note.starts_with(&format!("{b}/agentgraph/catalogue/npm: none")),
        "{note}"
    );
    // A relative XDG_DATA_HOME is ignored, as the XDG spec says.
    let note = npm_note(&[("XDG_DATA_HOME", "rel"), ("HOME", &c)], false);
    assert!(
        note.starts_with(&format!("{c}/.local/share/agentgraph/catalogue/npm: none")),
        "{note}"
    );
    let note = npm_note(&[], true);
    assert_eq!(
        note,
        "no data folder: set AGENTGRAPH_DATA_DIR, XDG_DATA_HOME or HOME"
    );
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// An n8n directory (npm layout) with the base node type `name`.
fn n8n_dir(dir: &Path, name: &str) {
    write(
        &dir.join("n8n-nodes-base/nodes.json"),
        &json!([{"name": name, "displayName": name, "version": 1}]).to_string(),
    );
}

/// Stores an instance catalogue (2 types) in `data`, as `catalogue from-n8n` writes it.
fn store_instance(data: &Path) {
    let dir = data.join("catalogue/instance");
    let types = json!([
        {"name": "n8n-nodes-base.webhook", "displayName": "Webhook", "version": 1},
        {"name": "n8n-nodes-base.set", "displayName": "Set", "version": 1}
    ]);
    write(&dir.join("nodes.json"), &types.to_string());
    write(
        &dir.join("SOURCE.json"),
        &json!({"url": "http://127.0.0.1:5678", "node_types": 2, "fetched_at": "2026-01-02T03:04:05Z"})
            .to_string(),
    );
}

/// Stores a fetched catalogue (1 type) in `data`, as `catalogue fetch` writes it.
fn store_npm(data: &Path) {
    let dir = data.join("catalogue/npm");
    n8n_dir(&dir, "webhook");
    let source = json!({
        "requested": "latest",
        "registry": "http://127.0.0.1:9",
        "packages": [{"name": "n8n-nodes-base", "version": "9.1.0", "tarball": "http://127.0.0.1:9/a.tgz"}],
        "node_types": 1,
        "fetched_at": "2026-01-02T03:04:05Z"
    });
    write(&dir.join("SOURCE.json"), &source.to_string());
}

#[test]
fn validate_and_show_follow_the_order_step_by_step() {
    let data = tempfile::tempdir().unwrap();
    let dirs = tempfile::tempdir().unwrap();
    let (flag, env_dir) = (dirs.path().join("flag"), dirs.path().join("env"));
    n8n_dir(&flag, "webhook");
    n8n_dir(&env_dir, "webhook");
    let file = workflow(dirs.path());
    let d = s(data.path());
    let with_data = [("AGENTGRAPH_DATA_DIR", d.as_str())];
    let e = s(&env_dir);
    let with_env = [
        ("AGENTGRAPH_DATA_DIR", d.as_str()),
        ("AGENTGRAPH_N8N_CATALOGUE", e.as_str()),
    ];
    let check = |env: &[(&str, &str)],
                 extra: &[&str],
                 source: &str,
                 path: Option<String>,
                 states: [&str; 5]| {
        let mut args = vec!["--json", "validate", &file];
        args.extend_from_slice(extra);
        let v = json_of(&ag(&args, env));
        assert_eq!(v["catalogue"]["source"], source, "{v}");
        assert_eq!(v["catalogue"]["path"], json!(path), "{v}");
        let mut args = vec!["--json", "catalogue", "show"];
        args.extend_from_slice(extra);
        let shown = json_of(&ag(&args, env));
        assert_eq!(shown["catalogue"]["source"], source, "{shown}");
        let got: Vec<&str> = shown["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["state"].as_str().unwrap())
            .collect();
        assert_eq!(got, states, "{shown}");
    };

    check(
        &with_data,
        &[],
        "builtin",
        None,
        ["none", "none", "none", "none", "used"],
    );
    store_instance(data.path());
    let instance = Some(format!("{d}/catalogue/instance/nodes.json"));
    check(
        &with_data,
        &[],
        "instance",
        instance,
        ["none", "none", "none", "used", "shadowed"],
    );
    store_npm(data.path());
    let npm = Some(format!("{d}/catalogue/npm"));
    check(
        &with_data,
        &[],
        "npm",
        npm,
        ["none", "none", "used", "shadowed", "shadowed"],
    );
    check(
        &with_env,
        &[],
        "n8n",
        Some(e.clone()),
        ["none", "used", "shadowed", "shadowed", "shadowed"],
    );
    let f = s(&flag);
    check(
        &with_env,
        &["--catalogue", &f],
        "n8n",
        Some(f.clone()),
        ["used", "shadowed", "shadowed", "shadowed", "shadowed"],
    );

    // The text of `show`: the line commands print on start, then the order.
    let o = ag(&["catalogue", "show"], &with_data);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(
        lines[0], "catalogue: npm n8n-nodes-base 9.1.0 (1 node types)",
        "{}",
        o.stdout
    );
    assert_eq!(lines[1], "order:");
    assert!(
        lines[4].starts_with("  3. fetched from npm"),
        "{}",
        o.stdout
    );
    assert!(lines[4].contains(" used "), "{}", o.stdout);
    assert!(lines[5].contains(" shadowed "), "{}", o.stdout);
}

/// `agentgraph chat` with no input: what it says on stderr before the first turn.
fn chat_start(db: &Path, extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut args = vec!["--db", db.to_str().unwrap(), "chat"];
    args.extend_from_slice(extra);
    let mut env = env.to_vec();
    env.push(("AGENTGRAPH_PROVIDER", "scripted"));
    let o = ag(&args, &env);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    o.stderr
}

#[test]
fn chat_and_serve_say_which_catalogue_they_use_on_start() {
    let data = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let d = s(data.path());
    let env = [("AGENTGRAPH_DATA_DIR", d.as_str())];

    let err = chat_start(db.path(), &[], &env);
    assert!(
        err.starts_with("catalogue: built-in compact catalogue ("),
        "{err}"
    );
    assert!(
        err.trim_end()
            .ends_with("node types; run 'agentgraph catalogue fetch' for all of n8n's nodes)"),
        "{err}"
    );
    store_npm(data.path());
    let err = chat_start(db.path(), &[], &env);
    assert_eq!(err, "catalogue: npm n8n-nodes-base 9.1.0 (1 node types)\n");
    let flag = data.path().join("flag");
    n8n_dir(&flag, "webhook");
    let f = s(&flag);
    let err = chat_start(db.path(), &["--catalogue", &f], &env);
    assert_eq!(
        err,
        format!("catalogue: n8n node types from {f} (--catalogue)\n")
    );

    // serve: the line comes before `serving on`.
    let mut child = command(
        &[
            "--db",
            db.path().to_str().unwrap(),
            "serve",
            "--graphs",
            "graphs/examples",
            "--addr",
            "127.0.0.1:0",
            "--catalogue",
            &f,
        ],
        &env,
    )
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("agentgraph serve starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut seen = Vec::new();
    for line in std::io::BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        let done = line.starts_with("serving on ");
        seen.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen.iter()
            .any(|l| *l == format!("catalogue: n8n node types from {f} (--catalogue)")),
        "{seen:?}"
    );
    assert!(
        seen.last().is_some_and(|l| l.starts_with("serving on ")),
        "{seen:?}"
    );
}

#[test]
fn from_n8n_saves_the_real_instance_catalogue() {
    let Some(n8n) = agentgraph_test_support::require_n8n() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let d = s(data.path());
    let env = [("AGENTGRAPH_DATA_DIR", d.as_str())];
    let file = data.path().join("catalogue/instance/nodes.json");
    let url = n8n.url.trim_end_matches('/').to_string();

    let o = ag(
        &[
            "catalogue",
            "from-n8n",
            &n8n.url,
            "--email",
            &n8n.email,
            "--password",
            &n8n.password,
        ],
        &env,
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let catalogue = agentgraph_std_tools::catalogue::Catalogue::load_node_types_export(&file)
        .expect("the saved catalogue loads");
    for t in [
        "n8n-nodes-base.webhook",
        "n8n-nodes-base.set",
        "@n8n/n8n-nodes-langchain.agent",
    ] {
        assert!(catalogue.contains(t), "{t} is missing");
    }
    // n8n 1.123 has about 800 node types.
    let n = catalogue.len();
    assert!(n > 500, "{n} node types");
    assert_eq!(
        o.stdout,
        format!("saved {n} node types of {url} into {}\n", file.display())
    );
    let shown = ag(&["catalogue", "show"], &env);
    assert!(
        shown
            .stdout
            .starts_with(&format!("catalogue: n8n instance {url}, saved ")),
        "{}",
        shown.stdout
    );
    assert!(shown
        .stdout
        .lines()
        .next()
        .unwrap_or_default()
        .ends_with(&format!("({n} node types)")));

    // A wrong password: a clear error, the saved catalogue kept.
    let before = std::fs::read(&file).unwrap();
    let o = ag(
        &[
            "catalogue",
            "from-n8n",
            &n8n.url,
            "--email",
            &n8n.email,
            "--password",
            "wrong-password",
        ],
        &env,
    );
    assert_eq!(o.code, 1, "{}{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("refused the login"), "{}", o.stderr);
    assert!(
        o.stderr.contains("check the email and password"),
        "{}",
        o.stderr
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // The login from $N8N_EMAIL / $N8N_PASSWORD; without one, a usage error.
    let with_login = [
        ("AGENTGRAPH_DATA_DIR", d.as_str()),
        ("N8N_EMAIL", n8n.email.as_str()),
        ("N8N_PASSWORD", n8n.password.as_str()),
    ];
    let o = ag(&["catalogue", "from-n8n", &n8n.url], &with_login);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let o = ag(&["catalogue", "from-n8n", &n8n.url], &env);
    assert_eq!(o.code, 2, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains("give --email or set N8N_EMAIL"),
        "{}",
        o.stderr
    );
}
