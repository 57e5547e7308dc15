//! The SSRF guard for outbound URLs from the configuration (QUALITY 26). Addresses are checked after DNS
//! resolution, inside the resolver the HTTP client uses, so a name that resolves to a private address is
//! refused at connect time; literal addresses in URLs are checked before the request. No redirects, no proxy.
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Client, Url};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Once};
use std::time::Duration;

/// Whether an outbound call may go to this address.
pub fn is_allowed(ip: IpAddr, allow_loopback: bool) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_allowed(v4, allow_loopback),
        IpAddr::V6(v6) => v6_allowed(v6, allow_loopback),
    }
}

fn v4_allowed(ip: Ipv4Addr, allow_loopback: bool) -> bool {
    if ip.is_loopback() {
        return allow_loopback;
    }
    let [a, b, c, _] = ip.octets();
    let refused = ip.is_private()
        || ip.is_link_local() // 169.254/16, cloud metadata included
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240; // reserved
    !refused
}

fn v6_allowed(ip: Ipv6Addr, allow_loopback: bool) -> bool {
    if ip.is_loopback() {
        return allow_loopback;
    }
    // IPv4 inside IPv6 (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::/96): judge the IPv4.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_allowed(v4, allow_loopback);
    }
    let s = ip.segments();
    if s[..6] == [0, 0, 0, 0, 0, 0] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return !ip.is_unspecified() && v4_allowed(v4, allow_loopback);
    }
    if s[0] == 0x2002 {
        // 6to4 carries an IPv4 address in bits 16..48.
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        return v4_allowed(v4, allow_loopback);
    }
    let refused = ip.is_unspecified()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] == 0x2001 && s[1] == 0x0db8); // documentation
    !refused
}

/// Checks the URL itself: scheme, and a literal address (which never reaches the resolver).
pub fn check_url(url: &Url, allow_loopback: bool) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("scheme {} is not allowed", url.scheme()));
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
        Some(url::Host::Domain(_)) => return Ok(()),
        None => return Err("the URL has no host".into()),
    };
    if is_allowed(ip, allow_loopback) { Ok(()) } else { Err(format!("address {ip} is not allowed (private or local)")) }
}

/// The process's guarded clients, built once (building one loads the trust store): one that refuses loopback,
/// one that allows it. Give each request its own `.timeout(…)`.
pub fn shared_client(allow_loopback: bool) -> Result<&'static Client, String> {
    static STRICT: std::sync::OnceLock<Client> = std::sync::OnceLock::new();
    static LOOPBACK: std::sync::OnceLock<Client> = std::sync::OnceLock::new();
    let slot = if allow_loopback { &LOOPBACK } else { &STRICT };
    if let Some(client) = slot.get() {
        return Ok(client);
    }
    let client = client(allow_loopback, Duration::from_secs(120))?;
    Ok(slot.get_or_init(|| client))
}

/// TLS for every HTTP client of the process (ring: builds with a C compiler alone). Call before building one.
pub fn install_tls_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Resolves names and refuses the whole answer if any address is not allowed (no mixed answers to race).
struct GuardedResolver {
    allow_loopback: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_loopback = self.allow_loopback;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addrs.iter().find(|a| !is_allowed(a.ip(), allow_loopback)) {
                let message = format!("{host} resolves to {}, which is not allowed (private or local)", bad.ip());
                return Err(message.into());
            }
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// An HTTP client for configured outbound calls: guarded resolver, no redirects, no proxy, a timeout.
pub fn client(allow_loopback: bool, timeout: Duration) -> Result<Client, String> {
    install_tls_provider();
    Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { allow_loopback }))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(s: &str) -> bool {
        is_allowed(s.parse().unwrap(), false)
    }

    #[test]
    fn loopback_private_link_local_cgnat_and_metadata_addresses_are_refused() {
        for refused in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
        ] {
            assert!(!allowed(refused), "{refused} must be refused");
        }
        for fine in ["93.184.215.14", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(allowed(fine), "{fine} must be allowed");
        }
    }

    #[test]
    fn loopback_is_allowed_only_by_explicit_opt_in_and_private_stays_refused() {
        assert!(is_allowed("127.0.0.1".parse().unwrap(), true));
        assert!(is_allowed("::ffff:127.0.0.1".parse().unwrap(), true));
        assert!(!is_allowed("10.0.0.1".parse().unwrap(), true));
    }

    #[test]
    fn numeric_encodings_of_loopback_in_urls_are_refused() {
        for url in [
            "http://2130706433/x",
            "http://0x7f.0.0.1/x",
            "http://017700000001/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://127.1/x",
        ] {
            let parsed = Url::parse(url).unwrap();
            assert!(check_url(&parsed, false).is_err(), "{url} must be refused");
        }
        assert!(check_url(&Url::parse("file:///etc/passwd").unwrap(), true).is_err());
        assert!(check_url(&Url::parse("https://api.example.com/v1").unwrap(), false).is_ok());
    }
}
