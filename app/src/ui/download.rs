//! A download with a progress indicator: once hydrated, the link fetches the export as a stream, counts the
//! rows and bytes as they arrive, then saves the file; before hydration (or without JavaScript) it is a plain
//! download link.
use crate::i18n::td_string;
use leptos::prelude::*;

/// Rows (lines) and bytes received so far, and whether the file is saved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Progress {
    lines: u64,
    bytes: u64,
    done: bool,
}

#[component]
pub fn DownloadWithProgress(href: String, label: &'static str) -> impl IntoView {
    let l = super::labels::locale();
    let progress = RwSignal::new(None::<Progress>);
    let failure = RwSignal::new(None::<String>);
    let target = href.clone();
    let start = move |ev: leptos::ev::MouseEvent| {
        #[cfg(feature = "hydrate")]
        {
            ev.prevent_default();
            if progress.get_untracked().is_some_and(|p| !p.done) {
                return; // one at a time
            }
            failure.set(None);
            let target = target.clone();
            leptos::task::spawn_local(async move {
                if let Err(why) = fetch_with_progress(&target, progress).await {
                    progress.set(None);
                    failure.set(Some(why));
                }
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (ev, &target);
    };
    view! {
        <a href=href download on:click=start>
            {label}
        </a>
        {move || {
            progress
                .get()
                .map(|p| {
                    view! {
                        <span class="progress" role="status" data-testid="export-progress">
                            {(!p.done)
                                .then(|| {
                                    view! { <progress aria-label=td_string!(l, audit.download.progress)></progress> }
                                })}
                            {if p.done {
                                td_string!(l, audit.download.saved)
                            } else {
                                td_string!(l, audit.download.exporting)
                            }}
                            {td_string!(
                                l, audit.download.size, lines = p.lines,
                                megabytes = format!("{:.1}", p.bytes as f64 / 1_000_000.0)
                            )
                                .to_string()}
                        </span>
                    }
                })
        }}
        {move || {
            failure
                .get()
                .map(|why| {
                    view! {
                        <span class="error" role="alert">
                            {td_string!(l, audit.download.failed)}
                            {why}
                        </span>
                    }
                })
        }}
    }
}

#[cfg(feature = "hydrate")]
async fn fetch_with_progress(href: &str, progress: RwSignal<Option<Progress>>) -> Result<(), String> {
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;
    let js = |e: JsValue| e.as_string().unwrap_or_else(|| format!("{e:?}"));
    let window = web_sys::window().ok_or("no window")?;
    let response: web_sys::Response = JsFuture::from(window.fetch_with_str(href)).await.map_err(js)?.unchecked_into();
    if !response.ok() {
        return Err(format!("HTTP {}", response.status()));
    }
    let disposition = response.headers().get("content-disposition").ok().flatten().unwrap_or_default();
    let name = disposition
        .split("filename=\"")
        .nth(1)
        .map(|n| n.trim_end_matches('"').to_string())
        .unwrap_or_else(|| "export".into());
    let body = response.body().ok_or("the answer has no body")?;
    let reader: web_sys::ReadableStreamDefaultReader = JsValue::from(body.get_reader()).unchecked_into();
    let parts = js_sys::Array::new();
    let mut seen = Progress::default();
    progress.set(Some(seen));
    loop {
        let result = JsFuture::from(reader.read()).await.map_err(js)?;
        if js_sys::Reflect::get(&result, &"done".into()).map_err(js)?.as_bool().unwrap_or(true) {
            break;
        }
        let chunk: js_sys::Uint8Array = js_sys::Reflect::get(&result, &"value".into()).map_err(js)?.unchecked_into();
        seen.bytes += chunk.length() as u64;
        seen.lines += chunk.to_vec().iter().filter(|b| **b == b'\n').count() as u64;
        parts.push(&chunk);
        progress.set(Some(seen));
    }
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).map_err(js)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(js)?;
    let link: web_sys::HtmlAnchorElement =
        window.document().ok_or("no document")?.create_element("a").map_err(js)?.unchecked_into();
    link.set_href(&url);
    link.set_download(&name);
    link.click();
    let _ = web_sys::Url::revoke_object_url(&url);
    progress.set(Some(Progress { done: true, ..seen }));
    Ok(())
}
