//! A local SMTP server for the e-mail tests: it speaks just enough SMTP for lettre, keeps what it receives,
//! refuses a recipient starting with `nobody` for good (550) and, when asked, the next message for now (451).
use mail_parser::MimeHeaders;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(Clone, Debug)]
pub struct Mail {
    pub to: Vec<String>,
    pub subject: String,
    /// The plain-text part.
    pub body: String,
    /// The HTML part, when the message has one beside its plain text.
    pub html: Option<String>,
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

/// The message as a mail reader sees it (mail-parser): its subject, its plain-text part and its HTML part.
fn parse(to: Vec<String>, data: &[String]) -> Mail {
    // The DATA lines, dot-unstuffed (RFC 5321 4.5.2).
    let raw: String = data.iter().map(|l| format!("{}\r\n", l.strip_prefix('.').unwrap_or(l))).collect();
    let message = mail_parser::MessageParser::default().parse(raw.as_bytes()).expect("a message");
    Mail {
        to,
        subject: message.subject().unwrap_or_default().to_string(),
        body: message.body_text(0).unwrap_or_default().into_owned(),
        html: message.parts.iter().any(is_html).then(|| message.body_html(0).unwrap_or_default().into_owned()),
    }
}

/// A part written as HTML (mail-parser also offers a plain-text part as HTML, converted).
fn is_html(part: &mail_parser::MessagePart) -> bool {
    part.content_type().is_some_and(|c| {
        c.ctype().eq_ignore_ascii_case("text") && c.subtype().is_some_and(|s| s.eq_ignore_ascii_case("html"))
    })
}
