//! Static types of expressions, as far as the state schema tells them.

use agentgraph_runtime::ValueType;
use std::fmt;

/// What the checker knows about an expression's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// Unknown (json): anything goes.
    Any,
    /// `null`
    Null,
    /// bool
    Bool,
    /// int
    Int,
    /// float (or int)
    Float,
    /// string
    String,
    /// list of T
    List(Box<Ty>),
    /// object with T values
    Map(Box<Ty>),
    /// a message list
    Messages,
    /// one message object
    Message,
    /// T or null
    Optional(Box<Ty>),
}

impl Ty {
    /// The type of a channel.
    pub fn of(v: &ValueType) -> Ty {
        match v {
            ValueType::String => Ty::String,
            ValueType::Int => Ty::Int,
            ValueType::Float => Ty::Float,
            ValueType::Bool => Ty::Bool,
            ValueType::Json => Ty::Any,
            ValueType::Messages => Ty::Messages,
            ValueType::List(t) => Ty::List(Box::new(Ty::of(t))),
            ValueType::Map(t) => Ty::Map(Box::new(Ty::of(t))),
            ValueType::Optional(t) => Ty::Optional(Box::new(Ty::of(t))),
        }
    }

    /// Without the optional wrapper.
    pub fn base(&self) -> &Ty {
        match self {
            Ty::Optional(t) => t.base(),
            t => t,
        }
    }

    /// Whether it is a number.
    pub fn is_number(&self) -> bool {
        matches!(self.base(), Ty::Int | Ty::Float | Ty::Any)
    }

    /// Whether a value of this type can equal one of type `other` (`==` is not always false):
    /// null and json values can equal anything, numbers equal numbers (`1 == 1.0`), lists
    /// equal lists whatever their items (both may be empty), objects equal objects.
    pub fn can_equal(&self, other: &Ty) -> bool {
        match (self.family(), other.family()) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }

    /// The kind of JSON value this type holds (`None`: null, or unknown).
    fn family(&self) -> Option<&'static str> {
        match self.base() {
            Ty::Any | Ty::Null => None,
            Ty::Bool => Some("bool"),
            Ty::Int | Ty::Float => Some("number"),
            Ty::String => Some("string"),
            Ty::List(_) | Ty::Messages => Some("list"),
            Ty::Map(_) | Ty::Message => Some("object"),
            Ty::Optional(_) => None,
        }
    }

    /// Whether a value of this type could be written to a channel of type `to`.
    pub fn fits(&self, to: &Ty) -> bool {
        match (self.base(), to.base()) {
            (Ty::Any, _) | (_, Ty::Any) => true,
            (Ty::Null, _) => matches!(to, Ty::Optional(_)) || matches!(to.base(), Ty::Any),
            (Ty::Int, Ty::Float) => true,
            (Ty::List(_), Ty::Messages) | (Ty::Messages, Ty::List(_)) => true,
            (Ty::Message, Ty::Map(_)) | (Ty::Map(_), Ty::Message) => true,
            (Ty::List(a), Ty::List(b)) | (Ty::Map(a), Ty::Map(b)) => a.fits(b),
            (a, b) => a == b,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Any => f.write_str("json"),
            Ty::Null => f.write_str("null"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Float => f.write_str("float"),
            Ty::String => f.write_str("string"),
            Ty::List(t) => write!(f, "list<{t}>"),
            Ty::Map(t) => write!(f, "map<{t}>"),
            Ty::Messages => f.write_str("messages"),
            Ty::Message => f.write_str("message"),
            Ty::Optional(t) => write!(f, "{t}?"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ty;

    fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }

    fn opt(t: Ty) -> Ty {
        Ty::Optional(Box::new(t))
    }

    #[test]
    fn only_values_of_different_kinds_never_equal() {
        let never = [
            (Ty::Int, Ty::String),
            (Ty::Bool, Ty::Int),
            (Ty::Bool, Ty::String),
            (list(Ty::String), Ty::String),
            (Ty::Messages, Ty::Map(Box::new(Ty::Any))),
            (opt(Ty::Int), Ty::String),
            (Ty::Message, Ty::String),
        ];
        for (a, b) in never {
            assert!(!a.can_equal(&b), "{a} == {b}");
            assert!(!b.can_equal(&a), "{b} == {a}");
        }
        let may = [
            (Ty::Int, Ty::Float),
            (Ty::Any, Ty::String),
            (Ty::Null, Ty::Int),
            (opt(Ty::String), Ty::Null),
            (opt(Ty::String), Ty::String),
            (list(Ty::Int), list(Ty::String)),
            (Ty::Messages, list(Ty::Any)),
            (Ty::Message, Ty::Map(Box::new(Ty::String))),
        ];
        for (a, b) in may {
            assert!(a.can_equal(&b), "{a} == {b}");
            assert!(b.can_equal(&a), "{b} == {a}");
        }
    }
}
