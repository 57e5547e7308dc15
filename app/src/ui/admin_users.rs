//! Admin: list users, add one, disable or enable one, change roles and departments.
use super::data::resource;
use super::labels::{slot, with_entered};
use crate::api::DepartmentDto;
use crate::api::admin::{AddUser, NewUser, SetUserDisabled, SetUserRoles, UserSummary, list_departments, list_users};
use crate::domain::roles::Role;
use crate::i18n::td_string;
use leptos::prelude::*;

fn role_label(role: Role) -> &'static str {
    let l = super::labels::locale();
    match role {
        Role::Staff => td_string!(l, admin.role.staff),
        Role::Manager => td_string!(l, admin.role.manager),
        Role::Auditor => td_string!(l, admin.role.auditor),
        Role::Admin => td_string!(l, admin.role.admin),
    }
}

use super::error_of;

#[component]
pub fn AdminUsersPage() -> impl IntoView {
    let l = super::labels::locale();
    let add = ServerAction::<AddUser>::new();
    let disable = ServerAction::<SetUserDisabled>::new();
    let roles = ServerAction::<SetUserRoles>::new();
    let users =
        resource(move || (add.version().get(), disable.version().get(), roles.version().get()), |_| list_users());
    let departments = resource(|| (), |_| list_departments());
    let (disable_error, roles_error) = (error_of(disable), error_of(roles));
    let errors = Signal::derive(move || disable_error.get().or_else(|| roles_error.get()));
    view! {
        <h1>{td_string!(l, common.nav.users)}</h1>
        <crate::ui::ErrorNote error=errors />
        <Suspense fallback=move || view! { <p class="loading">{td_string!(l, common.loading)}</p> }>
            {move || Suspend::new(async move {
                let departments = departments.await.unwrap_or_default();
                match users.await {
                    Ok(list) => view! {
                        <UserTable list departments=departments.clone() disable roles />
                        <AddUserForm add departments />
                    }.into_any(),
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn UserTable(
    list: Vec<UserSummary>,
    departments: Vec<DepartmentDto>,
    disable: ServerAction<SetUserDisabled>,
    roles: ServerAction<SetUserRoles>,
) -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <table class="grid" data-testid="users">
            <caption>{td_string!(l, admin.users.caption)}</caption>
            <thead>
                <tr><th scope="col">{td_string!(l, common.sign_in.username)}</th><th scope="col">{td_string!(l, admin.users.display_name)}</th><th scope="col">{td_string!(l, admin.users.email)}</th><th scope="col">{td_string!(l, admin.users.roles_and_departments)}</th><th scope="col">{td_string!(l, admin.users.status)}</th></tr>
            </thead>
            <tbody>
                {list.into_iter().map(|user| {
                    let id = user.id;
                    let disabled = user.disabled;
                    view! {
                        <tr>
                            <td>
                                <code>{user.username.clone()}</code>
                                {user.from_provider.then(|| view! { <br /><span class="badge">{td_string!(l, admin.users.from_provider)}</span> })}
                            </td>
                            <td data-entered>{user.display_name.clone()}</td>
                            <td>{user.email.clone().unwrap_or_else(|| "—".into())}</td>
                            <td><RoleEditor user=user.clone() departments=departments.clone() roles /></td>
                            <td>
                                <span class=if disabled { "badge off" } else { "badge on" }>
                                    {move || if disabled { td_string!(l, admin.users.disabled) } else { td_string!(l, admin.users.enabled) }}
                                </span>
                                <button class="small" on:click=move |_| {
                                    disable.dispatch(SetUserDisabled { user_id: id, disabled: !disabled });
                                }>{move || if disabled { td_string!(l, admin.users.enable) } else { td_string!(l, admin.users.disable) }}</button>
                            </td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// Checkboxes for roles and departments; "save" sends the whole set.
#[component]
fn RoleEditor(user: UserSummary, departments: Vec<DepartmentDto>, roles: ServerAction<SetUserRoles>) -> impl IntoView {
    let chosen_roles = RwSignal::new(user.roles.clone());
    let chosen_departments = RwSignal::new(user.departments.clone());
    let id = user.id;
    let l = super::labels::locale();
    view! {
        <fieldset class="inline">
            <legend class="sr-only">{with_entered(&td_string!(l, admin.users.roles_of, name = slot(0)).to_string(), &[&user.username])}</legend>
            <Choices chosen_roles chosen_departments departments />
            <button class="small" on:click=move |_| {
                roles.dispatch(SetUserRoles { user_id: id, roles: chosen_roles.get(), departments: chosen_departments.get() });
            }>{td_string!(l, admin.users.save)}</button>
        </fieldset>
    }
}

/// One checkbox per role and per department.
#[component]
fn Choices(
    chosen_roles: RwSignal<Vec<Role>>,
    chosen_departments: RwSignal<Vec<String>>,
    departments: Vec<DepartmentDto>,
) -> impl IntoView {
    let role_boxes = Role::ALL
        .into_iter()
        .map(|role| {
            view! {
                <label class="check">
                    <input type="checkbox" prop:checked=move || chosen_roles.get().contains(&role)
                        on:change=move |_| chosen_roles.update(|r| toggle(r, role)) />
                    {role_label(role)}
                </label>
            }
        })
        .collect_view();
    let department_boxes = departments
        .into_iter()
        .map(|d| {
            let code = d.code.clone();
            let code_for_check = code.clone();
            view! {
                <label class="check">
                    <input type="checkbox" prop:checked=move || chosen_departments.get().contains(&code_for_check)
                        on:change=move |_| chosen_departments.update(|list| toggle(list, code.clone())) />
                    <span data-entered>{d.name.clone()}</span>
                </label>
            }
        })
        .collect_view();
    view! { <span class="choices">{role_boxes} {department_boxes}</span> }
}

fn toggle<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if let Some(i) = list.iter().position(|x| *x == item) {
        list.remove(i);
    } else {
        list.push(item);
    }
}

#[component]
fn AddUserForm(add: ServerAction<AddUser>, departments: Vec<DepartmentDto>) -> impl IntoView {
    let username = RwSignal::new(String::new());
    let display_name = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let email = RwSignal::new(String::new());
    let chosen_roles = RwSignal::new(vec![Role::Staff]);
    let chosen_departments = RwSignal::new(Vec::<String>::new());
    let l = super::labels::locale();
    let add_error = error_of(add);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        add.dispatch(AddUser {
            new: NewUser {
                username: username.get(),
                display_name: display_name.get(),
                password: password.get(),
                roles: chosen_roles.get(),
                departments: chosen_departments.get(),
                email: email.get(),
            },
        });
    };
    view! {
        <form class="card form" on:submit=submit aria-labelledby="add-user-title">
            <h2 id="add-user-title">{td_string!(l, admin.users.add_title)}</h2>
            <label for="new-username">{td_string!(l, common.sign_in.username)}</label>
            <input id="new-username" bind:value=username required />
            <label for="new-display-name">{td_string!(l, admin.users.display_name)}</label>
            <input id="new-display-name" bind:value=display_name required />
            <label for="new-email">{td_string!(l, admin.users.email_optional)}</label>
            <input id="new-email" type="email" autocomplete="off" bind:value=email />
            <label for="new-password">{td_string!(l, admin.users.initial_password)}</label>
            <input id="new-password" type="password" autocomplete="new-password" bind:value=password required />
            <fieldset>
                <legend>{td_string!(l, admin.users.roles_and_departments)}</legend>
                <Choices chosen_roles chosen_departments departments />
            </fieldset>
            <crate::ui::ErrorNote error=add_error />
            <Show when=move || matches!(add.value().get(), Some(Ok(_)))>
                <p class="ok" role="status">{td_string!(l, admin.users.added)}</p>
            </Show>
            <button type="submit" disabled=move || add.pending().get()>{td_string!(l, admin.users.add)}</button>
        </form>
    }
}
