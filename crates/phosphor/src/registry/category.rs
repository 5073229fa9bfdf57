//! Category filters: which categories a trace records.
//!
//! A filter is a comma-separated list of globs (`*` any run, `?` any one character). A glob with a
//! leading `-` disables what it matches. A category is traced when it matches some enabling glob
//! (or there is none) and no disabling glob: `"*,-verbose*"`, `"net,db*"`. The same syntax is read
//! from `PHOSPHOR_CATEGORIES`.

pub(crate) use phosphor_format::glob_match;

use crate::error::{Error, ErrorKind};

/// A parsed category filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CategoryFilter {
    enable: Vec<String>,
    disable: Vec<String>,
}

impl Default for CategoryFilter {
    /// Every category.
    fn default() -> Self {
        CategoryFilter { enable: Vec::new(), disable: Vec::new() }
    }
}

impl CategoryFilter {
    /// Parses a filter such as `"net*,-net.verbose"`.
    pub fn parse(spec: &str) -> Result<CategoryFilter, Error> {
        let mut f = CategoryFilter::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (list, glob) = match part.strip_prefix('-') {
                Some(g) => (&mut f.disable, g.trim()),
                None => (&mut f.enable, part),
            };
            if glob.is_empty() {
                return Err(Error::new(ErrorKind::InvalidCategoryFilter {
                    spec: spec.to_owned(),
                    reason: "a '-' must be followed by a glob".into(),
                }));
            }
            list.push(glob.to_owned());
        }
        Ok(f)
    }

    /// Whether every category is traced (no glob at all, or a lone `*`).
    pub fn is_all(&self) -> bool {
        self.disable.is_empty() && (self.enable.is_empty() || self.enable.iter().any(|g| g == "*"))
    }

    /// Whether `category` is traced.
    pub fn matches(&self, category: &str) -> bool {
        (self.enable.is_empty() || self.enable.iter().any(|g| glob_match(g, category)))
            && !self.disable.iter().any(|g| glob_match(g, category))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabling_globs_win_over_enabling_ones() {
        let f = CategoryFilter::parse("net*, db ,-net.verbose").unwrap();
        assert!(f.matches("net.io"));
        assert!(f.matches("db"));
        assert!(!f.matches("net.verbose"));
        assert!(!f.matches("cache"));
        let all_but = CategoryFilter::parse("-noisy").unwrap();
        assert!(all_but.matches("anything"));
        assert!(!all_but.matches("noisy"));
        assert!(CategoryFilter::default().matches("x"));
    }

    #[test]
    fn a_lone_dash_is_rejected_with_the_spec_in_the_message() {
        let e = CategoryFilter::parse("a,-").unwrap_err();
        assert!(e.to_string().contains("\"a,-\""), "{e}");
    }
}
