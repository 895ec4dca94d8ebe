//! Expressions: names in scope, function calls, operator types, templates and their filters.

use super::Checker;
use crate::ast::*;
use crate::diagnostic::catalogue as diag;
use crate::types::Ty;

impl Checker<'_, '_> {
    /// Entry values may name models, prompts and tool sets besides channels.
    pub(super) fn entry_value(&mut self, value: &Expr, locals: &[String]) {
        let mut extra: Vec<String> = locals.to_vec();
        extra.extend(self.s.models.keys().cloned());
        extra.extend(self.s.prompts.keys().cloned());
        extra.extend(self.s.toolsets.keys().cloned());
        self.expr(value, &extra, false);
    }

    /// Checks an expression (a bool one when `want_bool`).
    pub(super) fn expr(&mut self, e: &Expr, locals: &[String], want_bool: bool) {
        let ty = self.expr_ty(e, locals);
        if want_bool && !matches!(ty.base(), Ty::Bool | Ty::Any) {
            self.out.push(diag::condition_not_bool(e.span, &ty));
        }
    }

    /// The type of an expression, reporting what is wrong inside it.
    pub(super) fn expr_ty(&mut self, e: &Expr, locals: &[String]) -> Ty {
        match &e.kind {
            ExprKind::Null => Ty::Null,
            ExprKind::Bool { .. } => Ty::Bool,
            ExprKind::Int { .. } | ExprKind::Duration { .. } => Ty::Int,
            ExprKind::Float { .. } => Ty::Float,
            ExprKind::Str { lit } => {
                if lit.value.contains("{{") {
                    self.template(lit, locals);
                }
                Ty::String
            }
            ExprKind::Name { name } => self.name_ty(name, locals),
            ExprKind::Field { base, .. } => {
                let _ = self.expr_ty(base, locals);
                Ty::Any
            }
            ExprKind::Index { base, index } => {
                let b = self.expr_ty(base, locals);
                let _ = self.expr_ty(index, locals);
                match b.base() {
                    Ty::List(t) | Ty::Map(t) => (**t).clone(),
                    Ty::Messages => Ty::Message,
                    _ => Ty::Any,
                }
            }
            ExprKind::Call { func, args } => self.call_ty(func, args, locals),
            ExprKind::List { items } => {
                let tys: Vec<Ty> = items.iter().map(|i| self.expr_ty(i, locals)).collect();
                let first = tys.first().cloned().unwrap_or(Ty::Any);
                Ty::List(Box::new(if tys.iter().all(|t| *t == first) {
                    first
                } else {
                    Ty::Any
                }))
            }
            ExprKind::Object { object } => {
                for (_, v) in &object.entries {
                    let _ = self.expr_ty(v, locals);
                }
                Ty::Map(Box::new(Ty::Any))
            }
            ExprKind::Unary { op, operand } => {
                let t = self.expr_ty(operand, locals);
                match op {
                    UnOp::Not => Ty::Bool,
                    UnOp::Neg => {
                        if !t.is_number() {
                            self.out.push(diag::cannot_negate(e.span, &t));
                        }
                        t
                    }
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.expr_ty(lhs, locals);
                let r = self.expr_ty(rhs, locals);
                if matches!(op, BinOp::Eq | BinOp::Ne) && !l.can_equal(&r) {
                    let equal = *op == BinOp::Eq;
                    let d = diag::never_equal(e.span, equal, (lhs, &l), (rhs, &r));
                    self.out.push(d);
                }
                self.binary_ty(e.span, *op, &l, &r)
            }
        }
    }

    fn name_ty(&mut self, name: &Ident, locals: &[String]) -> Ty {
        if locals.contains(&name.name) {
            return Ty::Any;
        }
        if let Some(c) = self.s.channels.get(&name.name) {
            return Ty::of(&c.ty);
        }
        let mut candidates = self.channel_names();
        candidates.extend(locals.iter().map(String::as_str));
        let d = diag::unknown_name(name.span, &name.name, &candidates);
        self.out.push(d);
        Ty::Any
    }

    /// A call of a built-in or registered function: its arity and result type.
    fn call_ty(&mut self, func: &Ident, args: &[Expr], locals: &[String]) -> Ty {
        let arg_tys: Vec<Ty> = args.iter().map(|a| self.expr_ty(a, locals)).collect();
        if func.name == "file" {
            self.out.push(diag::file_outside_prompt(func.span));
        }
        let Some(sig) = self.reg.extensions.signature(&func.name) else {
            let known = self.reg.extensions.function_names();
            self.out
                .push(diag::unknown_function(func.span, &func.name, &known));
            return Ty::Any;
        };
        if args.len() < sig.min || args.len() > sig.max {
            self.out.push(diag::wrong_arity(
                func.span,
                &func.name,
                sig.min,
                sig.max,
                args.len(),
                &sig.doc,
            ));
        }
        sig.result(&arg_tys)
    }

    fn binary_ty(&mut self, span: Span, op: BinOp, l: &Ty, r: &Ty) -> Ty {
        let (lb, rb) = (l.base(), r.base());
        let any = *lb == Ty::Any || *rb == Ty::Any;
        match op {
            BinOp::And | BinOp::Or | BinOp::Eq | BinOp::Ne => Ty::Bool,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                let ok = any
                    || (l.is_number() && r.is_number())
                    || (*lb == Ty::String && *rb == Ty::String);
                if !ok {
                    self.out.push(diag::cannot_compare(span, l, r, op.symbol()));
                }
                Ty::Bool
            }
            BinOp::Add if any => Ty::Any,
            BinOp::Add => match (lb, rb) {
                (Ty::String, Ty::String) => Ty::String,
                (Ty::List(_) | Ty::Messages, Ty::List(_) | Ty::Messages) => l.clone(),
                (a, b) if a.is_number() && b.is_number() => {
                    if *a == Ty::Int && *b == Ty::Int {
                        Ty::Int
                    } else {
                        Ty::Float
                    }
                }
                _ => {
                    self.out.push(diag::cannot_add(span, l, r));
                    Ty::Any
                }
            },
            BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                if !(any || l.is_number() && r.is_number()) {
                    self.out.push(diag::needs_numbers(span, op.symbol(), l, r));
                    Ty::Any
                } else if *lb == Ty::Int && *rb == Ty::Int && op != BinOp::Div {
                    Ty::Int
                } else if any {
                    Ty::Any
                } else {
                    Ty::Float
                }
            }
        }
    }

    /// `"… {{ expr | filter }} …"`: each hole's expression and filters.
    fn template(&mut self, lit: &StrLit, locals: &[String]) {
        let holes = match crate::template::holes(&lit.value, lit.span) {
            Ok(holes) => holes,
            Err((span, m)) => {
                self.out.push(diag::bad_template(span, m));
                return;
            }
        };
        for (mut e, filters) in holes {
            relocate(&mut e, lit.span);
            let _ = self.expr_ty(&e, locals);
            for f in filters {
                if !self.reg.extensions.has_filter(&f) {
                    let known = self.reg.extensions.filter_names();
                    self.out.push(diag::unknown_filter(lit.span, &f, &known));
                }
            }
        }
    }
}

/// Moves spans of an expression parsed from a template onto the string literal.
fn relocate(e: &mut Expr, to: Span) {
    e.span = to;
    match &mut e.kind {
        ExprKind::Name { name } => name.span = to,
        ExprKind::Field { base, field } => {
            field.span = to;
            relocate(base, to);
        }
        ExprKind::Index { base, index } => {
            relocate(base, to);
            relocate(index, to);
        }
        ExprKind::Call { func, args } => {
            func.span = to;
            args.iter_mut().for_each(|a| relocate(a, to));
        }
        ExprKind::List { items } => items.iter_mut().for_each(|a| relocate(a, to)),
        ExprKind::Object { object } => object.entries.iter_mut().for_each(|(_, v)| relocate(v, to)),
        ExprKind::Unary { operand, .. } => relocate(operand, to),
        ExprKind::Binary { lhs, rhs, .. } => {
            relocate(lhs, to);
            relocate(rhs, to);
        }
        _ => {}
    }
}
