//! One etcd request from a synchronous caller: it runs on the store's runtime, is tried
//! again while its failure is transient (no connection to the member picked, no leader
//! yet, a stream cut mid-way), and gives up with a readable error once `request_timeout`
//! has passed. Every attempt is counted. A retried write may have been applied by an
//! attempt whose answer was lost: the caller learns that it was retried and resolves the
//! ambiguity from the key itself.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use etcd_client::Client;
use tokio::runtime::Runtime;

/// How long to wait before the first retry of a failed request; doubled at each retry
/// up to `BACKOFF_MAX`.
const BACKOFF: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_millis(200);

/// A request's answer, and whether an earlier attempt failed first.
pub(crate) struct Answer<T> {
    pub value: T,
    pub retried: bool,
}

pub(crate) struct Requests {
    count: AtomicU64,
    timeout: Duration,
    endpoints: String,
}

impl Requests {
    pub fn new(timeout: Duration, endpoints: &[String]) -> Self {
        Self {
            count: AtomicU64::new(0),
            timeout,
            endpoints: endpoints.join(","),
        }
    }

    /// Requests made so far (attempts included).
    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }

    pub fn run<T, F, Fut>(
        &self,
        rt: &Runtime,
        client: &Client,
        mut op: F,
    ) -> Result<Answer<T>, String>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let until = Instant::now() + self.timeout;
        rt.block_on(async {
            let mut retried = false;
            let mut backoff = BACKOFF;
            loop {
                self.count.fetch_add(1, Relaxed);
                let left = until.saturating_duration_since(Instant::now());
                let error = match tokio::time::timeout(left, op(client.clone())).await {
                    Ok(Ok(value)) => return Ok(Answer { value, retried }),
                    Ok(Err(e)) if transient(&e) => e.to_string(),
                    Ok(Err(e)) => return Err(format!("etcd at {} refused: {e}", self.endpoints)),
                    Err(_) => String::from("no answer"),
                };
                if Instant::now() + backoff >= until {
                    return Err(format!(
                        "etcd at {} cannot be reached within {:?}: {error}",
                        self.endpoints, self.timeout
                    ));
                }
                retried = true;
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        })
    }
}

/// A failure that another attempt (maybe on another member) may not have.
fn transient(e: &etcd_client::Error) -> bool {
    use tonic::Code;
    match e {
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        etcd_client::Error::GRpcStatus(s) => matches!(
            s.code(),
            Code::Unavailable
                | Code::Unknown
                | Code::DeadlineExceeded
                | Code::Cancelled
                | Code::Aborted
        ),
        _ => false,
    }
}
