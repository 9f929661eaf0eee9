//! The suite on sessions and their events, written once and run on every store.

use super::*;

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

suite!(
    create_get_conflict,
    status_and_stage,
    finish_ok_and_err,
    events_numbered,
    unfinished_oldest_first,
    not_found_everywhere,
    lifecycle_cancel_close_resume,
    finish_expired,
);
