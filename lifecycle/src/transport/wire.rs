//! The bytes between two node processes: the greeting, the frames, and how a request, an
//! answer and every lifecycle error are written. Integers are little-endian; a text is its
//! byte length (u32) and UTF-8.
//!
//! Greeting, once per connection: the client sends `MAGIC` and its `VERSION` (u16); the
//! server answers `MAGIC`, its `VERSION` and its node id (u64). Either side closes the
//! connection on a greeting it does not understand.
//!
//! Then frames, one request and its answer at a time: a u32 body length (at most
//! [`MAX_FRAME`]) and the body.
//! - Accept (tag 1): spot u64, lane u8 (0 application, 1 lifecycle), kind to create u8
//!   (0 none), payload (the rest).
//! - Activate (tag 2): spot u64, kind u8, first message present u8, lane u8, payload.
//! - Answer: 0 and the result (Accept: object generation u64; Activate: created u8,
//!   object generation u64, first message taken u8), or 1 and an error (code u8 and the
//!   fields of [`LifecycleError`]'s variant).

use std::io::{self, Read, Write};
use std::sync::Arc;

use crate::error::{LifecycleError, Queue, StaleReason};
use crate::kind::{SpotId, SpotKind};
use crate::lane::LaneKind;

/// The first bytes of each side's greeting.
pub(crate) const MAGIC: [u8; 8] = *b"SPOTNODE";
/// The protocol version this build speaks.
pub(crate) const VERSION: u16 = 1;
/// The largest frame body either side accepts: a payload up to this size minus a few
/// bytes of header travels; a longer one is refused before anything is sent.
pub(crate) const MAX_FRAME: usize = 256 << 20;
/// Header bytes of the longest request before its payload.
pub(crate) const REQUEST_HEADER: usize = 16;

/// A request of one node to another.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// Admit a message to a Spot the receiver owns (creating nothing).
    Accept {
        spot: SpotId,
        lane: LaneKind,
        create: Option<SpotKind>,
        payload: Box<[u8]>,
    },
    /// Create the Spot on the receiver, with its first message if present.
    Activate {
        spot: SpotId,
        kind: SpotKind,
        first: Option<(LaneKind, Box<[u8]>)>,
    },
}

/// A successful answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The message was admitted; the Spot's object generation.
    Accepted { generation: u64 },
    /// The activation's result: None when another node created the Spot meanwhile.
    Activated {
        generation: Option<u64>,
        first_taken: bool,
    },
}

/// Writes the client's greeting.
pub(crate) fn write_hello(w: &mut impl Write) -> io::Result<()> {
    let mut b = Vec::with_capacity(10);
    b.extend_from_slice(&MAGIC);
    b.extend_from_slice(&VERSION.to_le_bytes());
    w.write_all(&b)
}

/// Reads the client's greeting.
pub(crate) fn read_hello(r: &mut impl Read) -> io::Result<()> {
    let mut b = [0u8; 10];
    r.read_exact(&mut b)?;
    check_greeting(&b[..10])
}

/// Writes the server's greeting, naming its node.
pub(crate) fn write_welcome(w: &mut impl Write, node: u64) -> io::Result<()> {
    let mut b = Vec::with_capacity(18);
    b.extend_from_slice(&MAGIC);
    b.extend_from_slice(&VERSION.to_le_bytes());
    b.extend_from_slice(&node.to_le_bytes());
    w.write_all(&b)
}

/// Reads the server's greeting: its node id.
pub(crate) fn read_welcome(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 18];
    r.read_exact(&mut b)?;
    check_greeting(&b[..10])?;
    Ok(u64::from_le_bytes(b[10..18].try_into().expect("8 bytes")))
}

fn check_greeting(b: &[u8]) -> io::Result<()> {
    if b[..8] != MAGIC {
        return Err(invalid("the peer is not a spot node"));
    }
    let version = u16::from_le_bytes([b[8], b[9]]);
    if version != VERSION {
        return Err(invalid(&format!(
            "the peer speaks protocol version {version}, this build {VERSION}"
        )));
    }
    Ok(())
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// Writes one frame.
pub(crate) fn write_frame(w: &mut impl Write, body: &[u8]) -> io::Result<()> {
    if body.len() > MAX_FRAME {
        return Err(invalid("frame too long"));
    }
    let mut head = (body.len() as u32).to_le_bytes().to_vec();
    // One write for small frames (one segment with TCP_NODELAY), two for large ones.
    if body.len() <= 4096 {
        head.extend_from_slice(body);
        return w.write_all(&head);
    }
    w.write_all(&head)?;
    w.write_all(body)
}

/// Reads one frame's body; `Ok(None)` when the peer closed the connection between frames.
pub(crate) fn read_frame(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(invalid("frame too long"));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Ok(Some(body))
}

fn lane_byte(lane: LaneKind) -> u8 {
    match lane {
        LaneKind::Application => 0,
        LaneKind::Lifecycle => 1,
    }
}

fn lane_of(b: u8) -> Option<LaneKind> {
    match b {
        0 => Some(LaneKind::Application),
        1 => Some(LaneKind::Lifecycle),
        _ => None,
    }
}

fn kind_of(b: u8) -> Option<SpotKind> {
    SpotKind::from_u32(u32::from(b)).ok()
}

/// Encodes a request as a frame body.
pub(crate) fn encode_request(req: &Request) -> Vec<u8> {
    let mut b = Vec::new();
    match req {
        Request::Accept {
            spot,
            lane,
            create,
            payload,
        } => {
            b.reserve(REQUEST_HEADER + payload.len());
            b.push(1);
            b.extend_from_slice(&spot.0.to_le_bytes());
            b.push(lane_byte(*lane));
            b.push(create.map_or(0, |k| k as u8));
            b.extend_from_slice(payload);
        }
        Request::Activate { spot, kind, first } => {
            b.reserve(REQUEST_HEADER + first.as_ref().map_or(0, |f| f.1.len()));
            b.push(2);
            b.extend_from_slice(&spot.0.to_le_bytes());
            b.push(*kind as u8);
            match first {
                Some((lane, payload)) => {
                    b.push(1);
                    b.push(lane_byte(*lane));
                    b.extend_from_slice(payload);
                }
                None => b.extend_from_slice(&[0, 0]),
            }
        }
    }
    b
}

/// A cursor over a frame body.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&v, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(v)
    }

    fn u32(&mut self) -> Option<u32> {
        let (v, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_le_bytes(*v))
    }

    fn u64(&mut self) -> Option<u64> {
        let (v, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(u64::from_le_bytes(*v))
    }

    fn text(&mut self) -> Option<Arc<str>> {
        let len = self.u32()? as usize;
        if len > self.0.len() {
            return None;
        }
        let (t, rest) = self.0.split_at(len);
        self.0 = rest;
        std::str::from_utf8(t).ok().map(Arc::from)
    }

    fn rest(self) -> Box<[u8]> {
        self.0.into()
    }

    fn end(self) -> Option<()> {
        self.0.is_empty().then_some(())
    }
}

/// Decodes a request; None for a body that is not one.
pub(crate) fn decode_request(body: &[u8]) -> Option<Request> {
    let mut c = Cursor(body);
    match c.u8()? {
        1 => {
            let spot = SpotId(c.u64()?);
            let lane = lane_of(c.u8()?)?;
            let create = match c.u8()? {
                0 => None,
                k => Some(kind_of(k)?),
            };
            Some(Request::Accept {
                spot,
                lane,
                create,
                payload: c.rest(),
            })
        }
        2 => {
            let spot = SpotId(c.u64()?);
            let kind = kind_of(c.u8()?)?;
            let present = c.u8()?;
            let lane = c.u8()?;
            let first = match present {
                0 => None,
                1 => Some((lane_of(lane)?, c.rest())),
                _ => return None,
            };
            Some(Request::Activate { spot, kind, first })
        }
        _ => None,
    }
}

/// Encodes an answer (or the error a request ended with) as a frame body.
pub(crate) fn encode_answer(answer: &Result<Answer, LifecycleError>) -> Vec<u8> {
    let mut b = Vec::with_capacity(16);
    match answer {
        Ok(Answer::Accepted { generation }) => {
            b.push(0);
            b.extend_from_slice(&generation.to_le_bytes());
        }
        Ok(Answer::Activated {
            generation,
            first_taken,
        }) => {
            b.push(0);
            b.push(u8::from(generation.is_some()));
            b.extend_from_slice(&generation.unwrap_or(0).to_le_bytes());
            b.push(u8::from(*first_taken));
        }
        Err(e) => {
            b.push(1);
            encode_error(&mut b, e);
        }
    }
    b
}

fn put_text(b: &mut Vec<u8>, t: &str) {
    b.extend_from_slice(&(t.len() as u32).to_le_bytes());
    b.extend_from_slice(t.as_bytes());
}

fn encode_error(b: &mut Vec<u8>, e: &LifecycleError) {
    match e {
        LifecycleError::NotFound(spot) => {
            b.push(1);
            b.extend_from_slice(&spot.0.to_le_bytes());
        }
        LifecycleError::StaleRoute { spot, reason } => {
            b.push(2);
            b.extend_from_slice(&spot.0.to_le_bytes());
            b.push(match reason {
                StaleReason::NotOwner => 0,
                StaleReason::LeaseExpired => 1,
                StaleReason::Closing => 2,
            });
        }
        LifecycleError::CapacityExceeded { queue } => {
            b.push(3);
            b.push(match queue {
                Queue::ApplicationLane => 0,
                Queue::LifecycleLane => 1,
                Queue::NodeInbound => 2,
                Queue::Activation => 3,
            });
        }
        LifecycleError::Unavailable {
            spot,
            evidence,
            may_have_run,
        } => {
            b.push(4);
            b.extend_from_slice(&spot.0.to_le_bytes());
            b.push(u8::from(*may_have_run));
            put_text(b, evidence);
        }
        LifecycleError::CreationFailed { spot, message } => {
            b.push(5);
            b.extend_from_slice(&spot.0.to_le_bytes());
            put_text(b, message);
        }
        LifecycleError::WrongKind {
            spot,
            expected,
            actual,
        } => {
            b.push(6);
            b.extend_from_slice(&spot.0.to_le_bytes());
            b.push(*expected as u8);
            b.push(*actual as u8);
        }
        LifecycleError::InvalidKind(k) => {
            b.push(7);
            b.extend_from_slice(&k.to_le_bytes());
        }
        LifecycleError::InvalidArgument(t) => {
            b.push(8);
            put_text(b, t);
        }
        LifecycleError::Store(t) => {
            b.push(9);
            put_text(b, t);
        }
        LifecycleError::Closed => b.push(10),
        // The timer runtime's errors have no meaning on the caller's node: their text
        // travels, as a store-like failure of the receiving node.
        LifecycleError::Timer(e) => {
            b.push(11);
            put_text(b, &e.to_string());
        }
    }
}

/// Decodes an answer; None for a body that is not one. `Closed` is the receiving node's
/// own state, which the caller turns into its own terms.
pub(crate) fn decode_answer(body: &[u8], activate: bool) -> Option<Result<Answer, RemoteError>> {
    let mut c = Cursor(body);
    match c.u8()? {
        0 if activate => {
            let created = c.u8()?;
            let generation = c.u64()?;
            let first_taken = c.u8()? == 1;
            c.end()?;
            Some(Ok(Answer::Activated {
                generation: (created == 1).then_some(generation),
                first_taken,
            }))
        }
        0 => {
            let generation = c.u64()?;
            c.end()?;
            Some(Ok(Answer::Accepted { generation }))
        }
        1 => Some(Err(decode_error(&mut c)?)),
        _ => None,
    }
}

/// An error as the receiving node answered it.
#[derive(Debug)]
pub(crate) enum RemoteError {
    /// An error the caller gets as it is.
    Lifecycle(LifecycleError),
    /// The receiving node was closed.
    Closed,
    /// The receiving node's timer runtime failed, with its text.
    Timer(Arc<str>),
}

fn decode_error(c: &mut Cursor<'_>) -> Option<RemoteError> {
    let e = match c.u8()? {
        1 => LifecycleError::NotFound(SpotId(c.u64()?)),
        2 => LifecycleError::StaleRoute {
            spot: SpotId(c.u64()?),
            reason: match c.u8()? {
                0 => StaleReason::NotOwner,
                1 => StaleReason::LeaseExpired,
                2 => StaleReason::Closing,
                _ => return None,
            },
        },
        3 => LifecycleError::CapacityExceeded {
            queue: match c.u8()? {
                0 => Queue::ApplicationLane,
                1 => Queue::LifecycleLane,
                2 => Queue::NodeInbound,
                3 => Queue::Activation,
                _ => return None,
            },
        },
        4 => LifecycleError::Unavailable {
            spot: SpotId(c.u64()?),
            may_have_run: match c.u8()? {
                0 => false,
                1 => true,
                _ => return None,
            },
            evidence: c.text()?,
        },
        5 => LifecycleError::CreationFailed {
            spot: SpotId(c.u64()?),
            message: c.text()?,
        },
        6 => LifecycleError::WrongKind {
            spot: SpotId(c.u64()?),
            expected: kind_of(c.u8()?)?,
            actual: kind_of(c.u8()?)?,
        },
        7 => LifecycleError::InvalidKind(c.u32()?),
        8 => LifecycleError::InvalidArgument(c.text()?.to_string()),
        9 => LifecycleError::Store(c.text()?),
        10 => return Some(RemoteError::Closed),
        11 => return Some(RemoteError::Timer(c.text()?)),
        _ => return None,
    };
    Some(RemoteError::Lifecycle(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let all = [
            Request::Accept {
                spot: SpotId(7),
                lane: LaneKind::Lifecycle,
                create: Some(SpotKind::Instance),
                payload: vec![1, 2, 3].into(),
            },
            Request::Accept {
                spot: SpotId(u64::MAX),
                lane: LaneKind::Application,
                create: None,
                payload: Box::default(),
            },
            Request::Activate {
                spot: SpotId(9),
                kind: SpotKind::User,
                first: Some((LaneKind::Application, vec![4; 5000].into())),
            },
            Request::Activate {
                spot: SpotId(9),
                kind: SpotKind::Instance,
                first: None,
            },
        ];
        for r in all {
            assert_eq!(decode_request(&encode_request(&r)), Some(r));
        }
    }

    #[test]
    fn garbage_is_not_a_request() {
        for body in [
            &[][..],
            &[3],
            &[1, 0, 0],
            &[1, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0],
            &[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4],
            &[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            &[2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 2, 0],
        ] {
            assert_eq!(decode_request(body), None, "{body:?}");
        }
    }

    #[test]
    fn errors_round_trip_with_their_fields() {
        let all = [
            LifecycleError::NotFound(SpotId(3)),
            LifecycleError::StaleRoute {
                spot: SpotId(4),
                reason: StaleReason::LeaseExpired,
            },
            LifecycleError::CapacityExceeded {
                queue: Queue::NodeInbound,
            },
            LifecycleError::Unavailable {
                spot: SpotId(5),
                evidence: "its owner is down".into(),
                may_have_run: true,
            },
            LifecycleError::CreationFailed {
                spot: SpotId(6),
                message: "factory said no".into(),
            },
            LifecycleError::WrongKind {
                spot: SpotId(7),
                expected: SpotKind::User,
                actual: SpotKind::Instance,
            },
            LifecycleError::InvalidKind(42),
            LifecycleError::InvalidArgument("bad".into()),
            LifecycleError::Store("etcd is away".into()),
        ];
        for e in all {
            let body = encode_answer(&Err(e.clone()));
            match decode_answer(&body, false) {
                Some(Err(RemoteError::Lifecycle(back))) => {
                    assert_eq!(back.to_string(), e.to_string())
                }
                other => panic!("{e}: {other:?}"),
            }
        }
        let closed = encode_answer(&Err(LifecycleError::Closed));
        assert!(matches!(
            decode_answer(&closed, true),
            Some(Err(RemoteError::Closed))
        ));
    }

    #[test]
    fn answers_round_trip() {
        for a in [
            Answer::Activated {
                generation: Some(12),
                first_taken: true,
            },
            Answer::Activated {
                generation: None,
                first_taken: false,
            },
        ] {
            assert!(matches!(decode_answer(&encode_answer(&Ok(a)), true), Some(Ok(b)) if b == a));
        }
        let a = Answer::Accepted { generation: 3 };
        assert!(matches!(decode_answer(&encode_answer(&Ok(a)), false), Some(Ok(b)) if b == a));
        assert!(decode_answer(&[0, 1], false).is_none());
        assert!(decode_answer(&[1, 99], false).is_none());
    }

    #[test]
    fn frames_and_greetings() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"hello").unwrap();
        write_frame(&mut buf, &vec![7u8; 10_000]).unwrap();
        let mut r = &buf[..];
        assert_eq!(read_frame(&mut r).unwrap().unwrap(), b"hello");
        assert_eq!(read_frame(&mut r).unwrap().unwrap().len(), 10_000);
        assert!(read_frame(&mut r).unwrap().is_none());
        let too_long = ((MAX_FRAME + 1) as u32).to_le_bytes();
        assert!(read_frame(&mut &too_long[..]).is_err());
        let mut g = Vec::new();
        write_welcome(&mut g, 42).unwrap();
        assert_eq!(read_welcome(&mut &g[..]).unwrap(), 42);
        let mut h = Vec::new();
        write_hello(&mut h).unwrap();
        read_hello(&mut &h[..]).unwrap();
        h[8] = 9;
        assert!(read_hello(&mut &h[..]).is_err());
        assert!(read_hello(&mut &b"HTTP/1.1 200"[..]).is_err());
    }
}
