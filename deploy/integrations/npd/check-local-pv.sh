#!/bin/sh
# node-problem-detector custom plugin: is the device of every Local PV on this node there?
#
# Prints one line for the LocalDiskLost condition, in the format volume-medic parses
# (src/control/sources/messages.ts NPD_LOCAL_PV_MISSING):
#   local PV <pv>: <path> is missing; local PV <pv>: <path> is missing      exit 1 (problem)
#   local PV <pv>: <path> is missing (placeholder /dev/loopN stands in)    exit 1 (problem)
#   local PV <pv>: <path> is present; ...                                   exit 0 (ok)
#   <why it cannot tell>                                                    exit 2 (unknown)
#
# Which PVs: those of this node ($NODE_NAME, required: NPD's DaemonSet sets it from
# spec.nodeName) in the file $LOCAL_PV_LIST (default /config/plugin/local-pvs), one
# "<node> <pv> <path>" a line, '#' comments. One ConfigMap serves the whole DaemonSet, so the
# list names every node's PVs and each node checks only its own lines (a line of another node is
# not this node's missing disk). Without that file: kubectl (if NPD's image has it and its
# ServiceAccount may list persistentvolumes) for the Local PVs whose node affinity names
# $NODE_NAME. Only block device paths under /dev are checked (filesystem Local PVs are not this
# failure). Paths are looked up under $HOST_ROOT (default: none), e.g. HOST_ROOT=/host with the
# host's /dev mounted at /host/dev. A dangling link counts as missing.
#
# A link that leads to a loop device is volume-medic's placeholder standing in for the disk
# (runbook local-pv-placeholder; udev makes no by-id links to loop devices): the disk is still
# missing, and the line says so. Reporting it present would clear the condition, and the receiver
# would release the placeholder from under the pod it was placed for.
set -u

OK=0
PROBLEM=1
UNKNOWN=2
list=${LOCAL_PV_LIST:-/config/plugin/local-pvs}
root=${HOST_ROOT:-}
root=${root%/}

# "<node> <pv> <path>" lines (every node's when read from the list; the loop below keeps this node's).
pvs() {
  if [ -z "${NODE_NAME:-}" ]; then
    echo "cannot tell which Local PVs are on this node: NODE_NAME is not set" >&2
    return 1
  fi
  if [ -f "$list" ]; then
    sed -e 's/#.*//' "$list"
  elif command -v kubectl >/dev/null 2>&1; then
    kubectl get persistentvolumes -o jsonpath='{range .items[?(@.spec.local.path)]}{.metadata.name}{" "}{.spec.local.path}{" "}{.spec.nodeAffinity.required.nodeSelectorTerms[*].matchExpressions[*].values[*]}{"\n"}{end}' \
      | awk -v node="$NODE_NAME" '{ for (i = 3; i <= NF; i++) if ($i == node) { print node, $1, $2; break } }'
  else
    echo "cannot tell which Local PVs are on this node: no $list and no kubectl" >&2
    return 1
  fi
}

# Where a path leads on the host: links are followed under $root, an absolute target being the
# host's (a placeholder's /dev/loopN) and a relative one relative to its link (udev's ../../sdb).
# Fails on a loop of links.
resolve() {
  p=$1
  hops=0
  while [ -L "$root$p" ]; do
    hops=$((hops + 1))
    [ "$hops" -le 16 ] || return 1
    t=$(readlink "$root$p") || return 1
    case $t in
      /*) p=$t ;;
      *) p=${p%/*}/$t ;;
    esac
  done
  printf '%s\n' "$p"
}

if ! entries=$(pvs 2>&1); then
  echo "$entries"
  exit $UNKNOWN
fi

missing=""
present=""
count=0
# Fields: node, PV name, device path (anything after is ignored).
while read -r node pv path _rest; do
  [ -n "${node:-}" ] || continue
  if [ -z "${path:-}" ]; then
    echo "bad line in the list (expected <node> <pv> <path>): $node ${pv:-}"
    exit $UNKNOWN
  fi
  [ "$node" = "$NODE_NAME" ] || continue
  case $pv in
    *[!a-z0-9.-]* | [!a-z0-9]*) echo "bad PV name in the list: $pv"; exit $UNKNOWN ;;
  esac
  case $path in
    /dev/*) ;;
    *) continue ;;
  esac
  case $path in
    *..* | *[!A-Za-z0-9/:._+@-]*) echo "bad device path for local PV $pv: $path"; exit $UNKNOWN ;;
  esac
  count=$((count + 1))
  dev=$(resolve "$path") || dev=""
  if [ -z "$dev" ] || [ ! -e "$root$dev" ]; then
    missing="${missing:+$missing; }local PV $pv: $path is missing"
    continue
  fi
  case ${dev##*/} in
    loop*[!0-9]*) ;;
    loop[0-9]*)
      missing="${missing:+$missing; }local PV $pv: $path is missing (placeholder $dev stands in)"
      continue
      ;;
  esac
  present="${present:+$present; }local PV $pv: $path is present"
done <<LIST
$entries
LIST

if [ -n "$missing" ]; then
  echo "$missing"
  exit $PROBLEM
fi
if [ "$count" -eq 0 ]; then
  echo "no local PV block devices on this node"
else
  echo "$present"
fi
exit $OK
