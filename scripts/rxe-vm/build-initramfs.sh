#!/bin/bash
# Jakiro: build (once) what scripts/rxe-vm/run-in-vm.sh boots: a tiny Linux VM whose kernel
# (Debian's, which has soft-RoCE, unlike most CI hosts) gives us an rxe0 RDMA device.
# Adapted from the team's rxe-vm recipe. Artifacts (gitignored):
#   $CACHE/vmlinuz     Debian bookworm kernel (linux-image-amd64), bzImage
#   $CACHE/vmlinux     the same kernel decompressed (ELF with a PVH entry note): QEMU boots it
#                      directly, skipping ~3 s of in-guest xz decompression under TCG
#   $CACHE/base.cpio   busybox + rdma-core userspace + rxe modules + /init (uncompressed newc cpio)
# Re-running is a no-op when the artifacts exist and were built by this version of the script
# (delete $CACHE to force a rebuild).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${RXE_CACHE:-$HERE/cache}
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"; flock 9      # concurrent make runs share one cache
STAMP=$(sha256sum "$0" | cut -c1-16)
[ -s "$CACHE/vmlinuz" ] && [ -s "$CACHE/base.cpio" ] && [ "$(cat "$CACHE/stamp" 2>/dev/null)" = "$STAMP" ] && exit 0
echo "rxe-vm: building VM artifacts in $CACHE" >&2

export DEBIAN_FRONTEND=noninteractive
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo -E"
PKGS="qemu-system-x86 busybox-static ibverbs-utils rdmacm-utils ibverbs-providers perftest iproute2 kmod cpio xz-utils"
missing=""
for p in $PKGS; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"; done
if [ -n "$missing" ]; then
  $SUDO timeout 300 apt-get update -qq
  $SUDO timeout 600 apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# Kernel: download the Debian kernel package (do not install it on the host), extract.
KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [ -z "$KPKG" ]; then $SUDO timeout 300 apt-get update -qq; KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}'); fi
KDIR=$CACHE/kernel
rm -rf "$KDIR"; mkdir -p "$KDIR"
( cd "$KDIR" && timeout 300 apt-get download -qq -o APT::Sandbox::User=root "$KPKG" && dpkg-deb -x ./*.deb root && rm -f ./*.deb )
KVER=$(ls "$KDIR/root/lib/modules")
cp "$KDIR/root/boot/vmlinuz-$KVER" "$CACHE/vmlinuz.tmp"

R=$CACHE/rootfs
rm -rf "$R"; mkdir -p "$R"/{bin,sbin,etc,proc,sys,dev,tmp,run,mnt/host,opt,root,lib64,usr/lib/x86_64-linux-gnu,lib/modules/$KVER}
rm -f "$R/lib/x86_64-linux-gnu"; ln -s ../usr/lib/x86_64-linux-gnu "$R/lib/x86_64-linux-gnu"

# busybox + applet symlinks
cp /bin/busybox "$R/bin/busybox"
for a in $("$R/bin/busybox" --list); do [ -e "$R/bin/$a" ] || ln -s busybox "$R/bin/$a"; done
ln -s /bin/busybox "$R/sbin/modprobe"   # kernel module autoload (request_module) runs /sbin/modprobe

# Copy a binary and its shared-library closure (resolved on the host).
copy_with_libs() {
  local f
  for f in "$@"; do
    [ -e "$f" ] || continue
    mkdir -p "$R$(dirname "$f")"; cp -L "$f" "$R$f"
    ldd "$f" 2>/dev/null | awk '/=> \//{print $3} /^\t\/lib64/{print $1}' | while read -r l; do
      [ -e "$R/usr$l" ] || [ -e "$R$l" ] && continue
      case "$l" in /lib/*) dst="$R/usr$l";; *) dst="$R$l";; esac
      mkdir -p "$(dirname "$dst")"; cp -L "$l" "$dst"
    done
  done
}
cp -L /lib64/ld-linux-x86-64.so.2 "$R/lib64/"
BINS="/usr/bin/ibv_devices /usr/bin/ibv_devinfo /usr/bin/rping /usr/bin/rdma /usr/sbin/ip /usr/bin/ib_write_lat /usr/bin/ib_read_lat"   # diagnostics only
copy_with_libs $BINS
[ -e "$R/usr/sbin/ip" ] && mv "$R/usr/sbin/ip" "$R/usr/bin/ip"   # iproute2 ip (busybox sh prefers its applet: call /usr/bin/ip)
# all libibverbs providers + their config, librdmacm (rsocket preload lib too)
mkdir -p "$R/etc/libibverbs.d" "$R/usr/lib/x86_64-linux-gnu/libibverbs"
cp -L /etc/libibverbs.d/*.driver "$R/etc/libibverbs.d/"
for p in /usr/lib/x86_64-linux-gnu/libibverbs/*.so; do copy_with_libs "$p"; done
copy_with_libs /usr/lib/x86_64-linux-gnu/librdmacm.so.1 /usr/lib/x86_64-linux-gnu/libibverbs.so.1
# Common extra libs a cgo binary may want.
cp -L /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 "$R/usr/lib/x86_64-linux-gnu/"   # glibc dlopens it for pthread_exit/cancel (rping needs it)
copy_with_libs /usr/lib/x86_64-linux-gnu/libpthread.so.0 /usr/lib/x86_64-linux-gnu/libdl.so.2 /usr/lib/x86_64-linux-gnu/libresolv.so.2 /usr/lib/x86_64-linux-gnu/librt.so.1 2>/dev/null || true
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$R/etc/passwd"
printf 'root:x:0:\n' > "$R/etc/group"
printf '127.0.0.1 localhost\n' > "$R/etc/hosts"

# Kernel modules: rdma_rxe, rdma_ucm (+ deps), dummy/veth netdevs, 9p over virtio for a host share.
MODSRC=$KDIR/root/lib/modules/$KVER
depmod -b "$KDIR/root" "$KVER"
WANT="rdma_rxe rdma_ucm ib_uverbs ib_umad dummy veth 9p 9pnet_virtio virtio_pci virtio_net virtio_blk virtio_console crc32_generic crc32_pclmul"
for m in $WANT; do
  modprobe -d "$KDIR/root" -S "$KVER" --show-depends "$m" 2>/dev/null | awk '$1=="insmod"{print $2}'
done | sort -u | while read -r ko; do
  rel=${ko#$KDIR/root}; mkdir -p "$R$(dirname "$rel")"; cp "$ko" "$R$rel"
done
cp "$MODSRC"/modules.order "$MODSRC"/modules.builtin "$MODSRC"/modules.builtin.modinfo "$R/lib/modules/$KVER/"
depmod -b "$R" "$KVER"

cat > "$R/init" <<'EOF'
#!/bin/sh
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /tmp; mount -t tmpfs tmpfs /dev/shm
ulimit -l unlimited
for m in crc32_generic rdma_rxe rdma_ucm ib_uverbs dummy; do modprobe $m || echo "init: modprobe $m failed"; done
ip link set lo up
ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy; ip link set dummy0 mtu 9000 2>/dev/null; ip link set dummy0 up
ip addr add 192.168.77.1/24 dev dummy0   # VM-internal only (the VM has no NIC)
rdma link add rxe0 type rxe netdev dummy0 || echo "init: rdma link add failed"
if grep -q 'rxe_9p=1' /proc/cmdline; then
  modprobe 9pnet_virtio; modprobe 9p; modprobe virtio_pci
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 host /mnt/host || echo "init: 9p mount failed"
fi
[ -d /opt/bin ] && export PATH=/opt/bin:$PATH
[ -d /mnt/host ] && cd /mnt/host
echo "=== rxe-vm ready $(cut -d' ' -f1 /proc/uptime)s ==="
rc=1
if [ -x /run.sh ]; then sh /run.sh; rc=$?; else echo "no /run.sh"; fi
echo "=== RXE_VM_EXIT=$rc uptime=$(cut -d' ' -f1 /proc/uptime)s ==="
sync
poweroff -f
EOF
chmod +x "$R/init"

( cd "$R" && find . -print0 | cpio --null -o -H newc --quiet ) > "$CACHE/base.cpio.tmp"
# Decompress the bzImage payload (Debian uses xz) into an ELF vmlinux for PVH direct boot.
off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$CACHE/vmlinuz.tmp" | head -1 | cut -d: -f1 || true)
rm -f "$CACHE/vmlinux"
if [ -n "$off" ] && { tail -c +$((off+1)) "$CACHE/vmlinuz.tmp" | xz -dc 2>/dev/null > "$CACHE/vmlinux.tmp"; head -c 4 "$CACHE/vmlinux.tmp" | grep -q ELF; }; then
  mv "$CACHE/vmlinux.tmp" "$CACHE/vmlinux"
else
  rm -f "$CACHE/vmlinux.tmp"; echo "build: could not extract vmlinux, will boot the bzImage (slower)" >&2
fi
mv "$CACHE/base.cpio.tmp" "$CACHE/base.cpio"
mv "$CACHE/vmlinuz.tmp" "$CACHE/vmlinuz"
echo "$KVER" > "$CACHE/kver"
echo "$STAMP" > "$CACHE/stamp"
rm -rf "$KDIR"   # keep only what is needed
du -sh "$R" "$CACHE"/vmlinu? "$CACHE/base.cpio" >&2
