//! The receiving side: a node serving the nodes of other processes on a TCP address. One
//! thread accepts; each connection has a thread that reads a request, hands it to the
//! node (which applies the owner and lease checks of L4 as for any routed message) and
//! writes the answer.

use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::Mutex;

use super::wire::{self, Answer, Request};
use crate::cluster::Peer;
use crate::error::{LifecycleError, Result};
use crate::store::NodeId;

/// Connections one node serves at most (a thread each); one more is closed at once, and
/// its client's request fails as "did not run".
const MAX_CONNECTIONS: usize = 1024;
/// A connection that sends nothing for this long is closed (a peer that vanished without
/// closing it, behind a partition); the client's pool opens a new one when it needs it.
const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// The connections being served, so that stopping can end them.
#[derive(Default)]
struct Open {
    next: AtomicU64,
    streams: Mutex<HashMap<u64, TcpStream>>,
}

/// A bound address, served once the node exists.
pub(crate) struct PeerServer {
    listener: Option<TcpListener>,
    address: SocketAddr,
    stopping: Arc<AtomicBool>,
    open: Arc<Open>,
    acceptor: Option<JoinHandle<()>>,
}

impl PeerServer {
    /// Binds `address` (port 0: any free port). Connections wait in the listen backlog
    /// until [`PeerServer::serve`].
    pub(crate) fn bind(address: SocketAddr) -> Result<Self> {
        let listener = TcpListener::bind(address).map_err(|e| {
            LifecycleError::InvalidArgument(format!("cannot listen on {address}: {e}"))
        })?;
        let address = listener.local_addr().map_err(|e| {
            LifecycleError::InvalidArgument(format!("the address bound for {address}: {e}"))
        })?;
        Ok(Self {
            listener: Some(listener),
            address,
            stopping: Arc::default(),
            open: Arc::default(),
            acceptor: None,
        })
    }

    /// The address bound (with the port chosen when 0 was asked).
    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// Serves `node` (held weakly: the server never keeps a node alive).
    pub(crate) fn serve(&mut self, id: NodeId, node: Weak<dyn Peer>) -> Result<()> {
        let Some(listener) = self.listener.take() else {
            return Ok(());
        };
        let (stopping, open) = (self.stopping.clone(), self.open.clone());
        let acceptor = std::thread::Builder::new()
            .name(format!("spot-node-{}-listen", id.0))
            .spawn(move || accept_loop(listener, id, node, stopping, open))
            .map_err(|e| LifecycleError::InvalidArgument(format!("cannot start a thread: {e}")))?;
        self.acceptor = Some(acceptor);
        Ok(())
    }

    /// Stops accepting and ends every connection: a request being read is dropped
    /// unanswered (it ran nothing); one being handled finishes, its answer is lost.
    pub(crate) fn stop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        // Wakes the accepting thread, which then sees `stopping`.
        let _ = TcpStream::connect_timeout(&self.address, std::time::Duration::from_secs(1));
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        for (_, s) in self.open.streams.lock().drain() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(
    listener: TcpListener,
    id: NodeId,
    node: Weak<dyn Peer>,
    stopping: Arc<AtomicBool>,
    open: Arc<Open>,
) {
    for stream in listener.incoming() {
        if stopping.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if open.streams.lock().len() >= MAX_CONNECTIONS {
            let _ = stream.shutdown(Shutdown::Both);
            continue;
        }
        let Ok(kept) = stream.try_clone() else {
            continue;
        };
        let key = open.next.fetch_add(1, Ordering::Relaxed);
        open.streams.lock().insert(key, kept);
        let (node, open_c, stopping_c) = (node.clone(), open.clone(), stopping.clone());
        let started = std::thread::Builder::new()
            .name(format!("spot-node-{}-peer", id.0))
            .spawn(move || {
                // A connection that fails ends; the client sees its answer lost.
                let _ = serve_connection(stream, id, &node, &stopping_c);
                open_c.streams.lock().remove(&key);
            });
        if started.is_err() {
            if let Some(s) = open.streams.lock().remove(&key) {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

fn serve_connection(
    mut stream: TcpStream,
    id: NodeId,
    node: &Weak<dyn Peer>,
    stopping: &AtomicBool,
) -> io::Result<()> {
    let _ = stream.set_nodelay(true);
    stream.set_read_timeout(Some(IDLE_TIMEOUT))?;
    wire::read_hello(&mut stream)?;
    wire::write_welcome(&mut stream, id.0)?;
    while let Some(body) = wire::read_frame(&mut stream)? {
        if stopping.load(Ordering::Acquire) {
            return Ok(());
        }
        let Some(request) = wire::decode_request(&body) else {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not a request"));
        };
        drop(body);
        let answer = match node.upgrade() {
            Some(node) => handle(&*node, request),
            None => Err(LifecycleError::Closed),
        };
        wire::write_frame(&mut stream, &wire::encode_answer(&answer))?;
    }
    Ok(())
}

fn handle(node: &dyn Peer, request: Request) -> Result<Answer> {
    match request {
        Request::Accept {
            spot,
            lane,
            create,
            payload,
        } => node
            .accept(spot, lane, &mut Some(payload), create)
            .map(|generation| Answer::Accepted { generation }),
        Request::Activate { spot, kind, first } => {
            let mut first = first;
            let had_first = first.is_some();
            let generation = node.activate_here(spot, kind, &mut first)?;
            Ok(Answer::Activated {
                generation,
                first_taken: had_first && first.is_none(),
            })
        }
    }
}
