//! Sign-in throttling (QUALITY 7): how many failures an account and an address may have in the window, and what
//! counts as one address. An IPv6 client controls a whole /64 (every address of its network), so it is throttled
//! by its /64; an IPv4 client by its address.
use std::net::IpAddr;

pub const WINDOW_MINUTES: i64 = 15;
pub const MAX_FAILURES_PER_ACCOUNT: i64 = 5;
pub const MAX_FAILURES_PER_ADDRESS: i64 = 30;

/// The key an address's failures are counted under: the IPv4 address, or the IPv6 /64 (`2001:db8:1:2::/64`).
/// An IPv4-mapped IPv6 address counts as its IPv4 address; anything that is not an address is its own key.
pub fn address_key(ip: &str) -> String {
    match ip.trim().parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => v4.to_string(),
        Ok(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
        Err(_) => ip.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_network_is_one_address_and_an_ipv4_address_is_itself() {
        assert_eq!(address_key("2001:db8:1:2::1"), "2001:db8:1:2::/64");
        assert_eq!(address_key("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
        assert_ne!(address_key("2001:db8:1:3::1"), address_key("2001:db8:1:2::1"));
        assert_eq!(address_key("192.0.2.7"), "192.0.2.7");
        assert_ne!(address_key("192.0.2.8"), address_key("192.0.2.7"));
        assert_eq!(address_key("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(address_key("unknown"), "unknown");
    }
}
