//! Declarations: names, types, reducers, defaults (E0201–E0204).

use super::a;
use crate::ast::{Ident, Span};
use crate::diagnostic::{codes, suggestion, Diagnostic};

/// `kind` `id` defined a second time; `first` is the first definition.
pub fn defined_twice(kind: &str, id: &Ident, first: Span) -> Diagnostic {
    Diagnostic::new(
        codes::DUPLICATE_NAME,
        id.span,
        format!("{kind} `{}` is defined twice", id.name),
    )
    .label("second definition")
    .with_label(first, "first defined here")
    .help(format!("rename one of them or remove the duplicate {kind}"))
}

/// A node named START, END or `__…`.
pub fn reserved_name(id: &Ident) -> Diagnostic {
    Diagnostic::new(
        codes::DUPLICATE_NAME,
        id.span,
        format!("`{}` is reserved", id.name),
    )
    .label("reserved name")
    .help("START and END are built in, and names starting with `__` belong to the runtime; choose another name")
}

/// `list` or `map` without `<T>`.
pub fn missing_item_type(span: Span, name: &str) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_TYPE,
        span,
        format!("`{name}` needs an item type"),
    )
    .label("missing `<T>`")
    .help(format!(
        "write `{name}<string>` (or `{name}<json>` for anything)"
    ))
}

/// `name<…>` where `name` is no type; `hint` is the generic type meant, if guessed.
pub fn unknown_generic_type(span: Span, name: &str, hint: Option<&str>) -> Diagnostic {
    Diagnostic::new(codes::BAD_TYPE, span, format!("unknown type `{name}`"))
        .label("not a type")
        .help(match hint {
            Some(h) => format!("did you mean `{h}<…>`?"),
            None => "generic types are `list<T>` and `map<T>`".to_string(),
        })
}

/// `int<…>` and the like.
pub fn no_type_argument(span: Span, name: &str) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_TYPE,
        span,
        format!("`{name}` takes no type argument"),
    )
    .label("not a generic type")
    .help("only `list<T>` and `map<T>` take a type argument")
}

/// An unknown type name; `hint` says what was probably meant.
pub fn unknown_type(span: Span, name: &str, hint: Option<String>) -> Diagnostic {
    Diagnostic::new(codes::BAD_TYPE, span, format!("unknown type `{name}`"))
        .label("not a type")
        .help(hint.unwrap_or_else(|| {
            "types: string, int, float, bool, json, messages, list<T>, map<T>, T?".into()
        }))
}

/// `reduce name` with no such reducer registered.
pub fn unknown_reducer(span: Span, name: &str, registered: &[&str]) -> Diagnostic {
    Diagnostic::new(
        codes::UNKNOWN_REDUCER,
        span,
        format!("unknown reducer `{name}`"),
    )
    .label("not a registered reducer")
    .help(suggestion("reducers", name, registered.iter().copied()))
}

/// A default that names something (defaults are constants).
pub fn default_not_constant(name: &Ident) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_DEFAULT,
        name.span,
        format!("a default must be a constant; `{}` is a name", name.name),
    )
    .label("not a constant")
    .help("defaults are literals: numbers, strings, true/false/null, lists and objects")
}

/// The default of `channel` is not of its type `ty`; `why` is the type check's complaint.
pub fn default_wrong_type(
    span: Span,
    channel: &str,
    ty: impl std::fmt::Display,
    why: String,
    type_span: Span,
) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_DEFAULT,
        span,
        format!("the default of `{channel}` is not {}", a(&ty)),
    )
    .label(why)
    .with_label(type_span, "declared type")
    .help(format!(
        "write {} here, or change the channel's type",
        a(&ty)
    ))
}

/// A constant option the compiler could not evaluate.
pub fn not_a_constant(span: Span, error: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_DEFAULT,
        span,
        format!("cannot evaluate this constant: {error}"),
    )
    .label("not a constant")
}
