//! # spot-lifecycle-etcd
//!
//! The Location Store of `spot-lifecycle` on etcd, for several nodes in several processes
//! (or hosts): [`EtcdLocationStore`] implements `spot_lifecycle::LocationStore`.
//!
//! Arrows point one way: this crate uses `spot-lifecycle`; the lifecycle crate knows
//! nothing of etcd or tokio. The store hides its own tokio runtime (one worker thread)
//! behind the synchronous trait.
//!
//! Ground rules (who may touch which state):
//! - etcd is the only authority: a location exists while its key exists, and the key lives
//!   only as long as its owner node's lease. Every lifecycle write is one transaction
//!   fenced by the key's revisions (`store`); nothing is decided from the local view alone
//!   except routes to Ready Spots.
//! - The lease's keep-alive task alone extends the lease deadline; anyone may read it; once
//!   lost it stays lost (`lease`).
//! - The watch task alone applies changes to the local view; request paths only insert
//!   Ready routes under the caching rule of `view` and drop the routes they release.
//! - The background count writer alone writes this node's active count to etcd; the
//!   liveness task alone decides which other nodes missed their keep-alives.
//!
//! Modules: [`config`] (endpoints, prefix, lease TTL), `keys` (key layout and values),
//! `lease` (the owner lease and its keep-alive), `liveness` (other nodes' missed
//! keep-alives), `request` (one request: retries, the counter), `view` (routes, nodes, waiters),
//! `watch` (the watch task), `stop` (the tasks' stop signal), `store` (the Location Store
//! methods, including `authority_runs`: false once this node's lease is over).
#![warn(missing_docs)]

pub mod config;
mod keys;
mod lease;
mod liveness;
mod request;
mod stop;
mod store;
mod view;
mod watch;

pub use config::EtcdConfig;
pub use store::EtcdLocationStore;
