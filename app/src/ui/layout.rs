//! The frame of every signed-in page: loads the current user, sends strangers to the sign-in page.
use crate::api::auth::{SignOut, me};
use crate::api::{AppError, CurrentUser};
use crate::domain::roles::Role;
use leptos::prelude::*;
use super::sign_in::SignInPage;
use leptos_router::components::{A, Outlet};

#[component]
pub fn SignedInLayout() -> impl IntoView {
    let me = Resource::new(|| (), |_| me());
    view! {
        <Suspense fallback=|| view! { <p class="loading">"読み込み中…"</p> }>
            {move || Suspend::new(async move {
                match me.await {
                    Ok(user) => {
                        provide_context(user.clone());
                        view! { <Header user /> <main class="page"><Outlet /></main> }.into_any()
                    }
                    // Sign in right here, then see the page that was asked for.
                    Err(AppError::Unauthorized) => view! { <SignInPage /> }.into_any(),
                    Err(error) => view! { <main class="page"><p class="error" role="alert">{error.to_string()}</p></main> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Header(user: CurrentUser) -> impl IntoView {
    let sign_out = ServerAction::<SignOut>::new();
    Effect::new(move |_| {
        if let Some(Ok(())) = sign_out.value().get() {
            let _ = window().location().assign("/sign-in");
        }
    });
    let departments = user.departments.iter().map(|d| d.name.clone()).collect::<Vec<_>>().join("・");
    let is_admin = user.has(Role::Admin);
    let is_manager = user.has(Role::Manager);
    view! {
        <header class="topbar">
            <A href="/" attr:class="brand">"Rerun Gate"</A>
            <nav aria-label="メインメニュー">
                <A href="/">"ホーム"</A>
                <Show when=move || is_manager>
                    <A href="/approvals">"承認"</A>
                </Show>
                <A href="/audit">"監査証跡"</A>
                <Show when=move || is_admin>
                    <A href="/admin/users">"ユーザー管理"</A>
                    <A href="/admin/api-clients">"API クライアント"</A>
                    <A href="/admin/configuration">"設定"</A>
                </Show>
                <super::notifications::Bell />
                <A href="/account/password">"パスワード変更"</A>
            </nav>
            <div class="who" data-testid="who">
                <span class="name" data-testid="user-name">{user.display_name.clone()}</span>
                <span class="department" data-testid="user-departments">{departments}</span>
                <ActionForm action=sign_out>
                    <button type="submit" class="link">"サインアウト"</button>
                </ActionForm>
            </div>
        </header>
    }
}
