//! The client's address behind reverse proxies. `X-Forwarded-For` is believed only on connections from a proxy
//! the operator named (`RERUN_GATE_TRUSTED_PROXIES`): anyone else could write the header, and the sign-in
//! throttle per address must not be fooled, nor must everyone behind the proxy share one address.
use std::net::IpAddr;

/// The address a request came from: the connection's peer, or, when the peer is a trusted proxy, the nearest
/// address in `X-Forwarded-For` that is not a trusted proxy (each proxy appends the address it saw).
pub fn client_address(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    for hop in forwarded_for.unwrap_or_default().rsplit(',').map(str::trim).filter(|h| !h.is_empty()) {
        match hop.parse::<IpAddr>() {
            Ok(ip) if trusted.contains(&ip) => continue,
            Ok(ip) => return ip,
            // A hop that is not an address was not written by a proxy of ours: stop believing there.
            Err(_) => return peer,
        }
    }
    peer
}

/// `RERUN_GATE_TRUSTED_PROXIES`: addresses separated by commas or spaces.
pub fn parse_trusted(list: &str) -> Result<Vec<IpAddr>, String> {
    list.split([',', ' '])
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().map_err(|_| format!("RERUN_GATE_TRUSTED_PROXIES: '{s}' is not an IP address")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_header_counts_only_when_the_connection_comes_from_a_trusted_proxy() {
        let proxy = [ip("10.0.0.2")];
        assert_eq!(client_address(ip("198.51.100.7"), Some("203.0.113.5"), &proxy), ip("198.51.100.7"));
        assert_eq!(client_address(ip("10.0.0.2"), Some("203.0.113.5"), &proxy), ip("203.0.113.5"));
        assert_eq!(client_address(ip("10.0.0.2"), None, &proxy), ip("10.0.0.2"));
        assert_eq!(client_address(ip("10.0.0.2"), Some("203.0.113.5"), &[]), ip("10.0.0.2"));
    }

    #[test]
    fn the_nearest_untrusted_hop_is_the_client_and_a_forged_left_part_is_ignored() {
        let proxies = [ip("10.0.0.2"), ip("10.0.0.3")];
        // The client wrote "1.2.3.4" itself; the outer proxy appended the address it really saw.
        assert_eq!(client_address(ip("10.0.0.2"), Some("1.2.3.4, 203.0.113.5, 10.0.0.3"), &proxies), ip("203.0.113.5"));
        assert_eq!(client_address(ip("10.0.0.2"), Some("unknown, 10.0.0.3"), &proxies), ip("10.0.0.2"));
        assert_eq!(client_address(ip("10.0.0.2"), Some("2001:db8::1"), &proxies), ip("2001:db8::1"));
    }

    #[test]
    fn the_list_of_proxies_is_addresses_and_a_mistake_is_named() {
        assert_eq!(parse_trusted("10.0.0.2, ::1").unwrap(), vec![ip("10.0.0.2"), ip("::1")]);
        assert_eq!(parse_trusted("").unwrap(), Vec::<IpAddr>::new());
        assert!(parse_trusted("10.0.0.0/8").unwrap_err().contains("'10.0.0.0/8' is not an IP address"));
    }
}
