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
/// SPIN_LITE_THREADS=N (1 to 64) sets the serving threads, each with its own
/// runtime on the shared listener (default: one per core).
#[derive(Parser, Debug)]
#[command(name = "spin-lite", version)]
pub struct Cli {
    /// The application manifest
    #[arg(short = 'f', long = "from", value_name = "MANIFEST", default_value = "spin.toml")]
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

    /// WASI 0.3 components: requests one instance serves before it is
    /// dropped (as Spin's)
    #[arg(long, value_name = "N", default_value_t = 128,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_instance_reuse_count: u32,

    /// WASI 0.3 components: requests one instance serves at once (as Spin's)
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_instance_concurrent_reuse_count: u32,

    /// WASI 0.3 components: how long an idle instance is kept for reuse
    /// (as Spin's: seconds, or with a suffix `s` or `ms`; no range)
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub idle_instance_timeout: Duration,

    /// Instances running at once; a request that finds them all busy for
    /// 5 s answers 503
    #[arg(long, value_name = "N", env = "SPIN_LITE_MAX_INSTANCES",
          default_value_t = http::DEFAULT_MAX_INSTANCES,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_instances: u32,

    /// The longest a request may run once it has an instance (0.1 to 86400):
    /// past it the guest is stopped, the request answers 500 and the
    /// instance is discarded
    #[arg(long, value_name = "SECONDS", env = "SPIN_LITE_REQUEST_TIMEOUT",
          default_value = "30", value_parser = parse_seconds)]
    pub request_timeout: Duration,

    /// Fail a blocking PostgreSQL query (2.0's `query`, 4.2's `query`) that
    /// returns zero rows (the component gets query-failed; a log line names
    /// the statement) instead of answering: real Spin 4.0.0 to 4.0.2 hang
    /// forever on such a query (Spin issue #3671), Spin main on 4.2's, so
    /// tests run with this to catch one. 4.2's `query-async` answers, as in
    /// Spin main. Off by default
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
    let seconds: f64 =
        text.trim().parse().map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.1..=86_400.0).contains(&seconds) {
        return Err(format!("{text} is not between 0.1 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Up to a day: seconds, `Ns` or `Nms`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = match text.strip_suffix("ms") {
        Some(millis) => (millis, 1e-3),
        None => (text.strip_suffix('s').unwrap_or(text), 1.0),
    };
    match number.parse::<f64>().map(|n| n * scale) {
        Ok(seconds) if (0.0..=86_400.0).contains(&seconds) => Ok(Duration::from_secs_f64(seconds)),
        _ => Err(format!("{text:?} is not a duration from 0 to 86400 s")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_refuse_as_documented() {
        let parse = |args: &[&str]| Cli::try_parse_from([&["spin-lite"][..], args].concat());
        let cli = parse(&["--request-timeout", "1.5", "-e", "B=", "--variable", "v=1"]).unwrap();
        assert_eq!(cli.request_timeout, Duration::from_millis(1500));
        assert_eq!(cli.env, [("B".into(), String::new())]);
        assert_eq!(cli.variables, [("v".into(), "1".into())]);
        for bad in ["0", "0.09", "-1", "x", "86401"] {
            assert!(parse(&["--request-timeout", bad]).is_err());
        }
        for bad in ["NOVALUE", "=x"] {
            assert!(parse(&["-e", bad]).is_err() && parse(&["--variable", bad]).is_err());
        }
        assert!(parse(&["--pg-empty-query-error"]).unwrap().pg_empty_query_error);
        assert!(!parse(&[]).unwrap().pg_empty_query_error);
        // The only test that touches this variable (tests share the process).
        for (value, on) in [("1", true), ("true", true), ("0", false), ("false", false)] {
            std::env::set_var("SPIN_LITE_PG_EMPTY_QUERY_ERROR", value);
            let cli = parse(&[]);
            std::env::remove_var("SPIN_LITE_PG_EMPTY_QUERY_ERROR");
            assert_eq!(cli.unwrap().pg_empty_query_error, on, "{value}");
        }
        let cli = parse(&["--idle-instance-timeout", "250ms"]).unwrap();
        assert_eq!(cli.idle_instance_timeout, Duration::from_millis(250));
        assert_eq!(parse(&[]).unwrap().idle_instance_timeout, Duration::from_secs(1));
        assert_eq!(
            (cli.max_instance_reuse_count, cli.max_instance_concurrent_reuse_count),
            (128, 16)
        );
        for bad in ["-1", "1..8s", "x"] {
            assert!(parse(&["--idle-instance-timeout", bad]).is_err());
        }
        assert!(parse(&["--max-instances", "1001"]).is_err());
    }
}
