//! `--engine` values: which engines, each a docker context or URL with its
//! own `jobs`, and whether an engine URL is on this machine.

use crate::docker::Endpoint;
use crate::error::{Error, Result};

/// One `--engine` value: `CONTEXT` or `URL`, with optional `,jobs=N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EngineSpec {
    /// The value as the user gave it, without its options (for reports).
    pub label: String,
    pub endpoint: Endpoint,
    pub jobs: Option<usize>,
}

/// Parses one `--engine` value.
pub(crate) fn parse_engine(value: &str) -> Result<EngineSpec> {
    let bad = |why: &str| Error::invalid("--engine", crate::console::quote(value), why);
    let mut parts = value.split(',');
    let address = parts.next().unwrap_or_default();
    let mut jobs = None;
    for option in parts {
        match option.split_once('=') {
            Some(("jobs", n)) => match n.parse::<usize>() {
                Ok(n) if n >= 1 => jobs = Some(n),
                _ => return Err(bad("jobs= expects a whole number of at least 1")),
            },
            _ => return Err(bad("the only option is jobs=N")),
        }
    }
    if address.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("it contains white space or control characters"));
    }
    let endpoint = if let Some((scheme, rest)) = address.split_once("://") {
        if !matches!(scheme, "unix" | "tcp" | "ssh") {
            return Err(bad(
                "expected a unix://, tcp:// or ssh:// URL, or a docker context name",
            ));
        }
        if rest.is_empty() {
            return Err(bad("the URL names no engine"));
        }
        if scheme == "tcp" && rest.split('/').next().unwrap_or_default().contains('@') {
            return Err(bad(
                "a tcp:// URL has no user part (docker would connect to the host after `@`)",
            ));
        }
        Endpoint::Url(address.to_string())
    } else {
        let context_name = !address.is_empty()
            && address.starts_with(|c: char| c.is_ascii_alphanumeric())
            && address
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c));
        if !context_name {
            return Err(bad(
                "expected a docker context name (letters, digits, `_.+-`) or a unix://, tcp:// or ssh:// URL",
            ));
        }
        Endpoint::Context(address.to_string())
    };
    Ok(EngineSpec {
        label: address.to_string(),
        endpoint,
        jobs,
    })
}

/// Parses every `--engine` value; the same engine twice is refused.
pub(crate) fn parse_engines(values: &[String]) -> Result<Vec<EngineSpec>> {
    let specs = values
        .iter()
        .map(|v| parse_engine(v))
        .collect::<Result<Vec<_>>>()?;
    for (i, spec) in specs.iter().enumerate() {
        if specs[..i].iter().any(|s| s.endpoint == spec.endpoint) {
            return Err(Error::Usage(format!(
                "--engine {} is given twice",
                crate::console::quote(&spec.label)
            )));
        }
    }
    Ok(specs)
}

/// Whether an engine URL is on this machine, so that a bind mount names a
/// file the engine can see: a unix socket, or TCP to a loopback address.
pub(crate) fn url_is_local(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    match scheme {
        "unix" => true,
        "tcp" => {
            let authority = rest.split('/').next().unwrap_or_default();
            if authority.contains('@') {
                return false;
            }
            let host = if let Some(bracketed) = authority.strip_prefix('[') {
                bracketed.split(']').next().unwrap_or_default()
            } else {
                authority.split(':').next().unwrap_or_default()
            };
            host == "localhost"
                || host == "::1"
                || host
                    .parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_values() {
        let spec = parse_engine("ssh://me@gpu-box,jobs=8").unwrap();
        assert_eq!(spec.endpoint, Endpoint::Url("ssh://me@gpu-box".into()));
        assert_eq!(spec.jobs, Some(8));
        assert_eq!(spec.label, "ssh://me@gpu-box");
        let spec = parse_engine("build-2").unwrap();
        assert_eq!(spec.endpoint, Endpoint::Context("build-2".into()));
        assert_eq!(spec.jobs, None);
        assert_eq!(
            parse_engine("unix:///run/d.sock").unwrap().endpoint,
            Endpoint::Url("unix:///run/d.sock".into())
        );
        for bad in [
            "",
            "-H",
            "--host=x",
            "http://x",
            "tcp://",
            "a b",
            "ctx,jobs=0",
            "ctx,jobs=x",
            "ctx,cpus=2",
            "ctx/../x",
            "tcp://h\n",
            "tcp://127.0.0.1:1@gpu-box:2376",
        ] {
            assert!(parse_engine(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(parse_engines(&["a".into(), "a,jobs=2".into()]).is_err());
        assert_eq!(parse_engines(&["a".into(), "b".into()]).unwrap().len(), 2);
    }

    #[test]
    fn local_urls() {
        for local in [
            "unix:///var/run/docker.sock",
            "tcp://127.0.0.1:2375",
            "tcp://127.1.2.3:2375",
            "tcp://localhost:2375",
            "tcp://[::1]:2375",
        ] {
            assert!(url_is_local(local), "{local}");
        }
        for remote in [
            "tcp://10.0.0.2:2376",
            "tcp://gpu-box:2376",
            "ssh://me@gpu-box",
            "ssh://127.0.0.1",
            "tcp://127.0.0.1.evil.example:2375",
            "tcp://127.0.0.1:1@gpu-box:2376",
            "nonsense",
        ] {
            assert!(!url_is_local(remote), "{remote}");
        }
    }
}
