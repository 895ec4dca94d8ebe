//! Explaining syntax errors: pest's expectations in the language's words, the token found,
//! a hint for the context, and the one error for a graph that is never closed.

use super::{Context, Rule};
use crate::ast::Span;
use crate::diagnostic::{catalogue as diag, did_you_mean, Diagnostic};

pub(super) fn first_token(text: &str) -> &str {
    let t = text.trim_start();
    let end = t
        .char_indices()
        .find(|(i, c)| c.is_whitespace() || (*i > 0 && !c.is_alphanumeric() && *c != '_'))
        .map_or(t.len(), |(i, _)| i);
    if end == 0 {
        // Two-character operators read as one token (`found `=>``, not `found `=``).
        let two = ["->", "=>", "==", "!=", "<=", ">=", "&&", "||"]
            .into_iter()
            .find(|op| t.starts_with(op));
        &t[..two.map_or_else(|| t.chars().next().map_or(0, char::len_utf8), str::len)]
    } else {
        &t[..end]
    }
}

/// Names a grammar rule the way an author would.
fn describe(rule: Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::ident => "a name",
        Rule::expr | Rule::postfix_expr => "an expression",
        Rule::arrow => "`->`",
        Rule::node_kind => "a node kind: llm, tool_executor, set, interrupt, subgraph, or a registered kind",
        Rule::type_expr | Rule::type_base => "a type: string, int, float, bool, json, messages, list<T>, map<T>",
        Rule::string | Rule::plain_string | Rule::triple_string => "a string",
        Rule::object => "`{`",
        Rule::node_body => "a node body `{ … }`",
        Rule::target => "a target: a node, END, `route { … }` or `send …`",
        Rule::route_arm => "a route arm `condition => target` or `else => target`",
        Rule::route_targets | Rule::route_target => "a target node, END or `send …`",
        Rule::endpoint | Rule::join_sources => "a node name or `[a, b]`",
        Rule::field => "a state field `name: type`",
        Rule::private_flag => "`private`",
        Rule::ephemeral_flag => "`ephemeral`",
        Rule::graph_item | Rule::bad_item => {
            "an item: state, input, output, model, prompt, tools, node, an edge `a -> b`, interrupt or config"
        }
        Rule::state_block => "`state { … }`",
        Rule::node_decl => "`node name: kind { … }`",
        Rule::edge_stmt => "an edge `a -> b`",
        Rule::model_decl => "`model name = provider { … }`",
        Rule::value_entry | Rule::block_entry | Rule::node_entry => "an entry `key: value` or `key { … }`",
        Rule::interrupt_when => "`before` or `after`",
        Rule::ident_list => "a list of names",
        Rule::use_decl | Rule::graph_decl => "`graph name { … }` or `use \"file.ag\" as name`",
        Rule::EOI => "the end of the file",
        Rule::kw_use => "`use`",
        Rule::kw_as => "`as`",
        Rule::kw_graph => "`graph`",
        Rule::kw_reduce => "`reduce`",
        Rule::kw_for => "`for`",
        Rule::kw_in => "`in`",
        Rule::kw_route => "`route`",
        Rule::kw_send => "`send`",
        Rule::op_eq | Rule::op_ne | Rule::op_lt | Rule::op_le | Rule::op_gt | Rule::op_ge | Rule::op_add
        | Rule::op_sub | Rule::op_mul | Rule::op_div | Rule::op_rem | Rule::op_or | Rule::op_and => "an operator",
        Rule::field_access | Rule::index_access => "`.field` or `[index]`",
        Rule::object_entry => "an entry `key: value`",
        Rule::list => "`[`",
        _ => return None,
    })
}

/// Turns a pest error into a diagnostic; `offset` maps positions of a re-parsed fragment back
/// into the file.
pub(super) fn pest_error(
    src: &str,
    offset: usize,
    e: &pest::error::Error<Rule>,
    ctx: Context,
) -> Diagnostic {
    use pest::error::{ErrorVariant, InputLocation};
    let mut rel = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((a, _)) => a,
    };
    let mut expected: Vec<String> = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => positives
            .iter()
            .filter_map(|r| describe(*r))
            .map(str::to_string)
            .collect(),
        ErrorVariant::CustomError { .. } => Vec::new(),
    };
    // pest reports only rules; its parse attempts also know the punctuation it expected at the
    // farthest position reached (`:` after a field name, `}` …).
    if let Some(att) = e.parse_attempts() {
        if att.max_position >= rel {
            if att.max_position > rel {
                expected.clear();
            }
            rel = att.max_position;
            for t in att.expected_tokens() {
                let token = t.to_string();
                let is_space = matches!(token.as_str(), " " | "\t" | "\r" | "\n" | "#");
                if !is_space
                    && !token.trim().is_empty()
                    && !token.contains("..")
                    && token != "BUILTIN_RULE"
                {
                    expected.push(format!("`{token}`"));
                }
            }
        }
    }
    // Point at the next token, not at the whitespace or comment before it.
    let mut pos = rel + offset;
    pos += src.get(pos..).map_or(0, leading_trivia);
    let rest = src.get(pos..).unwrap_or("");
    let found = if rest.trim().is_empty() {
        "the end of the file".to_string()
    } else {
        format!("`{}`", first_token(rest))
    };
    expected.sort_unstable();
    expected.dedup();
    group_tokens(&mut expected);
    let what = match expected.len() {
        0 => match ctx {
            Context::Graph => "an item: state, input, output, model, prompt, tools, node, an edge `a -> b`, interrupt or config".to_string(),
            Context::State => "a state field `name: type`".to_string(),
            Context::Body => "an entry `key: value` or `key { … }`".to_string(),
            Context::Expr => "an expression".to_string(),
            Context::Top => "`graph name { … }` or `use \"file.ag\" as name`".to_string(),
        },
        1 => expected[0].clone(),
        _ => {
            let (last, init) = expected.split_last().map(|(l, i)| (l.clone(), i.to_vec())).unwrap_or_default();
            format!("{} or {}", init.join(", "), last)
        }
    };
    let len = first_token(rest).len().max(1).min(rest.len().max(1));
    let end = (pos + len).min(src.len());
    diag::expected(
        Span::new(pos.min(src.len()), end),
        &what,
        &found,
        context_help(ctx, first_token(rest), &expected),
    )
}

/// A `graph name {` at `at` whose braces never balance, as one error at its `{` (rather than one
/// per line that follows). The first block whose `}` sits at another indentation than its line
/// is pointed at as the likely culprit.
pub(super) fn unclosed_graph(src: &str, at: usize) -> Option<Diagnostic> {
    let rest = &src[at..];
    let header = rest
        .strip_prefix("graph")
        .filter(|h| h.starts_with(char::is_whitespace))?;
    let open = at + rest.find('{')?;
    let indent = |pos: usize| {
        let line = &src[src[..pos].rfind('\n').map_or(0, |i| i + 1)..];
        line.len() - line.trim_start_matches([' ', '\t']).len()
    };
    let (mut stack, mut suspect) = (Vec::new(), None);
    let b = src.as_bytes();
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'#' => i += src[i..].find('\n').unwrap_or(src.len() - i),
            b'"' if src[i..].starts_with("\"\"\"") => {
                i += 3 + src[i + 3..]
                    .find("\"\"\"")
                    .map_or(src.len() - i - 3, |k| k + 2)
            }
            b'"' => i += 1 + src[i + 1..].find(['"', '\n']).unwrap_or(src.len() - i - 1),
            b'{' => stack.push(i),
            b'}' => {
                let o = stack.pop()?;
                let line_start = src[..i].rfind('\n').map_or(0, |k| k + 1);
                if suspect.is_none()
                    && src[line_start..i].trim().is_empty()
                    && indent(o) != i - line_start
                {
                    suspect = Some(o);
                }
                if stack.is_empty() {
                    return None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    let name = first_token(header);
    Some(diag::unclosed_graph(
        Span::new(open, open + 1),
        name,
        suspect.map(|o| Span::new(o, o + 1)),
    ))
}

/// The length of the whitespace and comments at the start of `s`.
fn leading_trivia(s: &str) -> usize {
    let mut i = 0;
    loop {
        let t = &s[i..];
        let trimmed = t.trim_start();
        i += t.len() - trimmed.len();
        if !trimmed.starts_with('#') {
            return i;
        }
        i += trimmed.find('\n').unwrap_or(trimmed.len());
    }
}

/// What a syntax error's help says: the shape expected where it happened.
fn context_help(ctx: Context, found: &str, expected: &[String]) -> String {
    if found == ";" {
        return "remove the `;`: items and entries end at the end of the line (or with `,`)".into();
    }
    if expected.iter().any(|e| e == "`->`") && matches!(found, "-" | "=" | ">" | "→") {
        return "an edge is `a -> b`; a chain is `a -> b -> c`".into();
    }
    match ctx {
        Context::Top => match did_you_mean(found, ["graph", "use"]) {
            Some(kw) if kw != found => format!("did you mean `{kw}`?"),
            _ => "a file holds `use \"file.ag\" as name` lines and `graph name { … }`; everything else goes inside the graph".into(),
        },
        Context::Graph => "a graph holds `state { … }`, `node name: kind { … }`, edges `a -> b`, `model`, `prompt`, `tools`, `interrupt before|after a` and `config { … }`".into(),
        Context::State => "a state field is `name: type`, optionally with `= default` and `reduce reducer`, e.g. `count: int = 0`".into(),
        Context::Body => "a node holds entries `key: value` and blocks `key { … }`, e.g. `set { count: count + 1 }`".into(),
        Context::Expr => "an expression is a literal, a channel name, a call `f(x)`, or operators such as `a + b`".into(),
    }
}

/// Replaces families of expected tokens by what they start: an expression, a name, an item.
fn group_tokens(expected: &mut Vec<String>) {
    const EXPR: [&str; 10] = [
        "`\"\"\"`", "`\"`", "`(`", "`-`", "`[`", "`false`", "`not`", "`null`", "`true`", "`{`",
    ];
    const ITEM: [&str; 9] = [
        "`state`",
        "`input`",
        "`output`",
        "`model`",
        "`prompt`",
        "`tools`",
        "`node`",
        "`interrupt`",
        "`config`",
    ];
    let has =
        |set: &[&str], e: &Vec<String>| set.iter().filter(|t| e.iter().any(|x| x == *t)).count();
    if has(&EXPR, expected) >= 4 {
        expected.retain(|x| !EXPR.contains(&x.as_str()) && x != "`_`");
        expected.push("an expression".into());
    }
    if has(&ITEM, expected) >= 4 {
        expected.retain(|x| !ITEM.contains(&x.as_str()) && x != "`[`" && x != "`_`");
        expected.push(
            "an item: state, input, output, model, prompt, tools, node, an edge `a -> b`, interrupt or config".into(),
        );
    }
    if expected.iter().any(|x| x == "`route`") && expected.iter().any(|x| x == "`send`") {
        expected.retain(|x| x != "`route`" && x != "`send`" && x != "`_`");
        expected.push("a target: a node, END, `route { … }` or `send …`".into());
    }
    if let Some(i) = expected.iter().position(|x| x == "`_`") {
        expected[i] = "a name".into();
    }
    expected.sort_unstable();
    expected.dedup();
}
