//! Nodes, tools, models and options (E0210–E0212, E0240–E0243, E0260, E0270–E0272, E0280,
//! E0291).

use super::a;
use crate::ast::Span;
use crate::diagnostic::{codes, suggestion, Diagnostic};

/// A node without a kind; `channel_entry` is an entry named like a channel (a `set` block
/// missing around it), if there is one.
pub fn node_without_kind(span: Span, node: &str, channel_entry: Option<&str>) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_KIND,
        span,
        format!("node `{node}` has no kind"),
    )
    .label("what does this node do?")
    .help(match channel_entry {
        // `node bump { count: count + 1 }`: the `set { … }` around it is missing.
        Some(key) => format!(
            "to update channels, wrap the entries in a `set` block: `node {node} {{ set {{ {key}: … }} }}`"
        ),
        None => "give it a kind (`node name: kind { … }`) or a `set { … }` block".into(),
    })
}

/// A kind the registry does not have; `registered` are the kinds it has.
pub fn unknown_kind(span: Span, kind: &str, registered: &[&str]) -> Diagnostic {
    let help = match kind {
        "llm" | "tool_executor" | "tool" => format!(
            "`{kind}` is an agent node kind, and this registry has none: register them with `agentgraph_dsl::agents::register` (the `agentgraph` CLI does); registered kinds: {}",
            registered.join(", ")
        ),
        _ => suggestion(
            "node kinds",
            kind,
            registered.iter().copied().chain(["subgraph"]),
        ),
    };
    Diagnostic::new(codes::BAD_KIND, span, format!("unknown node kind `{kind}`"))
        .label("not a registered kind")
        .help(help)
}

/// The compiler met a kind with no factory.
pub fn kind_cannot_be_built(span: Span, kind: &str) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_KIND,
        span,
        format!("node kind `{kind}` cannot be built"),
    )
    .label("no factory registered")
}

/// An entry `key` a `kind` node does not accept; `allowed` are those it does.
pub fn unknown_entry(span: Span, key: &str, kind: &str, allowed: &[&str]) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_ENTRY,
        span,
        format!("`{key}` is not an entry of {} node", a(format!("`{kind}`"))),
    )
    .label("unknown entry")
    .help(suggestion("entries", key, allowed.iter().copied()))
}

/// A block nested in `set { … }`.
pub fn set_nested_block(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_ENTRY,
        span,
        "a `set` block holds `channel: expression` entries",
    )
    .label("nested block")
    .help("write one `channel: expression` entry per channel, e.g. `set { count: count + 1 }`")
}

/// `catch:` with something other than a channel name.
pub fn catch_not_a_channel(span: Span) -> Diagnostic {
    Diagnostic::new(codes::BAD_ENTRY, span, "`catch` names a channel")
        .label("not a channel name")
        .help("name a `json?` channel that receives the error, e.g. `catch: error`")
}

/// `write:` with something other than a channel name.
pub fn write_not_a_channel(span: Span) -> Diagnostic {
    Diagnostic::new(codes::BAD_ENTRY, span, "`write` names a channel")
        .label("not a channel name")
        .help("name the channel that receives the answer, e.g. `write: decision`")
}

/// A `kind` node without its required entry `entry` (a block when `block`).
pub fn missing_entry(span: Span, kind: &str, entry: &str, block: bool) -> Diagnostic {
    Diagnostic::new(
        codes::MISSING_ENTRY,
        span,
        format!("{} node needs `{entry}`", a(format!("`{kind}`"))),
    )
    .label(format!("missing `{entry}`"))
    .help(if block {
        format!("add `{entry} {{ … }}`")
    } else {
        format!("add `{entry}: …`")
    })
}

/// A tool set naming an unregistered tool; `registered` are the tools there are.
pub fn unknown_tool(span: Span, name: &str, registered: &[&str]) -> Diagnostic {
    let help = if registered.is_empty() {
        "no tools are registered in this build; tools come from std-tools or the embedding app"
            .to_string()
    } else {
        suggestion("tools", name, registered.iter().copied())
    };
    Diagnostic::new(
        codes::UNKNOWN_TOOL,
        span,
        format!("tool `{name}` is not registered"),
    )
    .label("unknown tool")
    .help(help)
}

/// A bad tool set: an `mcp { … }` block that cannot work, an unknown source kind, options on
/// an included set, a set including itself.
pub fn bad_tool_source(
    span: Span,
    message: impl Into<String>,
    help: impl Into<String>,
) -> Diagnostic {
    Diagnostic::new(codes::BAD_TOOL_SET, span, message.into())
        .label("bad tool set")
        .help(help.into())
}

/// A model provider nobody registered; `known` are the providers there are.
pub fn unknown_provider(span: Span, provider: &str, known: &[&str]) -> Diagnostic {
    Diagnostic::new(
        codes::UNKNOWN_PROVIDER,
        span,
        format!("unknown model provider `{provider}`"),
    )
    .label("not a provider")
    .help(suggestion("providers", provider, known.iter().copied()))
}

/// A key, token or secret written as a string literal.
pub fn literal_secret(span: Span, key: &str) -> Diagnostic {
    Diagnostic::new(
        codes::LITERAL_SECRET,
        span,
        format!("`{key}` is a literal secret"),
    )
    .label("never put keys in a graph file")
    .help({
        let var = match key {
            "api_key" => "ANTHROPIC_API_KEY".to_string(),
            other => other.to_uppercase().replace('-', "_"),
        };
        format!("read it from the environment: `{key}: env(\"{var}\")`")
    })
}

/// An option `provider` models do not read; `allowed` are those they do.
pub fn unknown_model_option(span: Span, key: &str, provider: &str, allowed: &[&str]) -> Diagnostic {
    Diagnostic::new(
        codes::UNKNOWN_MODEL_OPTION,
        span,
        format!("`{key}` is not an option of `{provider}` models"),
    )
    .label("unknown option")
    .help(suggestion("options", key, allowed.iter().copied()))
}

/// A key `config { … }` does not have; `known` are the keys it has.
pub fn unknown_config_key(span: Span, key: &str, known: &[&str]) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_CONFIG,
        span,
        format!("unknown config key `{key}`"),
    )
    .label("not a config key")
    .help(suggestion("config keys", key, known.iter().copied()))
}

/// A config value (`recursion_limit`, `keep_checkpoints`) that is not a positive integer.
pub fn bad_config_count(span: Span, key: &str) -> Diagnostic {
    let help = match key {
        "keep_checkpoints" => {
            "how many checkpoints of the thread a run keeps, e.g. `config { keep_checkpoints: 100 }`"
        }
        _ => "the most steps a run may take, e.g. `config { recursion_limit: 50 }`",
    };
    Diagnostic::new(
        codes::BAD_CONFIG,
        span,
        format!("{key} must be a positive integer"),
    )
    .label("not a positive integer")
    .help(help)
}

/// A key a `retry { … }` block does not have; `known` are the keys it has.
pub fn unknown_retry_option(span: Span, key: &str, known: &[&str]) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_RETRY,
        span,
        format!("`{key}` is not a retry option"),
    )
    .label("unknown option")
    .help(suggestion("options", key, known.iter().copied()))
}

/// `timeout:` with something other than a duration.
pub fn timeout_not_duration(span: Span) -> Diagnostic {
    Diagnostic::new(codes::BAD_RETRY, span, "a timeout is a duration")
        .label("not a duration")
        .help("write e.g. `timeout: 30s` (units: ms, s, m, h)")
}

/// A key a `cache { … }` block does not have; `known` are the keys it has.
pub fn unknown_cache_option(span: Span, key: &str, known: &[&str]) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_CACHE,
        span,
        format!("`{key}` is not a cache option"),
    )
    .label("unknown option")
    .help(suggestion("options", key, known.iter().copied()))
}

/// A cache `ttl` that is not a positive duration.
pub fn bad_cache_ttl(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_CACHE,
        span,
        "a cache ttl is a positive duration",
    )
    .label("not a positive duration")
    .help("write e.g. `cache { ttl: 10m }` (units: ms, s, m, h), or `cache {}` to keep results until the cache is cleared")
}

/// `memory: { store: "store" }` without a `namespace` list (or with a bad one).
pub fn store_memory_without_namespace(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_MEMORY,
        span,
        "a memory on the graph's store needs a `namespace`",
    )
    .label("no namespace list")
    .help("name the conversation with a non-empty list of expressions on the state, e.g. `memory: { store: \"store\", namespace: [\"users\", user_id] }`")
}

/// `namespace` in the memory of a store other than the graph's.
pub fn namespace_without_graph_store(span: Span, store: &str) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_MEMORY,
        span,
        format!("a `{store}` memory has no namespace"),
    )
    .label("only for `store: \"store\"`")
    .help("a namespace names a conversation in the graph's long-term store: write `store: \"store\"`, or drop `namespace` (a `buffer`, `sled` or `redis` memory is keyed by the session)")
}

/// A retry option whose value has the wrong type (found when compiling).
pub fn bad_retry_value(span: Span, key: &str) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_RETRY,
        span,
        format!("bad value for retry option `{key}`"),
    )
    .label("wrong type")
}

/// A `js` node's `code` that is not a string literal.
pub fn js_code_not_a_string(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_ENTRY,
        span,
        "`code` is a string literal holding a JavaScript function body",
    )
    .label("not a string literal")
    .help(
        "write the code in a `\"\"\"` string: `code: \"\"\"\\n  return { total: a + b }\\n\"\"\"`",
    )
}

/// JavaScript that does not parse; `message` is QuickJS's.
pub fn js_syntax_error(span: Span, message: &str) -> Diagnostic {
    Diagnostic::new(
        codes::JS_SYNTAX,
        span,
        format!("the JavaScript does not parse: {message}"),
    )
    .label("here")
    .help("the code is the body of a function: end it with `return { channel: value }`")
}

/// A `time_limit` or `memory_limit` of the wrong kind.
pub fn bad_code_limit(span: Span, key: &str) -> Diagnostic {
    let (what, example) = match key {
        "time_limit" => ("a duration", "`time_limit: 2s`"),
        _ => ("a positive number of bytes", "`memory_limit: 16000000`"),
    };
    Diagnostic::new(codes::BAD_ENTRY, span, format!("`{key}` is {what}"))
        .label(format!("not {what}"))
        .help(format!("write e.g. {example}"))
}

/// A `tool` node's `tool` that is not a name or a string.
pub fn tool_not_a_name(span: Span) -> Diagnostic {
    Diagnostic::new(codes::BAD_ENTRY, span, "`tool` names a tool")
        .label("not a tool name")
        .help("write the tool's name, e.g. `tool: calculator` (or `tool: \"get-sum\"` for names with other characters)")
}

/// `output:` with something other than a channel name.
pub fn output_not_a_channel(span: Span) -> Diagnostic {
    Diagnostic::new(codes::BAD_ENTRY, span, "`output` names a channel")
        .label("not a channel name")
        .help("name the channel that receives the tool's result, e.g. `output: result`")
}

/// The marker [`node_not_built`] puts between the node names and the reason (the compiler
/// merges diagnostics that share a reason).
pub const NOT_BUILT: &str = " could not be built: ";

/// A registered factory refused node `node` of kind `kind` with `reason`.
pub fn node_not_built(span: Span, node: &str, kind: &str, reason: &str) -> Diagnostic {
    Diagnostic::new(
        codes::NODE_NOT_BUILT,
        span,
        format!("node `{node}` ({kind}){NOT_BUILT}{reason}"),
    )
    .label("here")
}
