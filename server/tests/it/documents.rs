//! The decision table for Excel: the ten rows in the reader's language, read back with calamine; a blank template
//! with the events only; signed-in users only.
use crate::harness::{PASSWORD, TestApp};
use calamine::{Data, Reader, Xlsx};
use reqwest::StatusCode;

async fn download(app: &TestApp, query: &str, cookies: &[&str]) -> (StatusCode, Vec<u8>) {
    let mut request = app.http.get(format!("{}/decision-table.xlsx{query}", app.url));
    if !cookies.is_empty() {
        request = request.header("cookie", cookies.join("; "));
    }
    let answer = request.send().await.unwrap();
    (answer.status(), answer.bytes().await.unwrap().to_vec())
}

/// The first sheet's name and its rows as text.
fn read(bytes: Vec<u8>) -> (String, Vec<Vec<String>>) {
    let mut workbook: Xlsx<_> = calamine::open_workbook_from_rs(std::io::Cursor::new(bytes)).expect("an .xlsx");
    let name = workbook.sheet_names()[0].clone();
    let range = workbook.worksheet_range(&name).expect("the sheet");
    let rows = range
        .rows()
        .map(|row| row.iter().map(|c| if let Data::String(s) = c { s.clone() } else { String::new() }).collect())
        .collect();
    (name, rows)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decision_table_opens_in_excel_with_the_ten_events_filled_in_or_blank() {
    let app = TestApp::spawn().await;
    app.user("kimura", &["staff"], &["sales"]).await;
    let session = app.sign_in("kimura", PASSWORD).await;

    let (status, bytes) = download(&app, "", &[&session]).await;
    assert_eq!(status, StatusCode::OK);
    let (sheet, rows) = read(bytes);
    assert_eq!(sheet, "判断表");
    assert_eq!(rows.len(), 11, "a heading and the ten events");
    assert_eq!(rows[0][0], "イベント");
    let partial = rows.iter().find(|r| r[0] == "途中まで成功").expect("the partial-success row");
    assert_eq!(partial[2], "確認したうえで、要約だけを実行する");
    assert!(rows[1..].iter().all(|r| r.iter().all(|cell| !cell.is_empty())), "every cell filled in");

    let (_, blank) = download(&app, "?blank=true", &[&session]).await;
    let (_, rows) = read(blank);
    assert_eq!(rows.len(), 11);
    assert!(rows[1..].iter().all(|r| !r[0].is_empty() && r[1..].iter().all(String::is_empty)), "events only");

    let (_, english) = download(&app, "", &[&session, "lang=en"]).await;
    let (sheet, rows) = read(english);
    assert_eq!((sheet.as_str(), rows[0][0].as_str()), ("Decision table", "Event"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decision_table_is_for_signed_in_users() {
    let app = TestApp::spawn().await;
    assert_eq!(download(&app, "", &[]).await.0, StatusCode::UNAUTHORIZED);
}
