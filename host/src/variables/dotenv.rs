//! The assignments of a `.env` file: `./.env` (its `SPIN_VARIABLE_*`, as
//! `spin up` reads them) and an env provider's `dotenv_path`.

use std::collections::HashMap;

/// A missing file has none.
pub fn read_dotenv(path: &std::path::Path) -> HashMap<String, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return HashMap::new();
    };
    parse_dotenv(&text)
}

pub fn parse_dotenv(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        let value = value.trim();
        let value = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
            .unwrap_or(value);
        out.insert(key.to_string(), value.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_lines() {
        let d = parse_dotenv(
            "# c\nSPIN_VARIABLE_A=1\nexport SPIN_VARIABLE_B=\"two words\"\nOTHER=x\nSPIN_VARIABLE_C='q'\n",
        );
        assert_eq!(d["SPIN_VARIABLE_A"], "1");
        assert_eq!(d["SPIN_VARIABLE_B"], "two words");
        assert_eq!(d["SPIN_VARIABLE_C"], "q");
        assert_eq!(d["OTHER"], "x");
    }
}
