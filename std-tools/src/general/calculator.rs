//! `calculator`: evaluates arithmetic expressions with a hand-written recursive-descent parser
//! (no `eval`, no code execution).
//!
//! Grammar (lowest to highest precedence):
//!
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | '/' | '%') unary)*
//! unary   := ('-' | '+') unary | power
//! power   := primary (('^' | '**') unary)?        right-associative: 2^3^2 = 2^9
//! primary := number | constant | function '(' expr (',' expr)* ')' | '(' expr ')'
//! ```
//!
//! Unary minus binds looser than `^` (`-2^2 = -4`, as in mathematics), and an exponent may
//! carry its own sign (`2^-1 = 0.5`). Constants: `pi`, `e`, `tau`. Functions: `sqrt`, `abs`,
//! `round` (optionally with a number of decimals), `floor`, `ceil`, `min`, `max`, `ln`,
//! `log10`, `log2`, `sin`, `cos`, `tan`, `exp` (angles in radians).

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};

/// Longest accepted expression, in characters.
pub const MAX_EXPRESSION_CHARS: usize = 1_000;
/// Deepest accepted nesting of parentheses, calls and unary signs.
pub const MAX_DEPTH: usize = 64;

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct CalcError {
    /// `INVALID_EXPRESSION`, `DIVISION_BY_ZERO`, `MATH_ERROR` or `EXPRESSION_TOO_COMPLEX`.
    pub code: &'static str,
    /// What went wrong, with the position, and how to fix it.
    pub message: String,
    /// 1-based character position of the problem, when it has one.
    pub position: Option<usize>,
}

impl CalcError {
    fn at(code: &'static str, position: usize, message: impl Into<String>) -> Self {
        CalcError {
            code,
            message: format!("{} (at position {position})", message.into()),
            position: Some(position),
        }
    }

    fn invalid(position: usize, message: impl Into<String>) -> Self {
        Self::at("INVALID_EXPRESSION", position, message)
    }
}

impl From<CalcError> for ToolError {
    fn from(e: CalcError) -> Self {
        ToolError::new(e.code, e.message)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    Op(char),
    LParen,
    RParen,
    Comma,
    End,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Num(n) => format!("number {n}"),
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Op(c) => format!("`{c}`"),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::Comma => "`,`".into(),
        Tok::End => "the end of the expression".into(),
    }
}

/// Tokens with their 1-based positions.
fn lex(src: &str) -> Result<Vec<(Tok, usize)>, CalcError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let pos = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            // Scientific notation: `1e3`, `2.5E-4` (only when digits follow the `e`).
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                }
            }
            let text: String = chars[start..i].iter().collect();
            let n: f64 = text
                .parse()
                .map_err(|_| CalcError::invalid(pos, format!("`{text}` is not a valid number")))?;
            if !n.is_finite() {
                return Err(CalcError::at(
                    "MATH_ERROR",
                    pos,
                    format!("`{text}` is too large to calculate with"),
                ));
            }
            out.push((Tok::Num(n), pos));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect::<String>().to_lowercase();
            out.push((Tok::Ident(name), pos));
        } else {
            let tok = match c {
                '+' | '-' | '/' | '%' | '^' => Tok::Op(c),
                '×' => Tok::Op('*'),
                '÷' => Tok::Op('/'),
                '*' if chars.get(i + 1) == Some(&'*') => {
                    i += 1;
                    Tok::Op('^')
                }
                '*' => Tok::Op('*'),
                '(' => Tok::LParen,
                ')' => Tok::RParen,
                ',' => Tok::Comma,
                other => {
                    return Err(CalcError::invalid(
                        pos,
                        format!(
                            "unexpected character `{other}`; use numbers, + - * / % ^, \
                             parentheses, constants (pi, e) and functions such as sqrt(x)"
                        ),
                    ))
                }
            };
            out.push((tok, pos));
            i += 1;
        }
    }
    out.push((Tok::End, chars.len() + 1));
    Ok(out)
}

#[derive(Debug)]
enum Ast {
    Num(f64),
    Neg(Box<Ast>),
    Bin(char, Box<Ast>, Box<Ast>, usize),
    Call(String, Vec<Ast>, usize),
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    i: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        self.toks.get(self.i).map(|t| &t.0).unwrap_or(&Tok::End)
    }

    fn pos(&self) -> usize {
        self.toks.get(self.i).map(|t| t.1).unwrap_or(0)
    }

    fn bump(&mut self) {
        if self.i < self.toks.len() {
            self.i += 1;
        }
    }

    fn enter(&mut self) -> Result<(), CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CalcError::at(
                "EXPRESSION_TOO_COMPLEX",
                self.pos(),
                format!("the expression nests deeper than {MAX_DEPTH} levels; simplify it"),
            ));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Ast, CalcError> {
        self.enter()?;
        let mut lhs = self.term()?;
        while let Tok::Op(op @ ('+' | '-')) = *self.peek() {
            let pos = self.pos();
            self.bump();
            let rhs = self.term()?;
            lhs = Ast::Bin(op, Box::new(lhs), Box::new(rhs), pos);
        }
        self.depth -= 1;
        Ok(lhs)
    }

    fn term(&mut self) -> Result<Ast, CalcError> {
        let mut lhs = self.unary()?;
        while let Tok::Op(op @ ('*' | '/' | '%')) = *self.peek() {
            let pos = self.pos();
            self.bump();
            let rhs = self.unary()?;
            lhs = Ast::Bin(op, Box::new(lhs), Box::new(rhs), pos);
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Ast, CalcError> {
        match *self.peek() {
            Tok::Op('-') => {
                self.enter()?;
                self.bump();
                let inner = self.unary()?;
                self.depth -= 1;
                Ok(Ast::Neg(Box::new(inner)))
            }
            Tok::Op('+') => {
                self.enter()?;
                self.bump();
                let inner = self.unary()?;
                self.depth -= 1;
                Ok(inner)
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<Ast, CalcError> {
        let base = self.primary()?;
        if *self.peek() == Tok::Op('^') {
            let pos = self.pos();
            self.enter()?;
            self.bump();
            let exp = self.unary()?;
            self.depth -= 1;
            return Ok(Ast::Bin('^', Box::new(base), Box::new(exp), pos));
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Ast, CalcError> {
        let pos = self.pos();
        match self.peek().clone() {
            Tok::Num(n) => {
                self.bump();
                if matches!(self.peek(), Tok::Num(_) | Tok::Ident(_) | Tok::LParen) {
                    return Err(CalcError::invalid(
                        self.pos(),
                        format!(
                            "expected an operator after {}, found {}; write `*` for \
                             multiplication",
                            describe(&Tok::Num(n)),
                            describe(self.peek())
                        ),
                    ));
                }
                Ok(Ast::Num(n))
            }
            Tok::LParen => {
                self.bump();
                let inner = self.expr()?;
                self.expect_rparen(pos)?;
                Ok(inner)
            }
            Tok::Ident(name) => {
                self.bump();
                if *self.peek() == Tok::LParen {
                    if arity(&name).is_none() {
                        return Err(unknown_name(&name, pos));
                    }
                    self.enter()?;
                    self.bump();
                    let mut args = vec![self.expr()?];
                    while *self.peek() == Tok::Comma {
                        self.bump();
                        args.push(self.expr()?);
                    }
                    self.expect_rparen(pos)?;
                    self.depth -= 1;
                    Ok(Ast::Call(name, args, pos))
                } else {
                    match name.as_str() {
                        "pi" | "π" => Ok(Ast::Num(std::f64::consts::PI)),
                        "e" => Ok(Ast::Num(std::f64::consts::E)),
                        "tau" => Ok(Ast::Num(std::f64::consts::TAU)),
                        _ if arity(&name).is_some() => Err(CalcError::invalid(
                            pos,
                            format!("function `{name}` needs its arguments in parentheses, e.g. `{name}(2)`"),
                        )),
                        _ => Err(unknown_name(&name, pos)),
                    }
                }
            }
            other => Err(CalcError::invalid(
                pos,
                format!(
                    "expected a number, constant, function or `(`, found {}",
                    describe(&other)
                ),
            )),
        }
    }

    fn expect_rparen(&mut self, open: usize) -> Result<(), CalcError> {
        if *self.peek() == Tok::RParen {
            self.bump();
            Ok(())
        } else {
            Err(CalcError::invalid(
                self.pos(),
                format!(
                    "expected `)` closing the `(` at position {open}, found {}",
                    describe(self.peek())
                ),
            ))
        }
    }
}

fn unknown_name(name: &str, pos: usize) -> CalcError {
    CalcError::invalid(
        pos,
        format!(
            "unknown name `{name}`; constants: pi, e, tau; functions: sqrt, abs, round, floor, \
             ceil, min, max, ln, log10, log2, sin, cos, tan, exp"
        ),
    )
}

/// (min, max) number of arguments of a function; `None` when it does not exist.
fn arity(name: &str) -> Option<(usize, usize)> {
    Some(match name {
        "sqrt" | "abs" | "floor" | "ceil" | "ln" | "log10" | "log2" | "sin" | "cos" | "tan"
        | "exp" => (1, 1),
        "round" => (1, 2),
        "min" | "max" => (1, usize::MAX),
        _ => return None,
    })
}

fn eval(ast: &Ast) -> Result<f64, CalcError> {
    match ast {
        Ast::Num(n) => Ok(*n),
        Ast::Neg(a) => Ok(-eval(a)?),
        Ast::Bin(op, a, b, pos) => {
            let (x, y) = (eval(a)?, eval(b)?);
            let r = match op {
                '+' => x + y,
                '-' => x - y,
                '*' => x * y,
                '/' | '%' if y == 0.0 => {
                    return Err(CalcError::at(
                        "DIVISION_BY_ZERO",
                        *pos,
                        if *op == '/' {
                            "division by zero"
                        } else {
                            "remainder of a division by zero"
                        },
                    ))
                }
                '/' => x / y,
                '%' => x % y,
                '^' => {
                    if x == 0.0 && y < 0.0 {
                        return Err(CalcError::at(
                            "DIVISION_BY_ZERO",
                            *pos,
                            "zero raised to a negative power",
                        ));
                    }
                    x.powf(y)
                }
                _ => return Err(CalcError::invalid(*pos, format!("unknown operator `{op}`"))),
            };
            finite(r, *pos, || format!("`{x} {op} {y}`"))
        }
        Ast::Call(name, args, pos) => {
            let (lo, hi) = arity(name).ok_or_else(|| unknown_name(name, *pos))?;
            if args.len() < lo || args.len() > hi {
                let want = if lo == hi {
                    format!("{lo} argument{}", if lo == 1 { "" } else { "s" })
                } else if hi == usize::MAX {
                    format!("at least {lo} argument")
                } else {
                    format!("{lo} to {hi} arguments")
                };
                return Err(CalcError::invalid(
                    *pos,
                    format!("`{name}` takes {want}, got {}", args.len()),
                ));
            }
            let v: Vec<f64> = args.iter().map(eval).collect::<Result<_, _>>()?;
            let x = v[0];
            let domain = |what: &str| {
                Err(CalcError::at(
                    "MATH_ERROR",
                    *pos,
                    format!("`{name}({x})` is undefined: {what}"),
                ))
            };
            let r = match name.as_str() {
                "sqrt" if x < 0.0 => return domain("the argument must not be negative"),
                "sqrt" => x.sqrt(),
                "abs" => x.abs(),
                "floor" => x.floor(),
                "ceil" => x.ceil(),
                "round" => match v.get(1) {
                    None => x.round(),
                    Some(d) if d.fract() != 0.0 || !(0.0..=15.0).contains(d) => {
                        return Err(CalcError::invalid(
                            *pos,
                            "the decimals of `round(x, decimals)` must be a whole number from 0 to 15",
                        ))
                    }
                    Some(d) => {
                        let f = 10f64.powi(*d as i32);
                        (x * f).round() / f
                    }
                },
                "min" => v.iter().copied().fold(f64::INFINITY, f64::min),
                "max" => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                "ln" | "log10" | "log2" if x <= 0.0 => {
                    return domain("the argument must be positive")
                }
                "ln" => x.ln(),
                "log10" => x.log10(),
                "log2" => x.log2(),
                "sin" => x.sin(),
                "cos" => x.cos(),
                "tan" => x.tan(),
                "exp" => x.exp(),
                _ => return Err(unknown_name(name, *pos)),
            };
            finite(r, *pos, || format!("`{name}(…)`"))
        }
    }
}

fn finite(r: f64, pos: usize, what: impl Fn() -> String) -> Result<f64, CalcError> {
    if r.is_finite() {
        Ok(r)
    } else if r.is_nan() {
        Err(CalcError::at(
            "MATH_ERROR",
            pos,
            format!("{} is not a real number", what()),
        ))
    } else {
        Err(CalcError::at(
            "MATH_ERROR",
            pos,
            format!("{} overflows (the result is too large)", what()),
        ))
    }
}

/// Evaluates `expression`.
///
/// Errors: `INVALID_EXPRESSION` (syntax, unknown names, wrong argument counts — with the
/// 1-based position), `DIVISION_BY_ZERO`, `MATH_ERROR` (outside a function's domain, or an
/// overflow) and `EXPRESSION_TOO_COMPLEX` (longer than [`MAX_EXPRESSION_CHARS`] or nested
/// deeper than [`MAX_DEPTH`]).
pub fn evaluate(expression: &str) -> Result<f64, CalcError> {
    let len = expression.chars().count();
    if len > MAX_EXPRESSION_CHARS {
        return Err(CalcError {
            code: "EXPRESSION_TOO_COMPLEX",
            message: format!(
                "the expression has {len} characters, more than the {MAX_EXPRESSION_CHARS} \
                 allowed; split the calculation into steps"
            ),
            position: None,
        });
    }
    if expression.trim().is_empty() {
        return Err(CalcError::invalid(
            1,
            "the expression is empty; give e.g. `2 + 2`",
        ));
    }
    let mut p = Parser {
        toks: lex(expression)?,
        i: 0,
        depth: 0,
    };
    let ast = p.expr()?;
    if *p.peek() != Tok::End {
        let msg = if *p.peek() == Tok::RParen {
            "unmatched `)`".to_string()
        } else {
            format!(
                "unexpected {} after a complete expression",
                describe(p.peek())
            )
        };
        return Err(CalcError::invalid(p.pos(), msg));
    }
    eval(&ast)
}

/// The `calculator` tool: evaluates an arithmetic expression safely (a recursive-descent
/// parser, never code execution) and returns `{"expression", "result"}`.
///
/// Errors: `INVALID_EXPRESSION`, `DIVISION_BY_ZERO`, `MATH_ERROR`, `EXPRESSION_TOO_COMPLEX`
/// (see [`evaluate`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Calculator;

impl Calculator {
    /// The tool.
    pub fn new() -> Self {
        Calculator
    }
}

/// A JSON number for `x`: an integer when it is a whole number that fits exactly.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

#[async_trait]
impl Tool for Calculator {
    fn name(&self) -> &str {
        "calculator"
    }

    fn description(&self) -> &str {
        "Evaluate a mathematical expression exactly instead of doing arithmetic in your head. \
         Supports + - * / % (remainder), ^ or ** (power, right-associative), parentheses, \
         unary minus, scientific notation (1.5e3), constants pi, e, tau and the functions \
         sqrt, abs, round(x[, decimals]), floor, ceil, min(a, b, …), max(a, b, …), ln, log10, \
         log2, sin, cos, tan (radians) and exp. Returns {\"expression\", \"result\"}."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "expression": {
                    "type": "string",
                    "description": "The expression to evaluate, e.g. \"(10 * 5) / 2\", \
                                    \"2^10 - 1\" or \"sqrt(2) * max(3, 4)\". At most 1000 characters."
                }
            },
            "required": ["expression"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let expression = args
            .get("expression")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ToolError::new(
                    "INVALID_ARGUMENTS",
                    "`expression` must be a string such as \"2 + 2\"",
                )
            })?;
        let result = evaluate(expression)?;
        Ok(ToolOutput {
            content: json!({"expression": expression, "result": number(result)}),
            writes: Vec::new(),
        })
    }
}
