//! SSRF classes of addresses and names.
//!
//! Every address is classified after canonicalisation: IPv4-mapped (`::ffff:a.b.c.d`),
//! IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) addresses
//! carry an IPv4 address that a host or a translator on the path will reach, so they are
//! classified by that address. Ranges follow the IANA special-purpose registries.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::ipv4;

/// What a destination host is, for SSRF purposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostClass {
    /// A globally routable address.
    Public,
    /// A domain name with nothing internal about it; it must still be resolved and every
    /// resolved address checked before connecting.
    PublicName,
    /// 127.0.0.0/8, ::1, `localhost` and `*.localhost`.
    Loopback,
    /// RFC 1918, IPv6 unique-local and site-local ranges.
    Private,
    /// 169.254.0.0/16 and fe80::/10.
    LinkLocal,
    /// 100.64.0.0/10, shared address space (carrier-grade NAT).
    SharedCgnat,
    /// 224.0.0.0/4 and ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 0.0.0.0/8 and `::`: many stacks connect these to the local host.
    Unspecified,
    /// 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// 198.18.0.0/15.
    Benchmark,
    /// Other special-purpose ranges (240.0.0.0/4, 192.0.0.0/24, Teredo, discard-only, …).
    Reserved,
    /// A cloud metadata service address or name.
    Metadata,
    /// A name that only resolves inside a network: single labels, `.internal`, `.local`, ….
    InternalName,
    /// A public name that resolves to or redirects to an internal address by design
    /// (`127.0.0.1.nip.io`, `localtest.me`, rebinding services).
    RebindingName,
}

impl HostClass {
    /// Whether a connection to this host could reach something that is not the public
    /// internet. Only [`HostClass::Public`] and [`HostClass::PublicName`] are external.
    pub fn is_internal(self) -> bool {
        !matches!(self, HostClass::Public | HostClass::PublicName)
    }

    /// The class's name as used in decisions and docs (`loopback`, `metadata`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            HostClass::Public => "public",
            HostClass::PublicName => "public-name",
            HostClass::Loopback => "loopback",
            HostClass::Private => "private",
            HostClass::LinkLocal => "link-local",
            HostClass::SharedCgnat => "cgnat",
            HostClass::Multicast => "multicast",
            HostClass::Broadcast => "broadcast",
            HostClass::Unspecified => "unspecified",
            HostClass::Documentation => "documentation",
            HostClass::Benchmark => "benchmark",
            HostClass::Reserved => "reserved",
            HostClass::Metadata => "metadata",
            HostClass::InternalName => "internal-name",
            HostClass::RebindingName => "rebinding-name",
        }
    }
}

impl fmt::Display for HostClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Cloud metadata services, checked before the range they sit in so the decision says
/// "metadata" rather than "link-local".
const METADATA_V4: &[Ipv4Addr] = &[
    Ipv4Addr::new(169, 254, 169, 254), // AWS, GCP, Azure, OpenStack, DigitalOcean, …
    Ipv4Addr::new(169, 254, 170, 2),   // AWS ECS task metadata
    Ipv4Addr::new(169, 254, 169, 123), // AWS time sync
    Ipv4Addr::new(169, 254, 169, 253), // AWS VPC DNS
    Ipv4Addr::new(100, 100, 100, 200), // Alibaba Cloud
    Ipv4Addr::new(192, 0, 0, 192),     // Oracle Cloud (legacy)
    // Azure's WireServer (agent and extension configuration, certificates): a public
    // address only Azure hosts reach, and one a workload must not be steered to.
    Ipv4Addr::new(168, 63, 129, 16),
];

const METADATA_V6: &[Ipv6Addr] = &[
    Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254), // AWS IMDS over IPv6
    Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0023), // AWS ECS task metadata over IPv6
];

/// Classifies an IP address.
///
/// ```
/// use bulwark_net::{classify_ip, HostClass};
/// assert_eq!(classify_ip("::ffff:127.0.0.1".parse().unwrap()), HostClass::Loopback);
/// assert_eq!(classify_ip("64:ff9b::a9fe:a9fe".parse().unwrap()), HostClass::Metadata);
/// assert_eq!(classify_ip("1.1.1.1".parse().unwrap()), HostClass::Public);
/// ```
pub fn classify_ip(ip: IpAddr) -> HostClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> HostClass {
    if METADATA_V4.contains(&ip) {
        return HostClass::Metadata;
    }
    let o = ip.octets();
    let n = u32::from(ip);
    let in_net = |base: u32, len: u32| n >> (32 - len) == base >> (32 - len);
    match o {
        [0, ..] => HostClass::Unspecified,
        [127, ..] => HostClass::Loopback,
        [10, ..] => HostClass::Private,
        [172, b, ..] if (16..32).contains(&b) => HostClass::Private,
        [192, 168, ..] => HostClass::Private,
        [169, 254, ..] => HostClass::LinkLocal,
        [255, 255, 255, 255] => HostClass::Broadcast,
        _ if in_net(0x6440_0000, 10) => HostClass::SharedCgnat,
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => HostClass::Documentation,
        _ if in_net(0xc612_0000, 15) => HostClass::Benchmark,
        [192, 0, 0, _] | [192, 88, 99, _] => HostClass::Reserved,
        [a, ..] if (224..240).contains(&a) => HostClass::Multicast,
        [a, ..] if a >= 240 => HostClass::Reserved,
        _ => HostClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> HostClass {
    if METADATA_V6.contains(&ip) {
        return HostClass::Metadata;
    }
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let s = ip.segments();
    let n = u128::from(ip);
    let in_net = |base: u128, len: u32| n >> (128 - len) == base >> (128 - len);
    if ip.is_unspecified() {
        HostClass::Unspecified
    } else if ip.is_loopback() {
        HostClass::Loopback
    } else if in_net(0xfe80 << 112, 10) {
        HostClass::LinkLocal
    } else if in_net(0xfc00 << 112, 7) || in_net(0xfec0 << 112, 10) {
        HostClass::Private
    } else if s[0] >> 8 == 0xff {
        HostClass::Multicast
    } else if in_net(0x2001_0db8 << 96, 32) || in_net(0x3fff << 112, 20) {
        HostClass::Documentation
    } else if in_net(0x2001 << 112, 23)
        || in_net(0x0100 << 112, 64)
        || in_net(0x0064_ff9b_0001 << 80, 48)
        // Everything outside 2000::/3 is unallocated or special.
        || !in_net(0x2000 << 112, 3)
    {
        HostClass::Reserved
    } else {
        HostClass::Public
    }
}

/// The IPv4 address an IPv6 address carries, where a stack or translator would reach it.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        // IPv4-mapped ::ffff:a.b.c.d
        [0, 0, 0, 0, 0, 0xffff, ..] => Some(low),
        // IPv4-compatible ::a.b.c.d (deprecated, but some stacks still route it); `::` and
        // `::1` are their own classes.
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 || lo > 1 => Some(low),
        // NAT64 well-known prefix 64:ff9b::/96.
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some(low),
        // 6to4 2002:AABB:CCDD::/48.
        [0x2002, a, b, ..] => Some(Ipv4Addr::new(
            (a >> 8) as u8,
            a as u8,
            (b >> 8) as u8,
            b as u8,
        )),
        _ => None,
    }
}

/// Names of cloud metadata services.
const METADATA_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
    "metadata.azure.internal",
    "metadata.tencentyun.com",
    "metadata.platformequinix.com",
    "metadata.packet.net",
];

/// Suffixes that only resolve inside a network.
const INTERNAL_SUFFIXES: &[&str] = &[
    ".internal",
    ".local",
    ".localdomain",
    ".home.arpa",
    ".lan",
    ".intranet",
    ".corp",
    ".private",
    ".cluster.local",
    ".svc",
];

/// Public services whose purpose is to resolve or redirect to an address named in the label
/// (or always to loopback).
const REBINDING_DOMAINS: &[&str] = &[
    "nip.io",
    "xip.io",
    "sslip.io",
    "traefik.me",
    "localtest.me",
    "lvh.me",
    "vcap.me",
    "lacolhost.com",
    "localh.st",
    "1u.ms",
    "rbndr.us",
    "r3dir.me",
    "spoofed.burpcollaborator.net",
];

/// Classifies a domain name (already lower-case ASCII, as the URL parser leaves it).
///
/// ```
/// use bulwark_net::{classify_domain, HostClass};
/// assert_eq!(classify_domain("metadata.google.internal"), HostClass::Metadata);
/// assert_eq!(classify_domain("127.0.0.1.nip.io"), HostClass::RebindingName);
/// assert_eq!(classify_domain("fcc.gov"), HostClass::PublicName);
/// ```
pub fn classify_domain(name: &str) -> HostClass {
    let name = name.trim_end_matches('.');
    let lower;
    let name = if name.bytes().any(|b| b.is_ascii_uppercase()) {
        lower = name.to_ascii_lowercase();
        lower.as_str()
    } else {
        name
    };
    if let Some(ip) = ipv4::parse_lenient(name) {
        return classify_v4(ip);
    }
    // WHATWG refuses a name whose last label is a number unless it is an address; some
    // parsers instead wrap oversized parts (`383.256.256.257` → 127.0.0.1). Never public.
    let last = name.rsplit('.').next().unwrap_or(name);
    let numeric = !last.is_empty()
        && (last.bytes().all(|b| b.is_ascii_digit())
            || (last.len() > 2
                && (last.starts_with("0x") || last.starts_with("0X"))
                && last[2..].bytes().all(|b| b.is_ascii_hexdigit())));
    if numeric {
        return HostClass::Reserved;
    }
    if name == "localhost" || name.ends_with(".localhost") {
        return HostClass::Loopback;
    }
    if METADATA_NAMES.contains(&name) {
        return HostClass::Metadata;
    }
    if name.is_empty() || !name.contains('.') {
        return HostClass::InternalName;
    }
    if INTERNAL_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return HostClass::InternalName;
    }
    if REBINDING_DOMAINS
        .iter()
        .any(|d| name == *d || name.strip_suffix(d).is_some_and(|p| p.ends_with('.')))
    {
        return HostClass::RebindingName;
    }
    if let Some(ip) = ip_in_labels(name)
        && classify_ip(ip).is_internal()
    {
        return HostClass::RebindingName;
    }
    HostClass::PublicName
}

/// An address spelled out in the leading labels of a name (`10.0.0.1.example`,
/// `10-0-0-1.example`, `7f000001.example`), as wildcard-DNS services answer them.
fn ip_in_labels(name: &str) -> Option<IpAddr> {
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() > 4 {
        let dotted = labels[..4].join(".");
        if labels[..4]
            .iter()
            .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
            && let Ok(ip) = dotted.parse::<Ipv4Addr>()
        {
            return Some(IpAddr::V4(ip));
        }
    }
    for label in labels.iter().take(labels.len().saturating_sub(1)) {
        // dashed form, possibly after a prefix: "app-10-0-0-1", "10-0-0-1"
        let parts: Vec<&str> = label.split('-').collect();
        if parts.len() >= 4 {
            let tail = &parts[parts.len() - 4..];
            if tail
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
                && let Ok(ip) = tail.join(".").parse::<Ipv4Addr>()
            {
                return Some(IpAddr::V4(ip));
            }
            // dashed IPv6, as sslip.io answers "--1" for ::1
        }
        if label.contains("--")
            && let Ok(ip) = label.replace('-', ":").parse::<Ipv6Addr>()
        {
            return Some(IpAddr::V6(ip));
        }
        if label.len() == 8
            && label.bytes().all(|b| b.is_ascii_hexdigit())
            && label.bytes().any(|b| b.is_ascii_digit())
            && let Ok(n) = u32::from_str_radix(label, 16)
        {
            return Some(IpAddr::V4(Ipv4Addr::from(n)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> HostClass {
        classify_ip(s.parse().unwrap())
    }

    #[test]
    fn ipv4_table() {
        let table = [
            ("127.0.0.1", HostClass::Loopback),
            ("127.255.255.254", HostClass::Loopback),
            ("10.1.2.3", HostClass::Private),
            ("172.16.0.1", HostClass::Private),
            ("172.31.255.255", HostClass::Private),
            ("172.32.0.1", HostClass::Public),
            ("172.15.255.255", HostClass::Public),
            ("192.168.1.1", HostClass::Private),
            ("169.254.1.1", HostClass::LinkLocal),
            ("169.254.169.254", HostClass::Metadata),
            ("169.254.170.2", HostClass::Metadata),
            ("100.64.0.1", HostClass::SharedCgnat),
            ("100.127.255.255", HostClass::SharedCgnat),
            ("100.128.0.1", HostClass::Public),
            ("100.100.100.200", HostClass::Metadata),
            ("168.63.129.16", HostClass::Metadata),
            ("0.0.0.0", HostClass::Unspecified),
            ("0.1.2.3", HostClass::Unspecified),
            ("255.255.255.255", HostClass::Broadcast),
            ("224.0.0.1", HostClass::Multicast),
            ("239.255.255.250", HostClass::Multicast),
            ("240.0.0.1", HostClass::Reserved),
            ("192.0.2.1", HostClass::Documentation),
            ("198.51.100.7", HostClass::Documentation),
            ("203.0.113.9", HostClass::Documentation),
            ("198.18.0.1", HostClass::Benchmark),
            ("198.19.255.255", HostClass::Benchmark),
            ("198.20.0.1", HostClass::Public),
            ("192.0.0.8", HostClass::Reserved),
            ("1.1.1.1", HostClass::Public),
            ("8.8.8.8", HostClass::Public),
        ];
        for (ip, class) in table {
            assert_eq!(c(ip), class, "{ip}");
        }
    }

    #[test]
    fn ipv6_table() {
        let table = [
            ("::1", HostClass::Loopback),
            ("::", HostClass::Unspecified),
            ("::ffff:127.0.0.1", HostClass::Loopback),
            ("::ffff:7f00:1", HostClass::Loopback),
            ("::ffff:10.1.2.3", HostClass::Private),
            ("::ffff:169.254.169.254", HostClass::Metadata),
            ("::127.0.0.1", HostClass::Loopback),
            ("::169.254.169.254", HostClass::Metadata),
            ("64:ff9b::7f00:1", HostClass::Loopback),
            ("64:ff9b::a9fe:a9fe", HostClass::Metadata),
            ("64:ff9b::808:808", HostClass::Public),
            ("64:ff9b:1::1", HostClass::Reserved),
            ("2002:7f00:1::", HostClass::Loopback),
            ("2002:a9fe:a9fe::1", HostClass::Metadata),
            ("fe80::1", HostClass::LinkLocal),
            ("febf::1", HostClass::LinkLocal),
            ("fc00::1", HostClass::Private),
            ("fd12:3456::1", HostClass::Private),
            ("fec0::1", HostClass::Private),
            ("fd00:ec2::254", HostClass::Metadata),
            ("ff02::1", HostClass::Multicast),
            ("2001:db8::1", HostClass::Documentation),
            ("3fff::1", HostClass::Documentation),
            ("2001::1", HostClass::Reserved),
            ("100::1", HostClass::Reserved),
            ("4000::1", HostClass::Reserved),
            ("2606:4700:4700::1111", HostClass::Public),
            ("2a00:1450:4001::1", HostClass::Public),
        ];
        for (ip, class) in table {
            assert_eq!(c(ip), class, "{ip}");
        }
    }

    #[test]
    fn name_table() {
        let table = [
            ("localhost", HostClass::Loopback),
            ("LOCALHOST", HostClass::Loopback),
            ("localhost.", HostClass::Loopback),
            ("api.localhost", HostClass::Loopback),
            ("metadata.google.internal", HostClass::Metadata),
            ("metadata", HostClass::Metadata),
            ("instance-data", HostClass::Metadata),
            ("redis", HostClass::InternalName),
            ("db.internal", HostClass::InternalName),
            ("printer.local", HostClass::InternalName),
            ("router.home.arpa", HostClass::InternalName),
            ("127.0.0.1.nip.io", HostClass::RebindingName),
            ("app.10.0.0.1.nip.io", HostClass::RebindingName),
            ("localtest.me", HostClass::RebindingName),
            ("foo.localtest.me", HostClass::RebindingName),
            ("169.254.169.254.example.com", HostClass::RebindingName),
            ("10-0-0-1.example.com", HostClass::RebindingName),
            ("app-192-168-1-1.example.com", HostClass::RebindingName),
            ("7f000001.example.com", HostClass::RebindingName),
            ("--1.example.com", HostClass::RebindingName),
            ("fcc.gov", HostClass::PublicName),
            ("fd.io", HostClass::PublicName),
            ("fe80.example.com", HostClass::PublicName),
            ("fc00.example.com", HostClass::PublicName),
            ("localhost.example.com", HostClass::PublicName),
            ("metadata.example.com", HostClass::PublicName),
            ("internal.example.com", HostClass::PublicName),
            ("8-8-8-8.example.com", HostClass::PublicName),
            ("deadbeef.example.com", HostClass::PublicName),
            ("example.com", HostClass::PublicName),
            ("notnip.io", HostClass::PublicName),
            ("2130706433", HostClass::Loopback),
            ("0x7f.1", HostClass::Loopback),
            ("383.256.256.257", HostClass::Reserved),
            ("425.510.425.510", HostClass::Reserved),
            ("example.123", HostClass::Reserved),
        ];
        for (name, class) in table {
            assert_eq!(classify_domain(name), class, "{name}");
        }
    }
}
