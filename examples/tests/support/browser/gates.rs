//! Answering the gates the resume page shows: what the page holds (its error, its gate
//! forms), the plan for each gate from the canned answers, filling a form and waiting
//! until its answer is taken.

use super::*;

/// The page's state, as the driver needs it.
#[derive(Debug, Deserialize)]
pub(super) struct Snapshot {
    pub(super) error: Option<String>,
    pub(super) session: bool,
    result: bool,
    gates: Vec<GateForm>,
}

#[derive(Debug, Deserialize)]
struct GateForm {
    id: String,
    name: String,
}

const SNAPSHOT_JS: &str = "() => {
    const shown = (el) => !!el && !el.hidden && el.getClientRects().length > 0;
    const error = document.getElementById('error');
    const result = document.getElementById('result');
    return {
        error: shown(error) && error.textContent.trim() ? error.textContent.trim() : null,
        session: shown(document.getElementById('session-view')),
        result: shown(result) && result.innerText.trim().length > 0,
        gates: Array.from(document.querySelectorAll('form[data-gate-id]'))
            .filter((form) => shown(form) && form.dataset.busy !== 'true')
            .map((form) => ({ id: form.dataset.gateId, name: form.dataset.gateName || '' })),
    };
}";

pub(super) async fn snapshot(page: &Page) -> anyhow::Result<Snapshot> {
    // While the page reloads there is no document to ask: try again for a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match page.evaluate_function(SNAPSHOT_JS).await {
            Ok(result) => {
                if let Ok(snapshot) = result.into_value::<Snapshot>() {
                    return Ok(snapshot);
                }
            }
            Err(error) if Instant::now() > deadline => {
                return Err(error).context("reading the page");
            }
            Err(_) => {}
        }
        if Instant::now() > deadline {
            bail!("the page's state could not be read");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Answers every gate the page shows with `canned`, until the resume shows; fails at the
/// `deadline`, on a gate with no canned answer, or when the page shows an error.
pub(super) async fn answer_gates(
    page: &Page,
    canned: &Canned,
    deadline: Instant,
) -> anyhow::Result<Vec<Answered>> {
    let mut answered: Vec<Answered> = Vec::new();
    let mut done: HashSet<String> = HashSet::new();
    let mut architect_reviews = 0;
    let mut reloaded = false;
    loop {
        let snapshot = snapshot(page).await?;
        if let Some(error) = snapshot.error {
            bail!(
                "the page shows an error after {} answers: {error}\n{}",
                answered.len(),
                page_text(page).await
            );
        }
        if snapshot.result {
            return Ok(answered);
        }
        // A form of a gate answered already can show for a moment while a reloaded page
        // replays the events.
        if let Some(gate) = snapshot.gates.into_iter().find(|g| !done.contains(&g.id)) {
            let plan = plan_for(&gate, canned, &answered, &mut architect_reviews)?;
            fill_and_click(page, &gate, &plan).await?;
            wait_until_answered(page, &gate).await?;
            done.insert(gate.id.clone());
            answered.push(Answered {
                id: gate.id,
                name: gate.name,
                action: plan.action,
            });
            if !reloaded && canned.reload_after == Some(answered.len()) {
                reloaded = true;
                page.reload().await.context("reloading the page")?;
                wait_for_selector(page, "#session-view:not([hidden])", Duration::from_secs(15))
                    .await
                    .context("the reloaded page did not reconnect to its session")?;
            }
            continue;
        }
        if Instant::now() > deadline {
            bail!(
                "no resume yet after {} answers ({:?})\n{}",
                answered.len(),
                answered.iter().map(|a| &a.name).collect::<Vec<_>>(),
                page_text(page).await
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// What to type into a gate form and which button to click.
#[derive(Debug, Serialize)]
struct Plan {
    /// Every text field gets this, followed by ` (<its name>)`.
    fill_all: Option<String>,
    /// Fields set by name.
    fill: serde_json::Map<String, Value>,
    /// Text appended to fields, by name.
    append: serde_json::Map<String, Value>,
    action: String,
}

impl Plan {
    fn click(action: &str) -> Self {
        Plan {
            fill_all: None,
            fill: serde_json::Map::new(),
            append: serde_json::Map::new(),
            action: action.to_owned(),
        }
    }

    fn with(mut self, field: &str, value: &str) -> Self {
        self.fill.insert(field.to_owned(), Value::from(value));
        self
    }
}

fn plan_for(
    gate: &GateForm,
    canned: &Canned,
    answered: &[Answered],
    architect_reviews: &mut usize,
) -> anyhow::Result<Plan> {
    let name = gate.name.as_str();
    if name.starts_with("questionnaire") {
        let mut plan = Plan::click("submit");
        plan.fill_all = Some(canned.questionnaire.clone());
        return Ok(plan);
    }
    if name.starts_with("positioning_q") {
        return Ok(Plan::click("submit").with("answer", &canned.positioning));
    }
    if name == "research_validation" {
        return Ok(Plan::click("approve"));
    }
    if name == "architect_review" {
        *architect_reviews += 1;
        return Ok(match (&canned.architect_feedback, *architect_reviews) {
            (Some(feedback), 1) => Plan::click("revise").with("feedback", feedback),
            _ => Plan::click("approve"),
        });
    }
    if name.starts_with("section_review_") {
        let reviews = answered
            .iter()
            .filter(|a| a.name.starts_with("section_review_"))
            .count();
        return Ok(match canned.sections.get(reviews) {
            None | Some(SectionAnswer::Approve) => Plan::click("approve"),
            Some(SectionAnswer::Edit { append }) => {
                let mut plan = Plan::click("edit");
                plan.append
                    .insert("markdown".to_owned(), Value::from(append.as_str()));
                plan
            }
            Some(SectionAnswer::Revise { feedback }) => {
                Plan::click("revise").with("feedback", feedback)
            }
        });
    }
    if name == "quality_review" {
        return Ok(Plan::click("approve"));
    }
    bail!("no canned answer for the gate {name:?} ({})", gate.id)
}

/// A CSS attribute selector for the form of `gate`.
fn form_selector(gate: &GateForm) -> String {
    let id = gate.id.replace('\\', "\\\\").replace('"', "\\\"");
    format!("form[data-gate-id=\"{id}\"]")
}

async fn fill_and_click(page: &Page, gate: &GateForm, plan: &Plan) -> anyhow::Result<()> {
    let form = form_selector(gate);
    let script = format!(
        "() => {{
            const form = document.querySelector({form});
            const plan = {plan};
            if (!form) return 'the form is gone';
            const set = (field, value) => {{
                field.focus();
                field.value = value;
                field.dispatchEvent(new Event('input', {{ bubbles: true }}));
                field.dispatchEvent(new Event('change', {{ bubbles: true }}));
            }};
            if (plan.fill_all !== null) {{
                const fields = form.querySelectorAll(
                    'textarea[name], input[name]:not([type=checkbox]):not([type=radio]):not([type=hidden])');
                if (!fields.length) return 'no field to fill';
                fields.forEach((field) => set(field, plan.fill_all + ' (' + field.name + ')'));
            }}
            for (const [name, value] of Object.entries(plan.fill)) {{
                const field = form.querySelector('[name=\"' + CSS.escape(name) + '\"]');
                if (!field) return 'no field named ' + name;
                set(field, value);
            }}
            for (const [name, value] of Object.entries(plan.append)) {{
                const field = form.querySelector('[name=\"' + CSS.escape(name) + '\"]');
                if (!field) return 'no field named ' + name;
                set(field, field.value + value);
            }}
            if (!form.querySelector('button[data-action=\"' + plan.action + '\"]')) {{
                return 'no button ' + plan.action;
            }}
            return 'ok';
        }}",
        form = serde_json::to_string(&form)?,
        plan = serde_json::to_string(plan)?,
    );
    let filled: String = page
        .evaluate_function(script)
        .await
        .with_context(|| format!("filling the gate {}", gate.id))?
        .into_value()?;
    if filled != "ok" {
        bail!("the gate {} ({}): {filled}", gate.id, gate.name);
    }
    click(
        page,
        &format!("{form} button[data-action=\"{}\"]", plan.action),
    )
    .await
}

/// Waits until the form of `gate` is gone (the server took the answer); fails with the
/// form's error when it shows one.
async fn wait_until_answered(page: &Page, gate: &GateForm) -> anyhow::Result<()> {
    let script = format!(
        "() => {{
            const form = document.querySelector({form});
            if (!form) return {{ gone: true, error: null }};
            const error = form.querySelector('[data-role=error]');
            const text = error && !error.hidden ? error.textContent.trim() : '';
            return {{ gone: false, error: text || null }};
        }}",
        form = serde_json::to_string(&form_selector(gate))?,
    );
    #[derive(Deserialize)]
    struct State {
        gone: bool,
        error: Option<String>,
    }
    let deadline = Instant::now() + ANSWER_PATIENCE;
    loop {
        let state: State = page
            .evaluate_function(script.as_str())
            .await
            .with_context(|| format!("reading the gate {}", gate.id))?
            .into_value()?;
        if state.gone {
            return Ok(());
        }
        if let Some(error) = state.error {
            bail!("the answer to {} ({}) failed: {error}", gate.id, gate.name);
        }
        if Instant::now() > deadline {
            bail!(
                "the form of {} ({}) stayed after its answer\n{}",
                gate.id,
                gate.name,
                page_text(page).await
            );
        }
        tokio::time::sleep(POLL).await;
    }
}
