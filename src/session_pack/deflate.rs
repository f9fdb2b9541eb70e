//! A zlib stream (RFC 1950, 1951) for small objects without zlib's per-stream set-up: zlib
//! clears a 128 KiB hash table for every stream, which for a pack of small objects costs more
//! than compressing them. Here the table is never cleared: each entry holds a position that
//! counts on across streams, and an entry from an earlier stream is simply too old to use.
//!
//! The encoding is what zlib's fastest level makes of small inputs (zlib-ng's "quick"
//! strategy): greedy matches found through one hash of 4 bytes, in one block coded with the
//! fixed Huffman codes, so the output is a stream every inflater reads.

/// Inputs up to this size are compressed here: every match distance fits deflate's window.
pub(super) const SMALL_MAX: usize = 32 << 10;

const HASH_BITS: u32 = 12;
const MIN_MATCH: usize = 4;
const MAX_MATCH: usize = 258;

/// A compressor for many small streams, one after the other.
pub(crate) struct SmallDeflate {
    /// Per hash of 4 bytes: `base + position + 1` of the last place it was seen (0: never).
    table: Box<[u32]>,
    /// Where the current stream starts on the running count of positions.
    base: u32,
}

impl Default for SmallDeflate {
    fn default() -> SmallDeflate {
        SmallDeflate {
            table: vec![0; 1 << HASH_BITS].into_boxed_slice(),
            base: 0,
        }
    }
}

impl SmallDeflate {
    /// Appends the zlib stream of `data` (at most [`SMALL_MAX`] bytes) to `out`.
    pub(crate) fn compress(&mut self, data: &[u8], out: &mut Vec<u8>) {
        assert!(data.len() <= SMALL_MAX, "SmallDeflate takes small inputs");
        if self.base as usize + data.len() + 1 >= u32::MAX as usize {
            self.table.fill(0);
            self.base = 0;
        }
        // At most 9 bits a byte, and the header, end of block and checksum: never grown.
        out.reserve(data.len() + data.len() / 8 + 16);
        // CMF: deflate with a 32 KiB window; FLG: fastest level, check bits.
        out.extend_from_slice(&[0x78, 0x01]);
        let mut bits = Bits { out, acc: 0, n: 0 };
        bits.put(0b011, 3); // the last block, fixed Huffman codes
        self.encode(data, &mut bits);
        bits.put_symbol(END_OF_BLOCK);
        bits.flush();
        out.extend_from_slice(&zlib_rs::adler32::adler32(1, data).to_be_bytes());
        self.base += data.len() as u32 + 1;
    }

    fn encode(&mut self, data: &[u8], bits: &mut Bits) {
        let mut i = 0;
        while i < data.len() {
            if let Some((distance, length)) = self.find_match(data, i) {
                bits.put_match(distance, length);
                // The positions inside the match are passed over, as zlib's fastest level does.
                i += length;
            } else {
                bits.put_symbol(data[i] as usize);
                i += 1;
            }
        }
    }

    /// The match for `data[i..]` at the last place its first 4 bytes were seen, if any; `i` is
    /// remembered as that place from now on.
    fn find_match(&mut self, data: &[u8], i: usize) -> Option<(usize, usize)> {
        let four: [u8; 4] = data.get(i..i + MIN_MATCH)?.try_into().ok()?;
        let hash =
            (u32::from_le_bytes(four).wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize;
        let seen = self.table[hash];
        self.table[hash] = self.base + i as u32 + 1;
        let earlier = seen.checked_sub(self.base + 1)? as usize;
        if earlier >= i || data[earlier..earlier + MIN_MATCH] != four {
            return None;
        }
        let limit = (data.len() - i).min(MAX_MATCH);
        let length = common_prefix(&data[earlier..earlier + limit], &data[i..i + limit]);
        Some((i - earlier, length))
    }
}

/// How many bytes `a` and `b` (of one length) share from their start, eight at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let mut n = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let x = u64::from_le_bytes(x.try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(y.try_into().expect("8 bytes"));
        if x != y {
            return n + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + a[n..]
        .iter()
        .zip(&b[n..])
        .take_while(|(x, y)| x == y)
        .count()
}

const END_OF_BLOCK: usize = 256;

/// Deflate's bits, least significant first, gathered 32 at a time.
struct Bits<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    /// Bits in `acc`: fewer than 32 between calls.
    n: u32,
}

impl Bits<'_> {
    /// Puts the low `count` bits of `value` (`count` at most 32).
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= u64::from(value) << self.n;
        self.n += count;
        if self.n >= 32 {
            self.out.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.n -= 32;
        }
    }

    /// A literal byte or the end of the block.
    fn put_symbol(&mut self, symbol: usize) {
        let (code, len) = LITERAL_CODES[symbol];
        self.put(u32::from(code), u32::from(len));
    }

    /// A match: its length's code and extra bits, then its distance's (31 bits at most).
    fn put_match(&mut self, distance: usize, length: usize) {
        let (code, len) = LENGTH_CODES[length];
        self.put(code, u32::from(len));
        let (code, len) = distance_code(distance);
        self.put(code, len);
    }

    fn flush(&mut self) {
        let bytes = self.acc.to_le_bytes();
        self.out
            .extend_from_slice(&bytes[..self.n.div_ceil(8) as usize]);
        self.acc = 0;
        self.n = 0;
    }
}

/// A Huffman code of `len` bits as deflate writes it, from its most significant bit.
const fn reversed(code: u32, len: u32) -> u32 {
    code.reverse_bits() >> (32 - len)
}

/// The fixed code of each literal/length symbol (RFC 1951, 3.2.6), ready to put: bits
/// reversed, and its length.
const LITERAL_CODES: [(u16, u8); 288] = {
    let mut table = [(0u16, 0u8); 288];
    let mut s = 0;
    while s < 288 {
        let (code, len) = match s {
            0..=143 => (0x30 + s as u32, 8),
            144..=255 => (0x190 + s as u32 - 144, 9),
            256..=279 => (s as u32 - 256, 7),
            _ => (0xc0 + s as u32 - 280, 8),
        };
        table[s] = (reversed(code, len) as u16, len as u8);
        s += 1;
    }
    table
};

const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LENGTH_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];

/// Each match length's bits: its symbol's code, then its extra bits (13 bits at most).
const LENGTH_CODES: [(u32, u8); MAX_MATCH + 1] = {
    let mut table = [(0u32, 0u8); MAX_MATCH + 1];
    let mut length = MIN_MATCH;
    let mut code = 0;
    while length <= MAX_MATCH {
        while code + 1 < LENGTH_BASE.len() && LENGTH_BASE[code + 1] as usize <= length {
            code += 1;
        }
        let (symbol, symbol_len) = LITERAL_CODES[257 + code];
        let extra = (length - LENGTH_BASE[code] as usize) as u32;
        table[length] = (
            symbol as u32 | extra << symbol_len,
            symbol_len + LENGTH_EXTRA[code],
        );
        length += 1;
    }
    table
};

/// A distance's bits: its 5-bit code, then its extra bits. Distance codes 4 and up cover
/// two ranges for each count of extra bits, found from the highest bit of `distance - 1`.
fn distance_code(distance: usize) -> (u32, u32) {
    let d = (distance - 1) as u32;
    if d < 4 {
        return (reversed(d, 5), 5);
    }
    let high = 31 - d.leading_zeros();
    let extra_bits = high - 1;
    let code = 2 * high + ((d >> extra_bits) & 1);
    let extra = d & ((1 << extra_bits) - 1);
    (reversed(code, 5) | extra << 5, 5 + extra_bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inflate(stream: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut z = flate2::read::ZlibDecoder::new(stream);
        std::io::Read::read_to_end(&mut z, &mut out).expect("a valid zlib stream");
        out
    }

    /// Inputs of every kind: empty, tiny, runs longer than a match, text with repeats, noise,
    /// and the largest size taken.
    fn samples() -> Vec<Vec<u8>> {
        let mut noise = Vec::new();
        let mut x: u32 = 12345;
        for _ in 0..SMALL_MAX {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            noise.push((x >> 16) as u8);
        }
        let json = br#"{"id":"0190f3a2-7b4c-7d2e-8f10-000000000001","parents":["0190f3a2-7b4c-7d2e-8f10-000000000000"],"author":"Alice <alice@example.org>","message":"Load batch 1"}"#;
        let mut out = vec![
            vec![],
            b"a".to_vec(),
            b"abc".to_vec(),
            b"abcd".to_vec(),
            b"abcdabcd".to_vec(),
            vec![0; 1000],
            vec![7; MAX_MATCH * 3 + 5],
            json.to_vec(),
            json.repeat(50),
            noise[..SMALL_MAX].to_vec(),
            noise[..1000].repeat(32),
        ];
        for n in [1, 2, 3, 4, 5, 257, 258, 259, 4096, 32767] {
            out.push(noise[..n].to_vec());
            out.push(b"xy".repeat(n / 2 + 1));
        }
        out
    }

    #[test]
    fn every_stream_inflates_to_its_input_and_old_positions_are_never_used() {
        // One compressor for every stream, as in a pack: what one stream saw must not be taken
        // as a match in the next.
        let mut z = SmallDeflate::default();
        for data in samples().iter().chain(samples().iter().rev()) {
            let mut out = Vec::new();
            z.compress(data, &mut out);
            assert_eq!(inflate(&out), *data, "input of {} bytes", data.len());
        }
    }

    #[test]
    fn random_inputs_from_small_alphabets_inflate_back() {
        // Few distinct bytes make many matches of every length and distance.
        let mut z = SmallDeflate::default();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..1500 {
            let len = (next()
                % if round % 10 == 0 {
                    SMALL_MAX as u64 + 1
                } else {
                    600
                }) as usize;
            let alphabet = 1 + next() % 8;
            let data: Vec<u8> = (0..len).map(|_| b'a' + (next() % alphabet) as u8).collect();
            let mut out = Vec::new();
            z.compress(&data, &mut out);
            assert_eq!(inflate(&out), data, "round {round}");
        }
    }

    /// The whole stream, read by zlib (flate2): its input, every byte of the stream used (the
    /// Adler-32 checked), nothing left over.
    fn inflate_exactly(stream: &[u8]) -> Vec<u8> {
        let mut z = flate2::Decompress::new(true);
        let mut out = Vec::with_capacity(SMALL_MAX + 1);
        let status = z
            .decompress_vec(stream, &mut out, flate2::FlushDecompress::Finish)
            .expect("a valid zlib stream");
        assert_eq!(status, flate2::Status::StreamEnd, "the stream ends");
        assert_eq!(
            z.total_in(),
            stream.len() as u64,
            "no byte after the stream"
        );
        out
    }

    /// Adversarial inputs: every single byte, all 256 values in order and backwards, runs of
    /// every length around the shortest and longest match, and sizes at the 32 KiB limit.
    fn adversarial() -> Vec<Vec<u8>> {
        let all: Vec<u8> = (0..=255).collect();
        let mut out: Vec<Vec<u8>> = vec![vec![]];
        out.extend((0..=255u8).map(|b| vec![b]));
        out.push(all.clone());
        out.push(all.iter().rev().copied().collect());
        out.push(all.repeat(SMALL_MAX / 256));
        for n in [
            MIN_MATCH - 1,
            MIN_MATCH,
            MAX_MATCH - 1,
            MAX_MATCH,
            MAX_MATCH + 1,
        ] {
            out.push(vec![0; n]);
            out.push(vec![0xff; n * 2 + 1]);
        }
        let mut rng = fastrand::Rng::with_seed(25);
        for n in [SMALL_MAX - 1, SMALL_MAX] {
            out.push((0..n).map(|_| rng.u8(..)).collect());
        }
        // The same 4 bytes at both ends of the largest input, noise between: the farthest
        // match an input can hold.
        for distance in [SMALL_MAX - 5, SMALL_MAX - 4] {
            let mut v: Vec<u8> = (0..distance + 4).map(|_| rng.u8(..)).collect();
            v[..4].copy_from_slice(b"fdl!");
            v[distance..].copy_from_slice(b"fdl!");
            out.push(v);
        }
        out
    }

    #[test]
    fn zlib_inflates_every_stream_to_exactly_its_input() {
        let mut z = SmallDeflate::default();
        let mut rng = fastrand::Rng::with_seed(1950);
        let random = (0..400).map(|round| {
            let len = match round % 4 {
                0 => rng.usize(..=SMALL_MAX),
                _ => rng.usize(..2_000),
            };
            // Random bytes, or bytes of a small alphabet (many matches of every length).
            let alphabet = if round % 2 == 0 { 255 } else { rng.u8(1..8) };
            (0..len).map(|_| rng.u8(..=alphabet)).collect::<Vec<u8>>()
        });
        for (n, data) in adversarial().into_iter().chain(random).enumerate() {
            let mut out = Vec::new();
            z.compress(&data, &mut out);
            assert!(
                inflate_exactly(&out) == data,
                "input {n} of {} bytes did not come back",
                data.len()
            );
        }
    }

    #[test]
    fn the_running_count_of_positions_starts_again_before_it_overflows() {
        let mut z = SmallDeflate {
            base: u32::MAX - 100,
            ..SmallDeflate::default()
        };
        for data in samples() {
            let mut out = Vec::new();
            z.compress(&data, &mut out);
            assert_eq!(inflate(&out), data);
        }
    }

    #[test]
    fn text_is_compressed_and_ends_in_its_adler32() {
        let mut z = SmallDeflate::default();
        let mut out = Vec::new();
        z.compress(b"Wikipedia", &mut out);
        assert_eq!(out[out.len() - 4..], 0x11e6_0398u32.to_be_bytes());
        let json = samples()[8].clone();
        let mut out = Vec::new();
        z.compress(&json, &mut out);
        assert!(
            out.len() < json.len() / 5,
            "{} of {}",
            out.len(),
            json.len()
        );
    }

    /// RFC 1951, 3.2.5: each code's first length or distance and its count of extra bits.
    const RFC_LENGTH_BASE: [usize; 29] = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
        131, 163, 195, 227, 258,
    ];
    const RFC_LENGTH_EXTRA: [u32; 29] = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
    ];
    const RFC_DISTANCE_BASE: [usize; 30] = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
        2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
    ];
    const RFC_DISTANCE_EXTRA: [u32; 30] = [
        0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12,
        13, 13,
    ];

    /// The code of `value` in an RFC table: the last base at most `value`.
    fn rfc_code(bases: &[usize], value: usize) -> usize {
        bases.partition_point(|&b| b <= value) - 1
    }

    #[test]
    fn every_length_and_distance_is_coded_as_the_rfc_tables_say() {
        for (length, &(got, got_len)) in LENGTH_CODES.iter().enumerate().skip(MIN_MATCH) {
            let code = rfc_code(&RFC_LENGTH_BASE, length);
            let (symbol, symbol_len) = LITERAL_CODES[257 + code];
            let extra = (length - RFC_LENGTH_BASE[code]) as u32;
            let want = (
                u32::from(symbol) | extra << symbol_len,
                u32::from(symbol_len) + RFC_LENGTH_EXTRA[code],
            );
            assert_eq!((got, u32::from(got_len)), want, "length {length}");
        }
        for distance in 1..=SMALL_MAX {
            let code = rfc_code(&RFC_DISTANCE_BASE, distance);
            let extra = (distance - RFC_DISTANCE_BASE[code]) as u32;
            let want = (
                reversed(code as u32, 5) | extra << 5,
                5 + RFC_DISTANCE_EXTRA[code],
            );
            assert_eq!(distance_code(distance), want, "distance {distance}");
        }
    }
}
