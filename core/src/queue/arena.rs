//! Fixed-size chunks of entries for the wheel's buckets, allocated in segments and
//! recycled through a free list: a bucket costs what it holds (to within one chunk), and
//! a wheel in steady state allocates nothing.
//!
//! A growing arena's new segments are fresh memory: the first push into each of its
//! pages takes a page fault. Whoever drives the queue may make segments ahead of use on
//! another thread ([`Segment::made`], which writes every page of the segment) and hand
//! them over ([`Arena::adopt`]), so the thread that arms finds them ready.

use super::Entry;

/// Entries per chunk: with the link to the next chunk, one chunk is just under 1 KiB.
pub(crate) const CHUNK_ENTRIES: usize = 63;
/// Chunks per allocation (16 KiB): the arena grows in small steps.
const SEGMENT_CHUNKS: usize = 16;
/// Entries one segment holds.
pub(crate) const SEGMENT_ENTRIES: usize = SEGMENT_CHUNKS * CHUNK_ENTRIES;
pub(crate) const NIL: u32 = u32::MAX;

/// A bucket's chunks are full but for its tail, whose length the bucket keeps (a push
/// touches the line it writes and no other). The link comes first: a walk down a
/// bucket reads it with the chunk's first entries and can ask for the next chunk early.
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct Chunk {
    pub next: u32,
    pub entries: [Entry; CHUNK_ENTRIES],
}

pub(crate) struct Arena {
    segments: Vec<Box<[Chunk; SEGMENT_CHUNKS]>>,
    /// Head of the free chunks, linked through `next`.
    free: u32,
    /// Chunks handed out and not yet freed.
    in_use: usize,
}

impl Default for Arena {
    fn default() -> Self {
        Self {
            segments: Vec::new(),
            free: NIL,
            in_use: 0,
        }
    }
}

/// A segment of empty chunks made outside any arena, to be adopted by one.
pub(crate) struct Segment(Box<[Chunk; SEGMENT_CHUNKS]>);

impl Segment {
    /// A segment whose every page exists: each chunk's link is written (to `NIL`), and
    /// chunks are smaller than a page, so every page of the segment takes its write fault
    /// here rather than in the first push that reaches it.
    pub fn made() -> Self {
        let mut seg = zeroed_segment();
        for c in seg.iter_mut() {
            // A volatile write: the compiler must not drop it as a store of what the
            // zeroed allocation may already hold.
            // SAFETY: a valid, exclusive reference to the field.
            unsafe { std::ptr::write_volatile(&mut c.next, NIL) };
        }
        Segment(seg)
    }
}

impl Arena {
    #[inline]
    pub fn chunk(&self, i: u32) -> &Chunk {
        &self.segments[i as usize / SEGMENT_CHUNKS][i as usize % SEGMENT_CHUNKS]
    }

    #[inline]
    pub fn chunk_mut(&mut self, i: u32) -> &mut Chunk {
        &mut self.segments[i as usize / SEGMENT_CHUNKS][i as usize % SEGMENT_CHUNKS]
    }

    /// An empty chunk.
    pub fn allocate(&mut self) -> u32 {
        if self.free == NIL {
            self.add_segment(zeroed_segment());
        }
        let i = self.free;
        let c = self.chunk_mut(i);
        let next = c.next;
        c.next = NIL;
        self.free = next;
        self.in_use += 1;
        i
    }

    /// Chunks on the free list: what the arena holds beyond what its buckets use.
    pub fn spare_chunks(&self) -> usize {
        self.segments.len() * SEGMENT_CHUNKS - self.in_use
    }

    /// Takes a segment made ahead of use: its chunks join the free list.
    pub fn adopt(&mut self, segment: Segment) {
        self.add_segment(segment.0);
    }

    fn add_segment(&mut self, segment: Box<[Chunk; SEGMENT_CHUNKS]>) {
        let base = (self.segments.len() * SEGMENT_CHUNKS) as u32;
        self.segments.push(segment);
        for i in (0..SEGMENT_CHUNKS as u32).rev() {
            self.chunk_mut(base + i).next = self.free;
            self.free = base + i;
        }
    }

    pub fn release(&mut self, i: u32) {
        let free = self.free;
        self.chunk_mut(i).next = free;
        self.free = i;
        self.in_use -= 1;
    }

    /// Bytes held by the arena.
    #[cfg(test)]
    pub fn capacity_chunks(&self) -> usize {
        self.segments.len() * SEGMENT_CHUNKS
    }
}

/// A segment of empty chunks but for their links (set by the caller). Zeroed memory
/// comes from the allocator without a pass that writes every entry first.
fn zeroed_segment() -> Box<[Chunk; SEGMENT_CHUNKS]> {
    let layout = std::alloc::Layout::new::<[Chunk; SEGMENT_CHUNKS]>();
    // SAFETY: the layout is not zero-sized; every field of a chunk is an integer, so all
    // zeros is a valid segment, and the box frees it with the layout it was allocated with.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<[Chunk; SEGMENT_CHUNKS]>();
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(p)
    }
}

/// A list of chunks holding one bucket's entries.
#[derive(Clone, Copy)]
pub(crate) struct Bucket {
    pub head: u32,
    pub tail: u32,
    /// Entries in the tail chunk.
    tail_len: u32,
}

impl Default for Bucket {
    fn default() -> Self {
        Self {
            head: NIL,
            tail: NIL,
            tail_len: 0,
        }
    }
}

impl Bucket {
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }

    #[inline]
    pub fn push(&mut self, arena: &mut Arena, e: Entry) {
        if self.tail == NIL || self.tail_len as usize == CHUNK_ENTRIES {
            let c = arena.allocate();
            if self.tail == NIL {
                self.head = c;
            } else {
                arena.chunk_mut(self.tail).next = c;
            }
            self.tail = c;
            self.tail_len = 0;
        }
        arena.chunk_mut(self.tail).entries[self.tail_len as usize] = e;
        self.tail_len += 1;
    }

    /// Empties the bucket, handing its entries to `f` one chunk at a time; each chunk is
    /// freed before `f` sees its entries, so `f` may push into this arena again.
    pub fn drain(&mut self, arena: &mut Arena, mut f: impl FnMut(&mut Arena, &[Entry])) {
        let Bucket {
            head,
            tail,
            tail_len,
        } = std::mem::take(self);
        let mut i = head;
        let mut buf = [Entry::default(); CHUNK_ENTRIES];
        while i != NIL {
            let c = arena.chunk(i);
            let next = c.next;
            if next != NIL {
                // Chunks of one bucket are scattered over the arena: fetch the next one
                // while this one is handed out.
                crate::prefetch::for_read(arena.chunk(next));
            }
            let n = if i == tail {
                tail_len as usize
            } else {
                CHUNK_ENTRIES
            };
            buf[..n].copy_from_slice(&c.entries[..n]);
            arena.release(i);
            f(arena, &buf[..n]);
            i = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(target: u32) -> Entry {
        Entry {
            due: u64::from(target),
            target,
            tag: 0,
        }
    }

    #[test]
    fn an_adopted_segment_is_used_before_the_arena_allocates() {
        let mut arena = Arena::default();
        arena.adopt(Segment::made());
        assert_eq!(arena.capacity_chunks(), SEGMENT_CHUNKS);
        assert_eq!(arena.spare_chunks(), SEGMENT_CHUNKS);
        let mut b = Bucket::default();
        for i in 0..SEGMENT_ENTRIES as u32 {
            b.push(&mut arena, e(i));
        }
        assert_eq!(
            arena.capacity_chunks(),
            SEGMENT_CHUNKS,
            "no segment of its own"
        );
        assert_eq!(arena.spare_chunks(), 0);
        b.push(&mut arena, e(u32::MAX - 1));
        assert_eq!(
            arena.capacity_chunks(),
            2 * SEGMENT_CHUNKS,
            "full: it allocates"
        );
        let mut seen = Vec::new();
        b.drain(&mut arena, |_, entries| {
            seen.extend(entries.iter().map(|x| x.target))
        });
        assert_eq!(
            seen.len(),
            SEGMENT_ENTRIES + 1,
            "every entry back, in order"
        );
        assert!(seen[..SEGMENT_ENTRIES]
            .iter()
            .copied()
            .eq(0..SEGMENT_ENTRIES as u32));
        assert_eq!(arena.spare_chunks(), 2 * SEGMENT_CHUNKS);
    }

    #[test]
    fn adopting_keeps_the_free_chunks_already_there() {
        let mut arena = Arena::default();
        let mut b = Bucket::default();
        b.push(&mut arena, e(1));
        b.drain(&mut arena, |_, _| {});
        assert_eq!(arena.spare_chunks(), SEGMENT_CHUNKS);
        arena.adopt(Segment::made());
        assert_eq!(arena.spare_chunks(), 2 * SEGMENT_CHUNKS);
        for i in 0..(2 * SEGMENT_ENTRIES) as u32 {
            b.push(&mut arena, e(i));
        }
        assert_eq!(arena.capacity_chunks(), 2 * SEGMENT_CHUNKS);
    }
}
