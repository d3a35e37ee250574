//! The assignments of a `.env` file: `./.env` (its `SPIN_VARIABLE_*`, as
//! `spin up` reads them) and an env provider's `dotenv_path`.

use std::collections::HashMap;

/// A missing file has none.
pub fn read_dotenv(path: &std::path::Path) -> HashMap<String, String> {
    parse_dotenv(&std::fs::read_to_string(path).unwrap_or_default())
}

pub fn parse_dotenv(text: &str) -> HashMap<String, String> {
    let lines = text.lines().map(str::trim).filter(|line| !line.starts_with('#'));
    let pairs =
        lines.filter_map(|line| line.strip_prefix("export ").unwrap_or(line).split_once('='));
    let unquote = |value: &str| {
        let quoted = ['"', '\''].iter().find_map(|q| value.strip_prefix(*q)?.strip_suffix(*q));
        quoted.unwrap_or(value).to_string()
    };
    pairs.map(|(key, value)| (key.trim().to_string(), unquote(value.trim()))).collect()
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
