use super::layout::use_me;
use leptos::prelude::*;

/// The signed-in start page. The stalled-operations board arrives with the Operations issue.
#[component]
pub fn HomePage() -> impl IntoView {
    let me = use_me();
    let roles = me.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ");
    view! {
        <h1>"ようこそ、" {me.display_name.clone()} "さん"</h1>
        <section class="card">
            <h2>"あなたの所属と役割"</h2>
            <dl class="facts">
                <dt>"サインイン名"</dt>
                <dd>{me.username.clone()}</dd>
                <dt>"部門"</dt>
                <dd data-testid="home-departments">
                    {me.departments.iter().map(|d| format!("{} ({})", d.name, d.code)).collect::<Vec<_>>().join("、")}
                </dd>
                <dt>"役割"</dt>
                <dd>{roles}</dd>
            </dl>
        </section>
    }
}
