//! How to reach etcd and how long a node's owner lease lasts.

use std::time::Duration;

use spot_lifecycle::{LifecycleError, Result};

/// The configuration of an [`crate::EtcdLocationStore`].
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    /// etcd client endpoints, e.g. `http://127.0.0.1:2379` (at least one).
    pub endpoints: Vec<String>,
    /// Every key of this store starts with it (several clusters can share one etcd).
    pub prefix: String,
    /// The TTL of this node's owner lease (whole seconds, at least 2). A node that is not
    /// heard from for this long loses every authority it holds.
    pub lease_ttl: Duration,
    /// How long connecting (and granting the lease) may take at start.
    pub connect_timeout: Duration,
    /// How long one request may take before the store answers that etcd cannot be
    /// reached.
    pub request_timeout: Duration,
    /// How often this node's active-Spot count is written for placement (it is written
    /// only when it changed, never on the activation path).
    pub active_flush: Duration,
}

impl Default for EtcdConfig {
    fn default() -> Self {
        Self {
            endpoints: vec!["http://127.0.0.1:2379".into()],
            prefix: "/spot-timer/".into(),
            lease_ttl: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(5),
            active_flush: Duration::from_millis(200),
        }
    }
}

impl EtcdConfig {
    /// The default configuration with these endpoints.
    pub fn with_endpoints<S: Into<String>>(endpoints: impl IntoIterator<Item = S>) -> Self {
        Self {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Refuses a configuration that cannot work, saying what is wrong.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(LifecycleError::InvalidArgument(m));
        if self.endpoints.is_empty() {
            return bad(
                "etcd: at least one endpoint is needed (e.g. http://127.0.0.1:2379)".into(),
            );
        }
        for e in &self.endpoints {
            let rest = e
                .strip_prefix("http://")
                .or_else(|| e.strip_prefix("https://"))
                .unwrap_or(e);
            if rest.is_empty() || !rest.contains(':') || rest.contains(char::is_whitespace) {
                return bad(format!(
                    "etcd: endpoint {e:?} is not host:port (e.g. http://127.0.0.1:2379)"
                ));
            }
        }
        if self.prefix.is_empty() || !self.prefix.ends_with('/') {
            return bad(format!(
                "etcd: key prefix {:?} must be non-empty and end with '/'",
                self.prefix
            ));
        }
        if self.lease_ttl < Duration::from_secs(2) || self.lease_ttl.subsec_nanos() != 0 {
            return bad(format!(
                "etcd: lease_ttl {:?} must be whole seconds, at least 2 s",
                self.lease_ttl
            ));
        }
        for (name, d) in [
            ("connect_timeout", self.connect_timeout),
            ("request_timeout", self.request_timeout),
            ("active_flush", self.active_flush),
        ] {
            if d.is_zero() {
                return bad(format!("etcd: {name} must be above zero"));
            }
        }
        Ok(())
    }
}
