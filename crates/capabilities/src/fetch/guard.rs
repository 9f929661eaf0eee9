//! The address guard: which IP addresses count as public, a DNS resolver that drops the
//! rest, and a redirect policy that refuses non-public IP literals and non-http(s)
//! schemes, each reporting a typed [`Refusal`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::Policy;
use url::{Host, Url};

use crate::http::Refusal;

/// Whether `ip` is a public, globally routable unicast address that a fetcher may connect
/// to.
///
/// `false` for private ranges (10/8, 172.16/12, 192.168/16), loopback, link-local
/// (169.254/16, which holds the cloud metadata address 169.254.169.254, and fe80::/10),
/// unspecified and "this network" (0.0.0.0/8, `::`), broadcast, carrier-grade NAT
/// (100.64/10), the documentation and benchmarking ranges, IETF protocol assignments,
/// multicast, reserved 240/4, unique-local fc00::/7, any IPv6 outside global unicast
/// 2000::/3, and IPv4 addresses embedded in IPv6 (mapped `::ffff:a.b.c.d`, NAT64, 6to4)
/// when the embedded address is not public.
///
/// ```
/// use std::net::IpAddr;
/// use job_capabilities::fetch::is_public_address;
/// let ip = |s: &str| s.parse::<IpAddr>().unwrap();
/// assert!(is_public_address(ip("93.184.215.14")));
/// assert!(!is_public_address(ip("169.254.169.254")));
/// assert!(!is_public_address(ip("::ffff:10.0.0.1")));
/// ```
pub fn is_public_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let reserved = a == 0 // "this network", incl. 0.0.0.0
        || a == 10 // private
        || (a == 100 && (b & 0xC0) == 64) // carrier-grade NAT 100.64/10
        || a == 127 // loopback
        || (a == 169 && b == 254) // link-local, cloud metadata
        || (a == 172 && (b & 0xF0) == 16) // private 172.16/12
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // TEST-NET-1
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168) // private
        || (a == 198 && (b & 0xFE) == 18) // benchmarking 198.18/15
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // TEST-NET-3
        || a >= 224; // multicast 224/4, reserved 240/4, broadcast
    !reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    // Only global unicast is routable on the internet; this also rules out `::`, `::1`,
    // fc00::/7, fe80::/10, fec0::/10 and ff00::/8.
    let global_unicast = (s[0] & 0xE000) == 0x2000;
    let reserved = match s[0] {
        // IETF protocol assignments incl. Teredo (2001::/23), documentation 2001:db8::/32.
        0x2001 => s[1] < 0x0200 || s[1] == 0x0db8,
        // Documentation 3fff::/20.
        0x3fff => s[1] < 0x1000,
        _ => false,
    };
    global_unicast && !reserved
}

/// The IPv4 address carried by an IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4 (2002::/16)
/// IPv6 address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let last = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(last(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(last(s[1], s[2]));
    }
    None
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Whether the guard lets a connection to `ip` through.
pub(super) fn permitted(ip: IpAddr, allow_loopback: bool) -> bool {
    is_public_address(ip) || (allow_loopback && is_loopback(ip))
}

/// Refuses a URL that is not http(s), or whose host is a non-public IP literal (IP
/// literals never reach the resolver).
pub(super) fn check_target(url: &Url, allow_loopback: bool) -> Result<(), Refusal> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refusal::Scheme {
            target: url.to_string(),
        });
    }
    let ip = match url.host() {
        Some(Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(Host::Ipv6(v6)) => IpAddr::V6(v6),
        Some(Host::Domain(_)) => return Ok(()),
        None => {
            return Err(Refusal::Scheme {
                target: url.to_string(),
            });
        }
    };
    if permitted(ip, allow_loopback) {
        Ok(())
    } else {
        Err(Refusal::Address {
            address: ip,
            target: url.to_string(),
        })
    }
}

/// Decides one redirect: `hop` is its ordinal (1 for the first redirect).
pub(super) fn check_redirect(
    next: &Url,
    hop: usize,
    max_redirects: usize,
    allow_loopback: bool,
) -> Result<(), Refusal> {
    if hop > max_redirects {
        return Err(Refusal::TooManyRedirects {
            limit: max_redirects,
            target: next.to_string(),
        });
    }
    check_target(next, allow_loopback)
}

/// A redirect policy applying [`check_redirect`] to every hop.
pub(super) fn redirect_policy(max_redirects: usize, allow_loopback: bool) -> Policy {
    Policy::custom(move |attempt| {
        // `previous` holds the initial URL and every earlier hop.
        let hop = attempt.previous().len();
        match check_redirect(attempt.url(), hop, max_redirects, allow_loopback) {
            Ok(()) => attempt.follow(),
            Err(refusal) => {
                tracing::warn!(%refusal, "redirect refused");
                attempt.error(refusal)
            }
        }
    })
}

/// A DNS resolver that resolves with the system resolver and drops every address the
/// guard does not permit, failing when none remain. Reqwest connects only to the
/// addresses returned here, so a host name cannot smuggle in a private address, and
/// there is no second lookup to rebind.
#[derive(Debug, Clone, Copy)]
pub(super) struct GuardedResolver {
    pub(super) allow_loopback: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_loopback = self.allow_loopback;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (allowed, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = resolved
                .into_iter()
                .partition(|addr| permitted(addr.ip(), allow_loopback));
            if allowed.is_empty() {
                let Some(first) = refused.first() else {
                    return Err(format!("no addresses found for {host}").into());
                };
                let refusal = Refusal::Address {
                    address: first.ip(),
                    target: host,
                };
                tracing::warn!(%refusal, "host resolves only to non-public addresses");
                return Err(refusal.into());
            }
            if !refused.is_empty() {
                tracing::debug!(%host, dropped = refused.len(), "dropped non-public addresses");
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn redirects_to_loopback_and_metadata_are_refused_when_loopback_is_not_allowed() {
        let url = |s: &str| Url::parse(s).unwrap();
        assert!(matches!(
            check_redirect(&url("http://127.0.0.1:1/"), 1, 5, false),
            Err(Refusal::Address { .. })
        ));
        assert!(check_redirect(&url("http://127.0.0.1:1/"), 1, 5, true).is_ok());
        assert!(matches!(
            check_redirect(&url("http://169.254.169.254/latest/meta-data"), 1, 5, true),
            Err(Refusal::Address { .. })
        ));
        assert!(matches!(
            check_redirect(&url("http://example.com/"), 6, 5, false),
            Err(Refusal::TooManyRedirects { limit: 5, .. })
        ));
        assert!(check_redirect(&url("https://example.com/"), 5, 5, false).is_ok());
        // Odd spellings of an IPv4 literal are normalised by the URL parser.
        assert!(matches!(
            check_target(&url("http://0x7f.1/"), false),
            Err(Refusal::Address { .. })
        ));
        assert!(matches!(
            check_target(&url("file:///etc/passwd"), false),
            Err(Refusal::Scheme { .. })
        ));
    }
}
