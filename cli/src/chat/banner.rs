//! What the session says about itself: the banner (thread, graph, model, catalogue, and for
//! the offline demo what it will and will not do), the resume command, the end of the demo.

use super::progress::paint;
use nu_ansi_term::{Color, Style};
use std::path::Path;

/// The variable naming the scripted model's script folder (a custom script is no demo).
const SCRIPT_DIR_VAR: &str = "AGENTGRAPH_SCRIPT_DIR";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The provider `auto` model blocks resolve to here, or why there is none.
pub fn provider() -> Result<&'static str, String> {
    agentgraph_dsl::agents::auto_provider(env)
}

/// Whether this session is the offline demo: the scripted provider with the shipped scripts
/// on a shipped builder graph.
pub fn is_demo(graph: &Path) -> bool {
    let shipped = matches!(
        graph.file_name().and_then(|n| n.to_str()),
        Some("single-agent.ag" | "multi-agent.ag")
    );
    shipped && provider() == Ok("scripted") && env(SCRIPT_DIR_VAR).is_none()
}

/// The model name a graph file's `auto` block gives `provider` (`anthropic: "…"`).
fn default_model(graph: &Path, provider: &str) -> Option<String> {
    let text = std::fs::read_to_string(graph).ok()?;
    let key = format!("{provider}:");
    text.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|rest| rest.trim().split('"').nth(1))
        .map(str::to_string)
}

/// `anthropic claude-sonnet-4-5`, `scripted (offline demo)`, or what to set.
pub fn model(graph: &Path) -> String {
    match provider() {
        Ok("scripted") if is_demo(graph) => "scripted (offline demo, no model)".to_string(),
        Ok("scripted") => "scripted (canned answers)".to_string(),
        Ok(p) => {
            let var = if p == "anthropic" {
                "ANTHROPIC_MODEL"
            } else {
                "OPENAI_MODEL"
            };
            match env(var).or_else(|| default_model(graph, p)) {
                Some(m) => format!("{p} {m}"),
                None => p.to_string(),
            }
        }
        Err(why) => format!("none ({why})"),
    }
}

/// What the offline demo will and will not do.
pub const DEMO: &str = "this is the offline demo: a fixed script, not a model. Whatever you \
ask first, it builds one example workflow (every Monday, summarize unread Gmail with AI and \
email the summary); after that it can only move it to Tuesday (\"Make it run on Tuesday \
instead\"), and /undo, /compact and /clear work. For real answers set ANTHROPIC_API_KEY or \
OPENAI_API_KEY.";

/// Said instead of running a turn the demo's script has no answer for.
pub const DEMO_OVER: &str = "The offline demo has no scripted answer for that: it only builds \
its example workflow and then moves it to Tuesday. Nothing was changed. For a real \
conversation set ANTHROPIC_API_KEY or OPENAI_API_KEY, then resume this thread with the \
command Ctrl-C prints (or start a new chat).";

/// Whether the demo's script can answer `line` on a thread whose workflow has `nodes` nodes:
/// any first request, the move to Tuesday, `/compact` and `/clear`.
pub fn demo_answers(line: &str, nodes: usize) -> bool {
    nodes == 0 || matches!(line, "/compact" | "/clear") || line.contains("run on Tuesday")
}

/// What the banner shows.
pub struct Banner<'a> {
    /// The thread.
    pub thread: &'a str,
    /// The graph file.
    pub graph: &'a Path,
    /// How the graph is named (`graphs/workflow-builder/…` for a shipped one).
    pub label: &'a Path,
    /// Whether it is the copy built into the binary.
    pub built_in: bool,
    /// The catalogue line (`catalogue: …`).
    pub catalogue: &'a str,
}

impl Banner<'_> {
    /// The plain banner (not a terminal): the thread and graph line tests and scripts read,
    /// the model, and the demo's limits.
    pub fn plain(&self) -> String {
        // A built-in graph is named as shipped, not by the unpacked copy's folder.
        let (shown, note) = if self.built_in {
            (self.label, ", built in")
        } else {
            (self.graph, "")
        };
        let mut s = format!(
            "thread: {} (graph {}{note})\nmodel: {}\n",
            self.thread,
            shown.display(),
            model(self.graph)
        );
        if is_demo(self.graph) {
            s.push_str(&format!("demo: {DEMO}\n"));
        }
        s
    }

    /// The banner for a terminal.
    pub fn styled(&self, color: bool) -> String {
        let dim = Style::new().dimmed();
        let key = |k: &str| paint(&format!("  {k:<10}"), dim, color);
        let name = self
            .graph
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let origin = if self.built_in {
            " (built in)".to_string()
        } else {
            format!(" ({})", self.graph.display())
        };
        let mut s = format!(
            "{}\n",
            paint(
                "agentgraph chat · n8n workflow builder",
                Style::new().bold().fg(Color::Cyan),
                color
            )
        );
        s.push_str(&format!("{}{}\n", key("thread"), self.thread));
        s.push_str(&format!(
            "{}{name}{}\n",
            key("graph"),
            paint(&origin, dim, color)
        ));
        s.push_str(&format!("{}{}\n", key("model"), model(self.graph)));
        let catalogue = self
            .catalogue
            .strip_prefix("catalogue: ")
            .unwrap_or(self.catalogue);
        s.push_str(&format!("{}{catalogue}\n", key("catalogue")));
        if is_demo(self.graph) {
            let text = super::markdown::wrap(&format!("  Note: {DEMO}"), 90);
            s.push_str(&paint(&text, Style::new().fg(Color::Yellow), color));
            s.push('\n');
        }
        s.push_str(&paint(
            "  /help for commands · ↑ history · Alt-Enter new line · Ctrl-C cancels a turn · Ctrl-D quits",
            dim,
            color,
        ));
        s.push('\n');
        s
    }
}

/// The command that continues this thread (its graph is restored from the thread's record).
pub fn resume_command(thread: &str, db: &Path, extra: &[String]) -> String {
    let mut cmd = String::from("agentgraph");
    if db != Path::new(crate::chat::DEFAULT_DB) {
        cmd.push_str(&format!(" --db {}", shell_word(&db.display().to_string())));
    }
    cmd.push_str(&format!(" chat --thread {thread}"));
    for e in extra {
        cmd.push(' ');
        cmd.push_str(&shell_word(e));
    }
    cmd
}

/// `s` quoted for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resume_command_names_a_store_that_is_not_the_default() {
        assert_eq!(
            resume_command("t-1", Path::new("./.agentgraph"), &[]),
            "agentgraph chat --thread t-1"
        );
        assert_eq!(
            resume_command(
                "t-1",
                Path::new("/tmp/my db"),
                &["--out".into(), "w.json".into()]
            ),
            "agentgraph --db '/tmp/my db' chat --thread t-1 --out w.json"
        );
    }
}
