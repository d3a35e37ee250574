//! Spin's variable names and the `{{ name }}` templates of component
//! variables and `allowed_outbound_hosts` entries.

use std::collections::HashMap;

use anyhow::{bail, Result};

/// Spin's rule for variable names (so they map to env names and paths):
/// lower-case ASCII letters, digits and single underscores, starting with a
/// letter and not ending with an underscore.
pub fn validate_name(name: &str) -> Result<(), String> {
    let Some(first) = name.bytes().next() else {
        return Err("must not be empty".into());
    };
    if let Some(c) =
        name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_'))
    {
        return Err(format!(
            "invalid character {c:?}: variable names may contain only lower-case letters, numbers and underscores"
        ));
    }
    if !first.is_ascii_lowercase() {
        return Err("must start with a lower-case ASCII letter".into());
    }
    if name.ends_with('_') {
        return Err("must end with a lower-case ASCII letter or digit".into());
    }
    if name.contains("__") {
        return Err("must not contain consecutive underscores".into());
    }
    Ok(())
}

/// A `literal {{ name }} literal` template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template(Vec<Part>);

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Lit(String),
    Var(String),
}

impl Template {
    pub fn parse(text: &str) -> Result<Template> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                parts.push(Part::Lit(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else {
                bail!("unclosed '{{{{' in template");
            };
            let name = after[..end].trim();
            validate_name(name).map_err(|e| anyhow::anyhow!("template variable {name:?}: {e}"))?;
            parts.push(Part::Var(name.to_string()));
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Lit(rest.to_string()));
        }
        Ok(Template(parts))
    }

    /// Names of the variables the template refers to.
    pub fn references(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Lit(_) => None,
        })
    }

    /// Expands the template; `Err(name)` for the first unknown variable.
    pub fn expand(&self, values: &HashMap<String, String>) -> Result<String, String> {
        let mut out = String::new();
        for part in &self.0 {
            match part {
                Part::Lit(l) => out.push_str(l),
                Part::Var(v) => out.push_str(values.get(v).ok_or_else(|| v.clone())?),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        let t = Template::parse("a{{x}}b{{ y_1 }}").unwrap();
        assert_eq!(t.references().collect::<Vec<_>>(), vec!["x", "y_1"]);
        assert!(Template::parse("{{ x").is_err());
        assert!(Template::parse("{{ X }}").is_err());
        let values = HashMap::from([("x".to_string(), "1".to_string())]);
        assert_eq!(Template::parse("a{{ x }}b").unwrap().expand(&values), Ok("a1b".into()));
        assert_eq!(Template::parse("{{ y }}").unwrap().expand(&values), Err("y".into()));
    }

    #[test]
    fn names() {
        for good in ["a", "store", "x1_y2"] {
            assert_eq!(validate_name(good), Ok(()), "{good}");
        }
        for bad in ["", "Bad", "a-b", "1a", "a__b", "a_", "_a"] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }
}
