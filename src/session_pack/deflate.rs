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
        // CMF: deflate with a 32 KiB window; FLG: fastest level, check bits.
        out.extend_from_slice(&[0x78, 0x01]);
        let mut bits = Bits { out, acc: 0, n: 0 };
        bits.put(0b011, 3); // the last block, fixed Huffman codes
        self.encode(data, &mut bits);
        put_literal_or_length(&mut bits, END_OF_BLOCK);
        bits.flush();
        out.extend_from_slice(&adler32(data).to_be_bytes());
        self.base += data.len() as u32 + 1;
    }

    fn encode(&mut self, data: &[u8], bits: &mut Bits) {
        let mut i = 0;
        while i < data.len() {
            if let Some((distance, length)) = self.find_match(data, i) {
                put_length(bits, length);
                put_distance(bits, distance);
                // The positions inside the match are passed over, as zlib's fastest level does.
                i += length;
            } else {
                put_literal_or_length(bits, data[i] as usize);
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
        let length = data[earlier..]
            .iter()
            .zip(&data[i..i + limit])
            .take_while(|(a, b)| a == b)
            .count();
        Some((i - earlier, length))
    }
}

const END_OF_BLOCK: usize = 256;

/// Deflate's bits: least significant first, Huffman codes most significant bit first.
struct Bits<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits<'_> {
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= u64::from(value) << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code of `len` bits, which deflate writes from its most significant bit.
    fn put_code(&mut self, code: u32, len: u32) {
        self.put(code.reverse_bits() >> (32 - len), len);
    }

    fn flush(&mut self) {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.acc = 0;
        self.n = 0;
    }
}

/// The fixed literal/length code of `symbol` (RFC 1951, 3.2.6).
fn put_literal_or_length(bits: &mut Bits, symbol: usize) {
    let s = symbol as u32;
    match symbol {
        0..=143 => bits.put_code(0x30 + s, 8),
        144..=255 => bits.put_code(0x190 + s - 144, 9),
        256..=279 => bits.put_code(s - 256, 7),
        _ => bits.put_code(0xc0 + s - 280, 8),
    }
}

const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LENGTH_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DISTANCE_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DISTANCE_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// The index of the last entry of `bases` that is at most `value`.
fn code_of(bases: &[u16], value: usize) -> usize {
    bases.partition_point(|&b| usize::from(b) <= value) - 1
}

fn put_length(bits: &mut Bits, length: usize) {
    let code = code_of(&LENGTH_BASE, length);
    put_literal_or_length(bits, 257 + code);
    let extra = u32::from(LENGTH_EXTRA[code]);
    bits.put((length - usize::from(LENGTH_BASE[code])) as u32, extra);
}

fn put_distance(bits: &mut Bits, distance: usize) {
    let code = code_of(&DISTANCE_BASE, distance);
    bits.put_code(code as u32, 5);
    let extra = u32::from(DISTANCE_EXTRA[code]);
    bits.put((distance - usize::from(DISTANCE_BASE[code])) as u32, extra);
}

/// Adler-32 (RFC 1950), summed 5552 bytes at a time so that the sums cannot overflow.
fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
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
    fn text_is_compressed_and_adler32_is_right() {
        let text = b"Wikipedia".to_vec();
        assert_eq!(adler32(&text), 0x11e6_0398);
        let mut z = SmallDeflate::default();
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
}
