//! Where the site's files are (the wasm, its JavaScript, the stylesheet) and what they are called, wherever the
//! server was copied: never from where it was built.
//!
//! Leptos reads the files' content-hashed names from a hash file it looks for beside the running binary
//! (cargo-leptos leaves `hash.txt` there). The release bundle keeps that file in its `site` folder instead, so
//! that the site carries its own names however the binary and the site are copied; an absolute `hash_file`
//! makes Leptos read it there (`Path::join` with an absolute path replaces the base).
use leptos::config::LeptosOptions;
use std::path::{Path, PathBuf};

/// The release bundle's layout: the site folder beside the binary.
pub const BUNDLE_SITE_DIR: &str = "site";

/// Fills in where the site is (`site_root`) and where its file names are (`hash_file`, `hash_files`).
/// The site: `LEPTOS_SITE_ROOT` when set; else the bundle's `site` folder beside the binary when there is one;
/// else cargo-leptos' default (`target/site`, from a checkout). The names: the site's own hash file (a bundle),
/// else the one cargo-leptos leaves beside the binary, else none (plain names).
pub fn locate(options: &mut LeptosOptions, site_root_set: bool, exe_dir: Option<&Path>) {
    if !site_root_set && let Some(bundled) = exe_dir.map(|dir| dir.join(BUNDLE_SITE_DIR)).filter(|d| d.is_dir()) {
        options.site_root = bundled.to_string_lossy().into();
    }
    let in_site = Path::new(&*options.site_root).join(&*options.hash_file);
    let beside_binary = exe_dir.map(|dir| dir.join(&*options.hash_file));
    if in_site.is_file() {
        let absolute = std::path::absolute(&in_site).unwrap_or(in_site);
        options.hash_file = absolute.to_string_lossy().into();
        options.hash_files = true;
    } else if beside_binary.is_some_and(|file| file.is_file()) {
        options.hash_files = true;
    }
}

/// The files every page asks for, as the pages will name them; an error names the folder looked in and what is
/// missing there, so that a server copied without its site stops at start instead of serving pages with no
/// style and no script.
pub fn check(options: &LeptosOptions, exe_dir: Option<&Path>) -> anyhow::Result<()> {
    let pkg = Path::new(&*options.site_root).join(&*options.site_pkg_dir);
    let names = file_names(options, exe_dir)?;
    let missing: Vec<&str> = names.iter().map(String::as_str).filter(|name| !pkg.join(name).is_file()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let folder = std::path::absolute(&pkg).unwrap_or(pkg);
    anyhow::bail!(
        "the site's files are not in {}: {} missing. Set LEPTOS_SITE_ROOT to the `site` folder of the release \
         bundle (or keep that folder beside the server binary); from a checkout, build it with `make site`",
        folder.display(),
        missing.join(", ")
    )
}

/// The stylesheet's address as the pages name it (`/pkg/rerun-gate.<hash>.css`), for a document the process
/// serves outside the app's shell (the user guide): the plain name when the site's names are not readable.
pub fn stylesheet_href(options: &LeptosOptions, exe_dir: Option<&Path>) -> String {
    let hashed = file_names(options, exe_dir).ok().and_then(|names| names.into_iter().find(|n| n.ends_with(".css")));
    let name = hashed.unwrap_or_else(|| format!("{}.css", options.output_name));
    format!("/{}/{name}", options.site_pkg_dir)
}

/// The names of the files every page asks for, as Leptos will name them.
fn file_names(options: &LeptosOptions, exe_dir: Option<&Path>) -> anyhow::Result<Vec<String>> {
    if !options.hash_files {
        return Ok(plain_names(&options.output_name));
    }
    let file = exe_dir.map(|dir| dir.join(&*options.hash_file)).unwrap_or_else(|| PathBuf::from(&*options.hash_file));
    let hashes = std::fs::read_to_string(&file)
        .map_err(|error| anyhow::anyhow!("the site's file names are not readable in {}: {error}", file.display()))?;
    Ok(hashed_names(&options.output_name, &hashes))
}

/// Names from cargo-leptos' hash file (`js: …`, `wasm: …`, `css: …`, and with split bundles `manifest: …`,
/// `split: …`).
fn hashed_names(output_name: &str, hashes: &str) -> Vec<String> {
    let entries = hashes.lines().filter_map(|line| line.split_once(':')).map(|(kind, hash)| (kind.trim(), hash.trim()));
    entries
        .filter_map(|(kind, hash)| match kind {
            "js" | "wasm" | "css" => Some(format!("{output_name}.{hash}.{kind}")),
            "manifest" => Some(format!("__wasm_split_manifest.{hash}.json")),
            "split" => Some(format!("__wasm_split.{hash}.js")),
            _ => None,
        })
        .collect()
}

/// A build without hashing: the wasm carries a `_bg` suffix unless the build named its output, as Leptos does.
fn plain_names(output_name: &str) -> Vec<String> {
    let wasm_suffix = if option_env!("LEPTOS_OUTPUT_NAME").is_some() { "" } else { "_bg" };
    vec![format!("{output_name}.js"), format!("{output_name}{wasm_suffix}.wasm"), format!("{output_name}.css")]
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASHES: &str = "js: JJJJJJJJJJJJJJJJJJJJJJ\nwasm: WWWWWWWWWWWWWWWWWWWWWW\ncss: CCCCCCCCCCCCCCCCCCCCCC\n";

    fn options(site_root: &Path) -> LeptosOptions {
        LeptosOptions::builder().output_name("rerun-gate").site_root(site_root.to_string_lossy().to_string()).build()
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rerun-gate-site-{name}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A bundle: the binary's folder with `site/hash.txt` and `site/pkg/<hashed files>`.
    fn bundle(with_files: bool) -> PathBuf {
        let dir = temp_dir("bundle");
        let pkg = dir.join("site/pkg");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(dir.join("site/hash.txt"), HASHES).unwrap();
        if with_files {
            for name in hashed_names("rerun-gate", HASHES) {
                std::fs::write(pkg.join(name), b"x").unwrap();
            }
        }
        dir
    }

    #[test]
    fn a_bundle_copied_anywhere_finds_its_site_and_the_names_the_site_carries() {
        let dir = bundle(true);
        let mut options = options(Path::new("target/site"));
        locate(&mut options, false, Some(&dir));
        assert_eq!(Path::new(&*options.site_root), dir.join("site"));
        assert!(options.hash_files);
        // Leptos joins the hash file to the binary's folder: an absolute path is read as it is.
        let elsewhere = Path::new("/usr/local/bin").join(&*options.hash_file);
        assert_eq!(elsewhere, dir.join("site/hash.txt"));
        check(&options, Some(Path::new("/usr/local/bin"))).unwrap();
        assert_eq!(
            stylesheet_href(&options, Some(Path::new("/usr/local/bin"))),
            "/pkg/rerun-gate.CCCCCCCCCCCCCCCCCCCCCC.css"
        );
    }

    #[test]
    fn a_site_folder_named_by_leptos_site_root_wins_over_the_bundle_layout() {
        let dir = bundle(true);
        let other = bundle(true);
        let mut options = options(&other.join("site"));
        locate(&mut options, true, Some(&dir));
        assert_eq!(Path::new(&*options.site_root), other.join("site"));
        assert_eq!(Path::new(&*options.hash_file), other.join("site/hash.txt"));
    }

    #[test]
    fn a_site_without_its_files_stops_the_start_naming_the_folder() {
        let dir = bundle(false);
        let mut options = options(Path::new("target/site"));
        locate(&mut options, false, Some(&dir));
        let error = check(&options, Some(&dir)).unwrap_err().to_string();
        assert!(error.contains(&dir.join("site/pkg").display().to_string()), "{error}");
        assert!(error.contains("rerun-gate.JJJJJJJJJJJJJJJJJJJJJJ.js"), "{error}");
    }

    #[test]
    fn names_beside_the_binary_are_used_when_the_site_has_none() {
        let dir = bundle(true);
        std::fs::rename(dir.join("site/hash.txt"), dir.join("hash.txt")).unwrap();
        let mut options = options(&dir.join("site"));
        locate(&mut options, true, Some(&dir));
        assert!(options.hash_files);
        assert_eq!(&*options.hash_file, "hash.txt");
        check(&options, Some(&dir)).unwrap();
    }

    #[test]
    fn a_site_with_plain_names_is_found_without_a_hash_file() {
        let dir = temp_dir("plain");
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        let mut options = options(&dir);
        locate(&mut options, true, Some(Path::new("/nonexistent")));
        assert!(!options.hash_files);
        assert_eq!(stylesheet_href(&options, None), "/pkg/rerun-gate.css");
        assert!(check(&options, None).is_err());
        for name in plain_names("rerun-gate") {
            std::fs::write(dir.join("pkg").join(name), b"x").unwrap();
        }
        check(&options, None).unwrap();
    }

    #[test]
    fn split_bundles_name_their_loader_and_manifest() {
        let names = hashed_names("rerun-gate", &format!("{HASHES}manifest: MMM\nsplit: SSS\n"));
        assert!(names.contains(&"__wasm_split_manifest.MMM.json".to_string()));
        assert!(names.contains(&"__wasm_split.SSS.js".to_string()));
    }
}
