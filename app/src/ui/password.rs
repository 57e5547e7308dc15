use crate::api::auth::ChangePassword;
use leptos::prelude::*;

#[component]
pub fn PasswordPage() -> impl IntoView {
    let change = ServerAction::<ChangePassword>::new();
    let error = super::error_of(change);
    view! {
        <h1>"パスワード変更"</h1>
        <p>"8 文字以上（15 文字以上を推奨）。変更すると、ほかの端末のセッションはすべて終了します。"</p>
        <ActionForm action=change attr:class="card form">
            <label for="current_password">"現在のパスワード"</label>
            <input id="current_password" name="current_password" type="password" autocomplete="current-password" required />
            <label for="new_password">"新しいパスワード"</label>
            <input id="new_password" name="new_password" type="password" autocomplete="new-password" minlength="8" maxlength="128" required />
            <crate::ui::ErrorNote error />
            <Show when=move || matches!(change.value().get(), Some(Ok(())))>
                <p class="ok" role="status">"パスワードを変更しました。"</p>
            </Show>
            <button type="submit" disabled=move || change.pending().get()>"変更する"</button>
        </ActionForm>
    }
}
