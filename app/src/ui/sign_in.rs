use crate::api::auth::SignIn;
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

#[component]
pub fn SignInPage() -> impl IntoView {
    let l = super::labels::locale();
    let sign_in = ServerAction::<SignIn>::new();
    let error = super::error_of(sign_in);
    // The page the server sent the visitor here from (only a path on this site), else the board.
    let next = use_query_map().with_untracked(|q| q.get("next")).filter(|p| is_local_path(p));
    // After sign-in, load that page afresh with the new session (or this one, when a session lapsed on it).
    Effect::new(move |_| {
        if let Some(Ok(_)) = sign_in.value().get() {
            let location = window().location();
            match location.pathname().as_deref() {
                Ok("/sign-in") => drop(location.assign(next.as_deref().unwrap_or("/"))),
                _ => drop(location.reload()),
            }
        }
    });
    view! {
        <main class="page narrow" id="main">
            <div class="sign-in-language"><super::layout::LanguageSwitch /></div>
            <h1>"Rerun Gate"</h1>
            <p class="lead">{td_string!(l, common.sign_in.lead)}</p>
            <ActionForm action=sign_in attr:class="card form" attr:aria-label=move || td_string!(l, common.sign_in.form)>
                <label for="username">{td_string!(l, common.sign_in.username)}</label>
                <input id="username" name="username" autocomplete="username" required autofocus />
                <label for="password">{td_string!(l, common.sign_in.password)}</label>
                <input id="password" name="password" type="password" autocomplete="current-password" required />
                <crate::ui::ErrorNote error />
                <button type="submit" disabled=move || sign_in.pending().get()>{td_string!(l, common.sign_in.submit)}</button>
            </ActionForm>
        </main>
    }
}

/// A path on this site only: `//host` and `/\host` would lead a browser to another site.
fn is_local_path(path: &str) -> bool {
    path.starts_with('/') && !path.starts_with("//") && !path.contains('\\') && !path.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::is_local_path;

    #[test]
    fn only_a_path_on_this_site_is_a_place_to_return_to() {
        assert!(is_local_path("/audit?process_id=ORD-1"));
        for elsewhere in ["https://evil.example/", "//evil.example/", "/\\evil.example/", "/\tevil", "evil"] {
            assert!(!is_local_path(elsewhere), "{elsewhere}");
        }
    }
}
