#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# PID 1 of the guest (busybox sh, from the initramfs vm.sh builds). It loads the
# modules that reach the host over virtio-9p, mounts the host's file system read-only
# as the new root (the share "hostroot") and the job's directory read-write (the share
# "job"), gives the new root the kernel's file systems and empty scratch space, runs the
# job's script in it with chroot, and powers the guest off. The job directory holds
# job.env (what to run, written by vm.sh) and gets the results. Every step says on the
# console what it does, so that a guest that stops halfway shows where.

PATH=/bin
export PATH

say() { echo "dpv-vm: [$(cut -d" " -f1 /proc/uptime)] $*"; }

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
# The kernel's console is the first serial port: what the job prints goes there too.
exec </dev/console >/dev/console 2>&1

say "init: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"
while read -r m; do
	insmod "/modules/$m" || say "insmod $m failed"
done </modules/order

r=/newroot
mkdir -p $r
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostroot $r; then
	say "cannot mount the host's root (9p share hostroot)"
	poweroff -f
fi
mount -t proc proc $r/proc
mount -t sysfs sysfs $r/sys
mount -t devtmpfs dev $r/dev
mkdir -p $r/dev/shm $r/dev/pts
mount -t tmpfs tmpfs $r/dev/shm
mount -t tmpfs tmpfs $r/tmp
mount -t tmpfs tmpfs $r/run
mkdir -p $r/tmp/dpv-vm
if ! mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 job $r/tmp/dpv-vm; then
	say "cannot mount the job directory (9p share job)"
	poweroff -f
fi
# The tree under test and its build, at their own paths (vm.sh: "tag path" lines).
while read -r tag path; do
	mkdir -p "$r$path" 2>/dev/null
	if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 "$tag" "$r$path"
	then
		say "cannot mount $path (9p share $tag)"
		poweroff -f
	fi
done <$r/tmp/dpv-vm/mounts
if [ ! -r $r/tmp/dpv-vm/job.env ]; then
	say "no job.env in the job directory"
	poweroff -f
fi

say "root: the host's file system, read-only; running the job"
chroot $r /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
	/bin/bash -c '. /tmp/dpv-vm/job.env && exec /bin/bash "$DPV_VM_GUEST" /tmp/dpv-vm'
say "job exited with status $?"
sync
while read -r tag path; do umount "$r$path"; done <$r/tmp/dpv-vm/mounts
umount $r/tmp/dpv-vm
say "power off"
poweroff -f
