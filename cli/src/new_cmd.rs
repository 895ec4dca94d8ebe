//! `agentgraph new NAME`: creates the folder NAME holding a graph `NAME.ag` (an llm agent on
//! the scripted model, or with `--plain` a graph without a model), the model's script, a test
//! input with the output it must give, and a README saying how to run and check it. An
//! existing path is never touched.

use crate::exit;
use std::path::{Path, PathBuf};

/// Options of `agentgraph new`.
#[derive(clap::Args)]
pub struct NewArgs {
    /// The folder to create; its last component names the graph.
    name: PathBuf,
    /// A graph without a model (a counter loop) instead of an llm agent.
    #[arg(long)]
    plain: bool,
}

/// Why a project could not be created.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    /// The folder (or a file by that name) exists.
    #[error("{0} already exists; choose another name or remove it")]
    Exists(PathBuf),
    /// The path has no usable last component.
    #[error("`{0}` does not end in a folder name")]
    BadName(PathBuf),
    /// Writing failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The graph name for a folder name: letters, digits and `_` (others become `_`), not starting
/// with a digit.
fn graph_name(folder: &str) -> String {
    let mut name: String = folder
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// The files of a project named `name` (graph name `graph`): relative path and content.
fn files(name: &str, graph: &str, plain: bool) -> Vec<(String, String)> {
    let ag = format!("{name}.ag");
    let (source, input, expected) = if plain {
        (
            format!(
                "# A loop: bump the counter until it reaches the limit.\n\
                 graph {graph} {{\n  state {{\n    count: int = 0\n    limit: int = 3\n  }}\n\n  \
                 node bump {{\n    set {{ count: count + 1 }}\n  }}\n\n  \
                 START -> bump\n  bump -> route {{\n    count < limit => bump\n    else          => END\n  }}\n}}\n"
            ),
            "{\"limit\": 5}\n".to_string(),
            "{\"count\":5,\"limit\":5}\n".to_string(),
        )
    } else {
        (
            format!(
                "# A one-node llm agent. It runs offline on the scripted model (its answers are in\n\
                 # scripts/{name}.json); for a real provider, use the `auto` line instead and set\n\
                 # ANTHROPIC_API_KEY or OPENAI_API_KEY (or `provider` in agentgraph.toml).\n\
                 graph {graph} {{\n  state {{\n    messages: messages\n    answer: string = \"\"\n  }}\n\n  \
                 model main = scripted {{ script: \"scripts/{name}.json\" }}\n  \
                 # model main = auto {{ anthropic: \"claude-sonnet-4-5\", openai: \"gpt-4o-mini\", script: \"scripts/{name}.json\" }}\n  \
                 prompt system = \"You are a concise assistant.\"\n\n  \
                 node agent: llm {{ model: main, system: [system], messages: messages }}\n\n  \
                 # The answer's text, so the run's output is the same every time.\n  \
                 node reply {{\n    set {{ answer: last(messages).content }}\n  }}\n\n  \
                 output {{ answer }}\n\n  \
                 START -> agent -> reply -> END\n}}\n"
            ),
            "{\"messages\": [{\"type\": \"human\", \"content\": \"Hi\"}]}\n".to_string(),
            "{\"answer\":\"Hello! This answer comes from the scripted model.\"}\n".to_string(),
        )
    };
    let readme = format!(
        "# {name}\n\n\
         Created by `agentgraph new`. Check and run the graph:\n\n\
         ```sh\n\
         agentgraph check {ag}\n\
         agentgraph run {ag} --input-file tests/input.json\n\
         ```\n\n\
         The test: `tests/expected.json` is the output the run must print with `--json` (its \
         last line), so this compares them:\n\n\
         ```sh\n\
         agentgraph run {ag} --input-file tests/input.json --json | tail -n 1 | diff - tests/expected.json\n\
         ```\n"
    );
    let mut out = vec![
        (ag, source),
        ("tests/input.json".into(), input),
        ("tests/expected.json".into(), expected),
        ("README.md".into(), readme),
    ];
    if !plain {
        out.push((
            format!("scripts/{name}.json"),
            "{\n  \"responses\": [\n    {\"node\": \"agent\", \"text\": \"Hello! This answer comes from the scripted model.\"}\n  ]\n}\n".into(),
        ));
    }
    out
}

fn write(path: &Path, text: &str) -> Result<(), NewError> {
    let err = |source| NewError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    std::fs::write(path, text).map_err(err)
}

/// Creates the project; never writes into an existing path.
pub fn create(dir: &Path, plain: bool) -> Result<Vec<PathBuf>, NewError> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty() && *n != "." && *n != "..")
        .ok_or_else(|| NewError::BadName(dir.to_path_buf()))?;
    if dir.exists() {
        return Err(NewError::Exists(dir.to_path_buf()));
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| NewError::Write {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    // create_dir (not _all) fails if another process made the folder meanwhile.
    std::fs::create_dir(dir).map_err(|source| match source.kind() {
        std::io::ErrorKind::AlreadyExists => NewError::Exists(dir.to_path_buf()),
        _ => NewError::Write {
            path: dir.to_path_buf(),
            source,
        },
    })?;
    let mut written = Vec::new();
    for (rel, text) in files(name, &graph_name(name), plain) {
        let path = dir.join(rel);
        write(&path, &text)?;
        written.push(path);
    }
    Ok(written)
}

/// `agentgraph new`.
pub fn new(args: &NewArgs) -> u8 {
    match create(&args.name, args.plain) {
        Ok(files) => {
            for f in files {
                eprintln!("created {}", f.display());
            }
            let ag = args.name.join(format!(
                "{}.ag",
                args.name
                    .file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default()
            ));
            eprintln!(
                "next: agentgraph run {} --input-file {}",
                ag.display(),
                args.name.join("tests/input.json").display()
            );
            exit::DONE
        }
        Err(e) => crate::graph::fail(e, exit::USAGE),
    }
}

#[cfg(test)]
mod tests {
    use super::graph_name;

    #[test]
    fn graph_names_are_identifiers() {
        assert_eq!(graph_name("my-app"), "my_app");
        assert_eq!(graph_name("2fa"), "_2fa");
        assert_eq!(graph_name("hello"), "hello");
    }
}
