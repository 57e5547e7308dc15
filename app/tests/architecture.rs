//! The floors of the code, read off the source tree: each folder only reaches down.
//!   domain → contract → words → backend (crates: the compiler keeps them below) → api (server functions) → ui
//! A file's test module (from its `#[cfg(test)]` on) is not read: tests may reach anywhere.
use std::fs;
use std::path::{Path, PathBuf};

/// A path a file under a folder must not name, and why.
struct Rule {
    under: &'static str,
    except: &'static [&'static str],
    forbidden: &'static [&'static str],
    why: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        under: "words/src",
        except: &[],
        forbidden: &["leptos::"],
        why: "the words are plain functions of a language, for pages and exports alike",
    },
    Rule {
        under: "app/src/ui",
        except: &[],
        forbidden: &["crate::backend"],
        why: "the pages reach the server through the server functions only",
    },
    Rule {
        under: "server/src",
        except: &["backend::db::sessions::"],
        forbidden: &["backend::db"],
        why: "the process reaches the database through services; only the session store adapter is wired directly",
    },
];

/// SQL statements are written in the data layer only.
const SQL_HOME: &str = "backend/src/db";
const SQL_STARTS: &[&str] = &[
    "\"SELECT ",
    "\"INSERT INTO ",
    "\"UPDATE ",
    "\"DELETE FROM ",
    "\"CREATE ",
    "\"DROP ",
    "\"ALTER ",
    "\"PRAGMA ",
    "\"VACUUM",
    "\"BEGIN",
];

/// The workspace, or another checkout of it named by `ARCHITECTURE_ROOT` (to see what the rules catch there).
fn workspace() -> PathBuf {
    match std::env::var_os("ARCHITECTURE_ROOT") {
        Some(root) => PathBuf::from(root),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf(),
    }
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The file's lines up to its test module, without `//` comments, numbered from 1.
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    let text = fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let tests_start = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "))
        .unwrap_or(lines.len());
    lines[..tests_start]
        .iter()
        .enumerate()
        .map(|(i, line)| (i + 1, line.split("//").next().unwrap_or("").to_string()))
        .collect()
}

fn files_under(folder: &str) -> Vec<(String, PathBuf)> {
    let root = workspace();
    let mut found = Vec::new();
    rust_files(&root.join(folder), &mut found);
    found.sort();
    found.into_iter().map(|p| (p.strip_prefix(&root).unwrap().display().to_string(), p)).collect()
}

/// Every line of the tree that breaks a rule, as `file:line: text (why)`.
fn violations() -> Vec<String> {
    let mut found = Vec::new();
    for rule in RULES {
        for (name, path) in files_under(rule.under) {
            for (number, line) in code_lines(&path) {
                let mut rest = line.clone();
                for allowed in rule.except {
                    rest = rest.replace(allowed, "");
                }
                if let Some(path) = rule.forbidden.iter().find(|f| rest.contains(*f)) {
                    found.push(format!("{name}:{number}: names {path}: {} ({})", line.trim(), rule.why));
                }
            }
        }
    }
    for folder in ["domain/src", "contract/src", "words/src", "backend/src", "app/src", "server/src"] {
        for (name, path) in files_under(folder) {
            if name.starts_with(SQL_HOME) {
                continue;
            }
            for (number, line) in code_lines(&path) {
                if SQL_STARTS.iter().any(|s| line.contains(s)) {
                    found.push(format!("{name}:{number}: SQL outside {SQL_HOME}: {}", line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn every_folder_reaches_only_the_floors_below_it() {
    let found = violations();
    assert!(found.is_empty(), "{} line(s) reach up or hold SQL out of place:\n{}", found.len(), found.join("\n"));
}

#[test]
fn the_rules_see_the_files_they_are_about() {
    // A rule over a folder that moved would pass on nothing.
    for rule in RULES {
        assert!(!files_under(rule.under).is_empty(), "{} has no files: did it move?", rule.under);
    }
}
