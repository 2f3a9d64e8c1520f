//! `mansign admission serve`: the HTTPS validating webhook.

use super::admission_policy::PolicyArgs;
use super::args::TrustRootChoice;
use super::outcome::Outcome;
use crate::admission::server::keys::KeyWatcher;
use crate::admission::server::{self, LogFormat, ReviewerLoadError, ReviewerSource, ServeOptions};
use crate::admission::{ReviewOptions, Reviewer};
use crate::kube::ClusterAccess;
use clap::{Args, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Runs the webhook: `POST /validate` (AdmissionReview v1), `GET /healthz`, `GET /readyz`,
/// `GET /metrics`. Policy files, the trust root and the TLS certificate and key are reloaded
/// when they change; SIGTERM stops accepting and drains in-flight requests, then exits 0.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,

    /// TLS certificate chain (PEM, leaf first), reloaded when the file changes.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: PathBuf,

    /// TLS private key (PEM: PKCS#8, PKCS#1 or SEC1), reloaded when the file changes.
    #[arg(long, value_name = "FILE")]
    pub tls_key: PathBuf,

    /// Address to listen on (port 0: any free port; the bound address is logged).
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,

    /// Time from a request's arrival to its answer. Keep it below the webhook's
    /// timeoutSeconds: past it the server answers HTTP 503 and the API server applies the
    /// failurePolicy (never an "allowed").
    #[arg(long, value_name = "DURATION", default_value = "8s", value_parser = parse_duration)]
    pub deadline: Duration,

    /// Reviews running at once on the blocking pool (default: one per CPU).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_concurrent_reviews: Option<u32>,

    /// Open client connections at most (more wait in the kernel's backlog).
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_connections: u32,

    /// Time in-flight requests get after SIGTERM/SIGINT before the process exits.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,

    /// How often the policy, trust root and TLS files are checked for changes.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub reload_interval: Duration,

    /// Time to receive a request body (HTTP 408 after it).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub body_timeout: Duration,

    /// Time to receive an HTTP/1 request head, and how long an idle HTTP/1 keep-alive
    /// connection stays open.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub header_timeout: Duration,

    /// Time to complete a TLS handshake.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub handshake_timeout: Duration,

    /// A connection (HTTP/2 included) with no request in flight for this long is closed.
    #[arg(long, value_name = "DURATION", default_value = "90s", value_parser = parse_duration)]
    pub idle_timeout: Duration,

    /// kubeconfig for reading the Secrets and ConfigMaps policies name as key sources
    /// (default, in kubectl's order: $KUBECONFIG or ~/.kube/config if one is there, else the
    /// pod's service account). Read only when a policy names one.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// kubeconfig context for those reads (default: the current context).
    #[arg(long, value_name = "CONTEXT")]
    pub context: Option<String>,

    /// Log lines: one JSON object per line (decisions on stdout, server events on stderr),
    /// or key=value text.
    #[arg(long, value_name = "FORMAT", default_value = "json")]
    pub log_format: LogFormatArg,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormatArg {
    Json,
    Text,
}

/// `250ms`, `8s`, `2m`, or a number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (examples: 250ms, 8s, 2m)"))?;
    let duration = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        _ => return Err(format!("`{text}`: the unit must be ms, s or m")),
    };
    if duration.is_zero() || duration > Duration::from_secs(24 * 3600) {
        return Err(format!("`{text}`: must be more than 0 and at most 24h"));
    }
    Ok(duration)
}

/// `mansign admission serve`'s flags, resolved once: the server's options, the trust root
/// chosen (flag, environment, cache, embedded), the files watched for changes and the
/// cluster access for key references. Every flag is checked by its parser (durations,
/// ranges), and none conflicts with another, so resolving cannot fail; nothing is read.
pub struct ServeSettings {
    pub options: ServeOptions,
    pub policy: PolicyArgs,
    /// The trust root is chosen once, at start, as every other command chooses it; the
    /// chosen file is then re-read when it changes. A cache written later by `mansign trust
    /// update` is not picked up without a restart.
    pub trust: TrustRootChoice,
    /// The policy files and the chosen trust root's file, watched for changes.
    pub files: Vec<PathBuf>,
    /// Where the Secrets and ConfigMaps the policies name are read.
    pub access: ClusterAccess,
}

impl From<ServeArgs> for ServeSettings {
    fn from(args: ServeArgs) -> ServeSettings {
        let mut options = ServeOptions::new(args.listen, args.tls_cert, args.tls_key);
        options.deadline = args.deadline;
        if let Some(n) = args.max_concurrent_reviews {
            options.max_concurrent_reviews = n as usize;
        }
        options.max_connections = args.max_connections as usize;
        options.shutdown_grace = args.shutdown_grace;
        options.reload_interval = args.reload_interval;
        options.body_timeout = args.body_timeout;
        options.header_timeout = args.header_timeout;
        options.handshake_timeout = args.handshake_timeout;
        options.idle_timeout = args.idle_timeout;
        options.log_format = match args.log_format {
            LogFormatArg::Json => LogFormat::Json,
            LogFormatArg::Text => LogFormat::Text,
        };
        let trust = args.policy.trust.choice();
        let mut files = args.policy.policies.clone();
        files.extend(trust.file().map(PathBuf::from));
        ServeSettings {
            options,
            policy: args.policy,
            trust,
            files,
            access: ClusterAccess {
                kubeconfig: args.kubeconfig,
                context: args.context,
                impersonate: None,
            },
        }
    }
}

pub fn run(settings: ServeSettings) -> anyhow::Result<Outcome> {
    let ServeSettings {
        options,
        policy,
        trust,
        files,
        access,
    } = settings;
    let changed = Arc::new(tokio::sync::Notify::new());
    // The Secrets and ConfigMaps the policies name are watched through the API server; each
    // load takes their current values, and names the objects to watch from then on.
    let keys = Arc::new(KeyWatcher::new(access, changed.clone(), options.log_format));
    let key_watcher = keys.clone();
    let source = ReviewerSource {
        files,
        load: Arc::new(move || {
            let load = |resolved| {
                policy
                    .load_with_keys(&trust, &resolved)
                    .map_err(ReviewerLoadError::from)
            };
            let mut set = load(keys.resolved())?;
            if keys.watch(&set.key_references) {
                // A newly named object: wait for its first read, then load with it.
                keys.wait_first_read();
                set = load(keys.resolved())?;
            }
            // Unresolved references are logged by the watcher (`key-reference` events),
            // listed by /readyz, and named in every denial they cause.
            Ok(Reviewer::new(set, ReviewOptions::default()))
        }),
        changed,
        key_watcher: Some(key_watcher),
    };
    server::run(options, source)?;
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resolving builds the server's options and the watched files from the flags alone:
    /// the policy, trust root, TLS files and kubeconfig named do not exist and are not read.
    /// (No two serve flags conflict; each is checked by its parser.)
    #[test]
    fn serve_flags_resolve_to_options_without_reading_a_file() {
        use clap::Parser;
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            serve: ServeArgs,
        }
        let args = Flags::try_parse_from([
            "serve",
            "--policy",
            "/nonexistent/p.yaml",
            "--trusted-root",
            "/nonexistent/root.json",
            "--tls-cert",
            "/nonexistent/tls.crt",
            "--tls-key",
            "/nonexistent/tls.key",
            "--deadline",
            "3s",
            "--max-concurrent-reviews",
            "7",
            "--log-format",
            "text",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ])
        .expect("the flags parse")
        .serve;
        let settings = ServeSettings::from(args);
        assert_eq!(settings.options.deadline, Duration::from_secs(3));
        assert_eq!(settings.options.max_concurrent_reviews, 7);
        assert_eq!(settings.options.log_format, LogFormat::Text);
        assert_eq!(
            settings.files,
            [
                PathBuf::from("/nonexistent/p.yaml"),
                PathBuf::from("/nonexistent/root.json")
            ]
        );
        assert_eq!(
            settings.access.kubeconfig,
            Some(PathBuf::from("/nonexistent/kubeconfig"))
        );
        assert!(settings.access.impersonate.is_none());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("8s"), Ok(Duration::from_secs(8)));
        assert_eq!(parse_duration("8"), Ok(Duration::from_secs(8)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        for bad in [
            "",
            "0s",
            "-1s",
            "1h",
            "1.5s",
            "s",
            "25h",
            "99999999999999999999s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
