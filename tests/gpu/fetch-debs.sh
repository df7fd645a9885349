#!/bin/sh
# fetch-debs.sh — run HERE (a Debian machine with apt), not on the GPU
# machine: downloads the Debian packages hat builds against, with their
# library dependencies, into .debs/ at the repo root, for a GPU machine
# whose image lacks them and cannot reach a registry.  check.sh unpacks
# them into a private prefix there (never over the image's own /usr).
# Add .debs/ to .git/info/exclude and name it in the device tool's carry.
# The base system (libc, libstdc++, libgomp, ...) is assumed present, and
# only the pthread build of OpenBLAS is taken.  Each package is repacked
# without its static libraries, documentation and translations (hat links
# the shared ones): 26 MiB in all instead of 42 (session 20), so that the
# tree and .debs/ fit the device tool's 64 MiB.
# libdnnl-dev (oneDNN, session 23) adds about 7 MiB; not yet measured on
# a GPU machine.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
pkgs="libjansson-dev zlib1g-dev libarchive-dev libreadline-dev libopenblas-dev
      libpcre2-dev libutf8proc-dev libmicrohttpd-dev libcurl4-openssl-dev libyajl-dev
      libmimalloc-dev libdnnl-dev pkgconf"
skip=" dpkg gcc-12-base install-info libc6 libc6-dev libc-dev-bin libcrypt-dev libcrypt1
       linux-libc-dev libgcc-s1 libstdc++6 libgomp1 tar ncurses-bin libselinux1 rpcsvc-proto
       libtirpc-common libtirpc-dev libtirpc3 libnsl-dev libnsl2 libmd0 readline-common
       libopenblas0-openmp libopenblas0-serial libopenblas-openmp-dev libopenblas-serial-dev "
skip=" $(echo $skip) "          # one line, one space between names
all=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
      --no-replaces --no-enhances $pkgs | grep -v '^ \|<' | sort -u)
want=""
for p in $all; do
    case "$skip" in *" $p "*) ;; *) want="$want $p" ;; esac
done
mkdir -p "$top/.debs"
cd "$top/.debs"
apt-get download $want
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in *.deb; do
    dpkg-deb -R "$f" "$work/p"
    rm -rf "$work/p/usr/share/doc" "$work/p/usr/share/man" "$work/p/usr/share/info" "$work/p/usr/share/locale"
    find "$work/p" -name '*.a' -delete
    dpkg-deb -Zxz -b "$work/p" "$work/$f" >/dev/null
    mv "$work/$f" "$f"
    rm -rf "$work/p"
done
du -sh "$top/.debs"
