//! `--web.config.file`: TLS and basic authentication in the format of Prometheus's
//! exporter-toolkit, so the file `node_exporter` and dcgm-exporter nodes already have works here
//! unchanged (<https://prometheus.io/docs/prometheus/latest/configuration/https/>).
//!
//! Read: `tls_server_config` (`cert_file`, `key_file`, `client_auth_type`, `client_ca_file`,
//! `min_version`, `max_version`) and `basic_auth_users` (bcrypt hashes). A setting gpuwatch
//! does not apply is refused by name, never ignored: a security setting silently dropped is
//! worse than an error. Paths are relative to the file's directory, as exporter-toolkit reads
//! them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    tls_server_config: Option<TlsFile>,
    basic_auth_users: Option<BTreeMap<String, String>>,
    /// exporter-toolkit's HTTP/2 and header settings: only `headers` is refused below.
    http_server_config: Option<serde_norway::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
    client_auth_type: Option<String>,
    client_ca_file: Option<PathBuf>,
    min_version: Option<String>,
    max_version: Option<String>,
    // Accepted by exporter-toolkit, refused here by name (see `refuse`).
    cert: Option<serde_norway::Value>,
    key: Option<serde_norway::Value>,
    client_allowed_sans: Option<serde_norway::Value>,
    cipher_suites: Option<serde_norway::Value>,
    curve_preferences: Option<serde_norway::Value>,
    prefer_server_cipher_suites: Option<serde_norway::Value>,
}

/// What the file asks for, ready to serve with.
pub struct WebConfig {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// User name to bcrypt hash; empty: no authentication.
    pub users: BTreeMap<String, String>,
}

impl WebConfig {
    /// Reads and checks the file; every error names the file and what to change.
    pub fn load(path: &Path) -> Result<WebConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the web config {}", path.display()))?;
        let file: File = serde_norway::from_str(&text).map_err(|e| {
            anyhow!(
                "{} is not a web config gpuwatch can read: {} (the format of Prometheus's \
                 exporter-toolkit: tls_server_config, basic_auth_users)",
                path.display(),
                without_values(&e.to_string())
            )
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let users = file.basic_auth_users.unwrap_or_default();
        for (user, hash) in &users {
            if !hash.starts_with("$2") {
                bail!(
                    "{}: the password of {user:?} is not a bcrypt hash (make one with \
                     `htpasswd -nBC 10 {user}` and keep what follows the colon)",
                    path.display()
                );
            }
        }
        if file
            .http_server_config
            .as_ref()
            .and_then(|v| v.get("headers"))
            .is_some()
        {
            bail!(
                "{}: http_server_config.headers is not supported by gpuwatch; remove it",
                path.display()
            );
        }
        let tls = file
            .tls_server_config
            .map(|t| tls_config(&t, dir, path))
            .transpose()?;
        Ok(WebConfig {
            tls: tls.map(Arc::new),
            users,
        })
    }
}

fn refuse(t: &TlsFile, file: &Path) -> Result<()> {
    let unsupported = [
        ("cert", t.cert.is_some()),
        ("key", t.key.is_some()),
        ("client_allowed_sans", t.client_allowed_sans.is_some()),
        ("cipher_suites", t.cipher_suites.is_some()),
        ("curve_preferences", t.curve_preferences.is_some()),
        (
            "prefer_server_cipher_suites",
            t.prefer_server_cipher_suites.is_some(),
        ),
    ];
    if let Some((name, _)) = unsupported.iter().find(|(_, set)| *set) {
        bail!(
            "{}: tls_server_config.{name} is not supported by gpuwatch (it uses rustls' safe \
             defaults; certificates from cert_file and key_file); remove it",
            file.display()
        );
    }
    Ok(())
}

fn tls_config(t: &TlsFile, dir: &Path, file: &Path) -> Result<rustls::ServerConfig> {
    refuse(t, file)?;
    no_pem_pasted(t, file)?;
    let (Some(cert), Some(key)) = (&t.cert_file, &t.key_file) else {
        bail!(
            "{}: tls_server_config needs cert_file and key_file",
            file.display()
        );
    };
    let certs = read_certs(&dir.join(cert))?;
    let key_path = dir.join(key);
    let key_pem = std::fs::read(&key_path)
        .with_context(|| format!("cannot read the TLS key {}", key_path.display()))?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| anyhow!("{} holds no PEM private key: {e}", key_path.display()))?;
    let versions = versions(t, file)?;
    let builder = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&versions)
    .map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let auth = t.client_auth_type.as_deref().unwrap_or("NoClientCert");
    let builder = match auth {
        "NoClientCert" => builder.with_no_client_auth(),
        "RequireAndVerifyClientCert" | "VerifyClientCertIfGiven" => {
            builder.with_client_cert_verifier(client_verifier(t, auth, dir, file)?)
        }
        other => bail!(
            "{}: client_auth_type {other} is not supported by gpuwatch (NoClientCert, \
             VerifyClientCertIfGiven or RequireAndVerifyClientCert)",
            file.display()
        ),
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| {
        anyhow!(
            "{}: the certificate and key do not go together: {e}",
            file.display()
        )
    })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Checks client certificates against `client_ca_file`; `VerifyClientCertIfGiven` lets a
/// client without one in.
fn client_verifier(
    t: &TlsFile,
    auth: &str,
    dir: &Path,
    file: &Path,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>> {
    let Some(ca) = &t.client_ca_file else {
        bail!(
            "{}: client_auth_type {auth} needs client_ca_file",
            file.display()
        );
    };
    let mut roots = rustls::RootCertStore::empty();
    for c in read_certs(&dir.join(ca))? {
        roots
            .add(c)
            .map_err(|e| anyhow!("{}: a client CA certificate: {e}", file.display()))?;
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(rustls::crypto::ring::default_provider()),
    );
    let verifier = if auth == "VerifyClientCertIfGiven" {
        verifier.allow_unauthenticated()
    } else {
        verifier
    };
    verifier
        .build()
        .map_err(|e| anyhow!("{}: client_ca_file: {e}", file.display()))
}

fn versions(t: &TlsFile, file: &Path) -> Result<Vec<&'static rustls::SupportedProtocolVersion>> {
    let rank = |v: &str| match v {
        "TLS12" => Ok(12),
        "TLS13" => Ok(13),
        "TLS10" | "TLS11" => bail!(
            "{}: {v} is not offered by gpuwatch (rustls speaks TLS 1.2 and 1.3); use TLS12",
            file.display()
        ),
        other => bail!(
            "{}: unknown TLS version {other} (TLS12 or TLS13)",
            file.display()
        ),
    };
    let min = t.min_version.as_deref().map_or(Ok(12), rank)?;
    let max = t.max_version.as_deref().map_or(Ok(13), rank)?;
    let all = [(12, &rustls::version::TLS12), (13, &rustls::version::TLS13)];
    let chosen: Vec<_> = all
        .iter()
        .filter(|(r, _)| (min..=max).contains(r))
        .map(|(_, v)| *v)
        .collect();
    if chosen.is_empty() {
        bail!("{}: min_version is above max_version", file.display());
    }
    Ok(chosen)
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let pem = std::fs::read(path)
        .with_context(|| format!("cannot read the certificate {}", path.display()))?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        bail!("{} holds no PEM certificate", path.display());
    }
    Ok(certs)
}

/// Checks an `Authorization` header against the users; bcrypt is slow on purpose, so the
/// caller runs this off the server's thread.
#[must_use]
pub fn authorized(users: &BTreeMap<String, String>, header: Option<&str>) -> bool {
    use base64::Engine as _;
    let Some(encoded) = header.and_then(|h| h.strip_prefix("Basic ")) else {
        return false;
    };
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else {
        return false;
    };
    let Ok(pair) = String::from_utf8(decoded) else {
        return false;
    };
    let Some((user, password)) = pair.split_once(':') else {
        return false;
    };
    if let Some(hash) = users.get(user) {
        bcrypt::verify(password, hash).unwrap_or(false)
    } else {
        // The same work for an unknown user, so timing does not tell which names exist.
        let _ = bcrypt::verify(password, dummy_hash());
        false
    }
}

/// Refuses a key or certificate pasted where its file's name goes, without a word of it: read
/// as a path, it was printed whole in "cannot read the TLS key -----BEGIN PRIVATE KEY-----…"
/// (helper-40).
fn no_pem_pasted(t: &TlsFile, file: &Path) -> Result<()> {
    let named = [
        ("cert_file", &t.cert_file),
        ("key_file", &t.key_file),
        ("client_ca_file", &t.client_ca_file),
    ];
    for (key, path) in named {
        let text = path.as_deref().map(Path::as_os_str).unwrap_or_default();
        let text = text.to_string_lossy();
        if text.contains("-----BEGIN") || text.contains('\n') {
            bail!(
                "{}: {key} holds PEM text, not a file's name: put it in a file (e.g. beside \
                 this one) and name that file",
                file.display()
            );
        }
    }
    Ok(())
}

/// serde's reason with the strings it quotes left out and the file's parts named as the file
/// names them: a web config holds keys and password hashes, and a wrong file (`/etc/shadow`, a
/// key pasted where a mapping goes) was printed whole into the error, and the journal, as
/// `invalid type: string "…", expected struct TlsFile` (helper-39).
fn without_values(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut rest = reason;
    while let Some(at) = rest.find("string \"") {
        out.push_str(&rest[..at]);
        out.push_str("a string");
        let quoted = &rest[at + "string \"".len()..];
        // Debug-quoted: a quote inside is escaped; past the closing one the reason goes on.
        let mut escaped = false;
        let end = quoted.char_indices().find(|&(_, c)| {
            let closes = c == '"' && !escaped;
            escaped = c == '\\' && !escaped;
            closes
        });
        rest = end.map_or("", |(i, _)| &quoted[i + 1..]);
    }
    out.push_str(rest);
    out.replace(
        "struct File",
        "a mapping (tls_server_config, basic_auth_users, http_server_config)",
    )
    .replace(
        "struct TlsFile",
        "a mapping (cert_file, key_file, client_auth_type, client_ca_file, min_version, \
         max_version)",
    )
}

/// A bcrypt hash at cost 10 of nobody's password, made once, for unknown users.
fn dummy_hash() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| bcrypt::hash("no user has this password", 10).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<WebConfig> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("web.yml");
        std::fs::write(&path, text).unwrap();
        WebConfig::load(&path)
    }

    /// A file that is not a web config, or a key pasted where a mapping goes, is refused
    /// without a word of it in the error, and with the mapping it should be named.
    #[test]
    fn a_wrong_file_is_refused_without_echoing_what_it_holds() {
        let e = load("root:x:0:0:secret-hash:/root:/bin/bash\ndaemon:x:1:1\n")
            .err()
            .unwrap()
            .to_string();
        assert!(!e.contains("secret-hash") && !e.contains("daemon"), "{e}");
        assert!(e.contains("expected a mapping (tls_server_config"), "{e}");
        let e =
            load("tls_server_config: \"-----BEGIN PRIVATE KEY-----\\nMIIEvSECRET \\\"q\\\" x\"\n")
                .err()
                .unwrap()
                .to_string();
        assert!(!e.contains("SECRET") && !e.contains("BEGIN"), "{e}");
        assert!(
            e.contains("invalid type: a string, expected a mapping (cert_file, key_file"),
            "{e}"
        );
        assert!(e.contains("at line 1 column 20"), "where it is stays: {e}");
        assert_eq!(without_values("string \"a\\\"b\" then"), "a string then");
        // Pasted where a file's name goes (a block scalar), it is not read as a path either.
        let e = load(
            "tls_server_config:\n  cert_file: c.pem\n  key_file: |\n    -----BEGIN PRIVATE KEY-----\n    MIIEvSECRET\n",
        )
        .err()
        .unwrap()
        .to_string();
        assert!(!e.contains("SECRET") && !e.contains("-----BEGIN"), "{e}");
        assert!(
            e.contains("key_file holds PEM text, not a file's name"),
            "{e}"
        );
        assert_eq!(without_values("string \"cut"), "a string");
    }

    /// A setting gpuwatch would not apply is refused by name, never dropped silently.
    #[test]
    fn what_is_not_applied_is_refused_by_name() {
        let e = load("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [x]\n")
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("cipher_suites is not supported"),
            "{e}"
        );
        let e = load("basic_auth_user:\n  a: b\n").err().unwrap();
        assert!(e.to_string().contains("unknown field"), "{e}");
        let e = load("basic_auth_users:\n  prom: plaintext\n")
            .err()
            .unwrap();
        assert!(e.to_string().contains("htpasswd -nBC 10 prom"), "{e}");
        let e = load("tls_server_config:\n  cert_file: a\n").err().unwrap();
        assert!(
            e.to_string().contains("needs cert_file and key_file"),
            "{e}"
        );
    }

    #[test]
    fn basic_auth_checks_the_bcrypt_hash() {
        use base64::Engine as _;
        let users: BTreeMap<String, String> =
            [("prom".to_string(), bcrypt::hash("s3cret", 4).unwrap())].into();
        let header = |pair: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        };
        assert!(authorized(&users, Some(&header("prom:s3cret"))));
        assert!(!authorized(&users, Some(&header("prom:guess"))));
        assert!(!authorized(&users, Some(&header("other:s3cret"))));
        assert!(!authorized(&users, Some("Bearer x")));
        assert!(!authorized(&users, None));
    }
}
