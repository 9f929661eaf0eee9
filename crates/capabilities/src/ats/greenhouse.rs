//! Greenhouse job-board API: `GET /v1/boards/{token}/jobs?content=true`.

use serde::Deserialize;

use super::{AtsError, AtsKind, Id, Skipped, decode, text, timestamp};
use crate::html::html_to_text;
use crate::job::RawJob;

#[derive(Debug, Deserialize)]
struct Board {
    jobs: Vec<Job>,
}

#[derive(Debug, Deserialize)]
struct Job {
    id: Option<Id>,
    title: Option<String>,
    absolute_url: Option<String>,
    company_name: Option<String>,
    location: Option<Location>,
    /// HTML whose markup is entity-escaped (`&lt;p&gt;`); absent without `content=true`.
    content: Option<String>,
    departments: Option<Vec<Named>>,
    first_published: Option<String>,
    updated_at: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Location {
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Named {
    name: Option<String>,
}

/// Maps a Greenhouse `GET /v1/boards/{token}/jobs?content=true` body to jobs.
///
/// The company is the job's `company_name` when present, else `company`; the location
/// is `location.name`; the department joins `departments[].name`; `posted_at` is
/// `first_published`, else `updated_at`; the description is `content` with its
/// entities unescaped once and then read as HTML. Greenhouse states neither remote
/// work, employment type nor pay in structured fields, so those stay `None`.
pub fn parse_greenhouse(body: &[u8], company: &str) -> Result<Vec<RawJob>, AtsError> {
    let board: Board = decode(AtsKind::Greenhouse, body)?;
    let mut skipped = Skipped::default();
    let jobs = board
        .jobs
        .into_iter()
        .filter_map(|job| {
            let (title, url) = skipped.check(job.title, job.absolute_url)?;
            let department = job
                .departments
                .unwrap_or_default()
                .into_iter()
                .filter_map(|d| text(d.name))
                .collect::<Vec<_>>()
                .join(", ");
            let posted_at = timestamp(AtsKind::Greenhouse, job.first_published.as_deref())
                .or_else(|| timestamp(AtsKind::Greenhouse, job.updated_at.as_deref()));
            Some(RawJob {
                source: AtsKind::Greenhouse.source(),
                external_id: job.id.map(Id::into_string),
                company: text(job.company_name).unwrap_or_else(|| company.to_owned()),
                title,
                location: text(job.location.and_then(|l| l.name)),
                remote: None,
                department: text(Some(department)),
                employment_type: None,
                url,
                apply_url: None,
                description: job
                    .content
                    .map(|c| html_to_text(&unescape_entities(&c)))
                    .unwrap_or_default(),
                posted_at,
                salary: None,
            })
        })
        .collect();
    skipped.report(AtsKind::Greenhouse);
    Ok(jobs)
}

/// Undoes one level of HTML entity escaping: `&lt; &gt; &amp; &quot; &#39; &apos;
/// &nbsp;` and numeric references. Anything else is left as written, so entities that
/// were escaped twice (`&amp;lt;`) become single entities for the HTML reader.
pub(crate) fn unescape_entities(escaped: &str) -> String {
    let mut out = String::with_capacity(escaped.len());
    let mut rest = escaped;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let name = &rest[1..];
        let decoded = name
            .char_indices()
            .take(12)
            .find(|&(_, c)| c == ';')
            .and_then(|(end, _)| decode_entity(&name[..end]).map(|c| (c, end + 2)));
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode_entity(name: &str) -> Option<char> {
    match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some('\u{a0}'),
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code).filter(|c| *c != '\0')
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn entities_are_unescaped_once() {
        assert_eq!(
            unescape_entities(
                "&lt;p class=&quot;x&quot;&gt;R&amp;amp;D&#39;s &#x2014; &#8212;&nbsp;ok&lt;/p&gt;"
            ),
            "<p class=\"x\">R&amp;D's \u{2014} \u{2014}\u{a0}ok</p>"
        );
        assert_eq!(
            unescape_entities("a & b &unknown; &#; &#xZZ; &"),
            "a & b &unknown; &#; &#xZZ; &"
        );
        assert_eq!(
            unescape_entities("café &eacute; ☕&lt;"),
            "café &eacute; ☕<"
        );
        assert_eq!(unescape_entities("&lt;☕☕☕☕&gt;"), "<☕☕☕☕>");
    }

    #[test]
    fn escaped_content_becomes_plain_text() {
        let content =
            "&lt;h2&gt;About&lt;/h2&gt;&lt;p&gt;R&amp;amp;D &amp;lt;fast&amp;gt;&lt;/p&gt;";
        assert_eq!(
            html_to_text(&unescape_entities(content)),
            "About\nR&D <fast>"
        );
    }

    #[test]
    fn missing_fields_are_none_and_untitled_jobs_skipped() {
        let body = br#"{"jobs":[
            {"id": 1, "title": "Engineer", "absolute_url": "https://job-boards.greenhouse.io/acme/jobs/1"},
            {"id": 2, "title": "  ", "absolute_url": "https://job-boards.greenhouse.io/acme/jobs/2"},
            {"id": "3", "title": "No page"}
        ]}"#;
        let jobs = parse_greenhouse(body, "Acme").unwrap();
        assert_eq!(jobs.len(), 1);
        let job = &jobs[0];
        assert_eq!(job.company, "Acme");
        assert_eq!(job.external_id.as_deref(), Some("1"));
        assert_eq!(
            (job.location.as_ref(), job.department.as_ref()),
            (None, None)
        );
        assert_eq!((job.description.as_str(), job.posted_at), ("", None));
    }
}
