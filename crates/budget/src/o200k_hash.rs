//! The hash of o200k's rank table, shared by the build script that makes the table and the
//! crate that reads it, so the two cannot disagree.

/// The bits of a rank in a slot: bits 0 to 19 of a slot hold a token's rank, bits 20 to 30 the
/// top eleven bits of its hash ([`tag`]), and bit 31 is set, so 0 is no token.
pub(crate) const RANK_BITS: u32 = 20;

/// A hash of a short byte string, for the rank table.
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(word))
            .wrapping_mul(K)
            .rotate_left(26);
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(last)).wrapping_mul(K);
    h ^ (h >> 31)
}

/// The eleven bits of a hash a slot keeps.
pub(crate) fn tag(hash: u64) -> u32 {
    (hash >> 53) as u32
}
