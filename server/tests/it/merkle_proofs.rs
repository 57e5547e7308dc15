//! One operation's history, provable alone: the trail is also a Merkle tree (RFC 9162), each signed checkpoint a
//! signed tree head; an event proves against it with a few hashes, a later head against an earlier one, and an
//! evidence bundle checks alone with the security guide's Python scripts.
use crate::audit_proof::some_events;
use crate::audit_trail::raw;
use crate::fixtures::{caller, pending_request};
use crate::harness::{PASSWORD, TestApp, audit_key, guide_script, public_key_file};
use backend::Db;
use backend::services::audit_proof::{checkpoint_head, signer};
use contract::audit::{ConsistencyProof, EventProof};
use domain::audit_proof::{SignedCheckpoint, TrustedKeys};
use domain::merkle::{self, Hash};
use domain::signer_alarm::SignerAlarm;
use reqwest::StatusCode;
use std::io::{Read, Write};
use std::process::Output;

fn hash(hex_text: &str) -> Hash {
    hex::decode(hex_text).unwrap().try_into().unwrap()
}

fn leaf(event_hash: &str) -> Hash {
    merkle::leaf_hash(&hex::decode(event_hash).unwrap())
}

fn signed_by_the_suites_key(checkpoint: &SignedCheckpoint) -> bool {
    TrustedKeys::new(audit_key().public(), &[]).verifies(checkpoint)
}

async fn get(app: &TestApp, path: &str, cookie: &str) -> (StatusCode, String) {
    let answer = app.http.get(format!("{}{path}", app.url)).header("cookie", cookie).send().await.unwrap();
    (answer.status(), answer.text().await.unwrap())
}

async fn proof_of(app: &TestApp, query: &str, cookie: &str) -> EventProof {
    let (status, body) = get(app, &format!("/api/v1/audit/proof?{query}"), cookie).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    serde_json::from_str(&body).unwrap()
}

async fn event_hashes(app: &TestApp) -> Vec<String> {
    let mut conn = app.db().connection().await.unwrap();
    let events = backend::db::audit::page_after(&mut conn, 0, 100_000).await.unwrap();
    events.into_iter().map(|e| e.hash).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_signed_checkpoint_signs_the_trails_tree_and_every_event_proves_against_it_in_a_few_hashes() {
    let app = TestApp::spawn().await;
    app.user("kansa", &["auditor"], &[]).await;
    some_events(&app, &["a-user", "b-user", "c-user"]).await;
    let first = checkpoint_head(&app.state).await.unwrap().expect("signed by the suite's key");
    let (size, root) = first.tree_head().expect("a signed tree head");
    // The root is the RFC 9162 tree of the events' hashes, made again here from the trail alone.
    let (mut frontier, hashes) = (Vec::new(), event_hashes(&app).await);
    for (index, event_hash) in hashes.iter().take(size as usize).enumerate() {
        merkle::append(&mut frontier, index as u64, leaf(event_hash));
    }
    assert_eq!(hex::encode(merkle::root_of(&frontier)), root);
    assert!(signed_by_the_suites_key(&first) && first.message().starts_with("rerun-gate audit checkpoint v2\n"));

    some_events(&app, &["d-user", "e-user"]).await;
    let cookie = app.sign_in("kansa", PASSWORD).await;
    let hashes = event_hashes(&app).await;
    // A read signs nothing: an event no signed head holds yet proves against the tree's own head, unsigned.
    let unsigned = proof_of(&app, &format!("seq={}", hashes.len()), &cookie).await;
    assert_eq!((unsigned.checkpoint.as_ref(), unsigned.tree_size), (None, hashes.len() as u64));
    assert_eq!(signing_count(&app).await, 1, "no checkpoint signed by a proof's GET");
    let second = checkpoint_head(&app.state).await.unwrap().expect("signed by the signer's round");
    let hashes = event_hashes(&app).await;
    assert!(second.seq > first.seq && signed_by_the_suites_key(&second));
    for seq in 1..=second.seq {
        let proof = proof_of(&app, &format!("seq={seq}"), &cookie).await;
        assert_eq!((proof.tree_size, proof.checkpoint.as_ref()), (second.seq as u64, Some(&second)), "{seq}");
        let path: Vec<Hash> = proof.proof.iter().map(|h| hash(h)).collect();
        let signed_root = hash(second.root.as_deref().unwrap());
        let event_hash = &hashes[seq as usize - 1];
        assert!(merkle::verify_inclusion(proof.leaf_index, proof.tree_size, &leaf(event_hash), &path, &signed_root));
        assert!(path.len() <= 64 - (second.seq as u64).leading_zeros() as usize, "at most ⌈log₂ n⌉ hashes");
    }
    let against_first = proof_of(&app, &format!("seq=2&tree_size={}", first.seq), &cookie).await;
    assert_eq!(against_first.checkpoint, Some(first.clone()), "an older signed head, when asked");

    let query = format!("/api/v1/audit/consistency?from={}&to={}", first.seq, second.seq);
    let (status, body) = get(&app, &query, &cookie).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let consistency: ConsistencyProof = serde_json::from_str(&body).unwrap();
    let path: Vec<Hash> = consistency.proof.iter().map(|h| hash(h)).collect();
    let (old_root, new_root) = (hash(first.root.as_deref().unwrap()), hash(second.root.as_deref().unwrap()));
    assert!(merkle::verify_consistency(first.seq as u64, second.seq as u64, &old_root, &new_root, &path));

    let (status, body) = get(&app, "/api/v1/audit/proof?seq=5&tree_size=3", &cookie).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "no event 5 in a tree of 3: {body}");
    assert!(body.contains("tree_size"), "{body}");
    let (status, _) = get(&app, "/api/v1/audit/consistency?from=4&to=2", &cookie).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = get(&app, "/api/v1/audit/proof?seq=100000", &cookie).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for seq in ["0", "-1", &i64::MIN.to_string()] {
        let (status, body) = get(&app, &format!("/api/v1/audit/proof?seq={seq}"), &cookie).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "seq={seq}: {body}");
    }
}

/// How many checkpoints are stored (each signing stores one).
async fn signing_count(app: &TestApp) -> i64 {
    backend::services::audit_proof::count(&app.state).await.unwrap() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_get_proofs_of_their_departments_events_only_and_consistency_proofs_are_for_auditors() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales", "billing"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let order = serde_json::json!({"process_id": "ORD-PR-1", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "ORD-PR-1-r"},
                  {"name": "ai_summary", "idempotency_key": "ORD-PR-1-s"}]});
    let invoice = serde_json::json!({"process_id": "INV-PR-2", "workflow": "monthly-billing", "department": "billing",
        "steps": [{"name": "draft_invoice", "idempotency_key": "INV-PR-2-d"},
                  {"name": "send_mail", "idempotency_key": "INV-PR-2-m"},
                  {"name": "issue_invoice", "idempotency_key": "INV-PR-2-i"}]});
    for (process_id, body) in [("ORD-PR-1", order), ("INV-PR-2", invoice)] {
        app.api(reqwest::Method::POST, "/api/v1/operations", &token, Some(process_id), Some(&body)).await;
    }
    let mut conn = app.db().connection().await.unwrap();
    let events = backend::db::audit::page_after(&mut conn, 0, 10_000).await.unwrap();
    drop(conn);
    let seq_of = |id: &str| events.iter().find(|e| e.object_id == id).map(|e| e.seq).unwrap();
    let sato = app.sign_in("sato", PASSWORD).await;

    checkpoint_head(&app.state).await.unwrap().expect("signed");
    let own = proof_of(&app, &format!("seq={}", seq_of("ORD-PR-1")), &sato).await;
    assert!(own.checkpoint.is_some(), "against the newest signed head");
    let (status, _) = get(&app, &format!("/api/v1/audit/proof?seq={}", seq_of("INV-PR-2")), &sato).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another department's event does not exist for them");
    let (status, _) = get(&app, "/api/v1/audit/consistency?from=1&to=2", &sato).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let anonymous = app.http.get(format!("{}/api/v1/audit/proof?seq=1", app.url)).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

fn said(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn temp_file(bytes: &[u8], extension: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("proof-{}.{extension}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The bundle's files by name.
fn unzip(bytes: &[u8]) -> Vec<(String, String)> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut file = zip.by_index(i).unwrap();
            let mut text = String::new();
            file.read_to_string(&mut text).unwrap();
            (file.name().unwrap().to_string(), text)
        })
        .collect()
}

/// The bundle again with one file changed by `change`.
fn changed(bytes: &[u8], file: &str, change: impl Fn(&str) -> String) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, text) in unzip(bytes) {
        zip.start_file(name.as_str(), zip::write::SimpleFileOptions::default()).unwrap();
        let text = if name.ends_with(file) { change(&text) } else { text };
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// Event lines changed by `change` and given the hash of what they now say, as a forger would.
fn rehashed(events: &str, change: impl Fn(&mut serde_json::Value)) -> String {
    let mut lines = Vec::new();
    for line in events.lines() {
        let mut row: serde_json::Value = serde_json::from_str(line).unwrap();
        if row.get("seq").is_some() {
            change(&mut row);
            row.as_object_mut().unwrap().remove("hash");
            let canonical = domain::canonical_json::to_canonical_string(&row);
            row["hash"] = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(canonical.as_bytes())).into();
        }
        lines.push(row.to_string());
    }
    lines.join("\n") + "\n"
}

fn check_bundle(bytes: &[u8]) -> Output {
    let file = temp_file(bytes, "zip");
    let output = guide_script("zipfile", &[&file, public_key_file()]);
    let _ = std::fs::remove_file(file);
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evidence_bundle_proves_each_of_its_events_alone_and_any_changed_byte_hash_or_signature_fails() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    pending_request(&app, &token, &caller(&app, "sato").await, "ORD-MK-1").await;
    pending_request(&app, &token, &caller(&app, "sato").await, "ORD-MK-2").await;
    let cookie = app.sign_in("sato", PASSWORD).await;
    let answer = app.http.get(format!("{}/operations/ORD-MK-1/evidence.zip", app.url)).header("cookie", &cookie);
    let bytes = answer.send().await.unwrap().bytes().await.unwrap().to_vec();
    let files = unzip(&bytes);
    let events = files.iter().find(|(name, _)| name.ends_with("/audit_events.jsonl")).unwrap().1.clone();
    let rows: Vec<serde_json::Value> = events.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let seqs: Vec<&serde_json::Value> = rows.iter().filter(|r| r.get("seq").is_some()).collect();
    assert!(seqs.len() >= 5 && seqs.iter().all(|e| e["object_id"] == "ORD-MK-1"), "only its own events");
    assert!(files.iter().all(|(_, text)| !text.contains("ORD-MK-2")), "nothing of the other operation");
    let proofs = &files.iter().find(|(name, _)| name.ends_with("/audit_proofs.jsonl")).unwrap().1;
    assert_eq!(proofs.lines().count(), seqs.len(), "one proof an event");

    let checked = check_bundle(&bytes);
    assert!(checked.status.success(), "{}", said(&checked));
    assert_eq!(said(&checked).trim(), format!("events proven: {}", seqs.len()));

    let tampered = [
        ("an event's byte", changed(&bytes, "audit_events.jsonl", |t| t.replacen("ORD-MK-1", "ORD-MK-9", 1))),
        (
            "an event rewritten with its hash recomputed",
            changed(&bytes, "audit_events.jsonl", |t| rehashed(t, |row| row["actor_label"] = "someone else".into())),
        ),
        ("a proof's hash", changed(&bytes, "audit_proofs.jsonl", flip_first_proof_digit)),
        (
            "the head's signature",
            changed(&bytes, "audit_proofs.jsonl", |t| t.replacen("\"signature\":\"", "\"signature\":\"A", 1)),
        ),
        ("the head's root", changed(&bytes, "audit_proofs.jsonl", swap_root)),
    ];
    for (what, bundle) in tampered {
        let output = check_bundle(&bundle);
        assert!(!output.status.success(), "{what} went unseen: {}", said(&output));
    }
}

/// The first proof hash's first hex digit changed.
fn flip_first_proof_digit(text: &str) -> String {
    let at = text.find("\"proof\":[\"").unwrap() + "\"proof\":[\"".len();
    let digit = if &text[at..at + 1] == "0" { "1" } else { "0" };
    format!("{}{digit}{}", &text[..at], &text[at + 1..])
}

/// Every line's root (and its head's) replaced by another hash.
fn swap_root(text: &str) -> String {
    let proof: EventProof = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    text.replace(&proof.root, &"ab".repeat(32))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_signed_head_extends_an_earlier_one_by_the_guides_check_of_two_saved_digests() {
    let app = TestApp::spawn().await;
    app.user("kansa", &["auditor"], &[]).await;
    some_events(&app, &["a-user", "b-user", "c-user", "d-user"]).await;
    let older = checkpoint_head(&app.state).await.unwrap().expect("signed");
    some_events(&app, &["e-user", "f-user", "g-user"]).await;
    let newer = checkpoint_head(&app.state).await.unwrap().expect("signed");
    let cookie = app.sign_in("kansa", PASSWORD).await;
    let query = format!("/api/v1/audit/consistency?from={}&to={}", older.seq, newer.seq);
    let (_, proof) = get(&app, &query, &cookie).await;
    let quoted: String = older.digest().lines().map(|l| format!("> {l}\n")).collect();
    let mail = temp_file(format!("Subject: audit digest\n\n{quoted}").as_bytes(), "eml");
    let chat = temp_file(newer.digest().as_bytes(), "txt");
    let check = |first: &std::path::Path, second: &std::path::Path, proof: &str| {
        let proof = temp_file(proof.as_bytes(), "json");
        guide_script("signed_head", &[first, second, &proof, public_key_file()])
    };
    let checked = check(&mail, &chat, &proof);
    assert!(checked.status.success(), "{}", said(&checked));
    assert_eq!(said(&checked).trim(), format!("consistent: {} -> {}", older.seq, newer.seq));

    let (_, shorter) =
        get(&app, &format!("/api/v1/audit/consistency?from={}&to={}", older.seq - 1, newer.seq), &cookie).await;
    assert!(!check(&mail, &chat, &shorter).status.success(), "a proof of other sizes");
    assert!(!check(&chat, &mail, &proof).status.success(), "the digests in the wrong order");
    let forged = temp_file(newer.digest().replace(newer.root.as_deref().unwrap(), &"cd".repeat(32)).as_bytes(), "txt");
    assert!(!check(&mail, &forged, &proof).status.success(), "a root the key did not sign");
}

/// What someone with full access to the database can do to the tree alone: make it again with event `seq`'s
/// leaf replaced, as if that event had been another.
async fn rewrite_tree(db: &Db, seq: i64) {
    let unprotect = match db {
        Db::Sqlite(..) => "DROP TRIGGER audit_tree_nodes_no_delete",
        Db::Postgres(..) => "ALTER TABLE audit_tree_nodes DISABLE TRIGGER USER",
    };
    raw(db, unprotect).await.unwrap();
    raw(db, "DELETE FROM audit_tree_nodes").await.unwrap();
    let mut tx = db.begin_write().await.unwrap();
    let mut conn = db.connection().await.unwrap();
    let events = backend::db::audit::page_after(&mut conn, 0, 100_000).await.unwrap();
    drop(conn);
    let (mut tree, mut nodes) = (backend::db::audit_tree::TreeHead { size: 0, frontier: Vec::new() }, Vec::new());
    for event in &events {
        let leaf = if event.seq == seq { merkle::leaf_hash(b"another event") } else { leaf(&event.hash) };
        nodes.extend(merkle::append(&mut tree.frontier, tree.size, leaf));
        tree.size += 1;
    }
    backend::db::audit_tree::grow(&mut tx, &nodes, &tree).await.unwrap();
    tx.commit().await.unwrap();
    if let Db::Postgres(..) = db {
        raw(db, "ALTER TABLE audit_tree_nodes ENABLE TRIGGER USER").await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_rewritten_under_a_signed_head_is_caught_by_the_consistency_check_before_anything_is_signed() {
    let app = TestApp::spawn().await;
    some_events(&app, &["a-user", "b-user", "c-user"]).await;
    let signed = checkpoint_head(&app.state).await.unwrap().expect("signed");
    rewrite_tree(app.db(), 2).await;
    some_events(&app, &["d-user"]).await;
    assert_eq!(checkpoint_head(&app.state).await.unwrap(), None, "nothing signed over the rewritten tree");
    let head = event_hashes(&app).await.len() as u64;
    assert_eq!(signer(&app.state).alarm(), Some(SignerAlarm::TreeRewritten { from: signed.seq as u64, to: head }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_racing_to_grow_the_tree_all_end_at_the_head_and_none_calls_the_trail_broken() {
    // The timer's follower, a proof's and a checkpoint's all grow the tree; the ones that find it grown when their
    // turn at the writer's lock comes must not take that for events gone missing.
    let app = TestApp::spawn().await;
    for round in 0..10 {
        app.user(&format!("racer-{round}"), &["staff"], &["sales"]).await;
        let head = event_hashes(&app).await.len() as u64;
        let followers = (0..8).map(|_| backend::services::audit_tree::follow(app.db()));
        for grown in futures::future::join_all(followers).await {
            assert_eq!(grown.expect("the tree follows the trail"), head, "round {round}");
        }
    }
}
