//! The user guide in the app: `GET /guide/ja` and `GET /guide/en` serve `docs/ja/guide.md` and `docs/en/guide.md`,
//! turned into HTML once, for signed-in users; each page's "?" links to its section (`app::ui::help`). The
//! guides' pictures and their links to the other documents stay in the repository: the page keeps their words.
use crate::http::policy::route;
use app::i18n::Locale;
use app::ui::help::guide_path;
use axum::Router;
use axum::body::Bytes;
use axum::http::{Method, header};
use axum::response::IntoResponse;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

const JAPANESE: &str = include_str!("../../docs/ja/guide.md");
const ENGLISH: &str = include_str!("../../docs/en/guide.md");

/// At the paths the pages' "?" links lead to, in the app's stylesheet (`stylesheet`: its address).
pub fn routes(stylesheet: &str) -> Router {
    let mut router = Router::new();
    for (locale, language, markdown) in [(Locale::ja, "ja", JAPANESE), (Locale::en, "en", ENGLISH)] {
        let page = Bytes::from(page(language, markdown, stylesheet));
        router = route(router, Method::GET, guide_path(locale), move || {
            let page = page.clone();
            async move { ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response() }
        });
    }
    router
}

/// The whole page: the guide's HTML in a document of the guide's language, under a header that leads back to
/// the app.
fn page(language: &str, markdown: &str, stylesheet: &str) -> String {
    let title = markdown.lines().next().unwrap_or_default().trim_start_matches("# ");
    let title = html_escape::encode_text(title);
    let stylesheet = html_escape::encode_double_quoted_attribute(stylesheet);
    format!(
        "<!DOCTYPE html>\n<html lang=\"{language}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{title}</title>\
         <link rel=\"stylesheet\" href=\"{stylesheet}\"></head>\
         <body><header class=\"topbar\"><a class=\"brand\" href=\"/\">Rerun Gate</a></header>\
         <main class=\"page guide\">{}</main></body></html>\n",
        body(markdown)
    )
}

/// The guide as HTML. A picture keeps its description as text, and a link to another document its words: neither
/// is served here; links inside the guide stay.
fn body(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut kept_links = Vec::new();
    let events = Parser::new_ext(markdown, options).filter_map(|event| match &event {
        Event::Start(Tag::Image { .. }) => Some(Event::Html("<span class=\"picture\">".into())),
        Event::End(TagEnd::Image) => Some(Event::Html("</span>".into())),
        Event::Start(Tag::Link { dest_url, .. }) => {
            let kept = dest_url.starts_with('#');
            kept_links.push(kept);
            kept.then_some(event)
        }
        Event::End(TagEnd::Link) => kept_links.pop().unwrap_or(false).then_some(event),
        _ => Some(event),
    });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    out
}
