#!/bin/bash
# `make test-ceph` (root): RGW 20.2 (Debian forky) and RGW 16.2 (Debian bookworm), each in a
# debootstrap chroot under target/ceph/ on a one-node RADOS cluster, and the Ceph RGW tests
# (`cargo test -- --ignored rgw`) run on each. RGW 16 takes If-Match only with an unquoted
# ETag: the helper's store check finds it and sends that form; object_store's own put_opts
# suite (quoted ETags) is run on RGW 20 only. Every cluster is stopped and /proc unmounted on
# the way out, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "make: test-ceph needs root (debootstrap, chroot, mount)" >&2; exit 1; }
running=()
stop_all() {
  for r in "${running[@]}"; do
    set -- $r
    RELEASE=$1 ROOT=$PWD/target/ceph/$1 bash t/ceph/rgw.sh stop || true
  done
}
trap stop_all EXIT
for spec in "forky 20 17480 46789" "bookworm 16 17481 46790"; do
  set -- $spec
  release=$1 rgw=$2 port=$3 mon=$4 root=$PWD/target/ceph/$1
  echo "test-ceph: RGW $rgw (Debian $release) in $root"
  RELEASE=$release ROOT=$root bash t/ceph/rgw.sh bootstrap
  running+=("$release")
  RELEASE=$release ROOT=$root RGW_PORT=$port MON_PORT=$mon bash t/ceph/rgw.sh start
  skip=()
  [ "$rgw" = 16 ] && skip=(--skip s3_on_rgw_meets_put_opts)
  FDL_TEST_RGW_ENDPOINT=http://127.0.0.1:$port FDL_TEST_RGW_RELEASE=$rgw \
    cargo test --locked --test t -- --ignored rgw "${skip[@]}"
  RELEASE=$release ROOT=$root bash t/ceph/rgw.sh stop
  unset 'running[-1]'
done
