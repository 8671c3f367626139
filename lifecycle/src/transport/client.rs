//! The calling side: one node process reaching a node of another process at its address,
//! over connections kept open between requests (one request on a connection at a time;
//! concurrent callers use concurrent connections).

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use parking_lot::Mutex;

use super::wire::{self, Answer, RemoteError, Request};
use crate::cluster::Peer;
use crate::error::{LifecycleError, Result, StaleReason};
use crate::kind::{SpotId, SpotKind};
use crate::lane::LaneKind;
use crate::store::NodeId;

/// Idle connections kept per remote node; more concurrent callers open more, and the
/// surplus is closed when they finish.
const IDLE_KEPT: usize = 16;
/// How long opening a connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A node of another process, reached at `address`.
pub(crate) struct TcpPeer {
    node: NodeId,
    address: SocketAddr,
    /// How long an answer may take (an activation runs the factory and the store's
    /// round trips on the other side).
    answer_timeout: Duration,
    idle: Mutex<Vec<TcpStream>>,
}

/// What became of one request on the wire.
enum Failure {
    /// Nothing reached the other node: the request did not run there.
    NotSent(io::Error),
    /// The request may have run there; its answer is lost.
    AnswerLost(io::Error),
    /// The other side is not the node expected at this address.
    WrongNode,
}

impl TcpPeer {
    pub(crate) fn new(node: NodeId, address: SocketAddr, answer_timeout: Duration) -> Self {
        Self {
            node,
            address,
            answer_timeout,
            idle: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// An idle connection that is still open, or a new one.
    fn connection(&self) -> std::result::Result<TcpStream, Failure> {
        while let Some(c) = self.idle.lock().pop() {
            if still_open(&c) {
                return Ok(c);
            }
        }
        let mut c =
            TcpStream::connect_timeout(&self.address, CONNECT_TIMEOUT).map_err(Failure::NotSent)?;
        let _ = c.set_nodelay(true);
        c.set_read_timeout(Some(self.answer_timeout))
            .map_err(Failure::NotSent)?;
        wire::write_hello(&mut c).map_err(Failure::NotSent)?;
        let node = wire::read_welcome(&mut c).map_err(Failure::NotSent)?;
        if node != self.node.0 {
            return Err(Failure::WrongNode);
        }
        Ok(c)
    }

    fn round_trip(
        &self,
        request: &Request,
        activate: bool,
    ) -> std::result::Result<std::result::Result<Answer, RemoteError>, Failure> {
        let body = wire::encode_request(request);
        let mut c = self.connection()?;
        // Written whole or not at all as far as the other side's reader goes: it acts
        // only on a complete frame, so a failed write ran nothing.
        wire::write_frame(&mut c, &body).map_err(Failure::NotSent)?;
        let answer = match wire::read_frame(&mut c) {
            Ok(Some(a)) => a,
            Ok(None) => return Err(Failure::AnswerLost(io::ErrorKind::UnexpectedEof.into())),
            Err(e) => return Err(Failure::AnswerLost(e)),
        };
        let decoded = wire::decode_answer(&answer, activate).ok_or_else(|| {
            Failure::AnswerLost(io::Error::new(
                io::ErrorKind::InvalidData,
                "an answer this build cannot read",
            ))
        })?;
        let mut idle = self.idle.lock();
        if idle.len() < IDLE_KEPT {
            idle.push(c);
        }
        Ok(decoded)
    }

    /// The caller's error for a request that failed on the wire.
    fn failure(&self, spot: SpotId, f: Failure) -> LifecycleError {
        match f {
            Failure::NotSent(e) => LifecycleError::Unavailable {
                spot,
                evidence: format!(
                    "node {} at {} cannot be reached ({e}); the request did not run",
                    self.node.0, self.address
                )
                .into(),
            },
            Failure::AnswerLost(e) => LifecycleError::Unavailable {
                spot,
                evidence: format!(
                    "the connection to node {} at {} failed before its answer ({e}); \
                     the request may have run there and is not retried",
                    self.node.0, self.address
                )
                .into(),
            },
            // Another node now listens where this one was: the route is stale.
            Failure::WrongNode => LifecycleError::StaleRoute {
                spot,
                reason: StaleReason::NotOwner,
            },
        }
    }

    fn check_size(len: usize) -> Result<()> {
        if len + wire::REQUEST_HEADER > wire::MAX_FRAME {
            return Err(LifecycleError::InvalidArgument(format!(
                "a payload of {len} bytes is larger than a message between node processes \
                 may be ({} bytes)",
                wire::MAX_FRAME - wire::REQUEST_HEADER
            )));
        }
        Ok(())
    }
}

impl Peer for TcpPeer {
    fn accept(
        &self,
        spot: SpotId,
        lane: LaneKind,
        payload: Box<[u8]>,
        create: Option<SpotKind>,
    ) -> Result<u64> {
        Self::check_size(payload.len())?;
        let request = Request::Accept {
            spot,
            lane,
            create,
            payload,
        };
        match self.round_trip(&request, false) {
            Ok(Ok(Answer::Accepted { generation })) => Ok(generation),
            Ok(Ok(Answer::Activated { .. })) => unreachable!("decoded as an accept answer"),
            Ok(Err(e)) => Err(remote_error(spot, self.node, e, false)),
            Err(f) => Err(self.failure(spot, f)),
        }
    }

    fn activate_here(
        &self,
        spot: SpotId,
        kind: SpotKind,
        first: &mut Option<(LaneKind, Box<[u8]>)>,
    ) -> Result<Option<u64>> {
        Self::check_size(first.as_ref().map_or(0, |f| f.1.len()))?;
        // The first message travels as a copy: the caller keeps it unless the other side
        // took it.
        let request = Request::Activate {
            spot,
            kind,
            first: first.clone(),
        };
        match self.round_trip(&request, true) {
            Ok(Ok(Answer::Activated {
                generation,
                first_taken,
            })) => {
                if first_taken {
                    *first = None;
                }
                Ok(generation)
            }
            Ok(Ok(Answer::Accepted { .. })) => unreachable!("decoded as an activate answer"),
            Ok(Err(e)) => Err(remote_error(spot, self.node, e, true)),
            Err(f) => Err(self.failure(spot, f)),
        }
    }
}

/// The caller's error for an error the other node answered.
fn remote_error(spot: SpotId, node: NodeId, e: RemoteError, activate: bool) -> LifecycleError {
    match e {
        RemoteError::Lifecycle(e) => e,
        // The other node is closing: a message finds no owner there; a creation cannot
        // be placed there.
        RemoteError::Closed if activate => LifecycleError::Unavailable {
            spot,
            evidence: format!("node {} is shutting down", node.0).into(),
        },
        RemoteError::Closed => LifecycleError::StaleRoute {
            spot,
            reason: StaleReason::NotOwner,
        },
        RemoteError::Timer(text) => LifecycleError::Unavailable {
            spot,
            evidence: format!("node {}'s timer runtime: {text}", node.0).into(),
        },
    }
}

/// Whether an idle connection is still open: the other side closes connections it will
/// not serve (it shut down or restarted), and a request must not be written into one.
fn still_open(c: &TcpStream) -> bool {
    if c.set_nonblocking(true).is_err() {
        return false;
    }
    let mut b = [0u8; 1];
    let open = matches!(c.peek(&mut b), Err(ref e) if e.kind() == io::ErrorKind::WouldBlock);
    c.set_nonblocking(false).is_ok() && open
}
