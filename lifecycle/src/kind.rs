//! The three kinds of Spot (L1) as three types.
//!
//! A Spot's kind is a type parameter of its handle, [`Spot<K>`]: `Spot<Entry>`,
//! `Spot<User>` and `Spot<Instance>` are different types, so a value that is two kinds at
//! once cannot be written. What a kind may do — be evicted when idle, move to another
//! node — is a constant of its marker type ([`Kind`]), read where the rule applies, and
//! the operations that only one kind has exist only on that kind's handle.

use std::fmt;
use std::marker::PhantomData;

/// A Spot's id, unique in the cluster (one namespace for every kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpotId(pub u64);

/// A table keyed by Spot id (ids are hashed with one multiply and a per-process seed).
pub(crate) type SpotMap<V> = std::collections::HashMap<SpotId, V, spot_timer_core::U64Hashing>;

impl fmt::Display for SpotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A kind as a value, for what crosses a boundary (the store, the C ABI). The numbers are
/// the ABI's; 0 is "invalid" there and, like every other unknown number, is refused by
/// [`SpotKind::from_u32`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum SpotKind {
    /// The node's own Spot: one per node, created when the node starts, never moves.
    Entry = 1,
    /// Created only by an explicit `create_user_spot`; may move; never evicted.
    User = 2,
    /// Created by the first call that states the intent to create; may move; evicted
    /// when idle.
    Instance = 3,
}

impl SpotKind {
    /// The ABI's "invalid kind" number.
    pub const INVALID: u32 = 0;

    /// The kind with ABI number `v`; `InvalidKindNumber` for 0 and every unknown number
    /// (it converts into `LifecycleError::InvalidKind`).
    pub fn from_u32(v: u32) -> Result<Self, InvalidKindNumber> {
        match v {
            1 => Ok(Self::Entry),
            2 => Ok(Self::User),
            3 => Ok(Self::Instance),
            other => Err(InvalidKindNumber(other)),
        }
    }
}

/// A number that is not a Spot kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidKindNumber(pub u32);

impl fmt::Display for InvalidKindNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid spot kind {} (1 = Entry, 2 = User, 3 = Instance)",
            self.0
        )
    }
}

impl std::error::Error for InvalidKindNumber {}

mod sealed {
    pub trait Sealed {}
}

/// The rules of one kind. Implemented by [`Entry`], [`User`] and [`Instance`] only.
pub trait Kind: sealed::Sealed + Send + Sync + 'static {
    /// The kind's value.
    const KIND: SpotKind;
    /// May an idle Spot of this kind be evicted (L5)?
    const EVICTABLE: bool;
    /// Is a Spot of this kind in its node's relocation target list (L2)?
    const RELOCATABLE: bool;
}

/// Marker of the Entry kind.
#[derive(Debug)]
pub enum Entry {}
/// Marker of the User kind.
#[derive(Debug)]
pub enum User {}
/// Marker of the Instance kind.
#[derive(Debug)]
pub enum Instance {}

impl sealed::Sealed for Entry {}
impl sealed::Sealed for User {}
impl sealed::Sealed for Instance {}

impl Kind for Entry {
    const KIND: SpotKind = SpotKind::Entry;
    const EVICTABLE: bool = false;
    const RELOCATABLE: bool = false;
}
impl Kind for User {
    const KIND: SpotKind = SpotKind::User;
    const EVICTABLE: bool = false;
    const RELOCATABLE: bool = true;
}
impl Kind for Instance {
    const KIND: SpotKind = SpotKind::Instance;
    const EVICTABLE: bool = true;
    const RELOCATABLE: bool = true;
}

/// The rules of a kind given as a value (for records read from the store).
pub(crate) fn evictable(kind: SpotKind) -> bool {
    match kind {
        SpotKind::Entry => Entry::EVICTABLE,
        SpotKind::User => User::EVICTABLE,
        SpotKind::Instance => Instance::EVICTABLE,
    }
}

/// Whether a kind is listed for relocation (see [`Kind::RELOCATABLE`]).
pub(crate) fn relocatable(kind: SpotKind) -> bool {
    match kind {
        SpotKind::Entry => Entry::RELOCATABLE,
        SpotKind::User => User::RELOCATABLE,
        SpotKind::Instance => Instance::RELOCATABLE,
    }
}

/// A handle to one activation of a Spot of kind `K`: its id and its object generation.
/// A value, copy it freely; it names the Spot, it does not keep it alive.
pub struct Spot<K: Kind> {
    id: SpotId,
    generation: u64,
    _kind: PhantomData<fn() -> K>,
}

impl<K: Kind> Spot<K> {
    pub(crate) fn new(id: SpotId, generation: u64) -> Self {
        Self {
            id,
            generation,
            _kind: PhantomData,
        }
    }

    /// The Spot's id.
    pub fn id(&self) -> SpotId {
        self.id
    }

    /// The Spot's kind.
    pub fn kind(&self) -> SpotKind {
        K::KIND
    }

    /// The object generation of this activation (bumped each time the id is created
    /// again). Messages are never filtered by it (L4).
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

impl<K: Kind> Clone for Spot<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K: Kind> Copy for Spot<K> {}

impl<K: Kind> fmt::Debug for Spot<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Spot<{:?}>({}, gen {})",
            K::KIND,
            self.id,
            self.generation
        )
    }
}

impl<K: Kind> PartialEq for Spot<K> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.generation == other.generation
    }
}
impl<K: Kind> Eq for Spot<K> {}
