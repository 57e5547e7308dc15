//! E-mail over SMTP (lettre), built from the `[mail]` configuration. Credentials come from the environment
//! and never appear in errors or logs.
use crate::config::{MailConfig, MailSecurity};
use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// Why a message did not go out, and whether trying again can help.
pub struct NotSent {
    pub why: String,
    /// The relay refused for good (5xx), or the message can never be built: no more attempts.
    pub permanent: bool,
}

impl NotSent {
    fn permanent(why: impl Into<String>) -> Self {
        NotSent { why: why.into(), permanent: true }
    }
}

pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    pub fn new(config: &MailConfig) -> Result<Mailer, NotSent> {
        crate::reconciliation::ssrf::install_tls_provider();
        let from: Mailbox = config.from.parse().map_err(|e| NotSent::permanent(format!("[mail] from: {e}")))?;
        let tls = || TlsParameters::new(config.smtp_host.clone()).map_err(|e| NotSent::permanent(format!("TLS: {e}")));
        let tls = match config.security {
            MailSecurity::Tls => Tls::Wrapper(tls()?),
            MailSecurity::Starttls => Tls::Required(tls()?),
            MailSecurity::None => Tls::None,
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(config.smtp_host.as_str())
            .port(config.smtp_port)
            .tls(tls)
            .timeout(Some(std::time::Duration::from_secs(10)));
        if let (Some(user_env), Some(password_env)) = (&config.username_env, &config.password_env) {
            let var = |name: &str| {
                std::env::var(name)
                    .map_err(|_| NotSent { why: format!("the variable {name} is not set"), permanent: false })
            };
            builder = builder.credentials(Credentials::new(var(user_env)?, var(password_env)?));
        }
        Ok(Mailer { transport: builder.build(), from })
    }

    /// A message in UTF-8: plain text, and when given an HTML alternative; each body in base64 (safe through
    /// any relay), the subject encoded as RFC 2047 says.
    pub async fn send(&self, to: &str, subject: &str, text: &str, html: Option<&str>) -> Result<(), NotSent> {
        let to: Mailbox = to.parse().map_err(|e| NotSent::permanent(format!("recipient: {e}")))?;
        let part = |kind: ContentType, body: &str| {
            SinglePart::builder().header(kind).header(ContentTransferEncoding::Base64).body(body.to_string())
        };
        let builder = Message::builder().from(self.from.clone()).to(to).subject(subject);
        let message = match html {
            Some(html) => builder.multipart(
                MultiPart::alternative()
                    .singlepart(part(ContentType::TEXT_PLAIN, text))
                    .singlepart(part(ContentType::TEXT_HTML, html)),
            ),
            None => builder.singlepart(part(ContentType::TEXT_PLAIN, text)),
        }
        .map_err(|e| NotSent::permanent(e.to_string()))?;
        match self.transport.send(message).await {
            Ok(_) => Ok(()),
            Err(e) => Err(NotSent { why: e.to_string(), permanent: e.is_permanent() }),
        }
    }
}
