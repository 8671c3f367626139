//! The calling side: one node process reaching a node of another process at its address,
//! over connections kept open between requests (one request on a connection at a time;
//! concurrent callers use concurrent connections).

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

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
/// How often a request waiting for its answer asks whether the store has given its node
/// up (down, or its lease over).
const GIVE_UP_CHECK: Duration = Duration::from_millis(100);

/// A node of another process, reached at `address`.
pub(crate) struct TcpPeer {
    node: NodeId,
    address: SocketAddr,
    /// How long an answer may take (an activation runs the factory and the store's
    /// round trips on the other side).
    answer_timeout: Duration,
    given_up: super::GivenUp,
    idle: Mutex<Vec<TcpStream>>,
}

/// What became of one request on the wire.
enum Failure {
    /// Nothing reached the other node: the request did not run there.
    NotSent(io::Error),
    /// The request may have run there; its answer is lost.
    AnswerLost(io::Error),
    /// No answer came within the answer timeout: the request may have run there.
    NoAnswer(Duration),
    /// The store reported the node down (or its lease over) while the request waited for
    /// its answer: it may have run there.
    GivenUp(Duration),
    /// The other side is not the node expected at this address.
    WrongNode,
}

impl TcpPeer {
    pub(crate) fn new(
        node: NodeId,
        address: SocketAddr,
        answer_timeout: Duration,
        given_up: super::GivenUp,
    ) -> Self {
        Self {
            node,
            address,
            answer_timeout,
            given_up,
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
        c.set_read_timeout(Some(CONNECT_TIMEOUT))
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
        self.await_answer(&c)?;
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

    /// Waits until the answer's first bytes arrive: up to the answer timeout, and only
    /// while the store has not given the node up (a stopped process accepts connections
    /// and requests into its kernel buffers, and answers nothing). The frame is then read
    /// with the answer timeout as a whole.
    fn await_answer(&self, c: &TcpStream) -> std::result::Result<(), Failure> {
        let started = Instant::now();
        let mut probe = [0u8; 1];
        loop {
            let waited = started.elapsed();
            if waited >= self.answer_timeout {
                return Err(Failure::NoAnswer(waited));
            }
            if (self.given_up)(self.node) {
                return Err(Failure::GivenUp(waited));
            }
            let slice = GIVE_UP_CHECK.min(self.answer_timeout - waited);
            c.set_read_timeout(Some(slice.max(Duration::from_millis(1))))
                .map_err(Failure::AnswerLost)?;
            match c.peek(&mut probe) {
                Ok(_) => break,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(Failure::AnswerLost(e)),
            }
        }
        c.set_read_timeout(Some(self.answer_timeout))
            .map_err(Failure::AnswerLost)
    }

    /// The caller's error for a request that failed on the wire.
    fn failure(&self, spot: SpotId, f: Failure) -> LifecycleError {
        match f {
            Failure::NotSent(e) => LifecycleError::unavailable(
                spot,
                format!(
                    "node {} at {} cannot be reached ({})",
                    self.node.0,
                    self.address,
                    describe(&e)
                ),
            ),
            Failure::AnswerLost(e) => LifecycleError::Unavailable {
                spot,
                evidence: format!(
                    "the connection to node {} at {} failed before its answer ({})",
                    self.node.0,
                    self.address,
                    describe(&e)
                )
                .into(),
                may_have_run: true,
            },
            Failure::NoAnswer(waited) => LifecycleError::Unavailable {
                spot,
                evidence: format!(
                    "node {} at {} did not answer within {waited:.1?}",
                    self.node.0, self.address
                )
                .into(),
                may_have_run: true,
            },
            Failure::GivenUp(waited) => LifecycleError::Unavailable {
                spot,
                evidence: format!(
                    "node {} at {} was reported down by the store after {waited:.1?} \
                     without an answer",
                    self.node.0, self.address
                )
                .into(),
                may_have_run: true,
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
        payload: &mut Option<Box<[u8]>>,
        create: Option<SpotKind>,
    ) -> Result<u64> {
        let Some(body) = payload.take() else {
            return Err(LifecycleError::InvalidArgument("no message to send".into()));
        };
        if let Err(e) = Self::check_size(body.len()) {
            *payload = Some(body);
            return Err(e);
        }
        let request = Request::Accept {
            spot,
            lane,
            create,
            payload: body,
        };
        let r = self.round_trip(&request, false);
        // A request that did not run leaves its message with the caller.
        let ran_nothing = match &r {
            Err(Failure::NotSent(_) | Failure::WrongNode) => true,
            Ok(Err(RemoteError::Lifecycle(e))) => e.did_not_run(),
            Ok(Err(RemoteError::Closed)) => true,
            _ => false,
        };
        if ran_nothing {
            if let Request::Accept { payload: body, .. } = request {
                *payload = Some(body);
            }
        }
        match r {
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
        RemoteError::Closed if activate => {
            LifecycleError::unavailable(spot, format!("node {} is shutting down", node.0))
        }
        RemoteError::Closed => LifecycleError::StaleRoute {
            spot,
            reason: StaleReason::NotOwner,
        },
        RemoteError::Timer(text) => {
            LifecycleError::unavailable(spot, format!("node {}'s timer runtime: {text}", node.0))
        }
    }
}

/// An I/O error as a reader wants it: a read timeout says it timed out (the OS says
/// "Resource temporarily unavailable").
fn describe(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "timed out".to_string(),
        _ => e.to_string(),
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
