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
