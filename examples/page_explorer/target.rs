//! A URL argument: a web address, or a directory of static files served on loopback for
//! the length of the run.

use std::path::Path;

use anyhow::Context as _;
use page_explorer::site_server::{ServedSite, serve_dir};

/// Where to point the browser, and the server behind it when the argument was a directory.
pub struct Target {
    url: String,
    /// The site's name: the directory's name, or the URL's host.
    name: String,
    _server: Option<ServedSite>,
}

impl Target {
    /// `http(s)://...` is used as given; a directory is served on `127.0.0.1`. A relative
    /// directory (e.g. `fixtures/sites/board-spa`) is looked for in the current directory
    /// and then its parents.
    pub async fn resolve(argument: &str) -> anyhow::Result<Self> {
        let located = if argument.contains("://") {
            None
        } else {
            Some(
                examples::fixtures::locate(Path::new(argument))
                    .with_context(|| format!("{argument} is neither a URL nor a directory"))?,
            )
        };
        if let Some(path) = located.as_deref().filter(|p| p.is_dir()) {
            let server = serve_dir(path.to_path_buf())
                .await
                .with_context(|| format!("serving {argument}"))?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "site".to_owned());
            return Ok(Target {
                url: server.url().to_owned(),
                name,
                _server: Some(server),
            });
        }
        anyhow::ensure!(
            argument.starts_with("http://")
                || argument.starts_with("https://")
                || argument.starts_with("file://"),
            "{argument} is neither a URL nor a directory"
        );
        let name = argument
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split(['/', ':']).next())
            .unwrap_or("site")
            .to_owned();
        Ok(Target {
            url: argument.to_owned(),
            name,
            _server: None,
        })
    }

    /// The URL to open.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The site's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}
