//! The suite on gates and their announcements, written once and run on every store.

use super::*;

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

suite!(
    gates_open_answer_list,
    gate_changes_are_stored_with_their_announcements,
);
