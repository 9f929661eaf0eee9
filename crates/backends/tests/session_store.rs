//! One behaviour suite for every `SessionStore`: the in-memory reference, SQLite in memory
//! SQLite on a file and PostgreSQL must agree. Then what only SQLite has: reopening a
//! file, concurrent appends, corrupt cells and schema versions; and what PostgreSQL adds:
//! two instances appending and answering at once, and session leases.
#![cfg(test)]

mod pg;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use agent_backends::SqliteSessionStore;
use agent_runtime::sessions::{
    GateAnswer, InMemorySessionStore, NewSession, OpenGate, SessionOutcome, SessionStatus,
    SessionStore, StoreError,
};
use serde_json::{Value, json};
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use tempfile::TempDir;

fn new_session(id: &str, product: &str) -> NewSession {
    NewSession {
        id: id.to_owned(),
        product: product.to_owned(),
        token_hash: format!("hash-of-{id}"),
        tenant: None,
        request: json!({
            "cv": "Ünïcödé “quotes” \n and newlines",
            "n": 3,
            "f": 1.5,
            "nested": {"list": [1, null, true, "x"]},
        }),
    }
}

/// A gate to open, its kind its name.
fn gate<'a>(id: &'a str, name: &'a str, payload: &'a Value) -> OpenGate<'a> {
    OpenGate {
        id,
        name,
        kind: name,
        payload,
    }
}

/// What the tests announce a gate's change with.
fn note() -> Value {
    json!({"type": "gate_changed"})
}

/// Sessions created this far apart have different `created_at`s.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(3)).await;
}

// ---------------------------------------------------------------------------------------
// The suite, written once.

async fn create_get_conflict(store: &dyn SessionStore) {
    let created = store.create(new_session("s1", "resume")).await.unwrap();
    assert_eq!(created.id, "s1");
    assert_eq!(created.product, "resume");
    assert_eq!(created.token_hash, "hash-of-s1");
    assert_eq!(created.status, SessionStatus::Running);
    assert_eq!(created.stage, None);
    assert_eq!(created.request, new_session("s1", "resume").request);
    assert_eq!(created.result, None);
    assert_eq!(created.error, None);
    assert_eq!(created.created_at, created.updated_at);

    assert_eq!(store.get("s1").await.unwrap(), Some(created.clone()));
    assert_eq!(store.get("nope").await.unwrap(), None);

    let again = store.create(new_session("s1", "other")).await;
    assert_eq!(again, Err(StoreError::Conflict("s1".into())));
    // The conflict changed nothing.
    assert_eq!(store.get("s1").await.unwrap(), Some(created));
}

async fn status_and_stage(store: &dyn SessionStore) {
    let created = store.create(new_session("s1", "resume")).await.unwrap();
    tick().await;
    store
        .set_status("s1", SessionStatus::Waiting, Some("review"))
        .await
        .unwrap();
    let got = store.get("s1").await.unwrap().unwrap();
    assert_eq!(got.status, SessionStatus::Waiting);
    assert_eq!(got.stage.as_deref(), Some("review"));
    assert_eq!(got.created_at, created.created_at);
    assert!(got.updated_at > created.updated_at);

    // No stage given: the stage stays.
    store
        .set_status("s1", SessionStatus::Running, None)
        .await
        .unwrap();
    let got = store.get("s1").await.unwrap().unwrap();
    assert_eq!(got.status, SessionStatus::Running);
    assert_eq!(got.stage.as_deref(), Some("review"));

    store
        .set_status("s1", SessionStatus::Running, Some("writing"))
        .await
        .unwrap();
    let got = store.get("s1").await.unwrap().unwrap();
    assert_eq!(got.stage.as_deref(), Some("writing"));
}

async fn finish_ok_and_err(store: &dyn SessionStore) {
    store.create(new_session("ok", "resume")).await.unwrap();
    store.create(new_session("err", "resume")).await.unwrap();
    store.create(new_session("null", "resume")).await.unwrap();

    store
        .finish(
            "ok",
            SessionOutcome::Complete(json!({"pdf": "cv.pdf", "pages": 2})),
            &note(),
        )
        .await
        .unwrap();
    let ok = store.get("ok").await.unwrap().unwrap();
    assert_eq!(ok.status, SessionStatus::Complete);
    assert_eq!(ok.result, Some(json!({"pdf": "cv.pdf", "pages": 2})));
    assert_eq!(ok.error, None);
    assert!(ok.updated_at >= ok.created_at);

    store
        .finish(
            "err",
            SessionOutcome::Failed("the model refused".into()),
            &note(),
        )
        .await
        .unwrap();
    let err = store.get("err").await.unwrap().unwrap();
    assert_eq!(err.status, SessionStatus::Failed);
    assert_eq!(err.error.as_deref(), Some("the model refused"));
    assert_eq!(err.result, None);

    // A JSON null result is a result.
    store
        .finish("null", SessionOutcome::Complete(Value::Null), &note())
        .await
        .unwrap();
    let null = store.get("null").await.unwrap().unwrap();
    assert_eq!(null.status, SessionStatus::Complete);
    assert_eq!(null.result, Some(Value::Null));

    // An ended session stays as it ended, and has one terminal event.
    let again = store
        .finish("ok", SessionOutcome::Failed("late".into()), &note())
        .await
        .unwrap();
    assert_eq!(again, None);
    let ok = store.get("ok").await.unwrap().unwrap();
    assert_eq!(ok.status, SessionStatus::Complete);
    assert_eq!(ok.result, Some(json!({"pdf": "cv.pdf", "pages": 2})));
    assert_eq!(ok.error, None);
    let events = store.events_after("ok", 0).await.unwrap();
    assert_eq!(
        events.iter().map(|e| (e.seq, &e.event)).collect::<Vec<_>>(),
        vec![(1, &note())]
    );
}

async fn events_numbered(store: &dyn SessionStore) {
    store.create(new_session("s1", "resume")).await.unwrap();
    store.create(new_session("s2", "resume")).await.unwrap();
    assert!(store.events_after("s1", 0).await.unwrap().is_empty());

    let events = [
        json!({"type": "started"}),
        json!({"type": "stage", "name": "draft"}),
        json!("a bare string"),
        json!({"type": "done", "unicode": "日本語"}),
    ];
    for (i, event) in events.iter().enumerate() {
        assert_eq!(store.append_event("s1", event).await.unwrap(), i as u64 + 1);
    }
    // Another session counts on its own.
    assert_eq!(store.append_event("s2", &json!({"x": 1})).await.unwrap(), 1);
    assert_eq!(store.append_event("s2", &json!({"x": 2})).await.unwrap(), 2);
    assert_eq!(
        store
            .append_event("s1", &json!({"last": true}))
            .await
            .unwrap(),
        5
    );

    let all = store.events_after("s1", 0).await.unwrap();
    assert_eq!(
        all.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    assert_eq!(store.event_count("s1").await, Ok(5));
    assert_eq!(store.event_count("s2").await, Ok(2));
    assert!(matches!(
        store.event_count("nope").await,
        Err(StoreError::NotFound(_))
    ));
    for (stored, event) in all.iter().zip(events.iter()) {
        assert_eq!(&stored.event, event);
    }
    assert_eq!(all[4].event, json!({"last": true}));
    assert!(all.windows(2).all(|w| w[0].at <= w[1].at));

    for after in 0..=5u64 {
        let later = store.events_after("s1", after).await.unwrap();
        let seqs: Vec<u64> = later.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, ((after + 1)..=5).collect::<Vec<_>>(), "after {after}");
        assert_eq!(later.as_slice(), &all[after as usize..]);
    }
    assert!(store.events_after("s1", 99).await.unwrap().is_empty());
    assert!(store.events_after("s1", u64::MAX).await.unwrap().is_empty());

    let s2 = store.events_after("s2", 1).await.unwrap();
    assert_eq!(s2.len(), 1);
    assert_eq!((s2[0].seq, &s2[0].event), (2, &json!({"x": 2})));
}

async fn gates_open_answer_list(store: &dyn SessionStore) {
    store.create(new_session("s1", "resume")).await.unwrap();
    store.create(new_session("s2", "resume")).await.unwrap();
    assert!(store.gates("s1").await.unwrap().is_empty());

    // Ids that sort differently from their opening order.
    store
        .open_gate(
            "s1",
            &gate("agent:gate:3", "confirm_profile", &json!({"name": "Ada"})),
            &note(),
        )
        .await
        .unwrap();
    tick().await;
    store
        .open_gate(
            "s1",
            &gate("agent:gate:1", "pick_template", &json!(["a", "b"])),
            &note(),
        )
        .await
        .unwrap();
    tick().await;
    store
        .open_gate(
            "s1",
            &gate("agent:gate:2", "approve", &Value::Null),
            &note(),
        )
        .await
        .unwrap();
    let before = store.gates("s1").await.unwrap();

    // Opening again changes nothing: not the payload, not the name, not the order.
    store
        .open_gate(
            "s1",
            &gate("agent:gate:3", "renamed", &json!({"name": "Bob"})),
            &note(),
        )
        .await
        .unwrap();
    assert_eq!(store.gates("s1").await.unwrap(), before);
    assert_eq!(
        before.iter().map(|g| g.id.as_str()).collect::<Vec<_>>(),
        vec!["agent:gate:3", "agent:gate:1", "agent:gate:2"]
    );
    assert_eq!(before[0].name, "confirm_profile");
    assert_eq!(before[0].payload, json!({"name": "Ada"}));
    assert_eq!(before[1].payload, json!(["a", "b"]));
    assert_eq!(before[2].payload, Value::Null);
    assert!(
        before
            .iter()
            .all(|g| g.answer.is_none() && g.answered_at.is_none())
    );
    assert!(before.windows(2).all(|w| w[0].opened_at < w[1].opened_at));

    assert!(matches!(
        store
            .answer_gate("s1", "agent:gate:1", &json!({"template": "b"}), &note())
            .await
            .unwrap(),
        GateAnswer::Accepted { .. }
    ));
    assert_eq!(
        store
            .answer_gate("s1", "agent:gate:1", &json!({"template": "a"}), &note())
            .await
            .unwrap(),
        GateAnswer::AlreadyAnswered
    );
    assert_eq!(
        store
            .answer_gate("s1", "agent:gate:9", &json!(true), &note())
            .await
            .unwrap(),
        GateAnswer::Unknown
    );
    // A gate of another session is unknown here.
    store
        .open_gate("s2", &gate("agent:gate:7", "other", &json!({})), &note())
        .await
        .unwrap();
    assert_eq!(
        store
            .answer_gate("s1", "agent:gate:7", &json!(true), &note())
            .await
            .unwrap(),
        GateAnswer::Unknown
    );
    // A JSON null answer is an answer.
    assert!(matches!(
        store
            .answer_gate("s1", "agent:gate:2", &Value::Null, &note())
            .await
            .unwrap(),
        GateAnswer::Accepted { .. }
    ));
    assert_eq!(
        store
            .answer_gate("s1", "agent:gate:2", &json!(1), &note())
            .await
            .unwrap(),
        GateAnswer::AlreadyAnswered
    );

    let after = store.gates("s1").await.unwrap();
    assert_eq!(
        after.iter().map(|g| g.id.as_str()).collect::<Vec<_>>(),
        vec!["agent:gate:3", "agent:gate:1", "agent:gate:2"]
    );
    assert_eq!(after[0], before[0]);
    assert_eq!(after[1].answer, Some(json!({"template": "b"})));
    let answered_at = after[1].answered_at.unwrap();
    assert!(answered_at >= after[1].opened_at);
    assert_eq!(after[1].opened_at, before[1].opened_at);
    assert_eq!(after[2].answer, Some(Value::Null));
    assert!(after[2].answered_at.is_some());

    // Reopening an answered gate keeps its answer.
    store
        .open_gate(
            "s1",
            &gate("agent:gate:1", "pick_template", &json!([])),
            &note(),
        )
        .await
        .unwrap();
    assert_eq!(store.gates("s1").await.unwrap(), after);

    let s2 = store.gates("s2").await.unwrap();
    assert_eq!(s2.len(), 1);
    assert_eq!(s2[0].id, "agent:gate:7");
}

async fn unfinished_oldest_first(store: &dyn SessionStore) {
    // Ids in reverse order of creation, so the order must come from `created_at`.
    for id in [
        "z-first",
        "m-second",
        "other-product",
        "k-done",
        "f-failed",
        "a-waiting",
    ] {
        let product = if id == "other-product" {
            "cover"
        } else {
            "resume"
        };
        store.create(new_session(id, product)).await.unwrap();
        tick().await;
    }
    store
        .finish("k-done", SessionOutcome::Complete(json!({})), &note())
        .await
        .unwrap();
    store
        .finish("f-failed", SessionOutcome::Failed("boom".into()), &note())
        .await
        .unwrap();
    store
        .set_status("a-waiting", SessionStatus::Waiting, Some("gate"))
        .await
        .unwrap();

    let unfinished = store.unfinished("resume").await.unwrap();
    assert_eq!(
        unfinished.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        vec!["z-first", "m-second", "a-waiting"]
    );
    for record in &unfinished {
        assert_eq!(store.get(&record.id).await.unwrap().as_ref(), Some(record));
    }
    assert!(
        unfinished
            .windows(2)
            .all(|w| w[0].created_at < w[1].created_at)
    );

    let cover = store.unfinished("cover").await.unwrap();
    assert_eq!(cover.len(), 1);
    assert_eq!(cover[0].id, "other-product");
    assert!(store.unfinished("nobody").await.unwrap().is_empty());

    // A finished session that runs again is unfinished again, in its creation place.
    store
        .set_status("k-done", SessionStatus::Running, None)
        .await
        .unwrap();
    let ids: Vec<String> = store
        .unfinished("resume")
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, vec!["z-first", "m-second", "k-done", "a-waiting"]);
}

async fn not_found_everywhere(store: &dyn SessionStore) {
    store.create(new_session("real", "resume")).await.unwrap();
    let missing = || Err::<(), _>(StoreError::NotFound("ghost".into()));
    let nf = StoreError::NotFound("ghost".into());

    assert_eq!(store.get("ghost").await, Ok(None));
    assert_eq!(
        store
            .set_status("ghost", SessionStatus::Waiting, Some("x"))
            .await,
        missing()
    );
    assert_eq!(
        store
            .finish("ghost", SessionOutcome::Complete(json!(1)), &note())
            .await,
        Err(nf.clone())
    );
    assert_eq!(
        store
            .finish("ghost", SessionOutcome::Failed("e".into()), &note())
            .await,
        Err(nf.clone())
    );
    assert_eq!(
        store.append_event("ghost", &json!({})).await,
        Err(nf.clone())
    );
    assert_eq!(store.events_after("ghost", 0).await, Err(nf.clone()));
    assert_eq!(
        store
            .open_gate("ghost", &gate("g", "n", &json!({})), &note())
            .await,
        Err(nf.clone())
    );
    assert_eq!(
        store.answer_gate("ghost", "g", &json!({}), &note()).await,
        Err(nf.clone())
    );
    assert_eq!(store.gates("ghost").await, Err(nf));

    // Nothing was created by the failed calls, and the real session is untouched.
    assert_eq!(store.get("ghost").await, Ok(None));
    assert!(store.events_after("real", 0).await.unwrap().is_empty());
    assert!(store.gates("real").await.unwrap().is_empty());
}

async fn lifecycle_cancel_close_resume(store: &dyn SessionStore) {
    store.create(new_session("s1", "resume")).await.unwrap();
    let payload = json!({"draft": 1});
    let review = OpenGate {
        id: "writer:section_review_skills:1",
        name: "section_review_skills",
        kind: "section_review",
        payload: &payload,
    };
    store.open_gate("s1", &review, &note()).await.unwrap();
    store
        .open_gate(
            "s1",
            &gate("writer:approve:1", "approve", &Value::Null),
            &note(),
        )
        .await
        .unwrap();
    let gates = store.gates("s1").await.unwrap();
    assert_eq!(gates[0].kind, "section_review");
    assert!(gates.iter().all(|g| g.is_pending() && g.closed.is_none()));

    // A gate closes once, and takes no answer after.
    assert!(matches!(
        store
            .close_gate("s1", "writer:section_review_skills:1", "expired", &note())
            .await
            .unwrap(),
        GateAnswer::Accepted { .. }
    ));
    assert_eq!(
        store
            .close_gate("s1", "writer:section_review_skills:1", "cancelled", &note())
            .await
            .unwrap(),
        GateAnswer::Closed
    );
    assert_eq!(
        store
            .answer_gate("s1", "writer:section_review_skills:1", &json!({}), &note())
            .await
            .unwrap(),
        GateAnswer::Closed
    );
    assert_eq!(
        store
            .close_gate("s1", "nope:x:1", "expired", &note())
            .await
            .unwrap(),
        GateAnswer::Unknown
    );
    store
        .answer_gate("s1", "writer:approve:1", &json!(true), &note())
        .await
        .unwrap();
    assert_eq!(
        store
            .close_gate("s1", "writer:approve:1", "expired", &note())
            .await
            .unwrap(),
        GateAnswer::AlreadyAnswered
    );
    let gates = store.gates("s1").await.unwrap();
    assert_eq!(gates[0].closed.as_deref(), Some("expired"));
    assert!(!gates[0].is_pending() && !gates[1].is_pending());

    // Resumes in a row without a new event are counted; progress starts the count over.
    assert_eq!(store.note_resume("s1", 4).await.unwrap(), 1);
    assert_eq!(store.note_resume("s1", 4).await.unwrap(), 2);
    assert_eq!(store.note_resume("s1", 4).await.unwrap(), 3);
    assert_eq!(store.note_resume("s1", 9).await.unwrap(), 1);
    assert_eq!(
        store.note_resume("ghost", 0).await,
        Err(StoreError::NotFound("ghost".into()))
    );

    // A cancelled session is finished, with its reason.
    store
        .finish(
            "s1",
            SessionOutcome::Cancelled("cancelled by its user".into()),
            &note(),
        )
        .await
        .unwrap();
    let record = store.get("s1").await.unwrap().unwrap();
    assert_eq!(record.status, SessionStatus::Cancelled);
    assert!(record.status.is_finished());
    assert_eq!(record.error.as_deref(), Some("cancelled by its user"));
    assert!(store.unfinished("resume").await.unwrap().is_empty());
    assert_eq!(
        SessionStatus::parse("cancelled"),
        Some(SessionStatus::Cancelled)
    );
}

/// A session whose user stopped answering ends expired, with the reason, and is finished.
async fn finish_expired(store: &dyn SessionStore) {
    store.create(new_session("s1", "resume")).await.unwrap();
    let reason = "nobody answered coordinator:quality_review:1 in time";
    store
        .finish("s1", SessionOutcome::Expired(reason.into()), &note())
        .await
        .unwrap();
    let record = store.get("s1").await.unwrap().unwrap();
    assert_eq!(record.status, SessionStatus::Expired);
    assert!(record.status.is_finished());
    assert_eq!(record.error.as_deref(), Some(reason));
    assert!(store.unfinished("resume").await.unwrap().is_empty());
    assert_eq!(
        SessionStatus::parse("expired"),
        Some(SessionStatus::Expired)
    );
}

async fn gate_changes_are_stored_with_their_announcements(store: &dyn SessionStore) {
    store.create(new_session("s1", "resume")).await.unwrap();
    store.append_event("s1", &json!({"i": 1})).await.unwrap();
    let opened = |id: &str| json!({"type": "gate_open", "gate_id": id});
    let payload = json!({});

    // A gate and its announcement are written together.
    let first = store
        .open_gate("s1", &gate("g1", "review", &payload), &opened("g1"))
        .await
        .unwrap();
    assert_eq!(first, Some(2));
    // Reopened, it announces nothing.
    let again = store
        .open_gate("s1", &gate("g1", "review", &payload), &opened("g1"))
        .await
        .unwrap();
    assert_eq!(again, None);
    store
        .open_gate("s1", &gate("g2", "approve", &payload), &opened("g2"))
        .await
        .unwrap();

    let answered = json!({"type": "gate_answered", "gate_id": "g1"});
    assert_eq!(
        store
            .answer_gate("s1", "g1", &json!("yes"), &answered)
            .await
            .unwrap(),
        GateAnswer::Accepted { announced: 4 }
    );
    // A second answer, an unknown gate, a closed one: nothing appended.
    assert_eq!(
        store
            .answer_gate("s1", "g1", &json!("no"), &answered)
            .await
            .unwrap(),
        GateAnswer::AlreadyAnswered
    );
    assert_eq!(
        store
            .answer_gate("s1", "g9", &json!("no"), &answered)
            .await
            .unwrap(),
        GateAnswer::Unknown
    );
    let closed = json!({"type": "gate_closed", "gate_id": "g2"});
    assert_eq!(
        store
            .close_gate("s1", "g2", "expired", &closed)
            .await
            .unwrap(),
        GateAnswer::Accepted { announced: 5 }
    );
    assert_eq!(
        store
            .close_gate("s1", "g2", "cancelled", &closed)
            .await
            .unwrap(),
        GateAnswer::Closed
    );

    let events: Vec<(u64, Value)> = store
        .events_after("s1", 0)
        .await
        .unwrap()
        .into_iter()
        .map(|stored| (stored.seq, stored.event))
        .collect();
    assert_eq!(
        events,
        vec![
            (1, json!({"i": 1})),
            (2, opened("g1")),
            (3, opened("g2")),
            (4, answered),
            (5, closed),
        ]
    );
    assert_eq!(store.append_event("s1", &json!({"i": 2})).await.unwrap(), 6);
}

/// Runs a suite function against the three stores, one test each.
macro_rules! suite {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[tokio::test]
            async fn in_memory_reference() {
                super::$name(&InMemorySessionStore::new()).await;
            }

            #[tokio::test]
            async fn sqlite_in_memory() {
                let store = SqliteSessionStore::in_memory().await.unwrap();
                super::$name(&store).await;
            }

            #[tokio::test]
            async fn sqlite_file() {
                let dir = TempDir::new().unwrap();
                let store = SqliteSessionStore::open(dir.path().join("sessions.db"))
                    .await
                    .unwrap();
                super::$name(&store).await;
                store.close().await;
            }

            #[tokio::test]
            async fn postgres() {
                let fixture = pg::Fixture::new().await;
                super::$name(&fixture.store).await;
                fixture.cleanup().await;
            }
        }
    )*};
}

suite!(
    create_get_conflict,
    status_and_stage,
    finish_ok_and_err,
    events_numbered,
    gates_open_answer_list,
    unfinished_oldest_first,
    not_found_everywhere,
    lifecycle_cancel_close_resume,
    finish_expired,
    gate_changes_are_stored_with_their_announcements,
);

// ---------------------------------------------------------------------------------------
// SQLite only.

/// A raw connection to a store's file, to write what the store never would.
async fn raw(path: &std::path::Path) -> SqliteConnection {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .busy_timeout(Duration::from_secs(10));
    SqliteConnection::connect_with(&options).await.unwrap()
}

#[tokio::test]
async fn file_survives_reopening() {
    let dir = TempDir::new().unwrap();
    // Parent directories are created.
    let path = dir.path().join("nested/deeper/sessions.db");
    let store = SqliteSessionStore::open(&path).await.unwrap();
    assert_eq!(store.path(), Some(path.as_path()));
    assert!(format!("{store:?}").contains("sessions.db"));

    store.create(new_session("s1", "resume")).await.unwrap();
    tick().await;
    store.create(new_session("s2", "resume")).await.unwrap();
    store.create(new_session("s3", "resume")).await.unwrap();
    store
        .set_status("s1", SessionStatus::Waiting, Some("review"))
        .await
        .unwrap();
    store
        .finish(
            "s2",
            SessionOutcome::Complete(json!({"done": true})),
            &note(),
        )
        .await
        .unwrap();
    store
        .finish("s3", SessionOutcome::Failed("broke".into()), &note())
        .await
        .unwrap();
    for i in 1..=3 {
        store.append_event("s1", &json!({"i": i})).await.unwrap();
    }
    store
        .open_gate("s1", &gate("g2", "second", &json!(2)), &note())
        .await
        .unwrap();
    store
        .open_gate("s1", &gate("g1", "first", &json!(1)), &note())
        .await
        .unwrap();
    store
        .answer_gate("s1", "g2", &json!("yes"), &note())
        .await
        .unwrap();

    let records: Vec<_> = {
        let mut all = Vec::new();
        for id in ["s1", "s2", "s3"] {
            all.push(store.get(id).await.unwrap().unwrap());
        }
        all
    };
    let events = store.events_after("s1", 0).await.unwrap();
    let gates = store.gates("s1").await.unwrap();
    let unfinished = store.unfinished("resume").await.unwrap();
    drop(store);

    let store = SqliteSessionStore::open(&path).await.unwrap();
    for record in &records {
        assert_eq!(store.get(&record.id).await.unwrap().as_ref(), Some(record));
    }
    assert_eq!(store.events_after("s1", 0).await.unwrap(), events);
    assert_eq!(store.gates("s1").await.unwrap(), gates);
    assert_eq!(store.unfinished("resume").await.unwrap(), unfinished);
    assert_eq!(
        unfinished.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        vec!["s1"]
    );
    // Numbering carries on, after the three events and the three gate announcements.
    assert_eq!(store.append_event("s1", &json!({"i": 4})).await.unwrap(), 7);
    assert_eq!(
        store.create(new_session("s1", "resume")).await,
        Err(StoreError::Conflict("s1".into()))
    );
    assert_eq!(
        store
            .answer_gate("s1", "g2", &json!("again"), &note())
            .await,
        Ok(GateAnswer::AlreadyAnswered)
    );
    assert_eq!(
        store.answer_gate("s1", "g1", &json!("now"), &note()).await,
        Ok(GateAnswer::Accepted { announced: 8 })
    );
    store.close().await;

    // Twice, with a clean close this time.
    let store = SqliteSessionStore::open(&path).await.unwrap();
    assert_eq!(store.events_after("s1", 6).await.unwrap().len(), 2);
    assert_eq!(
        store.gates("s1").await.unwrap()[1].answer,
        Some(json!("now"))
    );
}

async fn concurrent_appends(store: Arc<dyn SessionStore>) {
    store.create(new_session("busy", "resume")).await.unwrap();
    store.create(new_session("quiet", "resume")).await.unwrap();
    let mut tasks = Vec::new();
    for task in 0..200u64 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let seq = store
                .append_event("busy", &json!({"task": task}))
                .await
                .unwrap();
            (task, seq)
        }));
    }
    // Another session's appends interleave without affecting the count.
    for i in 1..=5u64 {
        assert_eq!(store.append_event("quiet", &json!(i)).await.unwrap(), i);
    }
    let mut returned = Vec::new();
    for task in tasks {
        returned.push(task.await.unwrap());
    }
    let seqs: BTreeSet<u64> = returned.iter().map(|(_, seq)| *seq).collect();
    assert_eq!(seqs.len(), 200, "duplicate numbers");
    assert_eq!(seqs, (1..=200).collect::<BTreeSet<_>>());

    let events = store.events_after("busy", 0).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=200).collect::<Vec<_>>()
    );
    // Each task's event is stored under the number it was given.
    for (task, seq) in returned {
        assert_eq!(events[seq as usize - 1].event, json!({"task": task}));
    }
    assert_eq!(store.events_after("quiet", 0).await.unwrap().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_on_file() {
    let dir = TempDir::new().unwrap();
    let store = SqliteSessionStore::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    concurrent_appends(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_in_memory() {
    let store = SqliteSessionStore::in_memory().await.unwrap();
    concurrent_appends(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_from_two_stores_on_one_file() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    let a = Arc::new(SqliteSessionStore::open(&path).await.unwrap());
    let b = Arc::new(SqliteSessionStore::open(&path).await.unwrap());
    a.create(new_session("s", "resume")).await.unwrap();
    let mut tasks = Vec::new();
    for task in 0..100u64 {
        let store = if task % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move {
            store.append_event("s", &json!(task)).await.unwrap()
        }));
    }
    let mut seqs = BTreeSet::new();
    for task in tasks {
        seqs.insert(task.await.unwrap());
    }
    assert_eq!(seqs, (1..=100).collect::<BTreeSet<_>>());
}

fn assert_corrupt(result: Result<impl std::fmt::Debug, StoreError>, needles: &[&str]) {
    match result {
        Err(StoreError::Corrupt(message)) => {
            for needle in needles {
                assert!(message.contains(needle), "{message:?} lacks {needle:?}");
            }
        }
        other => panic!("expected Corrupt mentioning {needles:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn corrupt_cells_read_back_as_corrupt() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).await.unwrap();
    store.create(new_session("s1", "resume")).await.unwrap();
    store.create(new_session("s2", "resume")).await.unwrap();
    store.append_event("s1", &json!({"ok": 1})).await.unwrap();
    store.append_event("s1", &json!({"ok": 2})).await.unwrap();
    store
        .open_gate("s1", &gate("g1", "gate", &json!({})), &note())
        .await
        .unwrap();

    let mut conn = raw(&path).await;
    for statement in [
        "UPDATE sessions SET request = '{not json' WHERE id = 's1'",
        "UPDATE sessions SET created_at = 'yesterday' WHERE id = 's2'",
        "UPDATE events SET event = 'nope' WHERE session_id = 's1' AND seq = 2",
        "UPDATE gates SET payload = '' WHERE session_id = 's1'",
    ] {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }
    conn.close().await.unwrap();

    assert_corrupt(store.get("s1").await, &["\"s1\"", "request", "JSON"]);
    assert_corrupt(
        store.get("s2").await,
        &["\"s2\"", "created_at", "yesterday"],
    );
    assert_corrupt(store.unfinished("resume").await, &["request"]);
    assert_corrupt(
        store.events_after("s1", 0).await,
        &["\"s1\"", "event 2", "event"],
    );
    assert_corrupt(store.events_after("s1", 1).await, &["event 2"]);
    // Only reads that reach a bad cell fail.
    let after = store.events_after("s1", 2).await.unwrap();
    assert_eq!(
        after.iter().map(|e| (e.seq, &e.event)).collect::<Vec<_>>(),
        vec![(3, &note())]
    );
    assert_corrupt(store.gates("s1").await, &["\"s1\"", "g1", "payload"]);
    // Writes that do not read the bad cells still work.
    assert_eq!(store.append_event("s1", &json!({"ok": 3})).await, Ok(4));
}

#[tokio::test]
async fn wrong_cell_types_read_back_as_corrupt() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).await.unwrap();
    store.create(new_session("s1", "resume")).await.unwrap();
    store.create(new_session("s2", "resume")).await.unwrap();
    let mut conn = raw(&path).await;
    sqlx::query("UPDATE sessions SET status = 'exploded' WHERE id = 's1'")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("UPDATE sessions SET product = X'C328FF' WHERE id = 's2'")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    assert_corrupt(store.get("s1").await, &["\"s1\"", "status", "exploded"]);
    assert_corrupt(store.get("s2").await, &["\"s2\"", "product"]);
}

#[tokio::test]
async fn newer_schema_version_is_refused() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).await.unwrap();
    store.create(new_session("s1", "resume")).await.unwrap();
    store.close().await;

    let mut conn = raw(&path).await;
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(version, 9, "the store stamps its schema version");
    sqlx::query("PRAGMA user_version = 99")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();

    assert_corrupt(
        SqliteSessionStore::open(&path).await,
        &["schema version 99", "newer", "sessions.db"],
    );

    // A fresh file stamped by a newer version is refused too.
    let fresh = dir.path().join("fresh.db");
    let mut conn = raw(&fresh).await;
    sqlx::query("PRAGMA user_version = 10")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    assert_corrupt(SqliteSessionStore::open(&fresh).await, &["version 10"]);
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_a_backend_error() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    std::fs::write(
        &path,
        "this is not SQLite, just some text that is long enough ".repeat(100),
    )
    .unwrap();
    match SqliteSessionStore::open(&path).await {
        Err(StoreError::Backend(message)) => assert!(message.contains("sessions.db"), "{message}"),
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn in_memory_stores_are_separate_and_debug() {
    let a = SqliteSessionStore::in_memory().await.unwrap();
    let b = SqliteSessionStore::in_memory().await.unwrap();
    a.create(new_session("s1", "resume")).await.unwrap();
    assert_eq!(b.get("s1").await, Ok(None));
    // Clones share the database.
    let a2 = a.clone();
    assert!(a2.get("s1").await.unwrap().is_some());
    assert_eq!(a.path(), None);
    assert!(format!("{a:?}").contains(":memory:"));
}

// ---------------------------------------------------------------------------------------
// PostgreSQL: several instances on one database.

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_concurrent_appends() {
    let fixture = pg::Fixture::new().await;
    concurrent_appends(Arc::new(fixture.store.clone())).await;
    fixture.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_two_instances_number_events_without_gaps() {
    let fixture = pg::Fixture::new().await;
    let a: Arc<dyn SessionStore> = Arc::new(fixture.store.clone());
    let b: Arc<dyn SessionStore> = Arc::new(fixture.second_instance().await);
    a.create(new_session("s", "resume")).await.unwrap();
    let tasks: Vec<_> = (0..200u64)
        .map(|task| {
            let store = if task % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { store.append_event("s", &json!(task)).await.unwrap() })
        })
        .collect();
    let mut seqs = BTreeSet::new();
    for task in tasks {
        assert!(seqs.insert(task.await.unwrap()), "a number given twice");
    }
    assert_eq!(seqs, (1..=200).collect::<BTreeSet<_>>());
    assert_eq!(b.event_count("s").await.unwrap(), 200);
    assert_eq!(a.events_after("s", 150).await.unwrap().len(), 50);
    // An append to a missing session gives no number away.
    assert_eq!(
        a.append_event("nope", &json!(1)).await,
        Err(StoreError::NotFound("nope".into()))
    );
    fixture.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_a_gate_answered_on_two_instances_at_once_takes_one_answer() {
    let fixture = pg::Fixture::new().await;
    let a: Arc<dyn SessionStore> = Arc::new(fixture.store.clone());
    let b: Arc<dyn SessionStore> = Arc::new(fixture.second_instance().await);
    a.create(new_session("s", "resume")).await.unwrap();
    for round in 0..20 {
        let gate_id = format!("g{round}");
        let payload = json!({"round": round});
        a.open_gate("s", &gate(&gate_id, "review", &payload), &note())
            .await
            .unwrap();
        let answers: Vec<_> = [a.clone(), b.clone(), a.clone(), b.clone()]
            .into_iter()
            .enumerate()
            .map(|(who, store)| {
                let gate_id = gate_id.clone();
                tokio::spawn(async move {
                    store
                        .answer_gate("s", &gate_id, &json!({"from": who}), &note())
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut accepted = 0;
        for answer in answers {
            match answer.await.unwrap() {
                GateAnswer::Accepted { .. } => accepted += 1,
                GateAnswer::AlreadyAnswered => {}
                other => panic!("round {round}: {other:?}"),
            }
        }
        assert_eq!(accepted, 1, "round {round}");
    }
    let gates = b.gates("s").await.unwrap();
    assert_eq!(gates.len(), 20);
    assert!(gates.iter().all(|g| g.answer.is_some()));
    // Each gate announced once opened and once answered, whoever won.
    assert_eq!(b.events_after("s", 0).await.unwrap().len(), 40);
    fixture.cleanup().await;
}

#[tokio::test]
async fn postgres_leases_are_held_by_one_instance_and_taken_over_when_they_expire() {
    use agent_runtime::sessions::SessionLeases;
    let fixture = pg::Fixture::new().await;
    let a = fixture.store.leases();
    let b = fixture.second_instance().await.leases();
    let long = Duration::from_secs(30);
    assert!(a.acquire("s1", "instance-a", long).await.unwrap());
    assert!(
        !b.acquire("s1", "instance-b", long).await.unwrap(),
        "a holds it"
    );
    assert!(
        a.acquire("s1", "instance-a", long).await.unwrap(),
        "retaking renews"
    );
    assert!(a.renew("s1", "instance-a", long).await.unwrap());
    assert!(
        !b.renew("s1", "instance-b", long).await.unwrap(),
        "b holds nothing"
    );
    // Another session is free.
    assert!(b.acquire("s2", "instance-b", long).await.unwrap());

    // b cannot release a's lease; a can.
    b.release("s1", "instance-b").await.unwrap();
    assert!(!b.acquire("s1", "instance-b", long).await.unwrap());
    a.release("s1", "instance-a").await.unwrap();
    assert!(b.acquire("s1", "instance-b", long).await.unwrap());

    // A lease not renewed expires, and another instance takes the session over; the
    // old holder learns it when it next renews.
    let short = Duration::from_millis(200);
    assert!(a.acquire("s3", "instance-a", short).await.unwrap());
    assert!(!b.acquire("s3", "instance-b", long).await.unwrap());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        b.acquire("s3", "instance-b", long).await.unwrap(),
        "expired"
    );
    assert!(
        !a.renew("s3", "instance-a", long).await.unwrap(),
        "taken over"
    );
    fixture.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_instances_racing_for_a_lease_have_one_winner() {
    use agent_runtime::sessions::SessionLeases;
    let fixture = pg::Fixture::new().await;
    let second = fixture.second_instance().await;
    for round in 0..20 {
        let session = format!("race-{round}");
        let racers: Vec<_> = (0..6)
            .map(|i| {
                let leases = if i % 2 == 0 {
                    fixture.store.leases()
                } else {
                    second.leases()
                };
                let session = session.clone();
                tokio::spawn(async move {
                    leases
                        .acquire(&session, &format!("instance-{i}"), Duration::from_secs(30))
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut winners = 0;
        for racer in racers {
            winners += usize::from(racer.await.unwrap());
        }
        assert_eq!(winners, 1, "round {round}");
    }
    fixture.cleanup().await;
}

#[tokio::test]
async fn postgres_unreachable_is_a_clear_backend_error() {
    let error = agent_backends::PgSessionStore::connect("postgres://postgres@127.0.0.1:1/none")
        .await
        .unwrap_err();
    let StoreError::Backend(message) = error else {
        panic!("{error:?}")
    };
    assert!(
        message.contains("connecting to PostgreSQL at postgres://postgres@127.0.0.1:1/none"),
        "{message}"
    );
    let error = agent_backends::PgSessionStore::connect_in_schema(&pg::url(), "no; drop")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("schema name"), "{error}");
}

#[tokio::test]
async fn postgres_a_schema_with_the_event_counter_is_migrated_and_numbering_goes_on() {
    let fixture = pg::Fixture::new().await;
    fixture
        .store
        .create(new_session("s1", "resume"))
        .await
        .unwrap();
    for n in 1..=2 {
        fixture.store.append_event("s1", &json!(n)).await.unwrap();
    }
    // The schema as version 4 left it: each session kept its last event's number.
    let mut conn = sqlx::PgConnection::connect(&pg::url()).await.unwrap();
    sqlx::raw_sql(&format!(
        "SET search_path TO \"{0}\";
         ALTER TABLE sessions ADD COLUMN last_event BIGINT NOT NULL DEFAULT 0;
         UPDATE sessions SET last_event = 2;
         UPDATE agent_schema SET version = 4;",
        fixture.schema
    ))
    .execute(&mut conn)
    .await
    .unwrap();

    let store = agent_backends::PgSessionStore::connect_in_schema(&pg::url(), &fixture.schema)
        .await
        .unwrap();
    assert_eq!(store.event_count("s1").await.unwrap(), 2);
    assert_eq!(store.append_event("s1", &json!(3)).await.unwrap(), 3);
    let (version, counters): (i32, i64) = sqlx::query_as(&format!(
        "SELECT (SELECT version FROM \"{0}\".agent_schema), \
         (SELECT COUNT(*) FROM information_schema.columns \
          WHERE table_schema = '{0}' AND table_name = 'sessions' AND column_name = 'last_event')",
        fixture.schema
    ))
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!((version, counters), (5, 0));
    conn.close().await.unwrap();
    fixture.cleanup().await;
}

#[tokio::test]
async fn postgres_a_schema_from_a_newer_version_is_refused() {
    let fixture = pg::Fixture::new().await;
    let mut conn = sqlx::PgConnection::connect(&pg::url()).await.unwrap();
    sqlx::raw_sql(&format!(
        "UPDATE \"{}\".agent_schema SET version = 99",
        fixture.schema
    ))
    .execute(&mut conn)
    .await
    .unwrap();
    let refused = agent_backends::PgSessionStore::connect_in_schema(&pg::url(), &fixture.schema)
        .await
        .unwrap_err();
    let StoreError::Corrupt(message) = refused else {
        panic!("{refused:?}")
    };
    assert!(message.contains("version 99, newer than"), "{message}");
    fixture.cleanup().await;
}
