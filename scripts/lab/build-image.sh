#!/usr/bin/env bash
# Builds, once, the lab guest that test/lab/vm.ts boots: Debian 12's own kernel, a busybox
# initramfs and an ext4 root file system (debootstrap minbase + multipath-tools, open-iscsi, LIO's
# rtslib, sg3-utils...) whose PID 1 is scripts/lab/guest/init.sh.
#
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/volume-medic/lab/<hash>/{vmlinuz,initrd.img,rootfs.ext4,manifest.json}
# where <hash> covers this script and the files under scripts/lab/guest/. The directory only
# appears once it is complete (built in a temporary sibling, then renamed), so an interrupted
# build is never mistaken for a cached one. Guests boot it with qemu -snapshot: runs never change it.
#
# The last line on stdout is the image directory; progress goes to stderr.
# Idempotent: a cached image is reused in milliseconds. Exits non-zero with a message on failure.
# Needs root (apt-get, debootstrap, device nodes in the root file system).
#
# Environment (all optional):
#   VM_LAB_MIRROR   Debian mirror for debootstrap (default: the one apt is configured with)
#   VM_LAB_KEEP_WORK=1  keep the work directory of a failed build for inspection
set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SUITE=bookworm
PACKAGES=multipath-tools,kmod,udev,iproute2,procps,sg3-utils,lsscsi,open-iscsi,targetcli-fb,python3-rtslib-fb,util-linux,e2fsprogs,ceph-common
# Guest kernel modules needed before the root file system is mounted, in dependency order
# (resolved with modprobe --show-depends at build time).
INITRD_MODULES=(virtio_pci virtio_blk crc32c_generic ext4)
# Module trees the guest never uses: dropping them keeps the image (and its build) smaller.
PRUNE_MODULES=(drivers/gpu drivers/media drivers/net/wireless drivers/net/ethernet drivers/infiniband
  drivers/staging drivers/iio drivers/bluetooth drivers/hid drivers/input drivers/usb drivers/video
  drivers/isdn drivers/comedi sound net/bluetooth net/mac80211 net/wireless)

t0=$(date +%s)
say() { printf '[build-image +%3ss] %s\n' "$(( $(date +%s) - t0 ))" "$*" >&2; }
die() { printf '[build-image] FAILED: %s\n' "$*" >&2; exit 1; }
trap 'die "line $LINENO: \"$BASH_COMMAND\" exited with $?"' ERR

hash=$(cd "$HERE" && cat build-image.sh $(find guest -type f | LC_ALL=C sort) | sha256sum | cut -c1-16)
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/volume-medic/lab"
out="$cache_root/$hash"

if [ -f "$out/manifest.json" ]; then
  say "cached image $out"
  echo "$out"
  exit 0
fi

[ "$(id -u)" = 0 ] || die "needs root (apt-get, debootstrap and mknod in the guest root file system)"
mkdir -p "$cache_root"
# One build at a time: a second caller waits, then finds the finished image.
exec 9>"$cache_root/.build.lock"
if ! flock -n 9; then
  say "another build is running; waiting for it"
  flock 9
fi
if [ -f "$out/manifest.json" ]; then say "cached image $out (built meanwhile)"; echo "$out"; exit 0; fi
# We hold the lock: any work directory left is from a build that was killed.
rm -rf "$cache_root"/.build-* "$cache_root"/base-*.tar.tmp

# --- host tools ------------------------------------------------------------------------------
declare -A NEED=(
  [qemu-system-x86_64]=qemu-system-x86 [qemu-img]=qemu-utils [debootstrap]=debootstrap
  [/bin/busybox]=busybox-static [mkfs.ext4]=e2fsprogs [cpio]=cpio [depmod]=kmod [gzip]=gzip
  [flock]=util-linux
)
missing=()
for bin in "${!NEED[@]}"; do
  if [[ "$bin" == /* ]]; then [ -x "$bin" ] || missing+=("${NEED[$bin]}")
  else command -v "$bin" >/dev/null 2>&1 || missing+=("${NEED[$bin]}"); fi
done
# busybox-static must be the static one: the initramfs has no libc.
if [ -x /bin/busybox ] && ldd /bin/busybox >/dev/null 2>&1; then missing+=(busybox-static); fi
if [ ${#missing[@]} -gt 0 ]; then
  say "installing host packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2 || die "apt-get update failed"
  apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
fi

# --- mirror: the one apt already uses ----------------------------------------------------------
find_mirror() {
  local f
  # deb822 (.sources): a stanza whose Suites include "bookworm" itself (not -security/-updates).
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suite="$SUITE" '
      BEGIN { RS=""; FS="\n" }
      {
        uri=""; ok=0
        for (i=1;i<=NF;i++) {
          if ($i ~ /^URIs:/) { split($i, a, /[ \t]+/); uri=a[2] }
          if ($i ~ /^Suites:/) { n=split($i, s, /[ \t]+/); for (j=2;j<=n;j++) if (s[j]==suite) ok=1 }
          if ($i ~ /^Types:/ && $i !~ /(^|[ \t])deb([ \t]|$)/) ok=-100
        }
        if (ok>0 && uri!="") { print uri; exit }
      }' "$f"
  done
  # one-line format
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk -v suite="$SUITE" '$1=="deb" { i=2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($(i+1)==suite) { print $i; exit } }' "$f"
  done
}
mirror="${VM_LAB_MIRROR:-$(find_mirror | head -n1)}"
[ -n "$mirror" ] || die "no Debian mirror for '$SUITE' in /etc/apt/sources.list{,.d}; set VM_LAB_MIRROR"
say "mirror $mirror"

work=$(mktemp -d "$cache_root/.build-$hash.XXXXXX")
cleanup() {
  local rc=$?
  if [ $rc -ne 0 ] && [ "${VM_LAB_KEEP_WORK:-}" = 1 ]; then echo "[build-image] work directory kept: $work" >&2
  else rm -rf "$work"; fi
}
trap cleanup EXIT

# --- kernel: the one linux-image-amd64 points at in the configured archive ---------------------
kpkg_of_meta() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-6\.1\.0-[0-9]+-amd64$/ { print $2; exit }'; }
kpkg=$(kpkg_of_meta || true)
if [ -z "$kpkg" ]; then
  say "apt knows no linux-image-amd64 yet: apt-get update"
  apt-get update -q >&2 || die "apt-get update failed"
  kpkg=$(kpkg_of_meta || true)
fi
[ -n "$kpkg" ] || die "could not resolve linux-image-amd64 to a linux-image-6.1.0-*-amd64 package"
kver=${kpkg#linux-image-}
say "kernel package $kpkg: apt-get download"
(cd "$work" && apt-get download "$kpkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) || true
deb=$(ls "$work"/"$kpkg"_*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] || die "apt-get download $kpkg produced no .deb"
kver_full=$(dpkg-deb -f "$deb" Version)
dpkg -x "$deb" "$work/kernel"
[ -f "$work/kernel/boot/vmlinuz-$kver" ] || die "no /boot/vmlinuz-$kver in $kpkg"
depmod -b "$work/kernel" "$kver"

# --- root file system -------------------------------------------------------------------------
# The debootstrap result is cached on its own (keyed by suite, packages and mirror), so changing
# only the guest's init or agent rebuilds in seconds instead of re-running debootstrap.
root="$work/root"
base="$cache_root/base-$(echo "$SUITE $PACKAGES $mirror" | sha256sum | cut -c1-16).tar"
if [ -f "$base" ]; then
  say "debootstrap result cached: $base"
  mkdir -p "$root" && tar -C "$root" -xf "$base"
else
  say "debootstrap --variant=minbase $SUITE (+ $PACKAGES); this is the slow part (~1 min)"
  if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2
    [ -f "$root/debootstrap/debootstrap.log" ] && tail -n 30 "$root/debootstrap/debootstrap.log" >&2
    die "debootstrap failed (log above)"
  fi
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -cf "$base.tmp" . && mv "$base.tmp" "$base"
  say "debootstrap done"
fi

say "kernel modules into the root file system"
mkdir -p "$root/lib/modules"
cp -a "$work/kernel/lib/modules/$kver" "$root/lib/modules/"
for d in "${PRUNE_MODULES[@]}"; do rm -rf "$root/lib/modules/$kver/kernel/$d"; done
depmod -b "$root" "$kver"

say "guest init and agent"
install -m 0755 "$HERE/guest/init.sh" "$root/sbin/vm-init"
install -D -m 0755 "$HERE/guest/vm-agent.py" "$root/usr/local/lib/volume-medic/vm-agent.py"
echo vmlab > "$root/etc/hostname"
printf '127.0.0.1 localhost vmlab\n' > "$root/etc/hosts"
: > "$root/etc/fstab"
# The initiator name must exist before iscsid starts; one fixed name is fine for a throw-away guest.
mkdir -p "$root/etc/iscsi"
echo "InitiatorName=iqn.2024-01.io.volume-medic:vmlab" > "$root/etc/iscsi/initiatorname.iscsi"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/locale

say "ext4 image"
used_kib=$(du -sk "$root" | cut -f1)
size_mib=$(( used_kib / 1024 * 13 / 10 + 256 ))   # +30% and 256 MiB of room for the guest's writes
mkdir -p "$work/out"
mkfs.ext4 -q -F -L vmroot -E root_owner=0:0 -d "$root" "$work/out/rootfs.ext4" "${size_mib}M" >&2 \
  || die "mkfs.ext4 -d failed"

say "busybox initramfs"
ird="$work/initrd"
mkdir -p "$ird"/{bin,dev,proc,sys,newroot,modules}
cp /bin/busybox "$ird/bin/busybox"
: > "$ird/modules/order"
for m in "${INITRD_MODULES[@]}"; do
  modprobe -d "$work/kernel" -S "$kver" --show-depends "$m" | awk '$1=="insmod" { print $2 }' | while read -r ko; do
    base=$(basename "$ko")
    grep -qxF "$base" "$ird/modules/order" || { cp "$ko" "$ird/modules/"; echo "$base" >> "$ird/modules/order"; }
  done
done
cat > "$ird/init" <<'INIT'
#!/bin/busybox sh
# Stage 1: load virtio + ext4, mount /dev/vda, hand over to the real root's /sbin/vm-init.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "initramfs: FAILED: $*"; echo o > /proc/sysrq-trigger; sleep 10; }
for m in $(cat /modules/order); do insmod "/modules/$m" || echo "initramfs: insmod $m failed"; done
i=0
while [ ! -b /dev/vda ]; do
  i=$((i+1)); [ $i -gt 200 ] && fail "no /dev/vda after 20 s"
  sleep 0.1
done
mount -t ext4 -o rw /dev/vda /newroot || fail "mount /dev/vda"
[ -x /newroot/sbin/vm-init ] || fail "no /sbin/vm-init in the root file system"
mount --move /dev /newroot/dev
umount /proc /sys
exec switch_root /newroot /sbin/vm-init
INIT
chmod 0755 "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/out/initrd.img"
cp "$work/kernel/boot/vmlinuz-$kver" "$work/out/vmlinuz"

build_s=$(( $(date +%s) - t0 ))
cat > "$work/out/manifest.json" <<JSON
{
  "hash": "$hash",
  "kernelPackage": "$kpkg",
  "kernelVersion": "$kver",
  "kernelPackageVersion": "$kver_full",
  "suite": "$SUITE",
  "mirror": "$mirror",
  "packages": "$PACKAGES",
  "rootfsMiB": $size_mib,
  "builtAt": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "buildSeconds": $build_s
}
JSON
rm -rf "$out"
mv "$work/out" "$out"
# Keep this image and the two newest others (another checkout may still use them); drop the rest.
# (|| true: with no other image, ls and grep find nothing, which is not a failure.)
{ ls -1dt "$cache_root"/[0-9a-f]*/ 2>/dev/null | grep -v "/$hash/\$" | tail -n +3 | xargs -r rm -rf; } || true
say "done in ${build_s}s: $out (rootfs ${size_mib} MiB, kernel $kver_full)"
echo "$out"
