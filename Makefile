# The project's commands. `make test` is the one test command (CI runs it too): it installs
# what the tests need (moto, an S3-compatible server, in a virtual environment under target/),
# and checks for ssh-keygen (installed only on CI; see the ssh-keygen target).

VENV   := target/venv
MOTO   := $(VENV)/bin/moto_server
export MOTO_PYTHON := $(abspath $(VENV)/bin/python)

.PHONY: test bench example install lint ssh-keygen

test: $(MOTO) ssh-keygen
	cargo test --locked

bench: $(MOTO)
	cargo bench --locked --bench clone

# Installs the helper and clones the example lake shipped in examples/lake.
example: install
	rm -rf target/demo
	git clone fdl::$(abspath examples/lake) target/demo
	git -C target/demo log --graph --stat --format='%h %s (%an, %ad)' --date=short --all

install:
	cargo install --locked --path .

lint:
	cargo fmt --check
	cargo clippy --locked --all-targets -- -D warnings

$(MOTO):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check 'moto[server]==5.2.5'
	test -x $(MOTO)

# The signature tests sign versions with the real ssh-keygen, from the system package
# openssh-client. Unlike moto it cannot go under target/: it comes only as a system package (no
# pip or cargo build), linked against the system's libcrypto. So on CI (CI=true) it is installed
# with apt-get, saying so; on a developer's machine nothing is installed: make says what is
# missing and the command that installs it, and stops.
SSH_KEYGEN_INSTALL := apt-get install -y openssh-client

ssh-keygen:
	@command -v ssh-keygen >/dev/null && exit 0; \
	if [ "$$CI" = true ]; then \
		sudo=$$([ "$$(id -u)" = 0 ] || echo "sudo "); \
		echo "make: ssh-keygen is missing; CI=true, so installing it: $${sudo}$(SSH_KEYGEN_INSTALL)"; \
		{ $${sudo}apt-get update -qq && $${sudo}$(SSH_KEYGEN_INSTALL) -qq >/dev/null \
			&& command -v ssh-keygen >/dev/null; } \
			|| { echo "make: installing openssh-client did not give ssh-keygen" >&2; exit 1; }; \
	else \
		echo "make: the signature tests need ssh-keygen, which is not on PATH." >&2; \
		echo "  Install it (Debian, Ubuntu): sudo $(SSH_KEYGEN_INSTALL)" >&2; \
		echo "  (Fedora: sudo dnf install openssh-clients; Arch: sudo pacman -S openssh; macOS has it.)" >&2; \
		echo "  make installs nothing system-wide on your machine; on CI (CI=true) it installs it." >&2; \
		exit 1; \
	fi
