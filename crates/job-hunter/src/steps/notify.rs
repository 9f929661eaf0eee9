//! Step 8: send the summary by email (SMTP when `SMTP_URL` is set, else an `.eml` file
//! beside the outputs). Journaled: a resumed run never sends twice.

use std::fmt::Write as _;

use agent_runtime::graph::NodeError;
use job_capabilities::mail::{Attachment, Email, EmlFileMailer, Mailer, SentMail};

use super::StepEnv;
use crate::state::{HuntState, Notification};

/// The journal key of the summary email.
pub const JOURNAL_KEY: &str = "notify:summary-email";

/// The summary email: the top jobs with their reasons, every company's outcome, the
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
        "{} jobs scored from {} companies.\n",
        state.scored.len(),
        state.company_reports.len()
    );
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
        let _ = writeln!(text, "- {}: {}", report.company, report.outcome.describe());
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

/// Sends the summary once per run.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let to: Vec<String> = env
        .settings
        .email_to
        .clone()
        .or_else(|| state.profile.as_ref().and_then(|p| p.email.clone()))
        .into_iter()
        .collect();
    if to.is_empty() {
        state.record_issue(
            "notify",
            "mail",
            "no recipient: set JH_EMAIL_TO (the resume has no email address); the summary is written as an .eml file only",
            None,
            None,
        );
    }
    let recipients = if to.is_empty() {
        vec![env.settings.email_from.clone()]
    } else {
        to.clone()
    };
    let email = compose(
        state,
        &env.settings.email_from,
        recipients.clone(),
        env.settings.top_n,
    );
    let output_dir = state.config.output_dir.clone();
    let smtp = if to.is_empty() {
        None
    } else {
        env.deps.mailer.clone()
    };
    let mut fallback_reason = None;
    // The journal keeps where the email went and to whom, so a replay reports the
    // delivery that happened.
    let notification: Notification = env
        .run
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
                    .map_err(|e| NodeError::fatal(format!("could not write the email: {e}")))?,
            };
            Ok::<_, NodeError>(Notification {
                transport: sent.transport,
                eml_path: sent.eml_path,
                message_id: sent.message_id,
                to: recipients,
            })
        })
        .await?;
    if let Some(reason) = fallback_reason {
        state.record_issue(
            "notify",
            "mail",
            format!("sending failed ({reason}); the summary was written as an .eml file instead"),
            None,
            None,
        );
    }
    tracing::info!(transport = %notification.transport, "summary sent");
    state.notification = Some(notification);
    Ok(())
}
