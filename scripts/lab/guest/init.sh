#!/bin/bash
# PID 1 of the lab guest (installed as /sbin/vm-init by scripts/lab/build-image.sh).
# Brings up just enough of a Linux host for dm-multipath: udev, the multipath kernel modules,
# /etc/multipath.conf and multipathd; then starts the command agent on the virtio-serial port
# "vm.cmd". No systemd: minbase has none running, and this is faster under TCG.
#
# Kernel command line options (set by test/lab/vm.ts):
#   vm.ufn=0|1       user_friendly_names (default 1: mpatha...; 0: maps are named by WWID)
#   vm.multipathd=0  do not start multipathd (a test wants to start it itself)
#   vm.net=1         configure the NIC qemu's user-mode networking gives (10.0.2.15/24 via 10.0.2.2)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
umask 022
say() { echo "vm-init [$(cut -d" " -f1 /proc/uptime)s]: $*"; }
fatal() { say "FATAL: $*"; sync; echo o > /proc/sysrq-trigger; sleep 30; }

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /run/lock /run/lock/iscsi /run/udev
mount -o remount,rw /
hostname vmlab
ip link set lo up
# The guest's clock only matters for log lines; keep the kernel quiet on the console.
echo 1 > /proc/sys/kernel/printk

opt() { local v; v=$(tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p" | tail -n1); echo "${v:-$2}"; }

# multipath does not load its kernel modules itself (LAB-NOTES); configfs is LIO's interface.
modprobe -a virtio_console dm-multipath dm-round-robin dm-service-time scsi_dh_alua configfs \
  || fatal "modprobe of the multipath modules failed"
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config

say "udev"
/lib/systemd/systemd-udevd --daemon || fatal "systemd-udevd did not start"
udevadm trigger --action=add --type=subsystems
udevadm trigger --action=add --type=devices
udevadm settle --timeout=60 || say "udevadm settle timed out (continuing)"

# find_multipaths "no": every SCSI disk with a WWID gets a map at once, also while it has a single
#   path. The built-in default ("strict") only multipaths WWIDs already listed in
#   /etc/multipath/wwids, which a fresh guest has none of, so no map would appear by itself;
#   "yes"/"smart" depend on paths showing up within a timer. "no" is deterministic, and it is what
#   iSCSI/FC CSI node set-ups commonly use (e.g. NetApp Trident asks for it).
# user_friendly_names: on by default (mpatha..., the Debian/RHEL mpathconf habit); vm.ufn=0 names
#   maps by WWID, the other variant the runbook's parsers must read.
# polling_interval 2: path failures show up in `multipath -ll` within seconds, not 5-20 s.
# vd*: the guest's own virtio root disk is never multipathed.
ufn=yes; [ "$(opt vm.ufn 1)" = 0 ] && ufn=no
mkdir -p /etc/multipath
cat > /etc/multipath.conf <<CONF
defaults {
	user_friendly_names $ufn
	find_multipaths no
	polling_interval 2
}
blacklist {
	devnode "^vd[a-z]"
}
CONF

if [ "$(opt vm.multipathd 1)" != 0 ]; then
  say "multipathd"
  multipathd || fatal "multipathd did not start"
  for _ in $(seq 1 100); do
    # "pid N idle" (nothing to do) or "running"; anything else means it is still starting.
    multipathd show daemon 2>/dev/null | grep -Eq 'idle|running' && break
    sleep 0.2
  done
fi

if [ "$(opt vm.net 0)" = 1 ]; then
  say "network (qemu user mode)"
  modprobe virtio_net || fatal "modprobe virtio_net failed"
  nic=""
  for _ in $(seq 1 50); do
    nic=$(ls /sys/class/net | grep -v '^lo$' | head -n1)
    [ -n "$nic" ] && break
    sleep 0.1
  done
  [ -n "$nic" ] || fatal "vm.net=1 but no network interface appeared"
  ip link set "$nic" up && ip addr add 10.0.2.15/24 dev "$nic" && ip route add default via 10.0.2.2 \
    || fatal "could not configure $nic"
fi

port=/dev/virtio-ports/vm.cmd
if [ ! -e "$port" ]; then
  for n in /sys/class/virtio-ports/*/name; do
    [ "$(cat "$n" 2>/dev/null)" = vm.cmd ] && port=/dev/$(basename "$(dirname "$n")")
  done
fi
[ -e "$port" ] || fatal "no virtio-serial port named vm.cmd"

say "agent on $port"
# the host measures boot-to-ready from here on: the agent sends "ready" with /proc/uptime
python3 /usr/local/lib/volume-medic/vm-agent.py "$port" &
agent=$!
# bash as PID 1 reaps every orphan on SIGCHLD; this loop only notices the agent leaving.
while kill -0 "$agent" 2>/dev/null; do wait "$agent"; done
fatal "agent exited"
