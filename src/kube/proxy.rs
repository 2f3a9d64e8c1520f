//! Which proxy a request to the API server goes through, one rule for every command and
//! the webhook (docs/cli.md, "Reaching the cluster"):
//!
//! 1. the cluster's kubeconfig `proxy-url`, when set: every request goes through it
//!    (client-go: `http.ProxyURL`);
//! 2. else the environment, as kubectl reads it (Go's `http.ProxyFromEnvironment`,
//!    `golang.org/x/net/http/httpproxy`): `HTTPS_PROXY` (or `https_proxy`) for an `https://`
//!    server, unless the server is `localhost` or a loopback address, or `NO_PROXY` (or
//!    `no_proxy`) names it;
//! 3. else no proxy.
//!
//! reqwest's own reading of the environment is switched off (it would proxy loopback and
//! read `ALL_PROXY`, which kubectl does not): this module is the only rule.
//!
//! Proxies are `http://` or `https://` (CONNECT tunnels); `socks5://` is refused, since
//! mansign's HTTP client is built without SOCKS support.

use std::net::IpAddr;

/// Where the proxy rule came from (for messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ProxySource {
    ProxyUrl,
    Environment(&'static str),
}

impl std::fmt::Display for ProxySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxySource::ProxyUrl => f.write_str("cluster proxy-url"),
            ProxySource::Environment(name) => write!(f, "${name}"),
        }
    }
}

/// The proxy for `server` (an `https://` URL), or `None`: direct.
pub(super) fn choose(
    server: &url::Url,
    proxy_url: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<(url::Url, ProxySource)>, String> {
    if let Some(proxy) = proxy_url {
        return proxy_address(proxy, ProxySource::ProxyUrl).map(Some);
    }
    let pick = |names: [&'static str; 2]| {
        names
            .into_iter()
            .find_map(|n| env(n).filter(|v| !v.is_empty()).map(|v| (n, v)))
    };
    let Some((name, proxy)) = pick(["HTTPS_PROXY", "https_proxy"]) else {
        return Ok(None);
    };
    let no_proxy = pick(["NO_PROXY", "no_proxy"])
        .map(|(_, v)| v)
        .unwrap_or_default();
    if !use_proxy(server, &no_proxy) {
        return Ok(None);
    }
    proxy_address(&proxy, ProxySource::Environment(name)).map(Some)
}

/// A proxy address as Go reads it: without a scheme, `http://` is meant.
fn proxy_address(text: &str, source: ProxySource) -> Result<(url::Url, ProxySource), String> {
    let with_scheme = if text.contains("://") {
        text.to_string()
    } else {
        format!("http://{text}")
    };
    let url = url::Url::parse(&with_scheme)
        .map_err(|e| format!("{source} {:?}: not a URL: {e}", redact(text)))?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some() => Ok((url, source)),
        "socks5" | "socks5h" => Err(format!(
            "{source}: a socks5 proxy is not supported (mansign's HTTP client is built without \
             SOCKS); use an HTTP CONNECT proxy (http:// or https://)"
        )),
        other => Err(format!(
            "{source}: proxy scheme {other:?} is not supported (http:// or https://)"
        )),
    }
}

/// A proxy address with any password hidden.
fn redact(text: &str) -> String {
    match text.split_once('@') {
        Some((_, host)) => format!("…@{host}"),
        None => text.to_string(),
    }
}

/// Go's `useProxy`: loopback and `localhost` never; else unless a `NO_PROXY` entry matches.
fn use_proxy(server: &url::Url, no_proxy: &str) -> bool {
    let Some(host) = server.host_str() else {
        return false;
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let port = server.port_or_known_default();
    if host == "localhost" {
        return false;
    }
    let ip = host.parse::<IpAddr>().ok();
    if ip.is_some_and(|ip| ip.is_loopback()) {
        return false;
    }
    for entry in no_proxy.split(',') {
        let entry = entry.trim().to_ascii_lowercase();
        if entry.is_empty() {
            continue;
        }
        if entry == "*" {
            return false;
        }
        if let Some((net, bits)) = entry.split_once('/') {
            if let (Some(ip), Ok(net), Ok(bits)) = (ip, net.parse::<IpAddr>(), bits.parse::<u8>())
                && in_network(ip, net, bits)
            {
                return false;
            }
            continue;
        }
        // An entry may carry a port (`host:port`, `[v6]:port`); it then matches only it.
        let (entry_host, entry_port) = split_port(&entry);
        if entry_port.is_some() && entry_port != port {
            continue;
        }
        if let Ok(entry_ip) = entry_host.parse::<IpAddr>() {
            if ip == Some(entry_ip) {
                return false;
            }
            continue;
        }
        // `.example.com` and `*.example.com`: subdomains only; `example.com`: it and its
        // subdomains.
        let domain = entry_host.strip_prefix('*').unwrap_or(entry_host);
        let matched = if let Some(suffix) = domain.strip_prefix('.') {
            host.ends_with(&format!(".{suffix}"))
        } else {
            host == domain || host.ends_with(&format!(".{domain}"))
        };
        if matched {
            return false;
        }
    }
    true
}

fn split_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (entry, None),
        };
    }
    match entry.rsplit_once(':') {
        // One colon: host:port; more: a bare IPv6 address.
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(p) => (host, Some(p)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn proxied(server: &str, vars: &[(&str, &str)]) -> Option<String> {
        choose(&url::Url::parse(server).unwrap(), None, env(vars))
            .unwrap()
            .map(|(u, _)| u.to_string())
    }

    #[test]
    fn proxy_url_wins_over_the_environment_and_proxies_loopback_too() {
        let (url, source) = choose(
            &url::Url::parse("https://127.0.0.1:6443").unwrap(),
            Some("http://127.0.0.1:3128"),
            env(&[("HTTPS_PROXY", "http://other:1"), ("NO_PROXY", "*")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:3128/");
        assert_eq!(source, ProxySource::ProxyUrl);
    }

    #[test]
    fn the_environment_is_read_as_go_reads_it() {
        let p = Some("http://proxy:3128/".to_string());
        assert_eq!(
            proxied("https://api.example.com", &[("HTTPS_PROXY", "proxy:3128")]),
            p
        );
        assert_eq!(
            proxied("https://api.example.com", &[("https_proxy", "proxy:3128")]),
            p
        );
        // HTTP_PROXY is for http:// servers; an API server is https://.
        assert_eq!(
            proxied("https://api.example.com", &[("HTTP_PROXY", "proxy:3128")]),
            None
        );
        // Loopback and localhost are never proxied from the environment.
        for server in [
            "https://127.0.0.1:6443",
            "https://[::1]:6443",
            "https://localhost:6443",
        ] {
            assert_eq!(proxied(server, &[("HTTPS_PROXY", "proxy:3128")]), None);
        }
        for (no_proxy, server, bypass) in [
            ("*", "https://api.example.com", true),
            ("example.com", "https://api.example.com", true),
            ("example.com", "https://example.com", true),
            (".example.com", "https://example.com", false),
            (".example.com", "https://api.example.com", true),
            ("*.example.com", "https://api.example.com", true),
            ("ample.com", "https://api.example.com", false),
            ("10.0.0.0/8", "https://10.1.2.3", true),
            ("10.0.0.0/8", "https://11.1.2.3", false),
            ("10.1.2.3", "https://10.1.2.3:6443", true),
            ("api.example.com:6443", "https://api.example.com:6443", true),
            ("api.example.com:443", "https://api.example.com:6443", false),
            (" other , API.example.com ", "https://api.example.com", true),
            ("fd00::/8", "https://[fd00::1]:6443", true),
        ] {
            let got = proxied(
                server,
                &[("HTTPS_PROXY", "http://proxy:3128"), ("NO_PROXY", no_proxy)],
            );
            assert_eq!(got.is_none(), bypass, "NO_PROXY={no_proxy} {server}");
        }
    }

    #[test]
    fn socks_and_other_schemes_are_refused_with_the_source_named() {
        let server = url::Url::parse("https://api.example.com").unwrap();
        let e = choose(&server, Some("socks5://127.0.0.1:1080"), env(&[])).unwrap_err();
        assert!(e.contains("cluster proxy-url: a socks5 proxy"), "{e}");
        let e = choose(&server, None, env(&[("HTTPS_PROXY", "ftp://p")])).unwrap_err();
        assert!(e.contains("$HTTPS_PROXY: proxy scheme \"ftp\""), "{e}");
        let e = choose(&server, Some("http://user:secret@[::1"), env(&[])).unwrap_err();
        assert!(!e.contains("secret"), "{e}");
    }
}
