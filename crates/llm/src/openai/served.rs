//! What an OpenAI-compatible server says about itself: the models it serves, their
//! context windows, and (llama.cpp) how many calls it runs at once.

use super::OpenAiModel;
use crate::error::LlmError;
use crate::http::join_url;
use serde_json::Value;
use std::time::Duration;

/// How long a server may take to describe itself.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// One model a server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedModel {
    /// Its id, as requests name it.
    pub id: String,
    /// Its context window in tokens, where the server publishes it (llama.cpp's
    /// `meta.n_ctx`, vLLM's `max_model_len`, `context_length` or `context_window`).
    pub context_window: Option<u32>,
}

/// What a server said about itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServedModels {
    /// The models, as `GET /models` lists them.
    pub models: Vec<ServedModel>,
    /// Calls it runs at once, where published (llama.cpp's `total_slots` in `/props`).
    pub slots: Option<usize>,
}

impl ServedModels {
    /// The model with this id.
    pub fn get(&self, id: &str) -> Option<&ServedModel> {
        self.models.iter().find(|model| model.id == id)
    }

    /// The one model served, when there is exactly one.
    pub fn only(&self) -> Option<&ServedModel> {
        match self.models.as_slice() {
            [only] => Some(only),
            _ => None,
        }
    }
}

impl OpenAiModel {
    /// Asks the server which models it serves (`GET {base_url}/models`) and, when it is
    /// llama.cpp, how many calls it runs at once (`GET /props` beside the API root).
    ///
    /// Fails with the transport or HTTP error of the model list; a missing `/props` is
    /// not an error.
    pub async fn served_models(&self) -> Result<ServedModels, LlmError> {
        let url = join_url(&self.config.base_url, "models")?;
        let list = self
            .http
            .get_json(&url, &self.headers, DESCRIBE_TIMEOUT)
            .await?;
        let mut served = parse_model_list(&list);
        let llama_cpp = list
            .pointer("/data/0/owned_by")
            .and_then(Value::as_str)
            .is_some_and(|owner| owner == "llamacpp");
        if llama_cpp {
            let root = self.config.base_url.trim_end_matches('/');
            let root = root.strip_suffix("/v1").unwrap_or(root);
            let props = join_url(root, "props")?;
            match self
                .http
                .get_json(&props, &self.headers, DESCRIBE_TIMEOUT)
                .await
            {
                Ok(props) => served.slots = parse_slots(&props),
                Err(error) => tracing::debug!(%error, "no /props: the server's slots are unknown"),
            }
        }
        Ok(served)
    }
}

/// Reads an OpenAI `{"data": [{"id": ...}, ...]}` model list.
fn parse_model_list(list: &Value) -> ServedModels {
    let models = list
        .get("data")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter_map(|entry| {
                    let id = entry.get("id")?.as_str()?.to_owned();
                    let context_window = [
                        "/meta/n_ctx",
                        "/max_model_len",
                        "/context_length",
                        "/context_window",
                    ]
                    .into_iter()
                    .find_map(|pointer| entry.pointer(pointer)?.as_u64())
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| *n > 0);
                    Some(ServedModel { id, context_window })
                })
                .collect()
        })
        .unwrap_or_default();
    ServedModels {
        models,
        slots: None,
    }
}

fn parse_slots(props: &Value) -> Option<usize> {
    props
        .get("total_slots")?
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::OpenAiConfig;
    use serde_json::json;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    #[test]
    fn context_windows_are_read_as_each_server_publishes_them() {
        let list = json!({"object": "list", "data": [
            {"id": "qwen", "owned_by": "llamacpp", "meta": {"n_ctx": 8192, "n_ctx_train": 32768}},
            {"id": "vllm-model", "max_model_len": 16384},
            {"id": "router-model", "context_length": 200000},
            {"id": "gpt-4.1", "object": "model"},
            {"object": "model"}
        ]});
        let served = parse_model_list(&list);
        let windows: Vec<(&str, Option<u32>)> = served
            .models
            .iter()
            .map(|m| (m.id.as_str(), m.context_window))
            .collect();
        assert_eq!(
            windows,
            [
                ("qwen", Some(8192)),
                ("vllm-model", Some(16384)),
                ("router-model", Some(200_000)),
                ("gpt-4.1", None)
            ]
        );
        assert!(served.only().is_none());
        assert_eq!(served.get("qwen").unwrap().context_window, Some(8192));
    }

    #[tokio::test]
    async fn a_llama_cpp_server_tells_its_model_window_and_slots() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/v1/models"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "object": "list",
                "data": [{"id": "qwen2.5-coder-1.5b", "owned_by": "llamacpp", "meta": {"n_ctx": 8192}}]
            })))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/props"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"total_slots": 1})))
            .mount(&server)
            .await;
        let model = OpenAiModel::new(OpenAiConfig::local(format!("{}/v1", server.uri()))).unwrap();
        let served = model.served_models().await.unwrap();
        assert_eq!(
            served.only(),
            Some(&ServedModel {
                id: "qwen2.5-coder-1.5b".into(),
                context_window: Some(8192)
            })
        );
        assert_eq!(served.slots, Some(1));
    }
}
