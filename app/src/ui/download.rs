//! A download with a progress indicator: once hydrated, the link fetches the export as a stream, counts the
//! bytes as they arrive, then saves the file and says how many events it holds (its trailer's count); before
//! hydration (or without JavaScript) it is a plain download link.
use crate::i18n::td_string;
use leptos::prelude::*;

/// Bytes received so far; once saved, the events the file holds (as its trailer counts them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Progress {
    bytes: u64,
    done: bool,
    events: Option<u64>,
}

/// A size as people read it: bytes, kilobytes or megabytes (of 1,000).
fn readable_size(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{:.1} KB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

/// The events an export holds: the `rows` of its trailer, its last record (JSON, or JSON quoted in CSV), whose
/// first field it is.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))] // read in the browser, tested here
fn events_in_trailer(tail: &str) -> Option<u64> {
    let last = tail.trim_end().rsplit('\n').next()?;
    if !last.contains("trailer") {
        return None;
    }
    let after = &last[last.find("rows")? + "rows".len()..];
    let digits = after.trim_start_matches(['"', ':', ' ']);
    digits[..digits.find(|c: char| !c.is_ascii_digit())?].parse().ok()
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
                            {match p.events {
                                Some(events) => {
                                    td_string!(l, audit.download.size, events = events, size = readable_size(p.bytes))
                                        .to_string()
                                }
                                None => readable_size(p.bytes),
                            }}
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
    // The end of what arrived: the trailer is in it once the stream ends.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let result = JsFuture::from(reader.read()).await.map_err(js)?;
        if js_sys::Reflect::get(&result, &"done".into()).map_err(js)?.as_bool().unwrap_or(true) {
            break;
        }
        let chunk: js_sys::Uint8Array = js_sys::Reflect::get(&result, &"value".into()).map_err(js)?.unchecked_into();
        seen.bytes += chunk.length() as u64;
        tail.extend(chunk.to_vec());
        tail.drain(..tail.len().saturating_sub(TAIL));
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
    let events = events_in_trailer(&String::from_utf8_lossy(&tail));
    progress.set(Some(Progress { done: true, events, ..seen }));
    Ok(())
}

/// How much of the end of an export is kept to read its trailer from (a trailer is a few hundred bytes).
#[cfg(feature = "hydrate")]
const TAIL: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_says_its_events_from_its_trailer_and_its_size_in_readable_units() {
        let csv = "# trailer,\"{\"\"rows\"\":1,\"\"head_seq\"\":40}\",,,\r\n";
        assert_eq!(events_in_trailer(csv), Some(1));
        assert_eq!(events_in_trailer(r#"{"trailer":{"rows":1200,"head_seq":4}}"#), Some(1200));
        assert_eq!(events_in_trailer("seq,at,actor\n1,2026"), None, "cut before its trailer: no count");
        assert_eq!(
            (readable_size(512), readable_size(2_100), readable_size(3_400_000)),
            ("512 B".into(), "2.1 KB".into(), "3.4 MB".into())
        );
    }
}
