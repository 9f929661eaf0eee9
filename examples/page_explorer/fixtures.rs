//! The recorded answers of the page explorer's dry runs.

use std::path::{Path, PathBuf};

/// Where the recorded responses for the fixture sites are, relative to the workspace.
pub const RECORDINGS: &str = "fixtures/page-explorer/dry-run";

/// The recording for a fixture site: `<RECORDINGS>/<file>`, found from the current directory.
pub fn recording(file: &str) -> anyhow::Result<PathBuf> {
    Ok(examples::fixtures::locate(
        &Path::new(RECORDINGS).join(file),
    )?)
}
