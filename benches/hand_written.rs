//! `make bench`: the parts written by hand beside the library that would otherwise do the job,
//! side by side in one run (DEVELOPMENT.md, "Why hand-written", gives the figures):
//!
//! - the small DEFLATE encoder (`session_pack/deflate.rs`) beside zlib-rs (flate2, its fastest
//!   and its default level) on the objects of a real clone, one zlib stream per object as a
//!   pack holds them: the median time of 5 rounds and the bytes written
//!   (`FDL_BENCH_DEFLATE=<versions>`, 3000 by default, sets the lake's size);
//! - the lenient JSON reader (`lake/json.rs`) beside a `serde_json::Value` tree, on a
//!   `version.json` whose writer added a large field of its own: time and the heap's peak.

// The shared test support is one crate's private modules, `pub` to one another.
#![allow(unreachable_pub)]

// The tests' support, of which a benchmark uses a part.
#[allow(dead_code)]
#[path = "../t/support/mod.rs"]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use support::{median, LakeBuilder, TestEnv};

/// Every object of the repository at `git_dir`, its content only, as a clone's pack holds them.
fn objects(t: &TestEnv, repo: &str) -> Vec<Vec<u8>> {
    let mut child = t
        .command("git", repo, &["cat-file", "--batch-all-objects", "--batch"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut objects = Vec::new();
    let mut header = String::new();
    while out.read_line(&mut header).unwrap() > 0 {
        let size: usize = header.split_whitespace().nth(2).unwrap().parse().unwrap();
        let mut content = vec![0; size + 1];
        out.read_exact(&mut content).unwrap();
        content.pop();
        objects.push(content);
        header.clear();
    }
    assert!(child.wait().unwrap().success());
    objects
}

fn zlib(objects: &[Vec<u8>], level: flate2::Compression) -> usize {
    objects
        .iter()
        .map(|o| {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), level);
            z.write_all(o).unwrap();
            z.finish().unwrap().len()
        })
        .sum()
}

/// The median seconds of 5 rounds of `f`, and what it returned.
fn rounds(mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut out = 0;
    let times = (0..5)
        .map(|_| {
            let start = Instant::now();
            out = std::hint::black_box(f());
            start.elapsed().as_secs_f64()
        })
        .collect();
    (median(times), out)
}

/// The heap in use, and its peak since [`peak_of`] last reset it.
static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: every call is passed to the system's allocator as it came; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = IN_USE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What `f` took from the heap at its peak, beyond what was in use when it began.
fn peak_of(f: impl FnOnce()) -> usize {
    let base = IN_USE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    f();
    PEAK.load(Ordering::Relaxed) - base
}

/// A `version.json` with a field its writer added: `entries` small objects.
fn record_with_a_large_field(entries: usize) -> Vec<u8> {
    let mut s =
        String::from(r#"{"parents": [], "message": "m", "author": "A <a@example.org>", "host": ["#);
    for i in 0..entries {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            r#"{{"row": {i}, "note": "kept by the host", "ok": true}}"#
        ));
    }
    s.push_str("]}");
    s.into_bytes()
}

fn json_row() {
    let record = record_with_a_large_field(100_000);
    println!();
    println!(
        "JSON: a version.json of {:.1} MiB, most of it a field of its writer's own",
        record.len() as f64 / (1 << 20) as f64
    );
    println!("| reader | time (median of 5) | heap at its peak |");
    println!("| --- | --- | --- |");
    let typed = peak_of(|| git_remote_fdl::fuzz::record(&record));
    let (t_typed, _) = rounds(|| {
        git_remote_fdl::fuzz::record(&record);
        0
    });
    println!(
        "| lake/json.rs, read typed (and mapped) | {:.1} ms | {:.1} MiB |",
        t_typed * 1e3,
        typed as f64 / (1 << 20) as f64
    );
    let tree = peak_of(|| {
        std::hint::black_box(serde_json::from_slice::<serde_json::Value>(&record).unwrap());
    });
    let (t_tree, _) = rounds(|| {
        std::hint::black_box(serde_json::from_slice::<serde_json::Value>(&record).unwrap());
        0
    });
    println!(
        "| serde_json::Value, the tree alone | {:.1} ms | {:.1} MiB |",
        t_tree * 1e3,
        tree as f64 / (1 << 20) as f64
    );
}

fn main() {
    json_row();
    let versions: u64 = std::env::var("FDL_BENCH_DEFLATE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let t = TestEnv::new();
    let mut lake = LakeBuilder::new();
    lake.chain(1, versions);
    lake.branch("main", versions);
    lake.refs_json();
    let url = t.local_lake("lake", &lake);
    t.ok(".", &["clone", "-q", "--bare", &url, "r.git"]);
    let objects = objects(&t, "r.git");
    let small: Vec<Vec<u8>> = objects
        .into_iter()
        .filter(|o| o.len() <= 32 << 10)
        .collect();
    let raw: usize = small.iter().map(Vec::len).sum();
    println!(
        "DEFLATE of a clone's objects up to 32 KiB, one stream each: {} objects, {} bytes, from {versions} versions",
        small.len(),
        raw
    );
    let (own, own_bytes) = rounds(|| git_remote_fdl::fuzz::deflate_small(&small));
    println!("| encoder | time (median of 5) | bytes out | time / ours | bytes / ours |");
    println!("| --- | --- | --- | --- | --- |");
    println!(
        "| session_pack/deflate.rs | {:.1} ms | {own_bytes} | 1.00x | 1.00x |",
        own * 1e3
    );
    for (name, level) in [
        ("zlib-rs, fastest level (1)", flate2::Compression::fast()),
        ("zlib-rs, default level (6)", flate2::Compression::default()),
    ] {
        let (time, bytes) = rounds(|| zlib(&small, level));
        println!(
            "| {name} | {:.1} ms | {bytes} | {:.2}x | {:.2}x |",
            time * 1e3,
            time / own,
            bytes as f64 / own_bytes as f64
        );
    }
}
