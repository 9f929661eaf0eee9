//! Logs and traces, set up the same way in every example binary.
//!
//! Log lines go to stderr, filtered by `RUST_LOG` (else the binary's own default), as
//! text or, with `--log-format json` (or `LOG_FORMAT=json`), as one JSON object a line.
//!
//! Traces leave the process when the standard OpenTelemetry variables ask for them:
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's base URL, such as
//! `http://127.0.0.1:4318`), `OTEL_SERVICE_NAME` (else the binary's name),
//! `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or `http/json`) and
//! `OTEL_RESOURCE_ATTRIBUTES`; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`
//! turn the export off. Every span at `info` and above is exported, whatever `RUST_LOG`
//! keeps for the log: the run (`graph.run`, `session_run` with the session, product and
//! tenant), its nodes, agent rounds, model calls (`chat`, with the GenAI attributes) and
//! tool calls (`execute_tool`).

use agent_runtime::otel::{OtelGuard, OtlpConfig, OtlpProtocol, otlp_layer};
use anyhow::{Context as _, bail};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, `fields`, and the spans
    /// the line was written in.
    Json,
}

/// The logging options every example binary takes (flatten it into its arguments).
#[derive(Debug, Clone, clap::Args)]
pub struct LogArgs {
    /// How log lines are written to stderr: `text` or `json` (one object a line).
    #[arg(
        long,
        value_enum,
        env = "LOG_FORMAT",
        default_value = "text",
        global = true
    )]
    pub log_format: LogFormat,
}

/// Keeps the trace export running: hold it until the binary exits. Dropping it sends the
/// spans still buffered.
#[derive(Debug)]
#[must_use = "dropping it stops the trace export"]
pub struct Telemetry {
    /// Held for its drop, which sends the spans still buffered.
    _otel: Option<OtelGuard>,
}

/// Installs the log (filtered by `RUST_LOG`, else `default_filter`) and, when the
/// environment asks for it, the OTLP trace export named `binary` unless
/// `OTEL_SERVICE_NAME` says otherwise.
///
/// # Errors
///
/// An `OTEL_EXPORTER_OTLP_PROTOCOL` this exporter does not speak (`grpc`), or an endpoint
/// that is not a URL.
pub fn install(binary: &str, default_filter: &str, format: LogFormat) -> anyhow::Result<Telemetry> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let log = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_writer(std::io::stderr)
            .boxed(),
    }
    .with_filter(filter);
    let (otel, guard) = match otlp_config(binary, |name| std::env::var(name).ok())? {
        Some(config) => {
            let (layer, guard) =
                otlp_layer(config).context("cannot set up the OTLP trace export")?;
            (Some(layer.with_filter(LevelFilter::INFO)), Some(guard))
        }
        None => (None, None),
    };
    tracing_subscriber::registry().with(log).with(otel).init();
    Ok(Telemetry { _otel: guard })
}

/// The export the variables `lookup` reads ask for, or `None` when they ask for none.
fn otlp_config(
    binary: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Option<OtlpConfig>> {
    let var = |name: &str| {
        lookup(name)
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true"))
        || var("OTEL_TRACES_EXPORTER").is_some_and(|value| value.eq_ignore_ascii_case("none"));
    let Some(endpoint) = var("OTEL_EXPORTER_OTLP_ENDPOINT") else {
        return Ok(None);
    };
    if disabled {
        return Ok(None);
    }
    let protocol = match var("OTEL_EXPORTER_OTLP_PROTOCOL") {
        None => OtlpProtocol::Protobuf,
        Some(value) => match OtlpProtocol::from_env_value(&value) {
            Some(protocol) => protocol,
            None => bail!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={value} is not spoken here: use http/protobuf or http/json"
            ),
        },
    };
    let service = var("OTEL_SERVICE_NAME").unwrap_or_else(|| binary.to_owned());
    Ok(Some(
        OtlpConfig::from_env()
            .with_endpoint(endpoint)
            .with_service_name(service)
            .with_protocol(protocol),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> anyhow::Result<Option<OtlpConfig>> {
        otlp_config("job_hunter", |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn no_endpoint_no_export() {
        assert!(config(&[("OTEL_SERVICE_NAME", "x")]).unwrap().is_none());
    }

    #[test]
    fn the_standard_variables_configure_the_export() {
        let config = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(config.traces_url(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(config.protocol, OtlpProtocol::Json);
        assert_eq!(config.service_name, "job_hunter");
    }

    #[test]
    fn the_export_can_be_turned_off() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert!(
            config(&[endpoint, ("OTEL_SDK_DISABLED", "true")])
                .unwrap()
                .is_none()
        );
        assert!(
            config(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")])
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn grpc_is_refused_with_a_reason() {
        let error = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ])
        .unwrap_err();
        assert!(error.to_string().contains("http/protobuf"), "{error}");
    }
}
