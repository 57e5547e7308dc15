//! Sign-in throttling (QUALITY 7, ASVS 6.3): failures are counted for the account *from one place* (an address),
//! for the place across accounts, and for the number of places an account fails from. Guesses from one place are
//! slowed with a wait that doubles and are bounded; many places guessing one account (a distributed attack) are
//! stopped; a stranger's failures from their place never keep the rightful person out from theirs. An IPv6
//! client controls a whole /64 (every address of its network), so it is one place; an IPv4 client's address is.
use chrono::{DateTime, Duration, Utc};
use std::net::IpAddr;

pub const WINDOW_MINUTES: i64 = 15;
/// Failures of one account from one place before each further try waits.
pub const MAX_FAILURES_PER_ACCOUNT: i64 = 5;
/// Failures from one place, whatever the accounts.
pub const MAX_FAILURES_PER_ADDRESS: i64 = 30;
/// Places an account may fail from in the window before it is throttled everywhere: one place's guesses are
/// that place's problem; this many places guessing the same account are an attack on it.
pub const MAX_FAILING_PLACES_PER_ACCOUNT: i64 = 5;
/// Failures of one account, from everywhere, beyond which even a known browser waits out the window. Strangers
/// alone cannot reach it (five places, about ten guesses each, and then the account is closed to them); it bounds
/// whoever holds a valid device cookie and guesses from many places.
pub const MAX_FAILURES_PER_ACCOUNT_KNOWN: i64 = 60;
/// The first wait, after the free failures; it doubles with each further failure, up to the window.
const FIRST_WAIT_SECONDS: i64 = 30;

/// What the recent failures (within the window) say about one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failures {
    /// Of this account from this place, and the latest of them.
    pub here: i64,
    pub latest_here: Option<DateTime<Utc>>,
    /// From this place, for any account.
    pub from_place: i64,
    /// Other places this account failed from.
    pub other_places: i64,
    /// Of this account from everywhere.
    pub of_account: i64,
}

/// The cookie that marks a browser its account's owner signed in from before (OWASP's device cookie), and how
/// many days it stays.
pub const DEVICE_COOKIE: &str = "rerun_gate_device";
pub const DEVICE_DAYS: i64 = 180;

/// Whether an attempt comes from a browser the account's owner signed in from before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// It shows a device cookie this installation gave it for this account: strangers guessing the account from
    /// elsewhere (or other accounts from its place) do not keep it out; its own failures still wait.
    Known,
    Unknown,
}

/// The account a device cookie is for: its ID, and its epoch — what a password change and a sign-out everywhere
/// change (the session binding), so that a cookie from before either knows the browser no longer.
#[derive(Clone, Copy, Debug)]
pub struct DeviceAccount<'a> {
    pub id: i64,
    pub epoch: &'a [u8],
}

/// A device cookie's value for `account`: a nonce and its MAC under the installation's device key.
pub fn device_token(key: &[u8], account: DeviceAccount<'_>, nonce: &str) -> String {
    use hmac::Mac;
    format!("{nonce}.{}", hex::encode(device_mac(key, account, nonce).finalize().into_bytes()))
}

/// Whether `token` is a device cookie this installation gave a browser of `account` in its present epoch; a
/// name no account holds (`None`) knows no browser.
pub fn device_of(key: &[u8], account: Option<DeviceAccount<'_>>, token: Option<&str>) -> Device {
    use hmac::Mac;
    let (Some(account), Some((nonce, tag))) = (account, token.and_then(|t| t.split_once('.'))) else {
        return Device::Unknown;
    };
    let tag = hex::decode(tag).unwrap_or_default();
    match device_mac(key, account, nonce).verify_slice(&tag) {
        Ok(()) => Device::Known,
        Err(_) => Device::Unknown,
    }
}

fn device_mac(key: &[u8], account: DeviceAccount<'_>, nonce: &str) -> hmac::Hmac<sha2::Sha256> {
    use hmac::Mac;
    let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(key).expect("HMAC takes a key of any size");
    let id = account.id.to_string();
    for part in [b"device v2".as_slice(), id.as_bytes(), account.epoch, nonce.as_bytes()] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac
}

/// Whether an attempt may reach the password check; `Err` carries how long until it may. A known device is held
/// to its own failures (`here`) and to the account's higher cap (`MAX_FAILURES_PER_ACCOUNT_KNOWN`): the lower
/// account-wide and place-wide limits are what strangers can trip.
pub fn admits(failures: &Failures, now: DateTime<Utc>, device: Device) -> Result<(), Duration> {
    let window = Duration::minutes(WINDOW_MINUTES);
    let tripped_by_others =
        failures.from_place >= MAX_FAILURES_PER_ADDRESS || failures.other_places >= MAX_FAILING_PLACES_PER_ACCOUNT;
    if (tripped_by_others && device == Device::Unknown) || failures.of_account >= MAX_FAILURES_PER_ACCOUNT_KNOWN {
        return Err(window);
    }
    match failures.latest_here.map(|latest| latest + wait_after(failures.here)) {
        Some(next) if now < next => Err(next - now),
        _ => Ok(()),
    }
}

/// The wait after `failures` of an account from one place: none for the first ones, then 30 s doubling with each
/// further failure, at most the window (about ten guesses a window from one place).
pub fn wait_after(failures: i64) -> Duration {
    let beyond = failures - MAX_FAILURES_PER_ACCOUNT;
    if beyond < 0 {
        return Duration::zero();
    }
    let seconds = FIRST_WAIT_SECONDS.saturating_mul(1_i64 << beyond.min(20));
    Duration::seconds(seconds).min(Duration::minutes(WINDOW_MINUTES))
}

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

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000) + Duration::seconds(seconds)
    }

    fn here(count: i64, latest: i64) -> Failures {
        Failures { here: count, latest_here: Some(at(latest)), from_place: count, other_places: 0, of_account: count }
    }

    #[test]
    fn guesses_from_one_place_wait_longer_and_longer_after_the_free_ones() {
        assert_eq!(admits(&here(4, 0), at(0), Device::Unknown), Ok(()));
        assert_eq!(admits(&here(5, 0), at(10), Device::Unknown), Err(Duration::seconds(20)));
        assert_eq!(admits(&here(5, 0), at(30), Device::Unknown), Ok(()));
        assert_eq!(admits(&here(6, 0), at(30), Device::Unknown), Err(Duration::seconds(30)), "60 s after the sixth");
        assert_eq!(wait_after(9), Duration::seconds(480));
        assert_eq!(wait_after(50), Duration::minutes(WINDOW_MINUTES), "never more than the window");
    }

    #[test]
    fn a_strangers_failures_elsewhere_do_not_keep_the_owner_out_but_many_places_do() {
        let owner = Failures { here: 0, latest_here: None, from_place: 0, other_places: 1, of_account: 50 };
        assert_eq!(admits(&owner, at(0), Device::Unknown), Ok(()), "fifty failures from one other place");
        let attacked = Failures { other_places: MAX_FAILING_PLACES_PER_ACCOUNT, ..owner };
        assert!(admits(&attacked, at(0), Device::Unknown).is_err(), "a distributed attack on the account");
        let busy = Failures { from_place: MAX_FAILURES_PER_ADDRESS, ..owner };
        assert!(admits(&busy, at(0), Device::Unknown).is_err(), "a place guessing many accounts");
        // The owner's own browser, known by its device cookie, is not kept out by what strangers did.
        assert_eq!(admits(&attacked, at(0), Device::Known), Ok(()));
        assert_eq!(admits(&busy, at(0), Device::Known), Ok(()));
        let own_guesses = Failures { here: 6, latest_here: Some(at(0)), ..attacked };
        assert!(admits(&own_guesses, at(30), Device::Known).is_err(), "its own failures still wait");
        let guessed_through_a_cookie = Failures { of_account: MAX_FAILURES_PER_ACCOUNT_KNOWN, ..attacked };
        assert!(admits(&guessed_through_a_cookie, at(0), Device::Known).is_err(), "the account's higher cap");
    }

    #[test]
    fn a_device_cookie_is_known_only_for_its_account_in_its_epoch_and_key() {
        let suzuki = DeviceAccount { id: 7, epoch: b"e1" };
        let token = device_token(b"key", suzuki, "n0nce");
        assert_eq!(device_of(b"key", Some(suzuki), Some(&token)), Device::Known);
        let admin = DeviceAccount { id: 1, ..suzuki };
        assert_eq!(device_of(b"key", Some(admin), Some(&token)), Device::Unknown, "another account");
        let later = DeviceAccount { epoch: b"e2", ..suzuki };
        assert_eq!(device_of(b"key", Some(later), Some(&token)), Device::Unknown, "a password change since");
        assert_eq!(device_of(b"key", None, Some(&token)), Device::Unknown, "a name no account holds");
        assert_eq!(device_of(b"other", Some(suzuki), Some(&token)), Device::Unknown, "another installation");
        let forged = format!("{}0", &token[..token.len() - 1]);
        assert_eq!(device_of(b"key", Some(suzuki), Some(&forged)), Device::Unknown);
        assert_eq!(device_of(b"key", Some(suzuki), Some("nonsense")), Device::Unknown);
        assert_eq!(device_of(b"key", Some(suzuki), None), Device::Unknown);
    }

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
