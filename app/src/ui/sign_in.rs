use crate::api::auth::SignIn;
use leptos::prelude::*;

#[component]
pub fn SignInPage() -> impl IntoView {
    let sign_in = ServerAction::<SignIn>::new();
    let error = super::error_of(sign_in);
    // After sign-in, load the page afresh with the new session: the page asked for, or the start page.
    Effect::new(move |_| {
        if let Some(Ok(_)) = sign_in.value().get() {
            let location = window().location();
            match location.pathname().as_deref() {
                Ok("/sign-in") => drop(location.assign("/")),
                _ => drop(location.reload()),
            }
        }
    });
    view! {
        <main class="page narrow">
            <h1>"Rerun Gate"</h1>
            <p class="lead">"止まった連携処理を、安全に再実行するための管理画面です。"</p>
            <ActionForm action=sign_in attr:class="card form" attr:aria-label="サインイン">
                <label for="username">"サインイン名"</label>
                <input id="username" name="username" autocomplete="username" required autofocus />
                <label for="password">"パスワード"</label>
                <input id="password" name="password" type="password" autocomplete="current-password" required />
                <crate::ui::ErrorNote error />
                <button type="submit" disabled=move || sign_in.pending().get()>"サインイン"</button>
            </ActionForm>
        </main>
    }
}
