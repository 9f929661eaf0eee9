//! The Phase 1 results kept under one folder, read by name: a tool an agent (or an MCP
//! client, through agent-server's MCP front) calls to learn how a site lists, filters
//! and paginates its jobs.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use agent_runtime::{AgentContext, AgentTool, ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::phase1::Phase1Output;

/// Which result to read.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadPhase1 {
    /// The result's name: the folder `explore --out` wrote it to, under the results
    /// folder (such as `acme-careers`).
    pub site: String,
}

/// The names of the results under `root`: its folders holding a `phase1.json`, sorted.
pub fn phase1_results(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("phase1.json").is_file())
        .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// The Phase 1 result named `site` under `root`.
///
/// # Errors
///
/// A name that is not a plain folder name, a result that is not there (the error lists
/// those that are), or a file that is not a Phase 1 output.
pub fn read_phase1_result(root: &Path, site: &str) -> Result<Phase1Output, ToolError> {
    let plain = !site.is_empty()
        && site != "."
        && site != ".."
        && !site.contains(['/', '\\'])
        && !site.contains('\0');
    if !plain {
        return Err(ToolError::InvalidArguments(format!(
            "{site:?} is not a result's name (a folder name, no path)"
        )));
    }
    let path = root.join(site).join("phase1.json");
    if !path.is_file() {
        let known = phase1_results(root);
        return Err(ToolError::failed(if known.is_empty() {
            format!("there is no Phase 1 result named {site:?}; none has been kept yet")
        } else {
            format!(
                "there is no Phase 1 result named {site:?}; there are: {}",
                known.join(", ")
            )
        }));
    }
    Phase1Output::read(&path).map_err(|error| ToolError::failed(error.to_string()))
}

/// `read_phase1_result`: the tool reading the Phase 1 results kept under `root`.
///
/// ```
/// use agent_runtime::AgentTool;
/// let tool = page_explorer::phase1_results_tool::<(), ()>("explore-out".into());
/// assert_eq!(tool.name(), "read_phase1_result");
/// ```
pub fn phase1_results_tool<S, E>(root: PathBuf) -> Arc<dyn AgentTool<S, E>>
where
    S: Send + Sync + 'static,
    E: Send + Sync + 'static,
{
    Arc::new(tool(
        "read_phase1_result",
        "Reads what the page explorer learned about a job site (Phase 1): the page type, \
         the selectors of its search input, filters, listings and pagination, what each \
         control does, the filter options and a summary. Name the result by its site.",
        move |input: ReadPhase1, _ctx: AgentContext<S, E>| {
            std::future::ready(read_phase1_result(&root, &input.site).and_then(|output| {
                serde_json::to_value(output).map_err(|error| ToolError::failed(error.to_string()))
            }))
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_are_read() {
        let root = tempfile::tempdir().unwrap();
        for name in ["", "..", "../etc", "a/b", "."] {
            assert!(matches!(
                read_phase1_result(root.path(), name),
                Err(ToolError::InvalidArguments(_))
            ));
        }
    }

    #[test]
    fn a_missing_result_names_those_there_are() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("acme")).unwrap();
        std::fs::write(
            root.path().join("acme/phase1.json"),
            serde_json::to_string(&Phase1Output::default()).unwrap(),
        )
        .unwrap();
        let error = read_phase1_result(root.path(), "globex").unwrap_err();
        assert!(error.to_string().contains("there are: acme"), "{error}");
        assert_eq!(
            read_phase1_result(root.path(), "acme").unwrap(),
            Phase1Output::default()
        );
    }
}
