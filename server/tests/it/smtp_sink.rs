//! A local SMTP server for the e-mail tests: it speaks just enough SMTP for lettre, keeps what it receives,
//! refuses a recipient starting with `nobody` for good (550) and, when asked, the next message for now (451).
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(Clone, Debug)]
pub struct Mail {
    pub to: Vec<String>,
    pub subject: String,
    pub body: String,
}

#[derive(Clone, Default)]
pub struct SmtpSink {
    pub port: u16,
    mails: Arc<Mutex<Vec<Mail>>>,
    refuse_next: Arc<AtomicBool>,
}

impl SmtpSink {
    pub async fn start() -> SmtpSink {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let sink = SmtpSink { port: listener.local_addr().unwrap().port(), ..Default::default() };
        let serving = sink.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serving.clone().session(socket));
            }
        });
        sink
    }

    pub fn mails(&self) -> Vec<Mail> {
        self.mails.lock().unwrap().clone()
    }

    /// The next message is answered `451` (try again later).
    pub fn refuse_next(&self) {
        self.refuse_next.store(true, Ordering::SeqCst);
    }

    async fn session(self, socket: tokio::net::TcpStream) {
        let (read, mut write) = socket.into_split();
        let mut lines = BufReader::new(read).lines();
        let _ = write.write_all(b"220 sink ESMTP\r\n").await;
        let mut to = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            let verb = line.get(..4).unwrap_or_default().to_ascii_uppercase();
            let answer: &[u8] = match verb.as_str() {
                "EHLO" => b"250-sink\r\n250 8BITMIME\r\n",
                "RCPT" if line.to_lowercase().contains("<nobody") => b"550 no such user\r\n",
                "RCPT" => {
                    to.push(line.split(['<', '>']).nth(1).unwrap_or_default().to_string());
                    b"250 ok\r\n"
                }
                "DATA" => {
                    let _ = write.write_all(b"354 go on\r\n").await;
                    let mut data = Vec::new();
                    while let Ok(Some(line)) = lines.next_line().await {
                        if line == "." {
                            break;
                        }
                        data.push(line);
                    }
                    if self.refuse_next.swap(false, Ordering::SeqCst) {
                        b"451 try again later\r\n"
                    } else {
                        self.mails.lock().unwrap().push(parse(std::mem::take(&mut to), &data));
                        b"250 queued\r\n"
                    }
                }
                "QUIT" => {
                    let _ = write.write_all(b"221 bye\r\n").await;
                    return;
                }
                _ => b"250 ok\r\n", // HELO, MAIL, RSET, NOOP
            };
            let _ = write.write_all(answer).await;
        }
    }
}

/// Headers until the blank line (folded lines joined), then the base64 body, decoded.
fn parse(to: Vec<String>, data: &[String]) -> Mail {
    use base64::Engine;
    let blank = data.iter().position(|l| l.is_empty()).unwrap_or(data.len());
    let mut headers: Vec<String> = Vec::new();
    for line in &data[..blank] {
        match headers.last_mut() {
            Some(last) if line.starts_with([' ', '\t']) => last.push_str(line),
            _ => headers.push(line.clone()),
        }
    }
    let subject = headers.iter().find_map(|h| h.strip_prefix("Subject: ")).map(decode_words).unwrap_or_default();
    let body = data[blank..].concat();
    let body =
        base64::engine::general_purpose::STANDARD.decode(body.trim()).map(|b| String::from_utf8_lossy(&b).into_owned());
    Mail { to, subject, body: body.unwrap_or_default() }
}

/// `=?utf-8?b?…?=` encoded words (RFC 2047), as lettre writes a non-ASCII subject.
fn decode_words(header: &str) -> String {
    use base64::Engine;
    let mut bytes = Vec::new();
    for word in header.split_whitespace() {
        let encoded =
            word.get(..10).filter(|p| p.eq_ignore_ascii_case("=?utf-8?b?")).and_then(|_| word[10..].strip_suffix("?="));
        match encoded {
            Some(encoded) => {
                bytes.extend(base64::engine::general_purpose::STANDARD.decode(encoded).unwrap_or_default())
            }
            None => {
                if !bytes.is_empty() {
                    bytes.push(b' ');
                }
                bytes.extend(word.as_bytes());
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
