#!/usr/bin/env bash
# The fresh-machine rehearsal: runs the README's two commands, as CI does, in a minimal Debian 12 root that has
# only what a fresh machine of this kind has (issue 20; README.md "A fresh-machine rehearsal").
#
#   1. mmdebstrap --variant=apt bookworm ROOT (Debian's sources of this machine, bookworm-security included);
#   2. mounts what the machine image provides: CUDA (/usr/local/cuda-*, read-only bind, with the image's
#      /usr/local links and nvcc wrappers and its ld.so.conf.d entry), its CA certificates and /etc/pip.conf (so
#      apt and pip reach the network as on the machine), /etc/hosts; and /proc, /sys (read-only), a private
#      /dev/shm (OpenMPI's shared-memory transport) and /dev/pts;
#   3. copies in a clean clone of REF (committed state only, like CI's clean clone) at ROOT/work/ptrain and the
#      checkout's ../shared beside it at ROOT/work/shared;
#   4. runs, as root, with CI=true, no standard input, every signal's default action, Debian's PATH and the
#      machine's locale LANG=C.UTF-8 (built into Debian's libc; ccache keys on it) and nothing else of the
#      host's environment,
#      `bash scripts/main.sh` and then `bash .ci/run` (the README's test command);
#   5. prints CTest's summary and each command's rc and wall time; exits 1 if either failed.
# Downloads are cached outside the root, in CACHE (default ~/.cache/ptrain-fresh-machine): apt's archives
# (bind-mounted over ROOT/var/cache/apt/archives, kept by APT::Keep-Downloaded-Packages) and pip's cache
# (ROOT/root/.cache/pip); with --ccache also ccache's (CI has none: off by default). A rerun then skips the
# downloads (apt: 448 MB of .debs), not the installs or the build. Logs, one line per output line with the seconds since
# the command started: CACHE/logs/<date>-<commit>/{main,test}.log.
# At the end (also on failure or Ctrl-C) it stops what still runs in the root, unmounts everything and deletes
# the root (rm --one-file-system, only once nothing is mounted below it); --keep keeps it for inspection.
#
# Usage: sudo bash scripts/fresh-machine.sh [options]          (as root: mmdebstrap, mount and chroot need it)
#   --ref REF       the commit to clone (default HEAD of the checkout this script is in)
#   --main-only     run only `bash scripts/main.sh`
#   --test-only     run only `bash .ci/run`
#   --ccache        keep a ccache in CACHE/ccache across rehearsals (default: a cold build, as in CI)
#   --ccache=DIR    use the ccache directory DIR (e.g. this machine's ~/.cache/ccache: a warm build, quicker
#                   when only set-up and tests are rehearsed; build.sh's CCACHE_BASEDIR makes the clone hit it)
#   --keep          keep ROOT (mounts undone) for inspection: chroot ROOT /bin/bash
#   --root DIR      where to create the root (default: a new /var/tmp/ptrain-fresh.XXXXXX; DIR must not exist
#                   or be empty)
#   --cache DIR     the download cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/ptrain-fresh-machine)
# Needs about 12 GB free under ROOT. Takes about 40 minutes on 2 cores (docs/FreshMachine.md).
set -euo pipefail

usage() { sed -n '/^# Usage:/,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//'; }

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REF=HEAD
RUN_MAIN=1
RUN_TEST=1
USE_CCACHE=0
KEEP=0
ROOT=""
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ptrain-fresh-machine"
CCACHE_HOST_DIR=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ref) REF=${2:?"--ref needs a commit"}; shift ;;
    --main-only) RUN_TEST=0 ;;
    --test-only) RUN_MAIN=0 ;;
    --ccache) USE_CCACHE=1 ;;
    --ccache=*) USE_CCACHE=1; CCACHE_HOST_DIR=${1#--ccache=} ;;
    --keep) KEEP=1 ;;
    --root) ROOT=${2:?"--root needs a directory"}; shift ;;
    --cache) CACHE=${2:?"--cache needs a directory"}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fresh-machine: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
if [ "$RUN_MAIN" = 0 ] && [ "$RUN_TEST" = 0 ]; then
  echo "fresh-machine: --main-only and --test-only exclude each other" >&2; exit 2
fi
if [ "$(id -u)" != 0 ]; then
  echo "fresh-machine: must run as root (mmdebstrap, mount, chroot); try: sudo bash $0" >&2; exit 2
fi

SHA=$(git -C "$SRC" rev-parse --verify "$REF^{commit}") || {
  echo "fresh-machine: '$REF' is not a commit of $SRC" >&2; exit 2; }
if [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
  echo "fresh-machine: note: $SRC has uncommitted changes; only commit ${SHA:0:7} is rehearsed"
fi
SHARED="$SRC/../shared"

if ! command -v mmdebstrap > /dev/null; then
  echo "fresh-machine: installing mmdebstrap on this machine"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap > /dev/null
fi

if [ -z "$ROOT" ]; then
  ROOT=$(mktemp -d /var/tmp/ptrain-fresh.XXXXXX)
else
  mkdir -p "$ROOT"
  if [ -n "$(ls -A "$ROOT")" ]; then echo "fresh-machine: $ROOT is not empty" >&2; exit 2; fi
fi
ROOT=$(realpath "$ROOT")
LOGS="$CACHE/logs/$(date -u +%Y%m%dT%H%M%SZ)-${SHA:0:7}"
mkdir -p "$CACHE/apt-archives/partial" "$CACHE/pip" "$LOGS"
CCACHE_HOST_DIR=${CCACHE_HOST_DIR:-$CACHE/ccache}
[ "$USE_CCACHE" = 1 ] && mkdir -p "$CCACHE_HOST_DIR"

MOUNTS=()   # in mount order; cleanup undoes them in reverse
mount_in() {  # mount_in TARGET-inside-root mount-arguments...
  local target="$ROOT$1"; shift
  mkdir -p "$target"
  mount "$@" "$target"
  MOUNTS+=("$target")
}
mounts_below_root() { findmnt -rn -o TARGET | awk -v r="$ROOT/" 'index($0, r) == 1'; }

cleanup() {
  local rc=$? pid i left
  trap - EXIT INT TERM
  # What still runs inside the root (an orphaned mpirun, a ninja after Ctrl-C) would keep its mounts busy.
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$ROOT" ] && kill -TERM "$pid" 2>/dev/null || true
  done
  sleep 1
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$ROOT" ] && kill -KILL "$pid" 2>/dev/null || true
  done
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || true
  done
  left=$(mounts_below_root)
  if [ -n "$left" ]; then
    echo "fresh-machine: still mounted below $ROOT (not deleting it; umount these first):" >&2
    echo "$left" >&2
    exit 1
  fi
  if [ "$KEEP" = 1 ]; then
    echo "fresh-machine: kept the root (nothing mounted): $ROOT"
  else
    rm -rf --one-file-system "$ROOT"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

elapsed() { local s=$(( $(date +%s) - $1 )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
PHASES=()   # "name<TAB>duration" lines for the summary

# 1. The Debian 12 root.
start=$(date +%s)
echo "== fresh-machine: mmdebstrap bookworm $ROOT"
mmdebstrap --quiet --variant=apt bookworm "$ROOT" /etc/apt/sources.list.d/debian.sources
PHASES+=("mmdebstrap	$(elapsed "$start")")

# 2. What the machine image provides, the kernel file systems, and the caches.
start=$(date +%s)
if [ -e /usr/local/cuda ]; then
  CUDA_REAL=$(readlink -f /usr/local/cuda)
  mount_in "$CUDA_REAL" --bind -o ro "$CUDA_REAL"
  # The image's links into the toolkit (/usr/local/cuda, lib64, include/*, lib/libcudart*) and its nvcc
  # wrappers in /usr/local/bin (small scripts that exec the toolkit's binaries).
  while IFS= read -r link; do
    case "$(readlink "$link")" in "$CUDA_REAL"*|cuda-*|/usr/local/cuda*) cp -a --parents "$link" "$ROOT" ;; esac
  done < <(find /usr/local -xdev -path "$CUDA_REAL" -prune -o -type l -print)
  while IFS= read -r wrapper; do
    if [ "$(stat -c %s "$wrapper")" -lt 4096 ] && grep -qs "$CUDA_REAL" "$wrapper"; then
      cp -a "$wrapper" "$ROOT/usr/local/bin/"
    fi
  done < <(find /usr/local/bin -maxdepth 1 -type f)
  grep -ls -e "$CUDA_REAL" -e /usr/local/cuda /etc/ld.so.conf.d/* | xargs -r cp -a -t "$ROOT/etc/ld.so.conf.d/"
  chroot "$ROOT" /sbin/ldconfig
fi
# The image's trust and network set-up: its CA certificates (update-ca-certificates adds them when the root
# installs ca-certificates), pip's configuration (which names that bundle), /etc/hosts.
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$ROOT/usr/local/share/ca-certificates"
  cp -a /usr/local/share/ca-certificates/. "$ROOT/usr/local/share/ca-certificates/"
fi
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$ROOT/etc/pip.conf"
[ -f /etc/hosts ] && cp /etc/hosts "$ROOT/etc/hosts"
mount_in /proc -t proc proc
mount_in /sys -t sysfs -o ro sysfs
mount_in /dev/shm -t tmpfs -o mode=1777,nosuid,nodev tmpfs
# A private pseudo-terminal instance (apt's log and mpirun open one; the root's /dev/ptmx is a node of its own).
mount_in /dev/pts -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts
mount --bind "$ROOT/dev/pts/ptmx" "$ROOT/dev/ptmx"
MOUNTS+=("$ROOT/dev/ptmx")
# Caches outside the root. apt-get keeps what it downloads unless told otherwise (docker-clean).
mount_in /var/cache/apt/archives --bind "$CACHE/apt-archives"
rm -f "$ROOT/etc/apt/apt.conf.d/docker-clean"
cat > "$ROOT/etc/apt/apt.conf.d/99ptrain-fresh-machine-keep-debs" <<'EOF'
// scripts/fresh-machine.sh: the archives are a bind-mounted cache outside this root; keep them.
APT::Keep-Downloaded-Packages "true";
Binary::apt::APT::Keep-Downloaded-Packages "true";
EOF
mount_in /root/.cache/pip --bind "$CACHE/pip"
[ "$USE_CCACHE" = 1 ] && mount_in /root/.cache/ccache --bind "$CCACHE_HOST_DIR"

# 3. A clean clone of the commit, and shared/ beside it.
mkdir -p "$ROOT/work"
git clone --quiet --no-hardlinks --no-checkout "$SRC" "$ROOT/work/ptrain"
git -C "$ROOT/work/ptrain" cat-file -e "$SHA^{commit}" 2>/dev/null || git -C "$ROOT/work/ptrain" fetch --quiet "$SRC" "$SHA"
git -C "$ROOT/work/ptrain" checkout --quiet --detach "$SHA"
if [ -d "$SHARED" ]; then
  cp -a "$(realpath "$SHARED")" "$ROOT/work/shared"
else
  echo "fresh-machine: note: no $SHARED beside the checkout; the root has no ../shared"
fi
PHASES+=("prepare (mounts, clone)	$(elapsed "$start")")

# 4. The README's two commands, as CI runs them.
in_root() {  # in_root NAME COMMAND: runs COMMAND in ROOT/work/ptrain, logs to LOGS/NAME.log, sets RC
  local name=$1 cmd=$2 t0 now
  t0=$(date +%s)
  echo "== fresh-machine: $cmd   (log: $LOGS/$name.log)"
  # In the background, so that a signal reaches the traps at once (bash defers a trap while it waits on a
  # foreground pipeline); the cleanup then stops what still runs in the root. The command starts as a CI job
  # does, with every signal's default action (env --default-signal): a background job of a shell without job
  # control has SIGINT and SIGQUIT ignored, and so has this script if it was started as one (bash can then
  # neither trap nor reset them), and the commands' processes would inherit that.
  { local rc=0
    chroot "$ROOT" /usr/bin/env -i --default-signal HOME=/root CI=true LANG=C.UTF-8 \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /bin/bash -c "cd /work/ptrain && $cmd" < /dev/null 2>&1 || rc=$?
    echo "$rc" > "$LOGS/$name.rc"
  } | while IFS= read -r line || [ -n "$line" ]; do
      printf -v now '%(%s)T' -1
      printf '[%5d s] %s\n' $((now - t0)) "$line"
    done | tee "$LOGS/$name.log" &
  wait $!
  RC=$(cat "$LOGS/$name.rc")
  PHASES+=("$cmd: rc $RC	$(elapsed "$t0")")
}
RESULT=0
if [ "$RUN_MAIN" = 1 ]; then
  in_root main "bash scripts/main.sh"
  [ "$RC" = 0 ] || RESULT=1
fi
if [ "$RUN_TEST" = 1 ]; then
  in_root test "bash .ci/run"
  [ "$RC" = 0 ] || RESULT=1
fi

# 5. The summary.
echo "== fresh-machine summary: commit ${SHA:0:12}, $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
if [ "$RUN_TEST" = 1 ]; then
  sed -n 's/^\[ *[0-9]* s\] //; /tests passed, /,$p' "$LOGS/test.log" | grep -v '^$' || echo "(no CTest summary in $LOGS/test.log)"
fi
# Where each command's set-up + build ended: main.sh's first step, CTest's start.
for mark in "main:== 1. import" "test:Test project "; do
  name=${mark%%:*}
  [ -f "$LOGS/$name.log" ] || continue
  t=$(grep -m1 -F "] ${mark#*:}" "$LOGS/$name.log" | sed 's/^\[ *\([0-9]*\) s\].*/\1/')
  if [ -n "$t" ]; then PHASES+=("  $name: set-up + build	$((t / 60))m$(printf %02d $((t % 60)))s"); fi
done
printf '%s\n' "${PHASES[@]}" | awk -F'\t' '{ printf "  %-40s %s\n", $1, $2 }'
echo "  logs: $LOGS"
exit "$RESULT"
