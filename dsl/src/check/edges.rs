//! Edges, routes and sends: the nodes they name, where START and END may appear, and that
//! routes and sends end their chain.

use super::Checker;
use crate::ast::*;
use crate::diagnostic::catalogue as diag;
use crate::types::Ty;

impl Checker<'_, '_> {
    pub(super) fn edge(&mut self, e: &EdgeStmt) {
        match &e.from {
            Endpoint::Node(n) => self.node_ref(n, true),
            Endpoint::Join(l) => {
                for n in &l.names {
                    self.node_ref(n, false);
                    if n.name == "END" {
                        self.out.push(diag::end_waited_on(n.span));
                    }
                }
            }
        }
        let last = e.hops.len().saturating_sub(1);
        for (i, h) in e.hops.iter().enumerate() {
            let is_last = i == last;
            match h {
                Target::Node(n) => {
                    self.node_ref(n, false);
                    if n.name == "END" && !is_last {
                        self.out.push(diag::after_end(n.span));
                    }
                }
                Target::Route(r) => {
                    if !is_last {
                        self.out.push(diag::route_not_last(r.span));
                    }
                    self.route(r);
                }
                Target::Send(s) => {
                    if !is_last {
                        self.out.push(diag::send_not_last(s.span, &s.node.name));
                    }
                    self.send(s);
                }
            }
        }
    }

    fn route(&mut self, r: &RouteBlock) {
        if !r.arms.iter().any(|a| a.cond.is_none()) {
            self.out.push(diag::route_without_else(r.span));
        }
        let mut seen_else = false;
        for a in &r.arms {
            if seen_else {
                self.out.push(diag::arm_after_else(a.span));
            }
            match &a.cond {
                Some(c) => self.expr(c, &[], true),
                None => seen_else = true,
            }
            for t in &a.targets {
                match t {
                    RouteTarget::Node(n) => self.node_ref(n, false),
                    RouteTarget::Send(s) => self.send(s),
                }
            }
        }
    }

    fn send(&mut self, s: &SendExpr) {
        self.node_ref(&s.node, false);
        let ty = self.expr_ty(&s.iter, &[]);
        if !matches!(ty.base(), Ty::List(_) | Ty::Messages | Ty::Any) {
            self.out
                .push(diag::send_over_non_list(s.iter.span, &s.var.name, &ty));
        }
        let locals = vec![s.var.name.clone()];
        for (_, v) in &s.payload.entries {
            self.expr(v, &locals, false);
        }
    }
}
