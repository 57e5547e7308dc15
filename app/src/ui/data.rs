//! Page data: resources whose JSON the browser decodes exactly as it decodes a server function's answer.
use leptos::prelude::*;
use leptos::server::codee::{Decoder, Encoder};
use serde::{Serialize, de::DeserializeOwned};

/// JSON read from bytes, as `server_fn`'s `Json` reads an answer. Leptos' default resource codec reads from a
/// `str`, and serde_json compiles a second decoder of every type for that reader: each page's types twice in
/// the wasm.
pub struct SameJson;

impl<T: Serialize> Encoder<T> for SameJson {
    type Error = serde_json::Error;
    type Encoded = String;
    fn encode(value: &T) -> Result<String, serde_json::Error> {
        serde_json::to_string(value)
    }
}

impl<T: DeserializeOwned> Decoder<T> for SameJson {
    type Error = serde_json::Error;
    type Encoded = str;
    fn decode(encoded: &str) -> Result<T, serde_json::Error> {
        serde_json::from_slice(encoded.as_bytes())
    }
}

/// `Resource::new` with the codec above: loaded on the server, sent with the page, decoded in the browser.
#[track_caller]
pub fn resource<S, T, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<T, SameJson>
where
    S: PartialEq + Clone + Send + Sync + 'static,
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}
