//! Admin: list users, add one, disable or enable one, change their roles: auditor and admin for the whole
//! organisation, staff or manager in each department.
use super::data::resource;
use super::help::{GuideSection, Help};
use super::labels::{slot, with_entered};
use crate::api::admin::{AddUser, SetUserDisabled, SetUserRoles, chat_links, list_departments, list_users};
use crate::contract::DepartmentDto;
use crate::contract::admin::{NewUser, UserSummary};
use crate::domain::directory::UserSource;
use crate::domain::membership::Membership;
use crate::domain::roles::Role;
use crate::i18n::td_string;
use leptos::prelude::*;

pub(super) fn role_label(role: Role) -> &'static str {
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
    // Whose roles were sent last: said once the save succeeded.
    let sent_for = RwSignal::new(String::new());
    provide_context(RolesSentFor(sent_for));
    let saved = move || {
        matches!(roles.value().get(), Some(Ok(()))).then(|| {
            with_entered(&td_string!(l, admin.users.roles_saved, name = slot(0)).to_string(), &[&sent_for.get()])
        })
    };
    view! {
        <h1>{td_string!(l, common.nav.users)} <Help section=GuideSection::Start /></h1>
        <crate::ui::ErrorNote error=errors />
        {move || {
            saved()
                .map(|said| {
                    view! {
                        <p class="ok" role="status" data-testid="roles-saved">
                            {said}
                        </p>
                    }
                })
        }}
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                let departments = departments.await.unwrap_or_default();
                match users.await {
                    Ok(list) => {
                        view! {
                            <ToReview list=list.clone() />
                            <UserTable list departments=departments.clone() disable roles />
                            <AddUserForm add departments />
                            <ChatLinks disable />
                        }
                            .into_any()
                    }
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// Who linked which chat account (a link ends when its user is disabled).
#[component]
fn ChatLinks(disable: ServerAction<SetUserDisabled>) -> impl IntoView {
    let l = super::labels::locale();
    let links = resource(move || disable.version().get(), |_| chat_links());
    view! {
        <Suspense>
            {move || Suspend::new(async move {
                let links = links.await.ok()?;
                Some(
                    view! {
                        <section class="card" aria-labelledby="chat-links-title" data-testid="chat-links">
                            <h2 id="chat-links-title">{td_string!(l, admin.users.chat_links)}</h2>
                            {if links.is_empty() {
                                view! { <p>{td_string!(l, admin.users.no_chat_links)}</p> }.into_any()
                            } else {
                                view! {
                                    <table class="grid">
                                        <thead>
                                            <tr>
                                                <th scope="col">{td_string!(l, admin.users.display_name)}</th>
                                                <th scope="col">{td_string!(l, admin.users.chat_user)}</th>
                                                <th scope="col">{td_string!(l, admin.users.linked_at)}</th>
                                            </tr>
                                        </thead>
                                        <tbody>
                                            {links
                                                .into_iter()
                                                .map(|link| {
                                                    view! {
                                                        <tr>
                                                            <td>
                                                                <span data-entered>{link.display_name}</span>
                                                                " ("
                                                                <code>{link.username}</code>
                                                                ")"
                                                            </td>
                                                            <td>
                                                                {link.platform} " "
                                                                <code>{link.team_id} " / " {link.chat_user_id}</code>
                                                            </td>
                                                            <td>{super::labels::local_time(link.linked_at)}</td>
                                                        </tr>
                                                    }
                                                })
                                                .collect_view()}
                                        </tbody>
                                    </table>
                                }
                                    .into_any()
                            }}
                        </section>
                    },
                )
            })}
        </Suspense>
    }
}

/// People whose roles came over from before memberships and wait for a look (`UserSummary::held_before`).
#[component]
fn ToReview(list: Vec<UserSummary>) -> impl IntoView {
    let l = super::labels::locale();
    let waiting: Vec<_> = list.into_iter().filter_map(|u| Some((u.display_name, u.username, u.held_before?))).collect();
    (!waiting.is_empty()).then(|| {
        view! {
            <section class="card warn" data-testid="access-review" aria-labelledby="access-review-title">
                <h2 id="access-review-title">{td_string!(l, admin.users.review_title)}</h2>
                <p>{td_string!(l, admin.users.review_lead)}</p>
                <ul>
                    {waiting
                        .into_iter()
                        .map(|(display_name, username, before)| {
                            let roles = before.roles.join(", ");
                            let departments = before.departments.join(", ");
                            view! {
                                <li>
                                    <span data-entered>{display_name}</span>
                                    " ("
                                    <code>{username}</code>
                                    "): "
                                    {td_string!(l, admin.users.held_before, roles = roles, departments = departments)
                                        .to_string()}
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            </section>
        }
    })
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
                <tr>
                    <th scope="col">{td_string!(l, common.sign_in.username)}</th>
                    <th scope="col">{td_string!(l, admin.users.display_name)}</th>
                    <th scope="col">{td_string!(l, admin.users.email)}</th>
                    <th scope="col">{td_string!(l, admin.users.roles_and_departments)}</th>
                    <th scope="col">{td_string!(l, admin.users.status)}</th>
                </tr>
            </thead>
            <tbody>
                {list
                    .into_iter()
                    .map(|user| view! { <UserRow user departments=departments.clone() disable roles /> })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// One person: name, e-mail, roles by department, and the switch that disables or enables them.
#[component]
fn UserRow(
    user: UserSummary,
    departments: Vec<DepartmentDto>,
    disable: ServerAction<SetUserDisabled>,
    roles: ServerAction<SetUserRoles>,
) -> impl IntoView {
    let l = super::labels::locale();
    let (id, disabled) = (user.id, user.disabled);
    let (status, switch) = if disabled {
        (td_string!(l, admin.users.disabled), td_string!(l, admin.users.enable))
    } else {
        (td_string!(l, admin.users.enabled), td_string!(l, admin.users.disable))
    };
    view! {
        <tr>
            <td>
                <code>{user.username.clone()}</code>
                <br />
                <span class="badge">
                    {match user.source {
                        UserSource::Local => td_string!(l, admin.users.source_local),
                        UserSource::Company => td_string!(l, admin.users.from_provider),
                        UserSource::Directory => td_string!(l, admin.users.source_directory),
                    }}
                </span>
                {user
                    .provisioned_at
                    .map(|at| {
                        view! {
                            <br />
                            <small>{td_string!(l, admin.users.provisioned_at)} {super::labels::local_time(at)}</small>
                        }
                    })}
            </td>
            <td data-entered>{user.display_name.clone()}</td>
            <td>{user.email.clone().unwrap_or_else(|| "—".into())}</td>
            <td>
                {if user.source == UserSource::Directory {
                    view! { <DirectoryRoles user=user.clone() departments /> }.into_any()
                } else {
                    view! { <RoleEditor user=user.clone() departments roles /> }.into_any()
                }}
            </td>
            <td>
                <span class=if disabled { "badge off" } else { "badge on" }>{status}</span>
                <button
                    class="small"
                    on:click=move |_| {
                        disable
                            .dispatch(SetUserDisabled {
                                user_id: id,
                                disabled: !disabled,
                            });
                    }
                >
                    {switch}
                </button>
            </td>
        </tr>
    }
}

/// Whose roles the page sent last (its status line names them once saved).
#[derive(Clone, Copy)]
struct RolesSentFor(RwSignal<String>);

/// The person's roles; "save" sends the whole set.
#[component]
fn RoleEditor(user: UserSummary, departments: Vec<DepartmentDto>, roles: ServerAction<SetUserRoles>) -> impl IntoView {
    let chosen_roles = RwSignal::new(user.roles.clone());
    let chosen_memberships = RwSignal::new(user.memberships.clone());
    let id = user.id;
    let sent_for = use_context::<RolesSentFor>();
    let name = user.display_name.clone();
    let l = super::labels::locale();
    view! {
        <fieldset class="inline">
            <legend class="sr-only">
                {with_entered(&td_string!(l, admin.users.roles_of, name = slot(0)).to_string(), &[&user.username])}
            </legend>
            <Choices chosen_roles chosen_memberships departments prefix=format!("u{id}") />
            <button
                class="small"
                on:click=move |_| {
                    if let Some(RolesSentFor(sent_for)) = sent_for {
                        sent_for.set(name.clone());
                    }
                    roles
                        .dispatch(SetUserRoles {
                            user_id: id,
                            roles: chosen_roles.get(),
                            departments: Vec::new(),
                            memberships: chosen_memberships.get(),
                        });
                }
            >
                {td_string!(l, admin.users.save)}
            </button>
        </fieldset>
    }
}

/// A checkbox for each organisation-wide role, and a choice of role in each department (none, staff, manager).
#[component]
fn Choices(
    chosen_roles: RwSignal<Vec<Role>>,
    chosen_memberships: RwSignal<Vec<Membership>>,
    departments: Vec<DepartmentDto>,
    /// Keeps the labels' `for` unique on a page that edits many people.
    prefix: String,
) -> impl IntoView {
    let l = super::labels::locale();
    let role_boxes = [Role::Auditor, Role::Admin]
        .into_iter()
        .map(|role| {
            view! {
                <label class="check">
                    <input
                        type="checkbox"
                        prop:checked=move || chosen_roles.get().contains(&role)
                        on:change=move |_| chosen_roles.update(|r| toggle(r, role))
                    />
                    {role_label(role)}
                </label>
            }
        })
        .collect_view();
    let department_choices = departments
        .into_iter()
        .map(|d| {
            let id = format!("{prefix}-role-{}", d.code);
            let code = d.code.clone();
            let held = Memo::new(move |_| held_in(&chosen_memberships.get(), &code));
            let code = d.code.clone();
            let choose = move |ev: leptos::ev::Event| {
                let role: Option<Role> = event_target_value(&ev).parse().ok();
                chosen_memberships.update(|list| {
                    list.retain(|m| m.department != code);
                    list.extend(role.map(|role| Membership { department: code.clone(), role }));
                });
            };
            view! {
                <label class="check" for=id.clone()>
                    <span data-entered>
                        {d.name_for(super::labels::locale() == crate::i18n::Locale::en).to_string()}
                    </span>
                </label>
                <select id=id on:change=choose>
                    <option value="" selected=move || held.get().is_none()>
                        {td_string!(l, admin.users.no_role)}
                    </option>
                    <option value="staff" selected=move || held.get() == Some(Role::Staff)>
                        {role_label(Role::Staff)}
                    </option>
                    <option value="manager" selected=move || held.get() == Some(Role::Manager)>
                        {role_label(Role::Manager)}
                    </option>
                </select>
            }
        })
        .collect_view();
    view! { <span class="choices">{role_boxes} {department_choices}</span> }
}

/// The role held in a department: manager when both were given (a manager does what staff do there).
fn held_in(memberships: &[Membership], department: &str) -> Option<Role> {
    let roles = memberships.iter().filter(|m| m.department == department).map(|m| m.role);
    roles.max_by_key(|role| *role == Role::Manager)
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
    let chosen_roles = RwSignal::new(Vec::<Role>::new());
    let chosen_memberships = RwSignal::new(Vec::<Membership>::new());
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
                departments: Vec::new(),
                memberships: chosen_memberships.get(),
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
                <Choices chosen_roles chosen_memberships departments prefix="new".to_string() />
            </fieldset>
            <crate::ui::ErrorNote error=add_error />
            <Show when=move || matches!(add.value().get(), Some(Ok(_)))>
                <p class="ok" role="status">
                    {td_string!(l, admin.users.added)}
                </p>
            </Show>
            <button type="submit" disabled=move || add.pending().get()>
                {td_string!(l, admin.users.add)}
            </button>
        </form>
    }
}

/// A provisioned person's roles, read only: the company directory's groups decide them.
#[component]
fn DirectoryRoles(user: UserSummary, departments: Vec<DepartmentDto>) -> impl IntoView {
    let l = super::labels::locale();
    let name = move |code: &str| {
        let english = super::names::english();
        departments
            .iter()
            .find(|d| d.code == code)
            .map_or_else(|| code.to_string(), |d| d.name_for(english).to_string())
    };
    let held: Vec<String> = user
        .roles
        .iter()
        .map(|r| role_label(*r).to_string())
        .chain(user.memberships.iter().map(|m| format!("{}: {}", name(&m.department), role_label(m.role))))
        .collect();
    view! {
        <p>{if held.is_empty() { "—".to_string() } else { held.join(" · ") }}</p>
        <p class="hint">{td_string!(l, admin.users.directory_roles)}</p>
    }
}
