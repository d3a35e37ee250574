//! The command line, as `spin up` spells what spin-lite shares with it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::http;

/// Serve a Spin HTTP application (spin.toml) on wasmtime, like `spin up`.
///
/// Application variables come from --variable, then the variables providers
/// of --runtime-config-file, then SPIN_VARIABLE_<NAME> in the environment,
/// then a .env file in the current directory, then the manifest's defaults.
/// The component's environment is exactly the -e NAME=VALUE pairs.
/// SPIN_LITE_COUNT_DB_CALLS=1 logs the Spin database calls of each request;
/// SPIN_LITE_THREADS=N (1 to 64) sets the serving threads, each with its own
/// runtime on the shared listener (default: one per core).
#[derive(Parser, Debug)]
#[command(name = "spin-lite", version)]
pub struct Cli {
    /// The application manifest
    #[arg(
        short = 'f',
        long = "from",
        value_name = "MANIFEST",
        default_value = "spin.toml"
    )]
    pub from: PathBuf,

    /// Address to listen on
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8080")]
    pub listen: SocketAddr,

    /// Folder for the SQLite `default` database (sqlite_db.db) and the
    /// compilation cache [default: .spin beside the manifest]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Pass an environment variable to the component (as `spin up -e`); it
    /// gets these and nothing else of the host's environment
    #[arg(short = 'e', long = "env", value_name = "NAME=VALUE", value_parser = pair)]
    pub env: Vec<(String, String)>,

    /// Set an application variable (wins over every other source)
    #[arg(long = "variable", value_name = "NAME=VALUE", value_parser = pair)]
    pub variables: Vec<(String, String)>,

    /// A Spin runtime config file: its [[variables_provider]] (env, vault)
    /// and [sqlite_database.LABEL] (type "spin", path) tables are applied,
    /// other tables are named in a warning
    #[arg(long, value_name = "FILE")]
    pub runtime_config_file: Option<PathBuf>,

    /// Requests one instance may serve, one after another; 1 gives every
    /// request a fresh instance, as Spin does
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_instance_reuse: u32,

    /// Instances running at once; a request that finds them all busy for
    /// 5 s answers 503
    #[arg(long, value_name = "N", env = "SPIN_LITE_MAX_INSTANCES",
          default_value_t = http::DEFAULT_MAX_INSTANCES,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_instances: u32,

    /// The longest a request may run once it has an instance: past it the
    /// guest is stopped, the request answers 500 and the instance is
    /// discarded
    #[arg(long, value_name = "SECONDS", env = "SPIN_LITE_REQUEST_TIMEOUT",
          default_value = "30", value_parser = parse_seconds)]
    pub request_timeout: Duration,

    /// Fail a PostgreSQL query that returns zero rows (the component gets
    /// query-failed; a log line names the statement) instead of answering:
    /// real Spin 4.0.0 to 4.0.2 hang forever on such a query (Spin issue
    /// #3671), so tests run with this to catch one. Off by default
    #[arg(long, env = "SPIN_LITE_PG_EMPTY_QUERY_ERROR",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub pg_empty_query_error: bool,
}

/// `NAME=VALUE`, split at the first `=`.
fn pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.to_string()))
        }
        _ => Err(format!("{text:?} is not NAME=VALUE")),
    }
}

/// Seconds, whole or not, from 0.1 to one day.
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.1..=86_400.0).contains(&seconds) {
        return Err(format!("{text} is not between 0.1 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags table of host/README.md, as (flag, environment, default)
    /// with the backticks taken off.
    fn documented_flags() -> Vec<(String, String, String)> {
        let readme = include_str!("../README.md");
        let table = readme
            .split("## Flags")
            .nth(1)
            .expect("host/README.md has a Flags section");
        table
            .lines()
            .skip_while(|line| !line.starts_with('|'))
            .take_while(|line| line.starts_with('|'))
            .skip(2)
            .map(|row| {
                let cells: Vec<String> = row
                    .split('|')
                    .map(|cell| cell.trim().trim_matches('`').to_string())
                    .collect();
                (cells[1].clone(), cells[2].clone(), cells[3].clone())
            })
            .collect()
    }

    #[test]
    fn the_readme_documents_every_flag_its_environment_name_and_default() {
        use clap::CommandFactory;
        let documented = documented_flags();
        let command = Cli::command();
        for argument in command.get_arguments() {
            let Some(long) = argument.get_long() else {
                continue;
            };
            if ["help", "version"].contains(&long) {
                continue;
            }
            let row = documented
                .iter()
                .find(|(flag, _, _)| {
                    flag.split([',', ' '])
                        .any(|word| word == format!("--{long}"))
                })
                .unwrap_or_else(|| panic!("--{long} is not in host/README.md's flags table"));
            let environment = argument
                .get_env()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            assert_eq!(row.1, environment, "--{long}: environment name");
            let default: Vec<String> = argument
                .get_default_values()
                .iter()
                .map(|value| value.to_string_lossy().into_owned())
                .collect();
            match default.as_slice() {
                [value] => assert_eq!(&row.2, value, "--{long}: default"),
                // No default in clap: the README says what happens instead
                // (`.spin` beside the manifest, off) or nothing.
                _ => assert!(
                    !row.2.chars().any(|c| c.is_ascii_digit()),
                    "--{long}: {row:?}"
                ),
            }
        }
    }

    #[test]
    fn flags_parse_and_refuse_as_documented() {
        // -e/--env with '=' in the value and --listen's refusal: tests/serve.rs.
        let cli = Cli::try_parse_from([
            "spin-lite",
            "--request-timeout",
            "1.5",
            "-e",
            "B=",
            "--variable",
            "v=1",
        ])
        .unwrap();
        assert_eq!(cli.request_timeout, Duration::from_millis(1500));
        assert_eq!(cli.env, [("B".into(), String::new())]);
        assert_eq!(cli.variables, [("v".into(), "1".into())]);
        // "the request deadline (0.1 to 86400)"
        for bad in ["0", "0.09", "-1", "x", "86401"] {
            assert!(Cli::try_parse_from(["spin-lite", "--request-timeout", bad]).is_err());
        }
        for bad in ["NOVALUE", "=x"] {
            assert!(Cli::try_parse_from(["spin-lite", "-e", bad]).is_err());
            assert!(Cli::try_parse_from(["spin-lite", "--variable", bad]).is_err());
        }
        let cli = Cli::try_parse_from(["spin-lite", "--pg-empty-query-error"]).unwrap();
        assert!(cli.pg_empty_query_error);
        assert!(
            !Cli::try_parse_from(["spin-lite"])
                .unwrap()
                .pg_empty_query_error
        );
        // The only test that touches this variable (tests share the process).
        for (value, on) in [("1", true), ("true", true), ("0", false), ("false", false)] {
            std::env::set_var("SPIN_LITE_PG_EMPTY_QUERY_ERROR", value);
            let cli = Cli::try_parse_from(["spin-lite"]);
            std::env::remove_var("SPIN_LITE_PG_EMPTY_QUERY_ERROR");
            assert_eq!(cli.unwrap().pg_empty_query_error, on, "{value}");
        }
        assert!(Cli::try_parse_from(["spin-lite", "--max-instance-reuse", "0"]).is_err());
        assert!(Cli::try_parse_from(["spin-lite", "--max-instances", "1001"]).is_err());
    }
}
