//! Step 8: send the summary by email (SMTP when `SMTP_URL` is set and this is no dry
//! run, else an `.eml` file beside the outputs). Journaled: a resumed run never sends
//! twice.
//!
//! The output files are written before this step, so nothing here fails the run: a
//! recipient that is not a valid address (one the model read off the resume, or a
//! mistyped `JH_EMAIL_TO`) is left out and recorded as an issue, a failed delivery falls
//! back to the `.eml` file, and an `.eml` that cannot be written is recorded too.

use std::fmt::Write as _;

use agent_runtime::graph::NodeError;
use job_capabilities::mail::{
    Attachment, Email, EmlFileMailer, MailError, Mailer, SentMail, build_message,
};

use super::StepEnv;
use crate::events::HuntEvent;
use crate::state::{HuntState, Notification};

/// The journal key of the summary email.
pub const JOURNAL_KEY: &str = "notify:summary-email";

/// The summary email: the top jobs with their reasons, the candidate's exclusions and
/// what they removed, every company's outcome with its jobs fetched, kept and cut, the
/// problems met, with the output files attached.
pub fn compose(state: &HuntState, from: &str, to: Vec<String>, top_n: usize) -> Email {
    let run_id = &state.config.run_id;
    let subject = match state.scored.first() {
        Some(best) => format!(
            "Job hunt {run_id}: {} jobs scored, best {} at {} ({})",
            state.scored.len(),
            best.job.title,
            best.job.company,
            best.score
        ),
        None => format!("Job hunt {run_id}: no jobs scored"),
    };
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} jobs scored from {} companies; jobs: {}.\n",
        state.scored.len(),
        state.company_reports.len(),
        state.job_counts.describe()
    );
    if !state.exclusions.is_empty() {
        let _ = writeln!(text, "Your exclusions:");
        for exclusion in &state.exclusions {
            let _ = writeln!(text, "- {}", exclusion.describe());
        }
        let _ = writeln!(text);
    }
    let _ = writeln!(text, "Top {}:", top_n.min(state.scored.len()));
    for (rank, s) in state.scored.iter().take(top_n).enumerate() {
        let _ = writeln!(
            text,
            "{}. [{}] {} at {} ({})\n   {}\n   Apply: {}",
            rank + 1,
            s.score,
            s.job.title,
            s.job.company,
            s.job.location.as_deref().unwrap_or("location not stated"),
            s.reason,
            s.job.apply_url
        );
    }
    let _ = writeln!(text, "\nCompanies:");
    for report in &state.company_reports {
        let counts = match report.outcome {
            crate::models::CompanyOutcome::JobsFetched { .. } => {
                format!(" ({})", report.jobs.describe())
            }
            _ => String::new(),
        };
        let _ = writeln!(
            text,
            "- {}: {}{counts}",
            report.company,
            report.outcome.describe()
        );
    }
    if let Some(note) = &state.search_note {
        let _ = writeln!(text, "\nNote: {note}");
    }
    if !state.issues.is_empty() {
        let _ = writeln!(text, "\n{} problems were recorded:", state.issues.len());
        for issue in &state.issues {
            let _ = writeln!(text, "- {}", issue.describe());
        }
    }
    let attachments = state
        .output_files
        .iter()
        .filter_map(|path| {
            let bytes = std::fs::read(path).ok()?;
            let filename = path.file_name()?.to_string_lossy().into_owned();
            let content_type = if filename.ends_with(".xlsx") {
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
            } else {
                "text/csv"
            };
            Some(Attachment {
                filename,
                content_type: content_type.to_owned(),
                bytes,
            })
        })
        .collect();
    Email {
        from: from.to_owned(),
        to,
        subject,
        text_body: text,
        html_body: None,
        attachments,
    }
}

/// Why `address` cannot be a recipient (`None` when it can): one address,
/// `user@example.com` or `Name <user@example.com>`.
///
/// ```
/// use job_hunter::steps::notify::address_problem;
/// assert_eq!(address_problem("maya@mail.example"), None);
/// assert!(address_problem("maya at mail dot example").is_some());
/// ```
pub fn address_problem(address: &str) -> Option<String> {
    let probe = Email {
        from: "check@example.com".into(),
        to: vec![address.to_owned()],
        ..Email::default()
    };
    match build_message(&probe) {
        Err(MailError::InvalidAddress { reason, .. }) => Some(reason),
        Err(other) => Some(other.to_string()),
        Ok(_) => None,
    }
}

/// The recipient: `JH_EMAIL_TO`, else the address the model read off the resume; the
/// first valid one. Each invalid one is recorded as an issue saying what is wrong.
fn recipient(state: &mut HuntState, env: &StepEnv<'_>) -> Option<String> {
    let candidates = [
        (env.settings.email_to.clone(), "JH_EMAIL_TO"),
        (
            state.profile.as_ref().and_then(|p| p.email.clone()),
            "the resume (as the model read it)",
        ),
    ];
    for (address, source) in candidates {
        let Some(address) = address
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty())
        else {
            continue;
        };
        match address_problem(&address) {
            None => return Some(address),
            Some(reason) => state.record_issue(
                "notify",
                "mail",
                format!(
                    "the recipient {address:?} from {source} is not a valid email address ({reason}); it was not used"
                ),
                None,
                None,
            ),
        }
    }
    None
}

/// Sends the summary once per run; see the module docs.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let had_issues = state.issues.len();
    let to = recipient(state, env);
    if to.is_none() {
        let message = if state.issues.len() > had_issues {
            "no valid recipient: the summary is written as an .eml file only, addressed to the sender"
        } else {
            "no recipient: set JH_EMAIL_TO (the resume has no email address); the summary is written as an .eml file only"
        };
        state.record_issue("notify", "mail", message, None, None);
    }
    let recipients = match &to {
        Some(address) => vec![address.clone()],
        None => vec![env.settings.email_from.clone()],
    };
    let email = compose(
        state,
        &env.settings.email_from,
        recipients.clone(),
        env.settings.top_n,
    );
    let output_dir = state.config.output_dir.clone();
    let smtp = to.as_ref().and(env.deps.mailer.clone());
    let mut fallback_reason = None;
    // The journal keeps where the email went and to whom, so a replay reports the
    // delivery that happened.
    let delivered: Result<Notification, NodeError> = env
        .ctx
        .once(JOURNAL_KEY, || async {
            let sent = match &smtp {
                Some(mailer) => match mailer.send(&email).await {
                    Ok(sent) => Some(sent),
                    Err(e) => {
                        fallback_reason = Some(format!("{}: {e}", mailer.describe()));
                        None
                    }
                },
                None => None,
            };
            let sent: SentMail = match sent {
                Some(sent) => sent,
                None => EmlFileMailer::new(output_dir)
                    .send(&email)
                    .await
                    .map_err(|e| {
                        NodeError::recoverable(format!("could not write the email: {e}"))
                    })?,
            };
            Ok::<_, NodeError>(Notification {
                transport: sent.transport,
                eml_path: sent.eml_path,
                message_id: sent.message_id,
                to: recipients,
            })
        })
        .await;
    if let Some(reason) = fallback_reason {
        state.record_issue(
            "notify",
            "mail",
            format!("sending failed ({reason}); the summary was written as an .eml file instead"),
            None,
            None,
        );
    }
    let notification = match delivered {
        Ok(notification) => notification,
        Err(e) => {
            // The files are written: the run keeps them and says what went wrong.
            state.record_issue("notify", "mail", e.message(), None, None);
            return Ok(());
        }
    };
    if env.deps.dry_run && env.deps.mailer.is_none() && env.settings.smtp_url.is_some() {
        let message = format!(
            "dry run: no mail is sent, whatever SMTP_URL says; the summary was written to {}",
            notification.transport
        );
        tracing::info!("{message}");
        env.ctx.emit(HuntEvent::Notice { message });
    }
    tracing::info!(transport = %notification.transport, "summary sent");
    state.notification = Some(notification);
    Ok(())
}
