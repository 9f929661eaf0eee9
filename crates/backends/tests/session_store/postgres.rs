//! PostgreSQL: several instances on one database (appends, answers and leases at once),
//! unreachable servers and schema versions.

use super::*;

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
