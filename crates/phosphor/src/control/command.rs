//! CLI commands (Palanteer's): `name p=v p=[[text with spaces]]`, checked against a [`Spec`].

use super::spec::{word, Spec, Value};

/// A command's checked arguments, in the specification's order (defaults filled in).
#[derive(Clone, Debug, PartialEq)]
pub struct Args {
    names: Vec<String>,
    values: Vec<Value>,
}

impl Args {
    /// The value of parameter `i` (in specification order).
    pub fn get(&self, i: usize) -> Option<&Value> {
        self.values.get(i)
    }

    /// The value of the parameter called `name`.
    pub fn by_name(&self, name: &str) -> Option<&Value> {
        self.names.iter().position(|n| n == name).map(|i| &self.values[i])
    }

    /// Parameter `i` as an integer (`None` if it is of another type).
    pub fn int(&self, i: usize) -> Option<i64> {
        match self.get(i) {
            Some(Value::Int(v)) => Some(*v),
            _ => None,
        }
    }

    /// Parameter `i` as a float.
    pub fn float(&self, i: usize) -> Option<f64> {
        match self.get(i) {
            Some(Value::Float(v)) => Some(*v),
            _ => None,
        }
    }

    /// Parameter `i` as a string.
    pub fn string(&self, i: usize) -> Option<&str> {
        match self.get(i) {
            Some(Value::Str(v)) => Some(v),
            _ => None,
        }
    }
}

/// Splits `line` into the command name and the rest.
pub fn split_name(line: &str) -> (&str, &str) {
    let line = line.trim_start();
    match line.find(char::is_whitespace) {
        Some(i) => (&line[..i], &line[i..]),
        None => (line, ""),
    }
}

/// Checks the parameters part of a command (after the name) against `spec`. Parameters come in
/// any order; a name may be cut to any prefix that names one parameter only (a name that is whole
/// wins over longer ones it is a prefix of); a value is one word, or `[[any text]]` right after the
/// `=`; every parameter without a default must be given. Errors say exactly what is wrong.
pub fn parse_args(spec: &Spec, params: &str) -> Result<Args, String> {
    let mut given: Vec<Option<Value>> = vec![None; spec.params.len()];
    let mut rest = params.trim_start();
    while !rest.is_empty() {
        let token = word(rest);
        let Some(eq) = token.find('=') else {
            return Err(format!("{:?} is not a parameter=value pair", rest.trim_end()));
        };
        let name = &token[..eq];
        if name.is_empty() {
            return Err(format!("{token:?} has no parameter name"));
        }
        let exact = spec.params.iter().position(|p| p.name == name);
        let prefixed: Vec<usize> = spec
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.name.starts_with(name))
            .map(|(i, _)| i)
            .collect();
        let i = match (exact, prefixed.as_slice()) {
            (Some(i), _) => i,
            (None, [i]) => *i,
            (None, []) => {
                let known: Vec<&str> = spec.params.iter().map(|p| p.name.as_str()).collect();
                return Err(format!(
                    "no parameter is called {name:?} (the parameters: {})",
                    known.join(", ")
                ));
            }
            (None, many) => {
                let names: Vec<&str> = many.iter().map(|&i| spec.params[i].name.as_str()).collect();
                return Err(format!("{name:?} is ambiguous: it may be {}", names.join(" or ")));
            }
        };
        let p = &spec.params[i];
        if given[i].is_some() {
            return Err(format!("the parameter {:?} is given twice", p.name));
        }
        let after = &rest[name.len() + 1..];
        let (text, next) = if let Some(inner) = after.strip_prefix("[[") {
            let Some(close) = inner.find("]]") else {
                return Err(format!("the value of {:?} opens '[[' without closing it with ']]'", p.name));
            };
            let next = &inner[close + 2..];
            if !next.is_empty() && !next.starts_with(char::is_whitespace) {
                return Err(format!("{:?} follows the value of {:?} without a space", word(next), p.name));
            }
            (&inner[..close], next)
        } else {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        let value =
            p.ty.parse(text).map_err(|e| format!("the value of {:?} ({}): {e}", p.name, p.ty.as_str()))?;
        given[i] = Some(value);
        rest = next.trim_start();
    }
    let mut values = Vec::with_capacity(spec.params.len());
    let mut missing = Vec::new();
    for (p, v) in spec.params.iter().zip(given) {
        match v.or_else(|| p.default.clone()) {
            Some(v) => values.push(v),
            None => missing.push(p.name.as_str()),
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "missing mandatory parameter{}: {}",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", ")
        ));
    }
    Ok(Args { names: spec.params.iter().map(|p| p.name.clone()).collect(), values })
}
