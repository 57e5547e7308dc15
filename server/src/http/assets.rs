//! The site's own files under `/pkg` (the wasm, its JavaScript, the stylesheet): sent brotli- or gzip-compressed
//! when the build left compressed copies beside them (`make release` does), and cached by the browser for a year
//! when their name carries the build's content hash, so a second load of a page fetches none of them again.
//! A name without a hash (a build without hashing) is revalidated instead.
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use leptos::config::LeptosOptions;
use tower_http::services::ServeDir;

const FOREVER: &str = "public, max-age=31536000, immutable";
const REVALIDATE: &str = "no-cache";

pub fn routes(options: &LeptosOptions) -> Router {
    let dir = std::path::Path::new(&*options.site_root).join(&*options.site_pkg_dir);
    let files = ServeDir::new(dir).precompressed_br().precompressed_gzip();
    Router::new().nest_service(&format!("/{}", options.site_pkg_dir), files).layer(axum::middleware::from_fn(cache_for))
}

async fn cache_for(request: Request, next: Next) -> Response {
    let hashed = request.uri().path().rsplit('/').next().is_some_and(carries_hash);
    let mut response = next.run(request).await;
    if response.status().is_success() || response.status() == axum::http::StatusCode::NOT_MODIFIED {
        let policy = if hashed { FOREVER } else { REVALIDATE };
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(policy));
    }
    response
}

/// `rerun-gate.<hash>.wasm`, `__wasm_split.<hash>.js`: cargo-leptos' content hash is 22 characters of
/// unpadded base64url (an MD5), between the stem and the extension. A build without hashing (`make run`) names
/// the split loader `__wasm_split.<22 underscores>.js`: a placeholder, not a hash, and its content changes.
fn carries_hash(name: &str) -> bool {
    let mut parts = name.rsplit('.');
    let (_extension, hash) = (parts.next(), parts.next());
    let base64url = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    parts.next().is_some()
        && hash.is_some_and(|h| h.len() == 22 && h.bytes().all(base64url) && h.bytes().any(|b| b != b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    const HASHED: &str = "rerun-gate.AbCdEfGhIjKlMnOpQrStUv.wasm";

    /// A site with a hashed wasm and its brotli copy, and a stylesheet without a hash; a folder of its own for
    /// each call (tests run at once, and a file being rewritten reads empty).
    fn site() -> LeptosOptions {
        static SITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SITES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let root = std::env::temp_dir().join(format!("rerun-gate-assets-{}-{n}", std::process::id()));
        let pkg = root.join("pkg");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join(HASHED), b"\0asm raw").unwrap();
        std::fs::write(pkg.join(format!("{HASHED}.br")), b"brotli!").unwrap();
        std::fs::write(pkg.join("rerun-gate.css"), b"body{}").unwrap();
        LeptosOptions::builder().output_name("rerun-gate").site_root(root.to_string_lossy().to_string()).build()
    }

    async fn get(path: &str, encodings: &str) -> Response {
        let request = Request::get(path).header("accept-encoding", encodings).body(Body::empty()).unwrap();
        routes(&site()).oneshot(request).await.unwrap()
    }

    #[tokio::test]
    async fn a_hashed_file_is_sent_precompressed_and_cached_for_a_year() {
        let answer = get(&format!("/pkg/{HASHED}"), "gzip, br").await;
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.headers()["content-encoding"], "br");
        assert_eq!(answer.headers()["cache-control"], FOREVER);
        let body = axum::body::to_bytes(answer.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], b"brotli!");
    }

    #[tokio::test]
    async fn without_a_compressed_copy_or_accepted_encoding_the_file_is_sent_as_it_is() {
        let answer = get(&format!("/pkg/{HASHED}"), "identity").await;
        assert!(answer.headers().get("content-encoding").is_none());
        let body = axum::body::to_bytes(answer.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], b"\0asm raw");
    }

    #[tokio::test]
    async fn a_name_without_a_hash_is_revalidated_and_a_missing_file_is_not_cached() {
        let answer = get("/pkg/rerun-gate.css", "br").await;
        assert_eq!(answer.headers()["cache-control"], REVALIDATE);
        assert!(answer.headers().contains_key("last-modified"));
        let missing = get("/pkg/rerun-gate.ZZZZZZZZZZZZZZZZZZZZZZ.wasm", "br").await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        assert!(missing.headers().get("cache-control").is_none());
    }

    #[test]
    fn only_cargo_leptos_content_hashes_count_as_hashes() {
        assert!(carries_hash(HASHED));
        assert!(carries_hash("__wasm_split.AbCdEfGhIjKlMnOpQrStUv.js"));
        assert!(!carries_hash("rerun-gate.wasm"));
        assert!(!carries_hash("AbCdEfGhIjKlMnOpQrStUv.wasm"));
        assert!(!carries_hash("rerun-gate.short.wasm"));
        assert!(!carries_hash("__wasm_split.______________________.js"), "the unhashed build's placeholder");
    }
}
