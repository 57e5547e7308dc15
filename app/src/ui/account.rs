//! The signed-in user's own settings: language and time zone, and the password.
use crate::api::auth::{ChangePassword, SavePreferences};
use crate::domain::preferences::{LANGUAGES, OFFERED_TIME_ZONES};
use crate::i18n::{I18nLocaleTrait, td_string};
use leptos::prelude::*;

#[component]
pub fn AccountPage() -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <h1>{td_string!(l, common.account.title)}</h1>
        <Preferences />
        <Password />
    }
}

#[component]
fn Preferences() -> impl IntoView {
    let l = super::labels::locale();
    let language = l.as_str();
    let zone = super::labels::reader_zone().name();
    let save = ServerAction::<SavePreferences>::new();
    let error = super::error_of(save);
    // The page is rendered again in the chosen language and zone.
    Effect::new(move |_| {
        if let Some(Ok(())) = save.value().get() {
            let _ = window().location().reload();
        }
    });
    let language_name = move |code: &str| match code {
        "en" => td_string!(l, common.language.en),
        _ => td_string!(l, common.language.ja),
    };
    view! {
        <section class="card" aria-labelledby="preferences-title">
            <h2 id="preferences-title">{td_string!(l, common.account.preferences)}</h2>
            <ActionForm action=save attr:class="form">
                <label for="language">{td_string!(l, common.language.label)}</label>
                <select id="language" name="language">
                    {LANGUAGES.iter().map(|code| view! {
                        <option value=*code selected=language == *code lang=*code>{language_name(code)}</option>
                    }).collect_view()}
                </select>
                <label for="time_zone">{td_string!(l, common.account.time_zone)}</label>
                <select id="time_zone" name="time_zone">
                    {OFFERED_TIME_ZONES.iter().map(|z| view! { <option value=*z selected=*z == zone>{*z}</option> }).collect_view()}
                </select>
                <crate::ui::ErrorNote error />
                <button type="submit" disabled=move || save.pending().get()>{td_string!(l, common.account.save)}</button>
            </ActionForm>
        </section>
    }
}

#[component]
fn Password() -> impl IntoView {
    let l = super::labels::locale();
    let change = ServerAction::<ChangePassword>::new();
    let error = super::error_of(change);
    view! {
        <section class="card" aria-labelledby="password-title">
            <h2 id="password-title">{td_string!(l, common.account.password_title)}</h2>
            <p>{td_string!(l, common.account.password_hint)}</p>
            <ActionForm action=change attr:class="form">
                <label for="current_password">{td_string!(l, common.account.current_password)}</label>
                <input id="current_password" name="current_password" type="password" autocomplete="current-password" required />
                <label for="new_password">{td_string!(l, common.account.new_password)}</label>
                <input id="new_password" name="new_password" type="password" autocomplete="new-password" minlength="8" maxlength="128" required />
                <crate::ui::ErrorNote error />
                <Show when=move || matches!(change.value().get(), Some(Ok(())))>
                    <p class="ok" role="status">{td_string!(l, common.account.password_changed)}</p>
                </Show>
                <button type="submit" disabled=move || change.pending().get()>{td_string!(l, common.account.change)}</button>
            </ActionForm>
        </section>
    }
}
