//! "Prove this event" on the audit page: the event's inclusion proof in the trail's Merkle tree (RFC 9162),
//! checked here in the browser against the tree head's root, with the signed head it is proven against and the
//! proof to download for a check elsewhere (docs/security.md).
use crate::api::audit::ProveEvent;
use crate::contract::audit::EventProof;
use crate::domain::merkle;
use crate::i18n::td_string;
use leptos::prelude::*;

#[component]
pub fn ProveButton(seq: i64) -> impl IntoView {
    let prove = ServerAction::<ProveEvent>::new();
    let error = super::error_of(prove);
    let l = super::labels::locale();
    view! {
        <ActionForm action=prove attr:class="inline">
            <input type="hidden" name="seq" value=seq />
            <button type="submit" class="small" data-testid="prove-event" disabled=move || prove.pending().get()>
                {td_string!(l, audit.prove.button)}
            </button>
        </ActionForm>
        <super::ErrorNote error />
        {move || prove.value().get().and_then(Result::ok).map(|proof| view! { <Proven proof /> })}
    }
}

#[component]
fn Proven(proof: EventProof) -> impl IntoView {
    let l = super::labels::locale();
    let checked =
        merkle::verify_inclusion_hex(proof.leaf_index, proof.tree_size, &proof.event_hash, &proof.proof, &proof.root)
            && proof.checkpoint.as_ref().is_none_or(|c| c.root.as_deref() == Some(proof.root.as_str()));
    let verdict = match checked {
        true => view! {
            <p class="badge on">
                {td_string!(l, audit.prove.proven, seq = proof.seq, size = proof.tree_size, hashes = proof.proof.len())
                    .to_string()}
            </p>
        }
        .into_any(),
        false => view! { <p class="badge warn">{td_string!(l, audit.prove.failed)}</p> }.into_any(),
    };
    let head = match &proof.checkpoint {
        Some(c) => {
            let at = super::labels::local_time(c.at);
            td_string!(l, audit.prove.signed, root = &proof.root[..16], at = at, key = c.key_id.as_str()).to_string()
        }
        None => td_string!(l, audit.prove.unsigned).to_string(),
    };
    let href = format!("/api/v1/audit/proof?seq={}&tree_size={}", proof.seq, proof.tree_size);
    view! {
        <div class="proof" data-testid="event-proof">
            {verdict}
            <p class="hint">{head}</p>
            <a href=href download=format!("audit-proof-{}.json", proof.seq)>
                {td_string!(l, audit.prove.download)}
            </a>
        </div>
    }
}
