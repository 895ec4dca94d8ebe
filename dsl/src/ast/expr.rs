//! Expressions: operators and the kinds of expression.

use serde::Serialize;

use super::{Ident, ObjectLit, Span, StrLit};

/// An expression.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

impl Expr {
    /// The name an entry value names: `messages` or `"messages"`.
    pub fn as_name(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Name { name } => Some(name.name.as_str()),
            ExprKind::Str { lit } => Some(lit.value.as_str()),
            _ => None,
        }
    }
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnOp {
    /// `not x`.
    Not,
    /// `-x`.
    Neg,
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BinOp {
    /// `or`
    Or,
    /// `and`
    And,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

impl BinOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "or",
            BinOp::And => "and",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }

    /// Binding strength (higher binds tighter).
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
            BinOp::Add | BinOp::Sub => 4,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 5,
        }
    }
}

/// Expression forms.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "expr", rename_all = "snake_case")]
pub enum ExprKind {
    /// `null`
    Null,
    /// `true` / `false`
    Bool {
        /// The value.
        value: bool,
    },
    /// An integer.
    Int {
        /// The value.
        value: i64,
    },
    /// A float.
    Float {
        /// The value.
        value: f64,
    },
    /// A duration such as `500ms` or `2m`, in milliseconds.
    Duration {
        /// Milliseconds.
        ms: u64,
        /// As written.
        text: String,
    },
    /// A string (may hold `{{ … }}` templates).
    Str {
        /// The literal.
        lit: StrLit,
    },
    /// A name: a channel, a loop variable, a prompt, a model, a tool set…
    Name {
        /// The name.
        name: Ident,
    },
    /// `base.field`
    Field {
        /// The object.
        base: Box<Expr>,
        /// The field.
        field: Ident,
    },
    /// `base[index]`
    Index {
        /// The list or object.
        base: Box<Expr>,
        /// The index or key.
        index: Box<Expr>,
    },
    /// `f(args)`
    Call {
        /// The function.
        func: Ident,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// `[a, b]`
    List {
        /// Items.
        items: Vec<Expr>,
    },
    /// `{k: v}`
    Object {
        /// Entries.
        object: ObjectLit,
    },
    /// `not x`, `-x`
    Unary {
        /// The operator.
        op: UnOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// `a op b`
    Binary {
        /// The operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
}
