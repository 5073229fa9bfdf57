//! CLI parameter specifications (Palanteer's): `first=int second=float[[-3.14]] third=string[[a b]]`.

use std::fmt;

/// A parameter's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// A signed 64-bit integer.
    Int,
    /// A 64-bit float.
    Float,
    /// A string: one word, or `[[any text]]` in a command.
    String,
}

impl ParamType {
    /// The name used in specifications.
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::Int => "int",
            ParamType::Float => "float",
            ParamType::String => "string",
        }
    }

    /// `text` as a value of this type, or why not.
    pub fn parse(self, text: &str) -> Result<Value, String> {
        match self {
            ParamType::Int => {
                text.parse::<i64>().map(Value::Int).map_err(|_| format!("{text:?} is not an integer"))
            }
            ParamType::Float => match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Value::Float(f)),
                _ => Err(format!("{text:?} is not a finite number")),
            },
            ParamType::String => Ok(Value::Str(text.to_owned())),
        }
    }
}

/// A parameter value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An `int` parameter's.
    Int(i64),
    /// A `float` parameter's.
    Float(f64),
    /// A `string` parameter's.
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Str(v) => f.write_str(v),
        }
    }
}

/// One declared parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: ParamType,
    /// Its default; a parameter without one is mandatory.
    pub default: Option<Value>,
}

/// A parsed parameter specification.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spec {
    /// The parameters, in declaration order.
    pub params: Vec<Param>,
}

impl Spec {
    /// Parses a specification: space-separated `name=type`, the type `int`, `float` or `string`,
    /// optionally followed by a default in double brackets (`float[[-3.14]]`,
    /// `string[[with spaces]]`). The empty specification is allowed. Errors say what is wrong and
    /// where.
    pub fn parse(spec: &str) -> Result<Spec, String> {
        let mut params: Vec<Param> = Vec::new();
        let mut rest = spec.trim_start();
        while !rest.is_empty() {
            let at = spec.len() - rest.len();
            let Some(eq) = rest.find('=') else {
                return Err(format!("at byte {at}: {:?} has no '=type'", word(rest)));
            };
            let name = &rest[..eq];
            if name.is_empty() || name.contains(char::is_whitespace) || name.contains('[') {
                return Err(format!("at byte {at}: {name:?} is not a parameter name"));
            }
            if params.iter().any(|p| p.name == name) {
                return Err(format!("at byte {at}: the parameter {name:?} is declared twice"));
            }
            rest = &rest[eq + 1..];
            let ty_end = rest.find(|c: char| c.is_whitespace() || c == '[').unwrap_or(rest.len());
            let ty = match &rest[..ty_end] {
                "int" => ParamType::Int,
                "float" => ParamType::Float,
                "string" => ParamType::String,
                other => {
                    return Err(format!(
                    "at byte {}: parameter {name:?} has the unknown type {other:?} (int, float or string)",
                    spec.len() - rest.len()
                ))
                }
            };
            rest = &rest[ty_end..];
            let mut default = None;
            if let Some(after) = rest.strip_prefix("[[") {
                let Some(close) = after.find("]]") else {
                    return Err(format!("parameter {name:?}: the default's '[[' is not closed by ']]'"));
                };
                default =
                    Some(ty.parse(&after[..close]).map_err(|e| format!("parameter {name:?}: default {e}"))?);
                rest = &after[close + 2..];
            } else if rest.starts_with('[') {
                return Err(format!("parameter {name:?}: a default is written [[value]]"));
            }
            if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
                return Err(format!("parameter {name:?}: {:?} follows without a space", word(rest)));
            }
            params.push(Param { name: name.to_owned(), ty, default });
            rest = rest.trim_start();
        }
        Ok(Spec { params })
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{}={}", p.name, p.ty.as_str())?;
            if let Some(d) = &p.default {
                write!(f, "[[{d}]]")?;
            }
        }
        Ok(())
    }
}

/// The first whitespace-separated word of `s`.
pub(crate) fn word(s: &str) -> &str {
    s.split_whitespace().next().unwrap_or("")
}
