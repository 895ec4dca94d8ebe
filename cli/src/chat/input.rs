//! Reading the user's lines. On a terminal: `reedline` (line editing, ↑/↓ and Ctrl-R through a
//! history kept in agentgraph's data folder, bracketed paste so a pasted block is one message,
//! Alt-Enter for a new line); otherwise plain lines from stdin, read on a thread of their own so
//! that Ctrl-C is still heard.

use reedline::{
    default_emacs_keybindings, Color, EditCommand, Emacs, FileBackedHistory, KeyCode, KeyModifiers,
    Prompt, PromptEditMode, PromptHistorySearch, PromptHistorySearchStatus, Reedline,
    ReedlineEvent, Signal,
};
use std::borrow::Cow;
use std::path::PathBuf;
use tokio::sync::mpsc;

/// Lines kept in the history file.
const HISTORY_LINES: usize = 1000;

/// What one read gave.
pub enum Read {
    /// A line (or a pasted block), without its final newline.
    Line(String),
    /// Ctrl-C.
    Interrupt,
    /// Ctrl-D or the end of input.
    Eof,
}

/// Where lines come from.
pub enum Input {
    /// A terminal, with the line editor.
    Editor(Box<Reedline>),
    /// Piped stdin: lines from a reader thread.
    Plain(mpsc::UnboundedReceiver<std::io::Result<String>>),
}

/// The history file: `<data folder>/chat-history`.
pub fn history_file() -> Option<PathBuf> {
    agentgraph_n8n::catalogue::store::data_dir()
        .ok()
        .map(|d| d.join("chat-history"))
}

impl Input {
    /// The line editor when stdin and stdout are terminals, else plain lines.
    pub fn open(terminal: bool, color: bool) -> Self {
        if !terminal {
            let (tx, rx) = mpsc::unbounded_channel();
            std::thread::spawn(move || {
                let stdin = std::io::stdin();
                loop {
                    let mut buf = String::new();
                    match stdin.read_line(&mut buf) {
                        Ok(0) => break,
                        Ok(_) => {
                            if tx.send(Ok(buf)).is_err() {
                                break;
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            break;
                        }
                    }
                }
            });
            return Input::Plain(rx);
        }
        let mut keys = default_emacs_keybindings();
        keys.add_binding(
            KeyModifiers::ALT,
            KeyCode::Enter,
            ReedlineEvent::Edit(vec![EditCommand::InsertNewline]),
        );
        let mut editor = Reedline::create()
            .use_bracketed_paste(true)
            .with_ansi_colors(color)
            .with_edit_mode(Box::new(Emacs::new(keys)));
        if let Some(file) = history_file() {
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            match FileBackedHistory::with_file(HISTORY_LINES, file.clone()) {
                Ok(h) => editor = editor.with_history(Box::new(h)),
                Err(e) => eprintln!(
                    "warning: no chat history ({}: {e}); lines are not kept",
                    file.display()
                ),
            }
        }
        Input::Editor(Box::new(editor))
    }

    /// Reads one line; `prompt` is the text before the cursor.
    pub async fn read(&mut self, prompt: &ChatPrompt) -> Read {
        match self {
            Input::Editor(editor) => {
                match tokio::task::block_in_place(|| editor.read_line(prompt)) {
                    Ok(Signal::Success(line)) => {
                        // Kept at once: a crash or a kill loses no line.
                        let _ = editor.sync_history();
                        Read::Line(line)
                    }
                    Ok(Signal::CtrlC) => Read::Interrupt,
                    Ok(Signal::CtrlD) => Read::Eof,
                    Err(e) => {
                        eprintln!("error: cannot read the terminal: {e}");
                        Read::Eof
                    }
                }
            }
            Input::Plain(rx) => {
                let mut ctrl_c = crate::chat::CtrlC::listen();
                tokio::select! {
                    line = rx.recv() => match line {
                        Some(Ok(line)) => Read::Line(line.trim_end_matches(['\n', '\r']).to_string()),
                        Some(Err(e)) => {
                            eprintln!("error: cannot read stdin: {e}");
                            Read::Eof
                        }
                        None => Read::Eof,
                    },
                    _ = ctrl_c.pressed() => Read::Interrupt,
                }
            }
        }
    }
}

/// The prompt: the graph in use, then `›`.
pub struct ChatPrompt {
    /// The graph's short name (`single-agent`).
    pub graph: String,
    /// Colours on.
    pub color: bool,
}

impl Prompt for ChatPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Owned(self.graph.clone())
    }
    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed(" › ")
    }
    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("  … ")
    }
    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        let failed = match search.status {
            PromptHistorySearchStatus::Passing => "",
            PromptHistorySearchStatus::Failing => "failing ",
        };
        Cow::Owned(format!("({failed}search: {}) ", search.term))
    }
    fn get_prompt_color(&self) -> Color {
        if self.color {
            Color::Cyan
        } else {
            Color::Reset
        }
    }
    fn get_indicator_color(&self) -> Color {
        if self.color {
            Color::DarkGrey
        } else {
            Color::Reset
        }
    }
}
