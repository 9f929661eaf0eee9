//! Exporting the runtime's tracing spans over OTLP/HTTP (the `otel` feature).
//!
//! The agent loop already describes its work as `tracing` spans carrying OpenTelemetry
//! GenAI attributes (`invoke_agent`, `chat`, `execute_tool`, and the graph's
//! `graph.node`). [`otlp_layer`] turns those spans into OpenTelemetry spans and sends
//! them in batches, from a background thread, to an OTLP collector over HTTP (protobuf
//! or JSON). The application installs the layer in its own subscriber and keeps the
//! returned [`OtelGuard`] alive until it exits; dropping the guard (or calling
//! [`OtelGuard::shutdown`]) sends what is still buffered.
//!
//! ```no_run
//! use agent_runtime::otel::{OtlpConfig, OtlpProtocol, otlp_layer};
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Endpoint and service name come from OTEL_EXPORTER_OTLP_ENDPOINT and
//!     // OTEL_SERVICE_NAME when they are set; anything can be overridden here.
//!     let config = OtlpConfig::from_env()
//!         .with_service_name("support-bot")
//!         .with_protocol(OtlpProtocol::Protobuf);
//!     let (otel, guard) = otlp_layer(config)?;
//!     tracing_subscriber::registry()
//!         .with(tracing_subscriber::fmt::layer())
//!         .with(otel)
//!         .init();
//!
//!     // ... build and run agents; their spans go to the collector ...
//!
//!     // Sends the spans still buffered (dropping the guard does the same).
//!     guard.shutdown()?;
//!     Ok(())
//! }
//! ```

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkError;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The collector base endpoint used when `OTEL_EXPORTER_OTLP_ENDPOINT` is not set (the
/// standard OTLP/HTTP port on the local host).
pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:4318";

/// The service name used when `OTEL_SERVICE_NAME` is not set.
pub const DEFAULT_SERVICE_NAME: &str = "agent-runtime";

/// The instrumentation scope name the exported spans carry.
const SCOPE_NAME: &str = "agent-runtime";

/// How spans are encoded on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OtlpProtocol {
    /// `http/protobuf`, the OTLP/HTTP default every collector accepts.
    #[default]
    Protobuf,
    /// `http/json`.
    Json,
}

impl OtlpProtocol {
    /// The protocol named by an `OTEL_EXPORTER_OTLP_PROTOCOL` value: `http/json` is
    /// [`Json`](Self::Json), `http/protobuf` is [`Protobuf`](Self::Protobuf), anything
    /// else (including `grpc`, which this exporter does not speak) is `None`.
    pub fn from_env_value(value: &str) -> Option<Self> {
        match value.trim() {
            "http/json" => Some(OtlpProtocol::Json),
            "http/protobuf" => Some(OtlpProtocol::Protobuf),
            _ => None,
        }
    }

    fn to_otlp(self) -> Protocol {
        match self {
            OtlpProtocol::Protobuf => Protocol::HttpBinary,
            OtlpProtocol::Json => Protocol::HttpJson,
        }
    }
}

/// Where and how to export spans.
///
/// [`Default`] is [`OtlpConfig::from_env`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OtlpConfig {
    /// The collector's base URL, such as `http://127.0.0.1:4318`; spans are posted to
    /// `{endpoint}/v1/traces`.
    pub endpoint: String,
    /// The `service.name` resource attribute.
    pub service_name: String,
    /// The wire encoding.
    pub protocol: OtlpProtocol,
}

impl OtlpConfig {
    /// The configuration the standard environment variables describe:
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (else [`DEFAULT_ENDPOINT`]), `OTEL_SERVICE_NAME`
    /// (else [`DEFAULT_SERVICE_NAME`]) and `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/json` or
    /// `http/protobuf`, else protobuf).
    pub fn from_env() -> Self {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        OtlpConfig {
            endpoint: var("OTEL_EXPORTER_OTLP_ENDPOINT")
                .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned()),
            service_name: var("OTEL_SERVICE_NAME")
                .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned()),
            protocol: var("OTEL_EXPORTER_OTLP_PROTOCOL")
                .and_then(|value| OtlpProtocol::from_env_value(&value))
                .unwrap_or_default(),
        }
    }

    /// Sets the collector's base URL (`/v1/traces` is appended).
    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = endpoint.into();
        self
    }

    /// Sets the `service.name` resource attribute.
    pub fn with_service_name(mut self, service_name: impl Into<String>) -> Self {
        self.service_name = service_name.into();
        self
    }

    /// Sets the wire encoding.
    pub fn with_protocol(mut self, protocol: OtlpProtocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// The URL spans are posted to: the endpoint followed by `/v1/traces`.
    pub fn traces_url(&self) -> String {
        format!("{}/v1/traces", self.endpoint.trim_end_matches('/'))
    }
}

impl Default for OtlpConfig {
    fn default() -> Self {
        OtlpConfig::from_env()
    }
}

/// Setting up, flushing or shutting down the exporter failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The exporter could not be built (for instance, the endpoint is not a valid URL).
    #[error("cannot build the OTLP exporter: {0}")]
    Build(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Buffered spans could not be exported.
    #[error("cannot flush spans to the OTLP collector: {0}")]
    Flush(OTelSdkError),
    /// The exporter did not shut down cleanly; some spans may be lost.
    #[error("cannot shut the OTLP exporter down: {0}")]
    Shutdown(OTelSdkError),
}

/// Keeps the span exporter running. Keep it alive for as long as spans should be
/// exported; [`shutdown`](Self::shutdown), or dropping it, exports what is still
/// buffered and stops the exporter.
///
/// Flushing and shutting down block the calling thread until the export finishes (at
/// most a few seconds); they do not need, and do not block on, an async runtime.
#[derive(Debug)]
#[must_use = "dropping the guard shuts the exporter down"]
pub struct OtelGuard {
    provider: Option<SdkTracerProvider>,
}

impl OtelGuard {
    /// Exports every span ended so far and waits for the collector to accept it.
    pub fn flush(&self) -> Result<(), OtelError> {
        match &self.provider {
            Some(provider) => provider.force_flush().map_err(OtelError::Flush),
            None => Ok(()),
        }
    }

    /// Exports every span ended so far and stops the exporter; spans ending later are
    /// dropped.
    pub fn shutdown(mut self) -> Result<(), OtelError> {
        self.shutdown_provider()
    }

    fn shutdown_provider(&mut self) -> Result<(), OtelError> {
        match self.provider.take() {
            Some(provider) => match provider.shutdown() {
                Ok(()) | Err(OTelSdkError::AlreadyShutdown) => Ok(()),
                Err(error) => Err(OtelError::Shutdown(error)),
            },
            None => Ok(()),
        }
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if let Err(error) = self.shutdown_provider() {
            tracing::warn!(%error, "OTLP exporter shutdown failed; some spans may be lost");
        }
    }
}

/// A [`Layer`] exporting every span of the subscriber it is added to over OTLP/HTTP as
/// `config` says, with the guard that keeps the exporter running.
///
/// Span fields become span attributes under their own names (so the runtime's
/// `gen_ai.*` fields arrive as OpenTelemetry GenAI attributes), including fields
/// recorded after the span started. Spans are batched and sent from a background
/// thread, so building and using the layer needs no async runtime. Nothing global is
/// set: the application installs the layer in its subscriber (see the
/// [module docs](self)).
///
/// # Errors
///
/// [`OtelError::Build`] when the exporter cannot be built, for instance because the
/// endpoint is not a valid URL. An unreachable collector is not an error here; failed
/// exports are reported by [`OtelGuard::flush`] and logged.
pub fn otlp_layer<S>(config: OtlpConfig) -> Result<(impl Layer<S>, OtelGuard), OtelError>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(config.traces_url())
        .with_protocol(config.protocol.to_otlp())
        .build()?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name(config.service_name)
                .build(),
        )
        .build();
    let tracer = provider.tracer(SCOPE_NAME);
    let layer = tracing_opentelemetry::layer().with_tracer(tracer);
    Ok((
        layer,
        OtelGuard {
            provider: Some(provider),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_url_appends_the_signal_path_once() {
        let config = OtlpConfig::from_env().with_endpoint("http://collector:4318/");
        assert_eq!(config.traces_url(), "http://collector:4318/v1/traces");
        let config = config.with_endpoint("http://collector:4318");
        assert_eq!(config.traces_url(), "http://collector:4318/v1/traces");
    }

    #[test]
    fn protocol_names_follow_the_environment_variable() {
        assert_eq!(
            OtlpProtocol::from_env_value("http/json"),
            Some(OtlpProtocol::Json)
        );
        assert_eq!(
            OtlpProtocol::from_env_value("http/protobuf"),
            Some(OtlpProtocol::Protobuf)
        );
        assert_eq!(OtlpProtocol::from_env_value("grpc"), None);
    }

    #[test]
    fn an_invalid_endpoint_is_a_build_error() {
        let config = OtlpConfig::from_env().with_endpoint("not a url");
        let result = otlp_layer::<tracing_subscriber::Registry>(config);
        assert!(matches!(result, Err(OtelError::Build(_))));
    }
}
