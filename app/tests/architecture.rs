//! The floors of the code. Four of them are crates, so the compiler keeps them below the rest:
//!   domain → contract → words → backend → app (api: the server functions, then ui: the pages) → server
//! This test keeps what crates cannot say. It parses each file (`syn`), resolves every path it names — `use` trees,
//! grouped or not, and paths written in the code — against the file's own module, and checks them against the
//! rules below; SQL text is looked for in every string literal, macros included. Test modules are not read: tests
//! may reach anywhere.
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use std::fs;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// A place in the tree that must not name some paths, and why. Paths are absolute, whatever the file wrote
/// (`crate::`, `super::`, a group): `backend::db` (also when the app names it `crate::backend::db`), `app::ui`.
struct Rule {
    under: &'static str,
    forbidden: &'static [&'static str],
    except: &'static [&'static str],
    why: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        under: "app/src/ui",
        forbidden: &["backend"],
        except: &[],
        why: "the pages reach the server through the server functions only",
    },
    Rule {
        under: "app/src/api",
        forbidden: &["app::ui", "backend::db"],
        except: &[],
        why: "a server function is a caller, a service and a view: below the pages, above the services",
    },
    Rule {
        under: "server/src",
        forbidden: &["backend::db"],
        except: &["backend::db::sessions"],
        why: "the process reaches the database through services; only the session store adapter is wired directly",
    },
    Rule {
        under: "backend/src/db",
        forbidden: &[
            "backend::services",
            "backend::reconciliation",
            "backend::demo",
            "backend::config",
            "backend::auth",
            "backend::mail",
        ],
        except: &[],
        why: "the data layer is the backend's ground floor: services and connectors stand on it, not it on them",
    },
    Rule {
        under: "backend/src",
        forbidden: &["backend::demo"],
        except: &[],
        why: "the demo is a plug-in: the process registers it at start-up, nothing in the backend's path names it",
    },
    Rule {
        under: "backend/src/state.rs",
        forbidden: &["backend::services"],
        except: &[],
        why: "the state holds what the backend itself needs; the services keep their own on its shelf (`kept`)",
    },
];

/// A server function hands its caller to a service and the service's view back: a few lines.
const API_HOME: &str = "app/src/api";
const API_FUNCTION_LINES: usize = 30;

/// SQL statements are written in the data layer only.
const SQL_HOME: &str = "backend/src/db";
const SQL_STARTS: &[&str] =
    &["SELECT ", "INSERT INTO ", "UPDATE ", "DELETE FROM ", "CREATE ", "DROP ", "ALTER ", "PRAGMA ", "VACUUM", "BEGIN"];
const CODE: &[&str] = &["domain/src", "contract/src", "words/src", "backend/src", "app/src", "server/src"];

/// The workspace, or another checkout of it named by `ARCHITECTURE_ROOT` (to see what the rules catch there).
fn workspace() -> PathBuf {
    match std::env::var_os("ARCHITECTURE_ROOT") {
        Some(root) => PathBuf::from(root),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf(),
    }
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    if dir.is_file() {
        return found.push(dir.to_path_buf());
    }
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
            // `tests.rs` is a test module kept in its own file (`#[cfg(test)] mod tests;`).
            found.push(path);
        }
    }
}

/// One source file: its name from the workspace, its crate and module path, and its items without tests.
struct Source {
    name: String,
    module: Vec<String>,
    file: syn::File,
}

fn sources_under(folder: &str) -> Vec<Source> {
    let root = workspace();
    let mut found = Vec::new();
    rust_files(&root.join(folder), &mut found);
    found.sort();
    found.into_iter().map(|path| read(&root, &path)).collect()
}

fn read(root: &Path, path: &Path) -> Source {
    let name = path.strip_prefix(root).unwrap().display().to_string();
    let text = fs::read_to_string(path).unwrap();
    let mut file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    file.items.retain(|item| !is_test(item_attrs(item)));
    Source { module: module_of(&name), name, file }
}

/// `backend/src/db/sqlite/mod.rs` → `backend::db::sqlite`; a binary's files are its crate's too.
fn module_of(name: &str) -> Vec<String> {
    let (krate, rest) =
        name.split_once("/src/").or(name.split_once("/examples/")).expect("a crate's src/ or examples/");
    let mut module = vec![krate.to_string()];
    module.extend(rest.trim_end_matches(".rs").split('/').map(str::to_string));
    if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        module.pop();
    }
    module
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Mod(m) => &m.attrs,
        syn::Item::Fn(f) => &f.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Use(u) => &u.attrs,
        _ => &[],
    }
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let text = a.to_token_stream().to_string().replace(' ', "");
        text == "#[cfg(test)]" || text == "#[test]" || text.ends_with("::test]") || text.starts_with("#[tokio::test")
    })
}

/// Every path a file names, absolute: `use` trees expanded, `crate`, `self` and `super` resolved.
#[derive(Default)]
struct Named {
    module: Vec<String>,
    found: Vec<(usize, String)>,
}

impl Named {
    fn add(&mut self, line: usize, segments: Vec<String>) {
        let mut absolute: Vec<String> = match segments.first().map(String::as_str) {
            Some("crate") => vec![self.module[0].clone()],
            Some("self") | Some("super") => self.module.clone(),
            _ => Vec::new(),
        };
        for (i, segment) in segments.into_iter().enumerate() {
            match segment.as_str() {
                "crate" | "self" if i == 0 => {}
                "super" => drop(absolute.pop()),
                _ => absolute.push(segment),
            }
        }
        self.found.push((line, canonical(absolute.join("::"))));
    }

    fn use_tree(&mut self, line: usize, prefix: &[String], tree: &syn::UseTree) {
        let with = |segment: String| [prefix, &[segment]].concat();
        match tree {
            syn::UseTree::Path(p) => self.use_tree(line, &with(p.ident.to_string()), &p.tree),
            syn::UseTree::Name(n) if n.ident == "self" => self.add(line, prefix.to_vec()),
            syn::UseTree::Name(n) => self.add(line, with(n.ident.to_string())),
            syn::UseTree::Rename(r) => self.add(line, with(r.ident.to_string())),
            syn::UseTree::Glob(_) => self.add(line, prefix.to_vec()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(line, prefix, t)),
        }
    }
}

impl<'a> Visit<'a> for Named {
    fn visit_item_use(&mut self, item: &'a syn::ItemUse) {
        self.use_tree(item.use_token.span.start().line, &[], &item.tree);
    }

    fn visit_path(&mut self, path: &'a syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.add(path.segments[0].ident.span().start().line, segments);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_mod(&mut self, item: &'a syn::ItemMod) {
        if !is_test(&item.attrs) {
            self.module.push(item.ident.to_string());
            syn::visit::visit_item_mod(self, item);
            self.module.pop();
        }
    }

    fn visit_item_fn(&mut self, item: &'a syn::ItemFn) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }
}

fn named(source: &Source) -> Vec<(usize, String)> {
    let mut named = Named { module: source.module.clone(), found: Vec::new() };
    named.visit_file(&source.file);
    named.found
}

/// The app names the crates below through its own re-exports (`crate::backend`, `crate::i18n`): the same places.
fn canonical(path: String) -> String {
    match path.strip_prefix("app::") {
        Some(rest) if rest.starts_with("i18n") => format!("words::{rest}"),
        Some(rest) if ["backend", "domain", "contract", "words"].iter().any(|c| within(rest, c)) => rest.to_string(),
        _ => path,
    }
}

/// A path starts with another when it is that path or one inside it (`backend::db` holds `backend::db::users`).
fn within(path: &str, place: &str) -> bool {
    path == place || path.starts_with(&format!("{place}::"))
}

fn paths_that_reach_up() -> Vec<String> {
    let mut found = Vec::new();
    for rule in RULES {
        for source in sources_under(rule.under) {
            // A module inside a forbidden place may name its own place (the demo its own parts).
            let home = source.module.join("::");
            for (line, path) in named(&source) {
                let reaches = rule.forbidden.iter().any(|f| within(&path, f) && !within(&home, f));
                if reaches && !rule.except.iter().any(|e| within(&path, e)) {
                    found.push(format!("{}:{line}: names {path} ({})", source.name, rule.why));
                }
            }
        }
    }
    found
}

/// Every string literal of a token tree, macros' included, with its line.
fn literals(tokens: TokenStream, found: &mut Vec<(usize, String)>) {
    for token in tokens {
        match token {
            TokenTree::Group(group) => literals(group.stream(), found),
            TokenTree::Literal(literal) => {
                let text = literal.to_string();
                if let Ok(syn::Lit::Str(s)) = syn::parse_str::<syn::Lit>(&text) {
                    found.push((literal.span().start().line, s.value()));
                }
            }
            _ => {}
        }
    }
}

fn sql_out_of_place() -> Vec<String> {
    let mut found = Vec::new();
    for source in CODE.iter().flat_map(|folder| sources_under(folder)) {
        if source.name.starts_with(SQL_HOME) {
            continue;
        }
        let mut strings = Vec::new();
        literals(source.file.to_token_stream(), &mut strings);
        for (line, text) in strings {
            if SQL_STARTS.iter().any(|s| text.trim_start().starts_with(s)) {
                found.push(format!("{}:{line}: SQL outside {SQL_HOME}: {text:.60}", source.name));
            }
        }
    }
    found
}

/// Functions of a file with their first line and length (methods included), tests left out.
#[derive(Default)]
struct Functions(Vec<(String, usize, usize)>);

impl Functions {
    fn add(&mut self, name: &syn::Ident, span: proc_macro2::Span) {
        let (start, end) = (span.start().line, span.end().line);
        self.0.push((name.to_string(), start, end + 1 - start));
    }
}

impl<'a> Visit<'a> for Functions {
    fn visit_item_fn(&mut self, item: &'a syn::ItemFn) {
        if !is_test(&item.attrs) {
            self.add(&item.sig.ident, syn::spanned::Spanned::span(item));
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'a syn::ImplItemFn) {
        self.add(&item.sig.ident, syn::spanned::Spanned::span(item));
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_item_mod(&mut self, item: &'a syn::ItemMod) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_mod(self, item);
        }
    }
}

fn long_server_functions() -> Vec<String> {
    let mut found = Vec::new();
    for source in sources_under(API_HOME) {
        let mut functions = Functions::default();
        functions.visit_file(&source.file);
        for (name, line, length) in functions.0 {
            if length > API_FUNCTION_LINES {
                found.push(format!("{}:{line}: {name} is {length} lines (at most {API_FUNCTION_LINES})", source.name));
            }
        }
    }
    found
}

/// Every function of the code (tests left out) longer than `lines`, longest first.
fn functions_longer_than(lines: usize) -> Vec<String> {
    let mut found = Vec::new();
    for source in CODE.iter().chain(&["server/examples"]).flat_map(|folder| sources_under(folder)) {
        let mut functions = Functions::default();
        functions.visit_file(&source.file);
        for (name, line, length) in functions.0.into_iter().filter(|f| f.2 > lines) {
            found.push((length, format!("{}:{line}: {name} is {length} lines", source.name)));
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, text)| text).collect()
}

/// A function longer than this does more than its name says: split it where a name explains the part.
const FUNCTION_LINES: usize = 80;

#[test]
fn no_function_is_longer_than_80_lines() {
    let found = functions_longer_than(FUNCTION_LINES);
    assert!(found.is_empty(), "{} function(s) over {FUNCTION_LINES} lines:\n{}", found.len(), found.join("\n"));
}

/// `cargo fmt` and leptosfmt keep code within this; what they cannot break (strings, comments, attributes) is kept
/// by hand.
const LINE_CHARACTERS: usize = 120;

/// Lines longer than `LINE_CHARACTERS`, outside test items.
fn lines_longer_than(characters: usize) -> Vec<String> {
    let root = workspace();
    let mut found = Vec::new();
    let mut files = Vec::new();
    for folder in CODE.iter().chain(&["server/examples"]) {
        rust_files(&root.join(folder), &mut files);
    }
    for path in files {
        let text = fs::read_to_string(&path).unwrap();
        let file = syn::parse_file(&text).unwrap();
        let tests: Vec<(usize, usize)> = file
            .items
            .iter()
            .filter(|item| is_test(item_attrs(item)))
            .map(|item| {
                use syn::spanned::Spanned;
                (item.span().start().line, item.span().end().line)
            })
            .collect();
        for (n, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l)) {
            if line.chars().count() > characters && !tests.iter().any(|(from, to)| (*from..=*to).contains(&n)) {
                let name = path.strip_prefix(&root).unwrap().display();
                found.push(format!("{name}:{n}: {} characters", line.chars().count()));
            }
        }
    }
    found
}

#[test]
fn no_line_is_longer_than_120_characters() {
    let found = lines_longer_than(LINE_CHARACTERS);
    assert!(found.is_empty(), "{} line(s) over {LINE_CHARACTERS} characters:\n{}", found.len(), found.join("\n"));
}

/// A connection taken in a `match`'s scrutinee (or an `if let`'s, a `while let`'s) is a temporary that lives to
/// the end of the whole expression: whatever its arms do that asks the pool for a connection waits for one it holds
/// (issue 61: eight audit pages at once deadlocked the pool for 30 s). Bind the connection, or the result, first.
#[derive(Default)]
struct HeldInScrutinee(Vec<usize>);

impl HeldInScrutinee {
    fn check(&mut self, scrutinee: &syn::Expr) {
        use syn::spanned::Spanned;
        let text = scrutinee.to_token_stream().to_string();
        if ["connection ()", "begin_read ()", "begin_write ()"].iter().any(|taken| text.contains(taken)) {
            self.0.push(scrutinee.span().start().line);
        }
    }
}

impl<'a> Visit<'a> for HeldInScrutinee {
    fn visit_expr_match(&mut self, e: &'a syn::ExprMatch) {
        self.check(&e.expr);
        syn::visit::visit_expr_match(self, e);
    }

    fn visit_expr_let(&mut self, e: &'a syn::ExprLet) {
        self.check(&e.expr);
        syn::visit::visit_expr_let(self, e);
    }
}

fn connections_held_in_scrutinees(sources: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources {
        let mut held = HeldInScrutinee::default();
        held.visit_file(&source.file);
        found.extend(held.0.into_iter().map(|line| format!("{}:{line}", source.name)));
    }
    found
}

#[test]
fn no_connection_is_taken_in_a_match_or_if_let_scrutinee() {
    let sources: Vec<Source> = CODE.iter().chain(&["server/examples"]).flat_map(|f| sources_under(f)).collect();
    let found = connections_held_in_scrutinees(&sources);
    assert!(found.is_empty(), "connections held to the end of a match or if let:\n{}", found.join("\n"));
    // The rule sees the pattern it is about.
    let example = Source {
        name: "backend/src/services/example.rs".into(),
        module: module_of("backend/src/services/example.rs"),
        file: syn::parse_quote! {
            async fn f(state: &AppState) {
                match walk(&mut state.db.connection().await?).await? { Ok(x) => save(state, x).await, Err(_) => {} }
                if let Some(x) = read(&mut state.db.begin_read().await?).await? { save(state, x).await }
                let bound = read(&mut state.db.connection().await?).await?;
            }
        },
    };
    assert_eq!(connections_held_in_scrutinees(&[example]).len(), 2);
}

#[test]
fn every_file_names_only_the_floors_below_it() {
    let found = paths_that_reach_up();
    assert!(found.is_empty(), "{} path(s) reach up:\n{}", found.len(), found.join("\n"));
}

#[test]
fn sql_is_written_in_the_data_layer_only() {
    let found = sql_out_of_place();
    assert!(found.is_empty(), "{} string(s) of SQL out of place:\n{}", found.len(), found.join("\n"));
}

#[test]
fn a_server_function_hands_its_caller_to_a_service_in_a_few_lines() {
    let found = long_server_functions();
    assert!(found.is_empty(), "{} server function(s) do more than hand over:\n{}", found.len(), found.join("\n"));
}

#[test]
fn the_rules_see_the_files_and_the_paths_they_are_about() {
    // A rule over a folder that moved would pass on nothing.
    for rule in RULES {
        assert!(!sources_under(rule.under).is_empty(), "{} has no files: did it move?", rule.under);
    }
    // A grouped import, `super` and a path in code are all read as the absolute paths they name.
    let source = Source {
        name: "app/src/ui/example.rs".into(),
        module: module_of("app/src/ui/example.rs"),
        file: syn::parse_quote! {
            use crate::{api::board, backend::{services, db::users}};
            use super::labels::*;
            fn f() { backend::db::users::find(); }
        },
    };
    let paths: Vec<String> = named(&source).into_iter().map(|(_, p)| p).collect();
    for expected in ["app::api::board", "backend::services", "backend::db::users", "app::ui::labels"] {
        assert!(paths.iter().any(|p| p == expected), "{expected} not among {paths:?}");
    }
    assert!(paths.iter().any(|p| p == "backend::db::users::find"), "{paths:?}");
}
