//! Python-compatible JSON pretty printing: the output of
//! `json.dumps(value, ensure_ascii=False, indent=2)`.
//!
//! serde_json's `to_string_pretty` agrees on layout (`[]`/`{}` for empty containers, `": "` and
//! `","` separators) but not on floats (`1e16` vs Python's `1e+16`, `1e-5` vs `1e-05`), so this
//! small printer is used instead.

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// Render `value` like `json.dumps(value, ensure_ascii=False, indent=2)` (no trailing newline).
pub fn dumps_indent2(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, 0);
    out
}

fn write_value(out: &mut String, value: &Value, level: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&python_number(n)),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(out, level + 1);
                write_value(out, item, level + 1);
            }
            newline_indent(out, level);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(out, level + 1);
                write_string(out, key);
                out.push_str(": ");
                write_value(out, item, level + 1);
            }
            newline_indent(out, level);
            out.push('}');
        }
    }
}

fn newline_indent(out: &mut String, level: usize) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// Python's string encoder with `ensure_ascii=False`: escapes `"`, `\`, and U+0000..U+001F only.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON number as Python prints the `int` / `float` that `json.loads` made of it.
fn python_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    match n.as_f64() {
        Some(f) => python_float_repr(f),
        None => n.to_string(),
    }
}

/// Python's `float.__repr__` (shortest round-trip digits; scientific notation when the decimal
/// exponent is below -4 or at least 16; `json.dumps` spells non-finite values `NaN`/`Infinity`).
pub(crate) fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    // `{:e}` yields the shortest round-trip digits, e.g. `-1.2345e-7`, `1e16`, `0e0`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n_digits = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let decpt = exp + 1;

    let body = if (-3..=16).contains(&decpt) {
        if decpt <= 0 {
            format!("0.{}{digits}", "0".repeat(decpt.unsigned_abs() as usize))
        } else if decpt >= n_digits {
            format!("{digits}{}.0", "0".repeat((decpt - n_digits) as usize))
        } else {
            let (int_part, frac) = digits.split_at(decpt as usize);
            format!("{int_part}.{frac}")
        }
    } else {
        let (first, rest) = if digits.is_empty() { ("0", "") } else { digits.split_at(1) };
        let frac = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{first}{frac}e{exp_sign}{:02}", exp.unsigned_abs())
    };
    format!("{sign}{body}")
}

/// Alias of [`dumps_indent2`]: how the reference prints `meta.json` (`get_engram_info`).
pub fn python_pretty(value: &Value) -> String {
    dumps_indent2(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        for (f, repr) in [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e16, "1e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (123.456, "123.456"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (1e100, "1e+100"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
        ] {
            assert_eq!(python_float_repr(f), repr, "{f}");
        }
    }

    #[test]
    fn layout_matches_python_dumps() {
        let v: Value = serde_json::from_str(
            r#"{"a":[],"b":{},"c":[1,[2,[]]],"d":1e16,"e":1e-5,"f":"x\u0001\u007f\u2028\"","g":"中文"}"#,
        )
        .expect("test json");
        assert_eq!(
            dumps_indent2(&v),
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    [\n      2,\n      []\n    ]\n  ],\n  \"d\": 1e+16,\n  \"e\": 1e-05,\n  \"f\": \"x\\u0001\u{7f}\u{2028}\\\"\",\n  \"g\": \"中文\"\n}"
        );
    }
}
