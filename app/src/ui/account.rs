//! The signed-in user's own settings: language and time zone, the password, and the link to their Slack account
//! (decisions in chat).
use super::help::{GuideSection, Help};
use crate::api::auth::{ChangePassword, SavePreferences, SignOutEverywhere, UnlinkChat, chat_links};
use crate::contract::chat::ChatLinkView;
use crate::domain::preferences::{LANGUAGES, OFFERED_TIME_ZONES};
use crate::i18n::{I18nLocaleTrait, td_string};
use leptos::prelude::*;

#[component]
pub fn AccountPage() -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <h1>{td_string!(l, common.account.title)} <Help section=GuideSection::Chat /></h1>
        <Preferences />
        <Password />
        <ChatLink />
        <Everywhere />
    }
}

/// Signing out of every browser and device at once, chat links included; then to the sign-in page.
#[component]
fn Everywhere() -> impl IntoView {
    let l = super::labels::locale();
    let everywhere = ServerAction::<SignOutEverywhere>::new();
    let error = super::error_of(everywhere);
    Effect::new(move |_| {
        if let Some(Ok(())) = everywhere.value().get() {
            let _ = window().location().assign("/sign-in");
        }
    });
    view! {
        <section class="card" aria-labelledby="everywhere-title">
            <h2 id="everywhere-title">{td_string!(l, common.account.everywhere_title)}</h2>
            <p>{td_string!(l, common.account.everywhere_hint)}</p>
            <ActionForm action=everywhere attr:class="form">
                <crate::ui::ErrorNote error />
                <button type="submit" disabled=move || everywhere.pending().get()>
                    {td_string!(l, common.account.everywhere)}
                </button>
            </ActionForm>
        </section>
    }
}

/// Shown only where a Slack app is set up: whether the person's Slack account is linked, a way to link it (through
/// Sign in with Slack, after a recent sign-in here) and to end the link.
#[component]
fn ChatLink() -> impl IntoView {
    let l = super::labels::locale();
    let unlink = ServerAction::<UnlinkChat>::new();
    let error = super::error_of(unlink);
    let links = super::data::resource(move || unlink.version().get(), |_| chat_links());
    let query = leptos_router::hooks::use_query_map();
    let came_back = move || match query.read().get("chat").as_deref() {
        Some("linked") => Some(("ok", td_string!(l, common.account.slack_just_linked))),
        Some("taken") => Some(("error", td_string!(l, common.account.slack_taken))),
        Some(_) => Some(("error", td_string!(l, common.account.slack_link_failed))),
        None => None,
    };
    view! {
        <Suspense>
            {move || Suspend::new(async move {
                let Ok(links) = links.await else { return None };
                if !links.slack_offered && !links.teams_offered {
                    return None;
                }
                let teams = links
                    .links
                    .iter()
                    .find(|link| link.platform == "teams")
                    .map(|link| {
                        let at = super::labels::local_time(link.linked_at);
                        let linked = td_string!(l, common.account.teams_linked, team = link.team_id.clone(), at = at);
                        format!("{linked} {}", lapses(link.lapses_at))
                    });
                let teams = links
                    .teams_offered
                    .then(|| { teams.unwrap_or_else(|| td_string!(l, common.account.teams_not_linked).to_string()) });
                let slack_offered = links.slack_offered;
                let slack = links.links.into_iter().find(|link| link.platform == "slack");
                Some(
                    view! {
                        <section class="card" aria-labelledby="chat-title" data-testid="chat-link">
                            <h2 id="chat-title">{td_string!(l, common.account.chat_title)}</h2>
                            <p>{td_string!(l, common.account.chat_lead)}</p>
                            {came_back()
                                .map(|(class, said)| {
                                    view! {
                                        <p class=class role="status">
                                            {said}
                                        </p>
                                    }
                                })}
                            {teams.map(|said| view! { <p data-testid="teams-link">{said}</p> })}
                            {slack_offered.then(|| view! { <SlackLink link=slack unlink error /> })}
                        </section>
                    },
                )
            })}
        </Suspense>
    }
}

/// The Slack part of the chat card: the linked account and a way to end the link, or a way to link one.
#[component]
fn SlackLink(
    link: Option<ChatLinkView>,
    unlink: ServerAction<UnlinkChat>,
    error: Signal<Option<String>>,
) -> impl IntoView {
    let l = super::labels::locale();
    match link {
        Some(link) => {
            let at = super::labels::local_time(link.linked_at);
            view! {
                <p>
                    {td_string!(l, common.account.slack_linked, team = link.team_id, user = link.chat_user_id, at = at)
                        .to_string()} " " <span data-testid="link-lapses">{lapses(link.lapses_at)}</span>
                </p>
                <ActionForm action=unlink attr:class="form">
                    <input type="hidden" name="platform" value="slack" />
                    <crate::ui::ErrorNote error />
                    <button type="submit" disabled=move || unlink.pending().get()>
                        {td_string!(l, common.account.slack_unlink)}
                    </button>
                </ActionForm>
            }
            .into_any()
        }
        None => view! {
            <p>{td_string!(l, common.account.slack_not_linked)}</p>
            <Show when=move || matches!(unlink.value().get(), Some(Ok(())))>
                <p class="ok" role="status">
                    {td_string!(l, common.account.slack_unlinked)}
                </p>
            </Show>
            // A full page load: the browser goes on to Slack.
            <a class="button" href="/account/slack/link" rel="external">
                {td_string!(l, common.account.slack_link)}
            </a>
        }
        .into_any(),
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
                    {LANGUAGES
                        .iter()
                        .map(|code| {
                            view! {
                                <option value=*code selected=language == *code lang=*code>
                                    {language_name(code)}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
                <label for="time_zone">{td_string!(l, common.account.time_zone)}</label>
                <select id="time_zone" name="time_zone">
                    {OFFERED_TIME_ZONES
                        .iter()
                        .map(|z| {
                            view! {
                                <option value=*z selected=*z == zone>
                                    {*z}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
                <crate::ui::ErrorNote error />
                <button type="submit" disabled=move || save.pending().get()>
                    {td_string!(l, common.account.save)}
                </button>
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
                <input
                    id="current_password"
                    name="current_password"
                    type="password"
                    autocomplete="current-password"
                    required
                />
                <label for="new_password">{td_string!(l, common.account.new_password)}</label>
                <input
                    id="new_password"
                    name="new_password"
                    type="password"
                    autocomplete="new-password"
                    minlength="8"
                    maxlength="128"
                    required
                />
                <crate::ui::ErrorNote error />
                <Show when=move || matches!(change.value().get(), Some(Ok(())))>
                    <p class="ok" role="status">
                        {td_string!(l, common.account.password_changed)}
                    </p>
                </Show>
                <button type="submit" disabled=move || change.pending().get()>
                    {td_string!(l, common.account.change)}
                </button>
            </ActionForm>
        </section>
    }
}

/// When a chat link lapses, and what the person does then.
fn lapses(at: chrono::DateTime<chrono::Utc>) -> String {
    let l = super::labels::locale();
    td_string!(l, common.account.link_lapses, at = super::labels::local_time(at)).to_string()
}
