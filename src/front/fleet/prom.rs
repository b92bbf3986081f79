//! Prometheus's HTTP API, as `gpuwatch fleet` reads it: instant queries over HTTP or HTTPS,
//! with the basic auth and CA file Prometheus users put in front of it. Blocking (the fleet
//! view has nothing else to do meanwhile), bounded in time and size.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// One series of an instant query's answer: its labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl Series {
    /// The value of label `key`, or "".
    #[must_use]
    pub fn label(&self, key: &str) -> &str {
        self.labels.get(key).map_or("", String::as_str)
    }
}

/// One series of a range query's answer: its labels, and its value at each step (`None` where
/// it had none).
pub type RangeSeries = (BTreeMap<String, String>, Vec<Option<f64>>);

/// Where Prometheus is and how to reach it.
pub struct Client {
    base: String,
    agent: ureq::Agent,
    auth: Option<String>,
    /// Time spent waiting for Prometheus since the last `take_spent`.
    spent: Duration,
}

/// An answer larger than this is not a Prometheus gpuwatch should read (a 64-host fleet's
/// largest answer is a few hundred KiB).
const MAX_ANSWER: u64 = 64 << 20;

impl Client {
    /// `url` is Prometheus's base (`http://prom:9090`, or under a path prefix); `user` with
    /// the password in `password_file` for basic auth; `ca_file` the PEM of the CA that signed
    /// its certificate, when it is not a public one.
    pub fn new(
        url: &str,
        user: Option<&str>,
        password_file: Option<&Path>,
        ca_file: Option<&Path>,
        timeout: Duration,
    ) -> Result<Self> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            bail!("--prometheus {url}: give its URL, such as http://localhost:9090");
        }
        let mut config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false);
        if let Some(ca) = ca_file {
            let pem =
                std::fs::read(ca).with_context(|| format!("reading --cacert {}", ca.display()))?;
            let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                bail!("--cacert {}: no PEM certificate in it", ca.display());
            }
            config = config.tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::new_with_certs(&certs))
                    .build(),
            );
        }
        let auth = match (user, password_file) {
            (Some(u), Some(f)) => {
                let password = std::fs::read_to_string(f)
                    .with_context(|| format!("reading --password-file {}", f.display()))?;
                let pair = format!("{u}:{}", password.trim_end_matches(['\n', '\r']));
                Some(format!(
                    "Basic {}",
                    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, pair)
                ))
            }
            (None, None) => None,
            _ => bail!("basic auth needs both --user and --password-file"),
        };
        Ok(Client {
            base: url.trim_end_matches('/').to_string(),
            agent: config.build().into(),
            auth,
            spent: Duration::ZERO,
        })
    }

    /// The series an instant `PromQL` query answers with, at Prometheus's now.
    pub fn query(&mut self, promql: &str) -> Result<Vec<Series>> {
        let body = self.get("query", &[("query", promql.to_string())], promql)?;
        parse_vector(&body).with_context(|| format!("the answer to {promql}"))
    }

    /// The values of a range query, `points` of them `step_s` apart ending at the local now:
    /// each series' labels and its values, `None` where it had none.
    pub fn query_range(
        &mut self,
        promql: &str,
        points: usize,
        step_s: u64,
    ) -> Result<Vec<RangeSeries>> {
        let end = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let start = end.saturating_sub(step_s * (points.max(1) as u64 - 1));
        let params = [
            ("query", promql.to_string()),
            ("start", start.to_string()),
            ("end", end.to_string()),
            ("step", step_s.to_string()),
        ];
        let body = self.get("query_range", &params, promql)?;
        parse_matrix(&body, start, step_s, points)
            .with_context(|| format!("the answer to {promql}"))
    }

    /// GET `api/v1/ENDPOINT` with `params`: the body of a 200, else an error that says what
    /// to do (401/403: credentials). Counts the time waited.
    fn get(&mut self, endpoint: &str, params: &[(&str, String)], promql: &str) -> Result<String> {
        let url = format!("{}/api/v1/{endpoint}", self.base);
        let started = Instant::now();
        let mut req = self.agent.get(&url);
        for (k, v) in params {
            req = req.query(k, v);
        }
        if let Some(a) = &self.auth {
            req = req.header("Authorization", a);
        }
        // The OS's reason as it says it: ureq's own words began "io: Connection refused".
        let answer = req.call().map_err(|e| match e {
            ureq::Error::Io(io) => anyhow::Error::new(io),
            e => anyhow::Error::new(e),
        });
        let mut resp = answer.with_context(|| format!("asking Prometheus at {}", self.base))?;
        let status = resp.status();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_string()
            .with_context(|| format!("reading Prometheus's answer from {}", self.base))?;
        self.spent += started.elapsed();
        match status.as_u16() {
            200 => Ok(body),
            401 | 403 => bail!(
                "Prometheus at {} refused the query ({status}): give --user and --password-file",
                self.base
            ),
            _ => bail!(
                "Prometheus at {} answered {status} to {promql}: {}",
                self.base,
                crate::text::one_line(&body, 200)
            ),
        }
    }

    /// Time spent waiting for Prometheus since the last call.
    pub fn take_spent(&mut self) -> Duration {
        std::mem::take(&mut self.spent)
    }

    #[must_use]
    pub fn base(&self) -> &str {
        &self.base
    }
}

/// An instant query's `{"status":"success","data":{"resultType":"vector","result":[…]}}`.
pub fn parse_vector(body: &str) -> Result<Vec<Series>> {
    let v: serde_json::Value =
        serde_json::from_str(body).context("not JSON: is this Prometheus's URL?")?;
    if v["status"] != "success" {
        bail!(
            "Prometheus said {}: {}",
            v["errorType"].as_str().unwrap_or("error"),
            v["error"].as_str().unwrap_or("no reason given")
        );
    }
    let Some(result) = v["data"]["result"].as_array() else {
        bail!("no data.result: is this Prometheus's URL?");
    };
    Ok(result
        .iter()
        .filter_map(|r| {
            let labels = r["metric"]
                .as_object()?
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect();
            let value = r["value"][1].as_str()?.parse().ok()?;
            Some(Series { labels, value })
        })
        .collect())
}

/// A range query's matrix, each series' values put at their step from `start` (gaps `None`).
pub fn parse_matrix(
    body: &str,
    start: u64,
    step_s: u64,
    points: usize,
) -> Result<Vec<RangeSeries>> {
    let v: serde_json::Value =
        serde_json::from_str(body).context("not JSON: is this Prometheus's URL?")?;
    if v["status"] != "success" {
        bail!(
            "Prometheus said {}: {}",
            v["errorType"].as_str().unwrap_or("error"),
            v["error"].as_str().unwrap_or("no reason given")
        );
    }
    let Some(result) = v["data"]["result"].as_array() else {
        bail!("no data.result: is this Prometheus's URL?");
    };
    Ok(result
        .iter()
        .filter_map(|r| {
            let labels = r["metric"]
                .as_object()?
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect();
            let mut values = vec![None; points];
            for pair in r["values"].as_array()? {
                let (Some(t), Some(x)) = (
                    pair[0].as_f64(),
                    pair[1].as_str().and_then(|s| s.parse::<f64>().ok()),
                ) else {
                    continue;
                };
                let i = ((t as u64).saturating_sub(start) / step_s.max(1)) as usize;
                if let Some(slot) = values.get_mut(i) {
                    *slot = Some(x).filter(|x| x.is_finite());
                }
            }
            Some((labels, values))
        })
        .collect())
}

/// A label value as a `PromQL` string literal: quoted, with `\` and `"` escaped.
#[must_use]
pub fn quoted(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_reads_back_with_its_labels_and_values() {
        let body = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"Hostname":"h1","gpu":"0"},"value":[1700000000.1,"1"]},
            {"metric":{"Hostname":"h2","gpu":"1"},"value":[1700000000.1,"NaN"]},
            {"metric":{"x":"y"},"value":[1700000000.1,"oops"]}]}}"#;
        let s = parse_vector(body).unwrap();
        assert_eq!(s.len(), 2, "an unparsable value is left out");
        assert_eq!(s[0].label("Hostname"), "h1");
        assert!((s[0].value - 1.0).abs() < f64::EPSILON);
        assert!(s[1].value.is_nan());
        assert_eq!(s[0].label("nope"), "");
    }

    #[test]
    fn a_matrix_lands_on_its_steps_and_gaps_stay_gaps() {
        let body = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"gpu":"0"},"values":[[1000,"0.5"],[1020,"1"],[1030,"NaN"]]}]}}"#;
        let m = parse_matrix(body, 1000, 10, 5).unwrap();
        assert_eq!(m[0].1, vec![Some(0.5), None, Some(1.0), None, None]);
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
    }

    #[test]
    fn errors_say_what_prometheus_said() {
        let e = parse_vector(r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad_data") && e.contains("parse error"), "{e}");
        let e = parse_vector("<html>").unwrap_err().to_string();
        assert!(e.contains("Prometheus's URL"), "{e}");
    }

    #[test]
    fn a_url_without_its_scheme_or_half_an_auth_is_refused() {
        let t = Duration::from_secs(1);
        let e = Client::new("prom:9090", None, None, None, t).err().unwrap();
        assert!(e.to_string().contains("http://localhost:9090"));
        let e = Client::new("http://p", Some("u"), None, None, t)
            .err()
            .unwrap();
        assert!(e.to_string().contains("--password-file"));
    }
}
