//! The names a server certificate carries (its subject alternative names), and the one a
//! connection that checks only the chain hands to the driver as the name to verify.
//!
//! The driver (mysql_async) always checks a name when it checks the chain. For `verify-ca`
//! (and `prefer`/`require` with a root file) the name must not matter, so the connection asks
//! the driver to verify a name the verified certificate is known to carry: the host as given
//! when the certificate names it, else one of its DNS names or IP addresses. Choosing a name
//! changes only which name is compared; the chain is still verified against the root file, so
//! what the connection accepts is exactly what `verify-ca` accepts.

use std::net::IpAddr;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::server::ParsedCertificate;

/// A name in a certificate's subject alternative names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SanName {
    /// A `dNSName` (possibly a wildcard such as `*.example.com`).
    Dns(String),
    /// An `iPAddress`.
    Ip(IpAddr),
}

/// One DER element: its tag, its contents, and what follows it.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    // Multi-byte tags appear nowhere on the path to the names.
    if tag & 0x1f == 0x1f {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// The elements of a constructed element's contents, in order (stops at the first malformed
/// one).
fn elements(mut der: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    std::iter::from_fn(move || {
        let (tag, contents, rest) = element(der)?;
        der = rest;
        Some((tag, contents))
    })
}

const SEQUENCE: u8 = 0x30;
const OID: u8 = 0x06;
const OCTET_STRING: u8 = 0x04;
/// `extensions [3] EXPLICIT` in `TBSCertificate`.
const EXTENSIONS: u8 = 0xa3;
/// id-ce-subjectAltName, 2.5.29.17.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
/// `dNSName [2] IA5String` and `iPAddress [7] OCTET STRING` in `GeneralName`.
const DNS_NAME: u8 = 0x82;
const IP_ADDRESS: u8 = 0x87;

/// The DNS names and IP addresses in the subject alternative names of the DER certificate
/// `der`, in order; empty when it has none or cannot be read.
pub(super) fn subject_alt_names(der: &[u8]) -> Vec<SanName> {
    let tbs = element(der)
        .filter(|(tag, ..)| *tag == SEQUENCE)
        .and_then(|(_, cert, _)| element(cert))
        .filter(|(tag, ..)| *tag == SEQUENCE);
    let Some((_, tbs, _)) = tbs else {
        return Vec::new();
    };
    let Some((_, extensions)) = elements(tbs).find(|(tag, _)| *tag == EXTENSIONS) else {
        return Vec::new();
    };
    let Some((SEQUENCE, extensions, _)) = element(extensions) else {
        return Vec::new();
    };
    let san = elements(extensions)
        .filter(|(tag, _)| *tag == SEQUENCE)
        .find_map(|(_, ext)| {
            let mut parts = elements(ext);
            match parts.next() {
                Some((OID, oid)) if oid == SUBJECT_ALT_NAME => {}
                _ => return None,
            }
            // `critical BOOLEAN DEFAULT FALSE` may come before the value.
            parts.find(|(tag, _)| *tag == OCTET_STRING).map(|(_, v)| v)
        });
    let Some((SEQUENCE, names, _)) = san.and_then(element) else {
        return Vec::new();
    };
    elements(names)
        .filter_map(|(tag, value)| match tag {
            DNS_NAME => std::str::from_utf8(value)
                .ok()
                .map(|s| SanName::Dns(s.to_owned())),
            IP_ADDRESS => match value.len() {
                4 => <[u8; 4]>::try_from(value)
                    .ok()
                    .map(|b| SanName::Ip(IpAddr::from(b))),
                16 => <[u8; 16]>::try_from(value)
                    .ok()
                    .map(|b| SanName::Ip(IpAddr::from(b))),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// A host name `name` stands for: a wildcard's first label replaced by a concrete one.
fn candidate(name: &SanName) -> String {
    match name {
        SanName::Dns(d) => match d.strip_prefix("*.") {
            Some(rest) => format!("wildcard.{rest}"),
            None => d.clone(),
        },
        SanName::Ip(ip) => ip.to_string(),
    }
}

/// The name to verify `cert` against: `host` when the certificate is valid for it, else the
/// first of its subject alternative names it is valid for (each checked by rustls, as the
/// driver will check it). `None` when the certificate names nothing usable (for instance a
/// certificate with only a common name, which rustls never matches).
pub(super) fn name_to_verify(cert: &CertificateDer<'_>, host: &str) -> Option<String> {
    let parsed = ParsedCertificate::try_from(cert).ok()?;
    let valid = |name: &str| {
        ServerName::try_from(name)
            .is_ok_and(|sn| rustls::client::verify_server_name(&parsed, &sn).is_ok())
    };
    if valid(host) {
        return Some(host.to_owned());
    }
    subject_alt_names(cert)
        .iter()
        .map(candidate)
        .find(|c| valid(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair, SanType};

    fn cert(sans: Vec<SanType>) -> CertificateDer<'static> {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.subject_alt_names = sans;
        p.self_signed(&KeyPair::generate().unwrap())
            .unwrap()
            .der()
            .clone()
    }

    fn dns(s: &str) -> SanType {
        SanType::DnsName(s.try_into().unwrap())
    }

    #[test]
    fn dns_names_and_addresses_are_read_in_order() {
        let c = cert(vec![
            dns("db.example.com"),
            SanType::IpAddress("10.0.0.5".parse().unwrap()),
            SanType::URI("spiffe://x/y".try_into().unwrap()),
            SanType::IpAddress("::1".parse().unwrap()),
            dns("*.db.example.com"),
        ]);
        assert_eq!(
            subject_alt_names(&c),
            vec![
                SanName::Dns("db.example.com".into()),
                SanName::Ip("10.0.0.5".parse().unwrap()),
                SanName::Ip("::1".parse().unwrap()),
                SanName::Dns("*.db.example.com".into()),
            ]
        );
    }

    #[test]
    fn the_host_is_kept_when_the_certificate_names_it() {
        let c = cert(vec![
            dns("localhost"),
            SanType::IpAddress([127, 0, 0, 1].into()),
        ]);
        assert_eq!(
            name_to_verify(&c, "127.0.0.1").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(
            name_to_verify(&c, "localhost").as_deref(),
            Some("localhost")
        );
        assert_eq!(name_to_verify(&c, "10.1.1.1").as_deref(), Some("localhost"));
    }

    #[test]
    fn an_address_or_a_wildcard_stands_in_for_another_host() {
        let ip_only = cert(vec![SanType::IpAddress("10.0.0.5".parse().unwrap())]);
        assert_eq!(name_to_verify(&ip_only, "db").as_deref(), Some("10.0.0.5"));
        let wild = cert(vec![dns("*.example.com")]);
        assert_eq!(
            name_to_verify(&wild, "a.example.com").as_deref(),
            Some("a.example.com")
        );
        assert_eq!(
            name_to_verify(&wild, "127.0.0.1").as_deref(),
            Some("wildcard.example.com")
        );
    }

    #[test]
    fn a_certificate_without_names_has_none_to_verify() {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "MySQL_Server_Auto_Generated");
        let c = p
            .self_signed(&KeyPair::generate().unwrap())
            .unwrap()
            .der()
            .clone();
        assert!(subject_alt_names(&c).is_empty());
        assert_eq!(name_to_verify(&c, "localhost"), None);
    }

    #[test]
    fn malformed_input_gives_no_names_and_no_panic() {
        let good = cert(vec![dns("localhost")]);
        for cut in 0..good.len() {
            let _ = subject_alt_names(&good[..cut]);
        }
        for junk in [
            &[][..],
            &[0x30],
            &[0x30, 0x84, 0xff, 0xff, 0xff, 0xff],
            &[0x1f, 0, 0],
        ] {
            assert!(subject_alt_names(junk).is_empty());
        }
        let mut flipped = good.to_vec();
        for i in 0..flipped.len() {
            flipped[i] ^= 0xff;
            let _ = subject_alt_names(&flipped);
            flipped[i] ^= 0xff;
        }
    }
}
