#!/bin/bash
# Ceph RGW in a debootstrap chroot, on a one-mon, one-memstore-OSD cluster, for `make test-ceph`
# (root). Usage: rgw.sh bootstrap|start|stop
# Env: RELEASE (forky: RGW 20.2; bookworm: RGW 16.2), ROOT (the chroot), RGW_PORT, MON_PORT.
# The user's keys are testkey / testsecret. From ../shared/notes/s3-compatible-servers.md.
set -euo pipefail
RELEASE=${RELEASE:-forky}; ROOT=${ROOT:?}; RGW_PORT=${RGW_PORT:-7480}; MON_PORT=${MON_PORT:-46789}
HERE=$(cd "$(dirname "$0")" && pwd)
case "$1" in
bootstrap)   # about 1.5 min and 770 MB, once per machine
  [ -x "$ROOT/usr/bin/radosgw" ] && exit 0
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  # bookworm's debootstrap has no 'forky' script; the 'sid' one works for it
  script=/usr/share/debootstrap/scripts/$RELEASE
  [ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
  debootstrap --variant=minbase "$RELEASE" "$ROOT" http://deb.debian.org/debian "$script"
  printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"; chmod +x "$ROOT/usr/sbin/policy-rc.d"
  # ceph-mon's postinst calls systemctl, which fails in a chroot
  printf '#!/bin/sh\nexit 0\n' > "$ROOT/usr/local/bin/systemctl"; chmod +x "$ROOT/usr/local/bin/systemctl"
  mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
  trap 'umount "$ROOT/proc" 2>/dev/null || true' EXIT
  # forky's Release file in the mirror may be expired
  chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh -c \
    'apt-get -o Acquire::Check-Valid-Until=false update -qq && apt-get install -y -qq --no-install-recommends radosgw ceph-mon ceph-osd >/dev/null && apt-get clean' ;;
start)       # about 12 s
  mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
  cp "$HERE/ceph-setup.sh" "$ROOT/srv/ceph-setup.sh"
  chroot "$ROOT" env D=/srv/ceph RGW_PORT="$RGW_PORT" MON_PORT="$MON_PORT" bash /srv/ceph-setup.sh ;;
stop)        # radosgw first (it hangs on shutdown once the OSD is gone), then osd, then mon
  for n in client.rgw.x osd.0 mon.a; do
    f="$ROOT/srv/ceph/run/$n.pid"; [ -f "$f" ] || continue; pid=$(cat "$f"); kill "$pid" 2>/dev/null || true
    for i in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
  if mountpoint -q "$ROOT/proc"; then umount "$ROOT/proc"; fi ;;
esac
