//! Every diagnostic code: its identifier, severity and one-line meaning. This table is the only
//! place a code is spelt out; `docs/dsl-diagnostics.md` and the golden tests are checked
//! against it, and the constructors of [`super::catalogue`] are the only users of its entries.

use super::Severity;

/// One code of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    /// The stable identifier, e.g. `E0205`.
    pub id: &'static str,
    /// Error or warning.
    pub severity: Severity,
    /// What it means, in one line (the documentation's wording).
    pub meaning: &'static str,
}

const fn error(id: &'static str, meaning: &'static str) -> Code {
    Code {
        id,
        severity: Severity::Error,
        meaning,
    }
}

const fn warning(id: &'static str, meaning: &'static str) -> Code {
    Code {
        id,
        severity: Severity::Warning,
        meaning,
    }
}

/// E0001.
pub const SYNTAX: Code = error(
    "E0001",
    "syntax error: the parser expected something else here (it says what)",
);
/// E0002.
pub const SKIPPED_LINE: Code = error(
    "E0002",
    "a line the parser skipped during error recovery although it reads fine on its own",
);
/// E0003.
pub const TOO_DEEP: Code = error(
    "E0003",
    "an expression nested deeper than 128 levels, or brackets deeper than 144 (refused before parsing so that no stage overflows its stack)",
);
/// E0004.
pub const BAD_LITERAL: Code = error(
    "E0004",
    "a literal naming no value: an integer above 9223372036854775807, a duration over 2^64 ms, or a `\\uXXXX` escape naming no character",
);
/// E0101.
pub const PYTHON_API: Code = error(
    "E0101",
    "a call from LangGraph's Python API (`add_edge`, `add_conditional_edges`, …)",
);
/// E0102.
pub const FOREIGN_TEMPLATE: Code = error(
    "E0102",
    "another tool's expression `={{ … }}`; templates are `{{ … }}` inside a string",
);
/// E0103.
pub const FAT_ARROW: Code = error("E0103", "`=>` outside a route; edges use `->`");
/// E0104.
pub const YAML_LIST_ITEM: Code = error("E0104", "a YAML list item `- x` in a graph body");
/// E0105.
pub const YAML_KEY: Code = error(
    "E0105",
    "a YAML-style `key:` line in a graph body (`nodes:`, `edges:`, …)",
);
/// E0106.
pub const IF_STATEMENT: Code = error(
    "E0106",
    "an `if`/`elif` statement; branching is done with routes",
);
/// E0200.
pub const NO_GRAPH: Code = error("E0200", "the file declares no graph");
/// E0206.
pub const SECOND_GRAPH: Code = error(
    "E0206",
    "a second graph in one file (only the first would be used)",
);
/// E0201.
pub const DUPLICATE_NAME: Code = error(
    "E0201",
    "a name is defined twice, or a node uses a reserved name (START, END, `__…`)",
);
/// E0202.
pub const BAD_TYPE: Code = error(
    "E0202",
    "unknown type, or a type argument where none fits (`list` without `<T>`, `int<…>`)",
);
/// E0203.
pub const UNKNOWN_REDUCER: Code = error("E0203", "unknown reducer");
/// E0204.
pub const BAD_DEFAULT: Code = error(
    "E0204",
    "a channel default is not a constant, or not of the channel's type",
);
/// E0205.
pub const UNKNOWN_CHANNEL: Code = error(
    "E0205",
    "a channel is used (input, output, set, write, out) but not declared",
);
/// E0210.
pub const BAD_KIND: Code = error("E0210", "a node has no kind, or an unknown kind");
/// E0211.
pub const BAD_ENTRY: Code = error(
    "E0211",
    "a node has an entry its kind does not accept, or an entry of the wrong shape",
);
/// E0212.
pub const MISSING_ENTRY: Code = error("E0212", "a node lacks an entry its kind requires");
/// E0220.
pub const UNKNOWN_NODE: Code = error(
    "E0220",
    "an edge, route, send or interrupt names a node that is not defined",
);
/// E0221.
pub const START_END_MISPLACED: Code = error(
    "E0221",
    "START or END in the wrong place (START as a target, END as a source)",
);
/// E0222.
pub const ROUTE_WITHOUT_ELSE: Code = error("E0222", "a route without an `else` arm");
/// E0224.
pub const NOT_LAST_HOP: Code = error(
    "E0224",
    "a route or send that is not the last hop of an edge",
);
/// E0230.
pub const UNKNOWN_NAME: Code = error(
    "E0230",
    "an expression uses a name that is not a channel or a local variable",
);
/// E0231.
pub const BAD_CALL: Code = error(
    "E0231",
    "unknown function, or a function called with the wrong number of arguments",
);
/// E0232.
pub const TYPE_MISMATCH: Code = error(
    "E0232",
    "type error in an expression, a condition that is not a bool, a write of the wrong type",
);
/// E0233.
pub const BAD_TEMPLATE: Code = error(
    "E0233",
    "a bad template (`{{` without `}}`, unparsable hole) or an unknown template filter",
);
/// E0234.
pub const NEVER_EQUAL: Code = error(
    "E0234",
    "`==` or `!=` between values of types that are never equal (always false, or always true)",
);
/// E0240.
pub const UNKNOWN_TOOL: Code = error(
    "E0240",
    "a tool set or a `tool` node names a tool that is not registered",
);
/// E0241.
pub const UNKNOWN_PROVIDER: Code = error("E0241", "unknown model provider");
/// E0242.
pub const LITERAL_SECRET: Code = error(
    "E0242",
    "a literal secret (api key, token) in a model's options or an MCP server's `env`/`headers`",
);
/// E0243.
pub const UNKNOWN_MODEL_OPTION: Code = error(
    "E0243",
    "an option the model's provider does not read (a typo would be silently ignored)",
);
/// E0244.
pub const BAD_TOOL_SET: Code = error(
    "E0244",
    "a bad tool set: an `mcp { … }` block that cannot work (no `command`/`url`, an unknown option, a value of the wrong shape), an unknown source, a set that includes itself",
);
/// E0250.
pub const UNREADABLE_REFERENCE: Code = error(
    "E0250",
    "a referenced file cannot be read, or a subgraph alias is not imported",
);
/// E0251.
pub const IMPORT_CYCLE: Code = error("E0251", "import cycle between graph files");
/// E0252.
pub const MISSING_PROMPT_FILE: Code = error(
    "E0252",
    "a `file(…)` prompt names a file that does not exist or cannot be read (not a regular file, over 10 MB, not UTF-8)",
);
/// E0253.
pub const FILE_OUTSIDE_PROMPT: Code = error(
    "E0253",
    "`file(…)` outside `prompt name = file(\"…\")` (files are read only when the graph is loaded)",
);
/// E0260.
pub const BAD_CONFIG: Code = error("E0260", "unknown config key, or a bad config value");
/// E0270.
pub const BAD_RETRY: Code = error(
    "E0270",
    "unknown retry option, or a timeout that is not a duration (compile: a bad retry value)",
);
/// E0271.
pub const BAD_CACHE: Code = error(
    "E0271",
    "unknown cache option, or a cache `ttl` that is not a positive duration",
);
/// E0272.
pub const BAD_MEMORY: Code = error(
    "E0272",
    "an `llm` node's memory on the graph's store (`store: \"store\"`) without a `namespace` list, or a `namespace` given to another store",
);
/// E0280.
pub const JS_SYNTAX: Code = error(
    "E0280",
    "the code of a `js` node does not parse as JavaScript",
);
/// E0290.
pub const GRAPH_REJECTED: Code = error("E0290", "compile: the runtime rejected the graph");
/// E0291.
pub const NODE_NOT_BUILT: Code = error(
    "E0291",
    "compile: a registered node factory could not build a node",
);
/// W0301.
pub const UNREACHABLE: Code = warning("W0301", "warning: a node is never reached from START");
/// W0302.
pub const DEAD_END: Code = warning(
    "W0302",
    "warning: a node has no outgoing edge (the run stops there), or every path from it loops without reaching END",
);
/// W0303.
pub const SHARED_WRITE: Code = warning(
    "W0303",
    "warning: two nodes that can run in the same step both write a replace channel",
);
/// W0304.
pub const ARM_AFTER_ELSE: Code = warning("W0304", "warning: a route arm after `else` never runs");
/// W0305.
pub const SEND_SHARED_WRITE: Code = warning(
    "W0305",
    "warning: a node a `send` fans out to writes a replace channel (its parallel tasks collide)",
);

/// Every code, in the order of the documentation.
pub const ALL: &[Code] = &[
    SYNTAX,
    SKIPPED_LINE,
    TOO_DEEP,
    BAD_LITERAL,
    PYTHON_API,
    FOREIGN_TEMPLATE,
    FAT_ARROW,
    YAML_LIST_ITEM,
    YAML_KEY,
    IF_STATEMENT,
    NO_GRAPH,
    SECOND_GRAPH,
    DUPLICATE_NAME,
    BAD_TYPE,
    UNKNOWN_REDUCER,
    BAD_DEFAULT,
    UNKNOWN_CHANNEL,
    BAD_KIND,
    BAD_ENTRY,
    MISSING_ENTRY,
    UNKNOWN_NODE,
    START_END_MISPLACED,
    ROUTE_WITHOUT_ELSE,
    NOT_LAST_HOP,
    UNKNOWN_NAME,
    BAD_CALL,
    TYPE_MISMATCH,
    BAD_TEMPLATE,
    NEVER_EQUAL,
    UNKNOWN_TOOL,
    UNKNOWN_PROVIDER,
    LITERAL_SECRET,
    UNKNOWN_MODEL_OPTION,
    BAD_TOOL_SET,
    UNREADABLE_REFERENCE,
    IMPORT_CYCLE,
    MISSING_PROMPT_FILE,
    FILE_OUTSIDE_PROMPT,
    BAD_CONFIG,
    BAD_RETRY,
    BAD_CACHE,
    BAD_MEMORY,
    JS_SYNTAX,
    GRAPH_REJECTED,
    NODE_NOT_BUILT,
    UNREACHABLE,
    DEAD_END,
    SHARED_WRITE,
    ARM_AFTER_ELSE,
    SEND_SHARED_WRITE,
];

/// The code with identifier `id`, if the catalogue has it.
pub fn lookup(id: &str) -> Option<&'static Code> {
    ALL.iter().find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_unique_and_severities_match_their_letter() {
        let mut seen = std::collections::BTreeSet::new();
        for c in ALL {
            assert!(seen.insert(c.id), "{} twice", c.id);
            let want = if c.id.starts_with('W') {
                Severity::Warning
            } else {
                Severity::Error
            };
            assert_eq!(c.severity, want, "{}", c.id);
            assert!(!c.meaning.is_empty(), "{}", c.id);
        }
    }
}
