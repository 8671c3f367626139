//! The key layout and the values stored under it.
//!
//! - `{prefix}loc/{spot id}`: one Spot's location, attached to its owner node's lease, so
//!   that the end of the lease deletes it. Value: `v1 {C|R} {kind number} {owner node}`.
//!   The authority epoch and the object generation are the key's create revision (unique
//!   per authority, growing at every re-creation); its mod revision fences the Ready
//!   commit (it equals the create revision while the record is Creating).
//! - `{prefix}node/{node id}`: a live node, attached to its lease. Value:
//!   `v1 {active cap} {active count}`, followed by ` {address}` when the node serves other
//!   node processes (`127.0.0.1:7001`, `[::1]:7001`).
//!
//! Ids are written as 20 zero-padded digits so that one prefix range lists one kind of
//! key and the text sorts like the number.

use spot_lifecycle::{LocationState, NodeId, SpotId, SpotKind};

/// What a location value holds (the revisions come from the key itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LocationValue {
    pub state: LocationState,
    pub kind: SpotKind,
    pub node: NodeId,
}

/// What a node value holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeValue {
    pub cap: u64,
    pub active: u64,
    pub address: Option<std::net::SocketAddr>,
}

/// One decoded key of this store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    Location(SpotId),
    Node(NodeId),
}

#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_string(),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn location(&self, spot: SpotId) -> String {
        format!("{}loc/{:020}", self.prefix, spot.0)
    }

    pub fn node(&self, node: NodeId) -> String {
        format!("{}node/{:020}", self.prefix, node.0)
    }

    pub fn nodes(&self) -> String {
        format!("{}node/", self.prefix)
    }

    /// The key `raw` names, if it is one of this store's.
    pub fn parse(&self, raw: &[u8]) -> Option<Key> {
        let rest = std::str::from_utf8(raw).ok()?.strip_prefix(&self.prefix)?;
        if let Some(id) = rest.strip_prefix("loc/") {
            return id.parse().ok().map(|v| Key::Location(SpotId(v)));
        }
        rest.strip_prefix("node/")?
            .parse()
            .ok()
            .map(|v| Key::Node(NodeId(v)))
    }
}

impl LocationValue {
    pub fn encode(&self) -> String {
        let state = match self.state {
            LocationState::Creating => 'C',
            LocationState::Ready => 'R',
        };
        format!("v1 {state} {} {}", self.kind as u32, self.node.0)
    }

    pub fn decode(raw: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(raw).ok()?;
        let mut parts = text.split(' ');
        if parts.next()? != "v1" {
            return None;
        }
        let state = match parts.next()? {
            "C" => LocationState::Creating,
            "R" => LocationState::Ready,
            _ => return None,
        };
        let kind = SpotKind::from_u32(parts.next()?.parse().ok()?).ok()?;
        let node = NodeId(parts.next()?.parse().ok()?);
        parts.next().is_none().then_some(Self { state, kind, node })
    }
}

impl NodeValue {
    pub fn encode(&self) -> String {
        match self.address {
            Some(a) => format!("v1 {} {} {a}", self.cap, self.active),
            None => format!("v1 {} {}", self.cap, self.active),
        }
    }

    pub fn decode(raw: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(raw).ok()?;
        let mut parts = text.split(' ');
        if parts.next()? != "v1" {
            return None;
        }
        let cap = parts.next()?.parse().ok()?;
        let active = parts.next()?.parse().ok()?;
        let address = match parts.next() {
            Some(a) => Some(a.parse().ok()?),
            None => None,
        };
        parts.next().is_none().then_some(Self {
            cap,
            active,
            address,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_garbage_is_refused() {
        let v = LocationValue {
            state: LocationState::Ready,
            kind: SpotKind::Instance,
            node: NodeId(7),
        };
        assert_eq!(LocationValue::decode(v.encode().as_bytes()), Some(v));
        let n = NodeValue {
            cap: 10,
            active: 3,
            address: None,
        };
        assert_eq!(NodeValue::decode(n.encode().as_bytes()), Some(n));
        let n = NodeValue {
            address: Some("127.0.0.1:7001".parse().unwrap()),
            ..n
        };
        assert_eq!(n.encode(), "v1 10 3 127.0.0.1:7001");
        assert_eq!(NodeValue::decode(n.encode().as_bytes()), Some(n));
        assert_eq!(NodeValue::decode(b"v1 10 3 nowhere"), None);
        for bad in [
            "",
            "v1",
            "v2 R 3 7",
            "v1 X 3 7",
            "v1 R 0 7",
            "v1 R 3 7 8",
            "v1 R 3 x",
        ] {
            assert_eq!(LocationValue::decode(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(NodeValue::decode(b"v1 1"), None);
    }

    #[test]
    fn keys_parse_back_only_under_the_prefix() {
        let k = Keys::new("/p/");
        assert_eq!(
            k.parse(k.location(SpotId(42)).as_bytes()),
            Some(Key::Location(SpotId(42)))
        );
        assert_eq!(
            k.parse(k.node(NodeId(3)).as_bytes()),
            Some(Key::Node(NodeId(3)))
        );
        assert_eq!(k.parse(b"/q/loc/1"), None);
        assert_eq!(k.parse(b"/p/loc/x"), None);
        assert!(k.location(SpotId(2)) < k.location(SpotId(10)));
    }
}
