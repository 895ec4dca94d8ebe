//! The calculator: precedence, coded errors with positions, limits, and the tool.

use super::*;

#[test]
fn calculator_precedence_and_associativity() {
    let cases: &[(&str, f64)] = &[
        ("2 + 3 * 4", 14.0),
        ("(2 + 3) * 4", 20.0),
        ("10 - 4 - 3", 3.0),
        ("100 / 10 / 5", 2.0),
        ("2 ^ 3 ^ 2", 512.0),
        ("(2 ^ 3) ^ 2", 64.0),
        ("2 ** 3", 8.0),
        ("-2 ^ 2", -4.0),
        ("(-2) ^ 2", 4.0),
        ("2 ^ -1", 0.5),
        ("- - 3", 3.0),
        ("+3 - -2", 5.0),
        ("10 % 4", 2.0),
        ("2 * 3 % 4", 2.0),
        ("7 / 2", 3.5),
        ("1.5e3 + .5", 1500.5),
        ("2E-2", 0.02),
        ("sqrt(16) + abs(-3)", 7.0),
        ("min(3, 1, 2) + max(1, 2 ^ 3)", 9.0),
        ("round(2.567, 2)", 2.57),
        ("round(2.5)", 3.0),
        ("floor(-2.5) + ceil(2.1)", 0.0),
        ("ln(e) + log10(1000) + log2(8)", 7.0),
        ("exp(0) + cos(0) + sin(0) + tan(0)", 2.0),
        ("2 * pi", std::f64::consts::TAU),
        ("PI", std::f64::consts::PI),
        ("3 × 4 ÷ 2", 6.0),
    ];
    for (expr, want) in cases {
        let got = evaluate(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert!((got - want).abs() < 1e-9, "{expr} = {got}, want {want}");
    }
}

#[test]
fn calculator_errors_have_codes_and_positions() {
    let cases: &[(&str, &str, Option<usize>)] = &[
        ("1 / 0", "DIVISION_BY_ZERO", Some(3)),
        ("5 % (2 - 2)", "DIVISION_BY_ZERO", Some(3)),
        ("0 ^ -1", "DIVISION_BY_ZERO", Some(3)),
        ("2 +", "INVALID_EXPRESSION", Some(4)),
        ("(1 + 2", "INVALID_EXPRESSION", Some(7)),
        ("1 + 2)", "INVALID_EXPRESSION", Some(6)),
        ("2 $ 3", "INVALID_EXPRESSION", Some(3)),
        ("2 3", "INVALID_EXPRESSION", Some(3)),
        ("2pi", "INVALID_EXPRESSION", Some(2)),
        ("foo(2)", "INVALID_EXPRESSION", Some(1)),
        ("x + 1", "INVALID_EXPRESSION", Some(1)),
        ("sqrt 4", "INVALID_EXPRESSION", Some(1)),
        ("sqrt(1, 2)", "INVALID_EXPRESSION", Some(1)),
        ("round(1.234, 1.5)", "INVALID_EXPRESSION", Some(1)),
        ("1..2", "INVALID_EXPRESSION", Some(1)),
        ("", "INVALID_EXPRESSION", Some(1)),
        ("import os", "INVALID_EXPRESSION", Some(1)),
        ("sqrt(-1)", "MATH_ERROR", Some(1)),
        ("ln(0)", "MATH_ERROR", Some(1)),
        ("10 ^ 400", "MATH_ERROR", Some(4)),
        ("1e400 * 0", "MATH_ERROR", Some(1)),
        ("10 ^ 200 * 10 ^ 200", "MATH_ERROR", Some(10)),
    ];
    for (expr, want, pos) in cases {
        let e = evaluate(expr).expect_err(expr);
        assert_eq!(e.code, *want, "{expr}: {}", e.message);
        assert_eq!(e.position, *pos, "{expr}: {}", e.message);
        if let Some(p) = pos {
            assert!(
                e.message.contains(&format!("position {p}")),
                "{}",
                e.message
            );
        }
    }
    let msg = evaluate("(1 + 2").unwrap_err().message;
    assert!(msg.contains("expected `)`"), "{msg}");
}

#[test]
fn calculator_limits() {
    let long = "1+".repeat(600) + "1";
    assert_eq!(evaluate(&long).unwrap_err().code, "EXPRESSION_TOO_COMPLEX");
    let deep = "(".repeat(100) + "1" + &")".repeat(100);
    assert_eq!(evaluate(&deep).unwrap_err().code, "EXPRESSION_TOO_COMPLEX");
    let signs = "-".repeat(200) + "1";
    assert_eq!(evaluate(&signs).unwrap_err().code, "EXPRESSION_TOO_COMPLEX");
    let powers = "2^".repeat(200) + "1";
    assert_eq!(
        evaluate(&powers).unwrap_err().code,
        "EXPRESSION_TOO_COMPLEX"
    );
    let calls = "abs(".repeat(100) + "1" + &")".repeat(100);
    assert_eq!(evaluate(&calls).unwrap_err().code, "EXPRESSION_TOO_COMPLEX");
    // Within the limits.
    let ok = "(".repeat(30) + "1" + &")".repeat(30);
    assert_eq!(evaluate(&ok).unwrap(), 1.0);
}

#[tokio::test]
async fn calculator_tool() {
    let ctx = ctx().await;
    let calc = Calculator::new();
    assert_eq!(calc.name(), "calculator");
    let out = call(&calc, json!({"expression": "2 + 3 * 4"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, json!({"expression": "2 + 3 * 4", "result": 14}));
    let out = call(&calc, json!({"expression": "0.1 + 0.2"}), &ctx)
        .await
        .unwrap();
    assert!((out["result"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    let e = call(&calc, json!({"expression": "1/0"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(e.code, "DIVISION_BY_ZERO");
    assert_eq!(
        code(call(&calc, json!({"expr": "1"}), &ctx).await),
        "INVALID_ARGUMENTS"
    );
}
