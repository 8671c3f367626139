//! A reader of fuzz input: every read succeeds (zeros once the input is used up).

pub struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }
    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    /// A value in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 256 {
            u64::from(self.u8()) % n
        } else {
            self.u64() % n
        }
    }
    /// True with probability 1/n (n > 0).
    pub fn one_in(&mut self, n: u8) -> bool {
        self.u8().checked_rem(n) == Some(0)
    }
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }
    /// Mostly small numbers, sometimes any u32/u64: struct fields and enum values.
    pub fn small_or_any_u32(&mut self, small: u32) -> u32 {
        match self.u8() % 8 {
            0 => self.u32(),
            1 => u32::MAX,
            _ => u32::from(self.u8()) % small.max(1),
        }
    }
    pub fn small_or_any_u64(&mut self, small: u64) -> u64 {
        match self.u8() % 8 {
            0 => self.u64(),
            1 => u64::MAX,
            _ => u64::from(self.u8()) % small.max(1),
        }
    }
}
