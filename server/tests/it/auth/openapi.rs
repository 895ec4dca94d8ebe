//! `/openapi.json`: it answers without a key, it is a well-formed OpenAPI 3.1 document, it
//! lists exactly the routes the server answers (checked three ways: against the auth matrix's
//! hand-written list of every endpoint, by calling each documented operation, and by reading
//! the server's source for routes registered outside the documented list).

use super::matrix::ENDPOINTS;
use super::*;
use std::collections::BTreeSet;

/// Whether the concrete `path` (query dropped) fits the OpenAPI template `tpl`.
fn fits(tpl: &str, path: &str) -> bool {
    let path = path.split('?').next().unwrap_or(path);
    let (t, p): (Vec<&str>, Vec<&str>) = (tpl.split('/').collect(), path.split('/').collect());
    // A template's last parameter may span segments only on the graph routes, whose names are
    // paths; the matrix's concrete paths use one segment, so segment counts must agree.
    t.len() == p.len()
        && t.iter()
            .zip(&p)
            .all(|(a, b)| (a.starts_with('{') && a.ends_with('}') && !b.is_empty()) || a == b)
}

/// A concrete path for a template: thread `ta`, graph `counter`, task `none`.
fn concrete(tpl: &str) -> String {
    tpl.replace("{id}", "ta")
        .replace("{name}", "counter")
        .replace("{task}", "none")
}

fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            ops.insert((method.to_uppercase(), path.clone()));
        }
    }
    ops
}

#[tokio::test]
async fn the_document_lists_exactly_the_servers_routes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = config(dir.path(), Limits::default());
    let store = cfg.auth.keys.clone().expect("keys");
    let keys = make_keys(&store);
    let s = Srv::start(cfg).await;
    // Alice's thread, so thread routes have something to answer about.
    let (st, v) = s
        .call(
            "POST",
            "/threads/ta/runs",
            Some(&keys.alice),
            Some(json!({"graph": "counter"})),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    s.wait_idle("ta", &keys.alice).await;

    // No key needed.
    let (st, doc) = s.call("GET", "/openapi.json", None, None).await;
    assert_eq!(st, 200, "{doc}");
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "{}",
        doc["openapi"]
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    let ops = operations(&doc);

    // 1. The matrix's list of every endpoint and the document name the same routes.
    let mut problems = Vec::new();
    for (name, method, path) in ENDPOINTS {
        if !ops.iter().any(|(m, t)| m == method && fits(t, path)) {
            problems.push(format!(
                "{name} ({method} {path}) is served but not documented"
            ));
        }
    }
    for (method, tpl) in &ops {
        if !ENDPOINTS
            .iter()
            .any(|(_, m, p)| m == method && fits(tpl, p))
        {
            problems.push(format!(
                "{method} {tpl} is documented but not in the auth matrix"
            ));
        }
    }

    // 2. Each documented operation is answered by its handler (not the router's fallback), and
    //    its path parameters are declared; the open ones answer without a key.
    for (method, tpl) in &ops {
        let op = &doc["paths"][tpl][method.to_lowercase()];
        let declared: BTreeSet<String> = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["in"] == "path")
            .filter_map(|p| p["name"].as_str().map(str::to_string))
            .collect();
        let in_path: BTreeSet<String> = tpl
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .map(str::to_string)
            .collect();
        if declared != in_path {
            problems.push(format!(
                "{method} {tpl}: path parameters {declared:?}, template {in_path:?}"
            ));
        }
        let body = (method == "POST").then(|| json!({}));
        let (st, v) = s
            .call(method, &concrete(tpl), Some(&keys.admin), body.clone())
            .await;
        if st == 405 || v["error"]["code"] == "NOT_FOUND" {
            problems.push(format!(
                "{method} {tpl}: the router does not route it ({st} {v})"
            ));
        }
        let open = op["security"].as_array().is_some_and(|a| {
            a.iter()
                .all(|r| r.as_object().is_some_and(|o| o.is_empty()))
        });
        let (st, _) = s.call(method, &concrete(tpl), None, body).await;
        if open != (st != 401) {
            problems.push(format!(
                "{method} {tpl}: documented {}, answered {st} without a key",
                if open { "open" } else { "as needing a key" }
            ));
        }
        if st == 202 || method == "POST" {
            s.wait_idle("ta", &keys.alice).await;
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    s.stop().await;
}

/// Routes are registered only through the documented list (`openapi::api`) and the pages: a
/// `.route(` anywhere else in the server's source would serve an undocumented endpoint.
#[test]
fn no_route_is_registered_outside_the_documented_list() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read src").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if code.contains(".route(")
                || code.contains(".route_service(")
                || code.contains(".nest(")
            {
                found.push(format!("{}:{}: {code}", f.display(), i + 1));
            }
        }
    }
    // The one expected: the pages loop in routes.rs (pages are added to the document there).
    assert_eq!(found.len(), 1, "{}", found.join("\n"));
    assert!(found[0].contains("routes.rs"), "{}", found[0]);
}
