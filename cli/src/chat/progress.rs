//! A turn's progress. On a terminal (`indicatif`): a spinner while the model thinks, one
//! updating line per agent for its tool calls (the multi-agent graph's discovery, builder,
//! configurator…), each replaced at the end of the turn by a one-line summary. Elsewhere
//! (pipes, tests): each tool event as a plain `  · title` line, no escape codes.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use nu_ansi_term::{Color, Style};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The agent behind an event: the subgraph it ran in (`builder:3f2a…` → `builder`), else the
/// root graph's node (`agent` for the single-agent graph's tools).
pub fn agent_of(ns: &[String], node: Option<&str>) -> String {
    match ns.first() {
        Some(first) => first.split(':').next().unwrap_or(first).to_string(),
        None => match node {
            Some("tools") | None => "agent".to_string(),
            Some(n) => n.to_string(),
        },
    }
}

/// One agent's line.
struct Agent {
    name: String,
    bar: ProgressBar,
    /// Tool calls finished, per tool, in first-use order.
    done: Vec<(String, usize)>,
    failed: usize,
    started: Instant,
    /// Its latest event.
    last: Instant,
}

/// The terminal's echo turned off for the turn (Ctrl-C still interrupts): keys typed while
/// the spinners draw, and the `^C` the terminal would echo, would break their lines. Restored
/// when dropped.
struct EchoOff {
    #[cfg(unix)]
    saved: Option<libc::termios>,
}

impl EchoOff {
    fn new() -> Self {
        #[cfg(unix)]
        {
            // SAFETY: termios is plain data; tcgetattr fills it for fd 0 or fails (then unused).
            let mut t: libc::termios = unsafe { std::mem::zeroed() };
            if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut t) } != 0 {
                return EchoOff { saved: None };
            }
            let saved = t;
            t.c_lflag &= !(libc::ECHO | libc::ECHOCTL);
            // SAFETY: a termios read from the same fd, with echo flags cleared.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t) };
            EchoOff { saved: Some(saved) }
        }
        #[cfg(not(unix))]
        EchoOff {}
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(t) = &self.saved {
            // SAFETY: restores the attributes read in `new`.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t) };
        }
    }
}

/// The live display of one turn.
pub struct Live {
    _echo: EchoOff,
    multi: MultiProgress,
    thinking: ProgressBar,
    agents: Vec<Agent>,
    color: bool,
    started: Instant,
}

/// How a turn's progress is shown.
pub enum Progress {
    /// Plain lines.
    Plain,
    /// Spinners and one line per agent.
    Live(Box<Live>),
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ ")
}

impl Progress {
    /// Live on a terminal, plain otherwise.
    pub fn start(terminal: bool, color: bool) -> Self {
        if !terminal {
            return Progress::Plain;
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stdout());
        let thinking = multi.add(ProgressBar::new_spinner());
        thinking.set_style(style(if color {
            "{spinner:.cyan} {msg} {elapsed:.dim}"
        } else {
            "{spinner} {msg} {elapsed}"
        }));
        thinking.set_message("thinking…");
        thinking.enable_steady_tick(Duration::from_millis(100));
        Progress::Live(Box::new(Live {
            _echo: EchoOff::new(),
            multi,
            thinking,
            agents: Vec::new(),
            color,
            started: Instant::now(),
        }))
    }

    /// A tool event (`{tool, status, title}`) of `agent`.
    pub fn tool(&mut self, agent: &str, data: &Value) {
        let title = data
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| data.to_string());
        let Progress::Live(live) = self else {
            println!("  · {title}");
            return;
        };
        let i = live.agent(agent);
        let a = &mut live.agents[i];
        a.last = Instant::now();
        let tool = data.get("tool").and_then(Value::as_str).unwrap_or("tool");
        match data.get("status").and_then(Value::as_str) {
            Some("completed") => match a.done.iter_mut().find(|(t, _)| t == tool) {
                Some((_, n)) => *n += 1,
                None => a.done.push((tool.to_string(), 1)),
            },
            Some("failed" | "error") => a.failed += 1,
            _ => {}
        }
        let calls: usize = a.done.iter().map(|(_, n)| n).sum();
        a.bar.set_message(format!("{title}  ({calls} done)"));
        live.thinking.set_message("working…");
    }

    /// A piece of the assistant's answer arrived (`preview`: its latest words).
    pub fn writing(&mut self, preview: &str) {
        if let Progress::Live(live) = self {
            let tail: String = preview
                .chars()
                .rev()
                .take(60)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let tail = tail.replace('\n', " ");
            live.thinking
                .set_message(format!("writing… {}", tail.trim()));
        }
    }

    /// Says the turn is being cancelled.
    pub fn cancelling(&mut self) {
        match self {
            Progress::Live(live) => live.thinking.set_message("cancelling…"),
            Progress::Plain => println!("  · cancelling the turn…"),
        }
    }

    /// Ends the display: each agent's line becomes its summary, the spinner goes.
    pub fn finish(self, ok: bool) {
        let Progress::Live(live) = self else { return };
        let color = live.color;
        for a in &live.agents {
            a.bar.finish_and_clear();
        }
        live.thinking.finish_and_clear();
        let _ = live.multi.clear();
        // The summaries stay on screen as ordinary lines.
        for a in &live.agents {
            println!("{}", a.summary(ok, color));
        }
        if live.agents.is_empty() && ok {
            let secs = live.started.elapsed().as_secs_f32();
            let line = format!("  answered in {secs:.1} s");
            println!("{}", paint(&line, Style::new().dimmed(), color));
        }
    }
}

impl Live {
    /// The index of `name`'s line, added below the others on first use.
    fn agent(&mut self, name: &str) -> usize {
        if let Some(i) = self.agents.iter().position(|a| a.name == name) {
            return i;
        }
        let bar = self
            .multi
            .insert_before(&self.thinking, ProgressBar::new_spinner());
        bar.set_style(style(if self.color {
            "{spinner:.green} {prefix:.bold} {msg}"
        } else {
            "{spinner} {prefix} {msg}"
        }));
        bar.set_prefix(name.to_string());
        bar.enable_steady_tick(Duration::from_millis(100));
        // Its time starts where the previous agent's ended (the agents of the builder graphs
        // take turns), or with the turn: the model's thinking before its first call counts.
        let started = self.agents.last().map_or(self.started, |a| a.last);
        self.agents.push(Agent {
            name: name.to_string(),
            bar,
            done: Vec::new(),
            failed: 0,
            started,
            last: Instant::now(),
        });
        self.agents.len() - 1
    }
}

impl Agent {
    /// `✓ builder  6 add_nodes · 5 connect_nodes (3.2 s)`.
    fn summary(&self, ok: bool, color: bool) -> String {
        let mut tools: Vec<String> = self.done.iter().map(|(t, n)| format!("{n} {t}")).collect();
        if self.failed > 0 {
            tools.push(format!("{} failed", self.failed));
        }
        let secs = self.last.duration_since(self.started).as_secs_f32();
        let (mark, c) = if ok {
            ("✓", Color::Green)
        } else {
            ("✗", Color::Red)
        };
        format!(
            "{} {} {} {}",
            paint(mark, Style::new().fg(c), color),
            paint(&self.name, Style::new().bold(), color),
            tools.join(" · "),
            paint(&format!("({secs:.1} s)"), Style::new().dimmed(), color)
        )
    }
}

/// `text` in `style` when `color`.
pub fn paint(text: &str, style: Style, color: bool) -> String {
    if color {
        style.paint(text).to_string()
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::agent_of;

    #[test]
    fn the_agent_is_the_subgraph_else_the_root_node() {
        let ns = vec!["configurator:3f2a".to_string(), "tools:9".to_string()];
        assert_eq!(agent_of(&ns, Some("tools")), "configurator");
        assert_eq!(agent_of(&[], Some("tools")), "agent");
        assert_eq!(agent_of(&[], Some("supervisor")), "supervisor");
    }
}
