#!/bin/bash
# One Ceph cluster for make test-ceph, run inside the chroot by rgw.sh start (from ../shared/notes/s3-compatible-servers.md).
# usage: D=/srv/ceph RGW_PORT=7480 MON_PORT=46789 ./ceph-setup.sh   (root) -- 1 mon, 1 memstore OSD, no mgr, no cephx, + radosgw
set -euo pipefail
D=${D:-/srv/ceph}; RGW_PORT=${RGW_PORT:-7480}; MON_PORT=${MON_PORT:-46789}
rm -rf "$D"; mkdir -p "$D"/{run,log,mon,osd,rgw}
FSID=$(cat /proc/sys/kernel/random/uuid)
cat > "$D/ceph.conf" <<CONF
[global]
fsid = $FSID
mon_host = v1:127.0.0.1:$MON_PORT
public_addr = 127.0.0.1
ms_bind_msgr2 = false
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
auth_supported = none
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_crush_chooseleaf_type = 0
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_max_pg_per_osd = 1000
run_dir = $D/run
admin_socket = $D/run/\$name.asok
log_file = $D/log/\$name.log
pid_file = $D/run/\$name.pid
keyring = $D/keyring
mon_data = $D/mon/\$name
osd_data = $D/osd/\$name
osd_objectstore = memstore
memstore_device_bytes = 2147483648
osd_memory_target = 536870912
rgw_data = $D/rgw/\$name
mon_data_avail_warn = 1
mon_data_avail_crit = 0
osd_crush_update_on_start = false
osd_class_update_on_start = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
mon_warn_on_pool_no_redundancy = false
[client.rgw.x]
rgw_frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw_dns_name = localhost
CONF
C="-c $D/ceph.conf"
ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool "$D/keyring" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
monmaptool --create --fsid "$FSID" --addv a "[v1:127.0.0.1:$MON_PORT]" "$D/monmap" >/dev/null
ceph-mon $C --mkfs -i a --monmap "$D/monmap" --keyring "$D/keyring"
ceph-mon $C -i a
for i in $(seq 1 60); do ceph $C -s --connect-timeout 2 >/dev/null 2>&1 && break; sleep 0.5; done
OSD_UUID=$(cat /proc/sys/kernel/random/uuid)
ID=$(ceph $C osd new "$OSD_UUID")
mkdir -p "$D/osd/osd.$ID"
ceph-osd $C -i "$ID" --mkfs --osd-uuid "$OSD_UUID" >>"$D/log/mkfs.log" 2>&1
ceph-osd $C -i "$ID" 2>>"$D/log/osd-start.log"
ceph $C osd crush add "osd.$ID" 1.0 root=default host=localhost
for i in $(seq 1 120); do ceph $C osd stat 2>/dev/null | grep -q '1 up' && break; sleep 0.5; done
ceph $C osd stat
radosgw $C -n client.rgw.x
for i in $(seq 1 120); do (exec 3<>/dev/tcp/127.0.0.1/$RGW_PORT) 2>/dev/null && break; sleep 0.5; done
radosgw-admin $C user create --uid=test --display-name=test --access-key=testkey --secret=testsecret >/dev/null
echo "RGW up at http://127.0.0.1:$RGW_PORT (testkey/testsecret)"
