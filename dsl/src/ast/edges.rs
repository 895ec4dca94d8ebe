//! Edges: `a -> b`, routes, `send` fan-outs and interrupts.

use serde::Serialize;

use super::{Expr, Ident, NameList, ObjectLit, Span};

/// `a -> b -> c`, `[a, b] -> c`, `a -> route { … }`, `a -> send …`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EdgeStmt {
    /// Where the chain starts.
    pub from: Endpoint,
    /// Each hop.
    pub hops: Vec<Target>,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

impl EdgeStmt {
    /// The fan-outs of the chain: a `send` hop, and the sends of its route's arms.
    pub fn sends(&self) -> impl Iterator<Item = &SendExpr> {
        self.hops.iter().flat_map(|h| {
            let (hop, arms): (Option<&SendExpr>, &[RouteArm]) = match h {
                Target::Send(sx) => (Some(sx), &[]),
                Target::Route(r) => (None, &r.arms),
                Target::Node(_) => (None, &[]),
            };
            hop.into_iter().chain(
                arms.iter()
                    .flat_map(|a| &a.targets)
                    .filter_map(|t| match t {
                        RouteTarget::Send(sx) => Some(sx),
                        RouteTarget::Node(_) => None,
                    }),
            )
        })
    }
}

/// The start of an edge chain.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "endpoint", rename_all = "snake_case")]
pub enum Endpoint {
    /// One node (or START).
    Node(Ident),
    /// A waiting edge's sources `[a, b]`.
    Join(NameList),
}

/// A hop of an edge chain.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "target", rename_all = "snake_case")]
pub enum Target {
    /// A node (or END).
    Node(Ident),
    /// A conditional route.
    Route(RouteBlock),
    /// A fan-out.
    Send(SendExpr),
}

/// `route { cond => target … else => target }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteBlock {
    /// Arms in order; the first true one wins.
    pub arms: Vec<RouteArm>,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

impl RouteBlock {
    /// The node each arm's targets go to, arm by arm, in source order (a send's node for a
    /// fan-out).
    pub fn target_names(&self) -> impl Iterator<Item = &Ident> {
        self.arms.iter().flat_map(RouteArm::target_names)
    }
}

/// One arm of a route.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteArm {
    /// The condition; `None` for `else`.
    pub cond: Option<Expr>,
    /// Where the arm goes (several: parallel).
    pub targets: Vec<RouteTarget>,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// A route arm's target.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum RouteTarget {
    /// A node (or END).
    Node(Ident),
    /// A fan-out.
    Send(SendExpr),
}

impl RouteArm {
    /// The node each of the arm's targets goes to, in source order.
    pub fn target_names(&self) -> impl Iterator<Item = &Ident> {
        self.targets.iter().map(RouteTarget::name)
    }
}

impl RouteTarget {
    /// The node the target goes to: the node itself, or the node a send runs.
    pub fn name(&self) -> &Ident {
        match self {
            RouteTarget::Node(n) => n,
            RouteTarget::Send(s) => &s.node,
        }
    }
}

/// `send node for x in list { key: expr }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SendExpr {
    /// The node each task runs.
    pub node: Ident,
    /// The loop variable.
    pub var: Ident,
    /// The list iterated.
    pub iter: Expr,
    /// The payload of each task.
    pub payload: ObjectLit,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// `interrupt before|after a, b`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InterruptStmt {
    /// True for `after`.
    pub after: bool,
    /// The nodes.
    pub nodes: Vec<Ident>,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}
