//! Files a user attaches to a message, read from OpenAI `file` content parts: decoded in
//! memory, a file above the front's limit passed on refused so the product can say so.

use base64::Engine as _;
use serde_json::Value;

use super::ChatFile;

/// A `file` content part that cannot be read: what is wrong, and the parameter at fault
/// (`messages[0].content[1].file.file_data`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadFilePart {
    pub(crate) message: String,
    pub(crate) param: String,
}

impl BadFilePart {
    fn new(message: impl Into<String>, param: &str) -> Self {
        BadFilePart {
            message: message.into(),
            param: param.to_owned(),
        }
    }
}

/// A `file` content part: `{"filename": ..., "file_data": "data:<type>;base64,<data>"}`
/// (bare base64 is taken too). A file larger than `max_file_bytes` is passed on refused,
/// so the product can say so; `file_id` (OpenAI's Files API) is refused here.
pub(crate) fn read_file(
    file: Option<&Value>,
    at: &str,
    max_file_bytes: usize,
) -> Result<ChatFile, BadFilePart> {
    let Some(file) = file.and_then(Value::as_object) else {
        return Err(BadFilePart::new(
            "A file content part needs a 'file' object.",
            at,
        ));
    };
    let name = file
        .get("filename")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .unwrap_or("attachment")
        .to_owned();
    let data = match (file.get("file_data"), file.get("file_id")) {
        (Some(Value::String(data)), _) => data,
        (_, Some(_)) => {
            return Err(BadFilePart::new(
                "Files are read from 'file_data' (the file's bytes, base64): this server has no Files API to resolve a 'file_id'.",
                &format!("{at}.file_id"),
            ));
        }
        _ => {
            return Err(BadFilePart::new(
                "A file content part needs 'file_data': the file's bytes as base64 or a data URL.",
                &format!("{at}.file_data"),
            ));
        }
    };
    let (media_type, encoded) = match data.strip_prefix("data:") {
        Some(url) => match url.split_once(";base64,") {
            Some((media_type, encoded)) => (Some(media_type.to_owned()), encoded),
            None => {
                return Err(BadFilePart::new(
                    "'file_data' must be base64: a data URL 'data:<type>;base64,<data>' or the bare base64.",
                    &format!("{at}.file_data"),
                ));
            }
        },
        None => (None, data.as_str()),
    };
    // Base64 holds 3 bytes in 4 characters: known too large before decoding.
    let size = encoded.trim().len() / 4 * 3;
    let content = if size > max_file_bytes.saturating_add(3) {
        Err(format!(
            "{name} is {:.1} MB; files of at most {:.1} MB are taken",
            size as f64 / 1_048_576.0,
            max_file_bytes as f64 / 1_048_576.0
        ))
    } else {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|e| {
                BadFilePart::new(
                    format!("'file_data' is not valid base64: {e}"),
                    &format!("{at}.file_data"),
                )
            })?;
        Ok(bytes)
    };
    Ok(ChatFile {
        name,
        media_type: media_type.filter(|t| !t.is_empty()),
        content,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_data_url_or_bare_base64_is_decoded_with_its_name_and_type() {
        let part =
            json!({"filename": "cv.txt", "file_data": "data:text/plain;base64,SmFuZSBEb2U="});
        let file = read_file(Some(&part), "messages[0].content[1].file", 1024).unwrap();
        assert_eq!(file.name, "cv.txt");
        assert_eq!(file.media_type.as_deref(), Some("text/plain"));
        assert_eq!(file.content, Ok(b"Jane Doe".to_vec()));
        let bare = json!({"file_data": "SmFuZSBEb2U="});
        let file = read_file(Some(&bare), "f", 1024).unwrap();
        assert_eq!((file.name.as_str(), file.media_type), ("attachment", None));
    }

    #[test]
    fn a_file_over_the_limit_is_passed_on_refused_and_bad_parts_name_their_field() {
        let big = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; 4096]);
        let part = json!({"filename": "big.pdf", "file_data": format!("data:application/pdf;base64,{big}")});
        let file = read_file(Some(&part), "f", 1024).unwrap();
        let refused = file.content.unwrap_err();
        assert!(
            refused.starts_with("big.pdf is 0.0 MB; files of at most 0.0 MB"),
            "{refused}"
        );
        let error = read_file(Some(&json!({"file_id": "file-abc"})), "m.file", 1024).unwrap_err();
        assert_eq!(error.param, "m.file.file_id");
        let error = read_file(
            Some(&json!({"file_data": "data:text/plain,plain"})),
            "m.file",
            1024,
        )
        .unwrap_err();
        assert_eq!(error.param, "m.file.file_data");
        let error = read_file(Some(&json!({"file_data": "***"})), "m.file", 1024).unwrap_err();
        assert_eq!(error.param, "m.file.file_data");
    }
}
