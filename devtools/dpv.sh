#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's two commands, for a fresh Debian 12 machine as root:
#   bash devtools/dpv.sh run    install what is missing, build, run the main job
#   bash devtools/dpv.sh test   install what is missing, build every flavour, run every
#                               test, end with one line "N passed, N failed"
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"

build_pkgs=(gcc pkg-config meson ninja-build python3 libdpdk-dev libibverbs-dev
	libnuma-dev librdmacm-dev libcmocka-dev libxdp-dev libbpf-dev libelf-dev zlib1g-dev libbsd-dev)
test_pkgs=(clang libclang-rt-14-dev valgrind tshark python3-scapy ibverbs-utils iproute2 dpdk-dev
	groff-base man-db perftest)
# dpv-perf link --plots (doc/guides/link-perf.md's figures)
test_pkgs+=(gnuplot-nox)
# rdma-core's pyverbs suite (test/compat/pyverbs_suite.py)
test_pkgs+=(python3-pyverbs)
# rdmacm-utils' rping, ucmatose, udaddy on the drop-in librdmacm (test/compat/rdmacm.sh)
test_pkgs+=(rdmacm-utils)
# UCX's and Open MPI's programs and mpicc (test/compat/ucx.sh, mpi.sh, mpi_check.c)
test_pkgs+=(ucx-utils openmpi-bin libopenmpi-dev)
# The QEMU guest on two PCI NICs bound to vfio-pci (test/vm/vm.sh): QEMU, Debian's
# kernel and its modules for the guest, the guest's initramfs (busybox-static, kmod's
# modprobe for the modules it takes), and dpdk-devbind.py (DPV_VM_DEVBIND=1).
test_pkgs+=(qemu-system-x86 linux-image-amd64 busybox-static kmod dpdk)
# The guest's kernel RoCE end (test/vm/rxe.sh): rdma_rxe's peer on rdma-core's own
# librxe (ibverbs-providers), rxe0 made with iproute2's rdma, rdmacm-utils' programs.
test_pkgs+=(ibverbs-providers)

say() { printf '==> %s\n' "$*" >&2; }

install_missing() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		say "missing packages: ${missing[*]}; run as root or install them"
		exit 1
	fi
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q "${missing[@]}" >/dev/null
}

# Hugepages for the tests that run EAL on them; the --no-huge runs need none.
setup_hugepages() {
	local want=1024 have
	[ "$(id -u)" -eq 0 ] || { say "not root: hugepages left as they are"; return 0; }
	[ -w /proc/sys/vm/nr_hugepages ] || { say "no hugepage support: only --no-huge runs"; return 0; }
	have=$(awk '/HugePages_Total/ {print $2}' /proc/meminfo)
	if [ "${have:-0}" -lt "$want" ]; then
		echo "$want" > /proc/sys/vm/nr_hugepages || true
	fi
	mkdir -p /dev/hugepages
	mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages ||
		say "could not mount hugetlbfs: hugepage runs will be skipped"
	say "hugepages: $(awk '/HugePages_Free/ {print $2}' /proc/meminfo) free of 2 MiB"
}

configure() { # dir, then meson options
	local dir=$1; shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
	ninja -C "$dir" >/dev/null
}

run_main() {
	install_missing "${build_pkgs[@]}"
	configure build
	say "main job: the console on its embedded default (build/app/dpv-testpmd/dpv-testpmd)"
	# At a terminal, a prompt; otherwise (CI) the lines of stdin until its end: with
	# stdin closed or /dev/null, it starts, prints its banner and exits.
	exec build/app/dpv-testpmd/dpv-testpmd "$@"
}

run_tests() {
	local logs=() rc=0
	install_missing "${build_pkgs[@]}" "${test_pkgs[@]}"
	setup_hugepages

	say "build: gcc, optimised"
	configure build
	meson test -C build --print-errorlogs --num-processes 2 || rc=1
	logs+=(build/meson-logs/testlog.json)

	say "unit tests, and one run each of ports, transport and verbs, under valgrind"
	meson test -C build --setup valgrind --suite unit --suite valgrind --print-errorlogs || rc=1
	logs+=(build/meson-logs/testlog-valgrind.json)

	say "build: gcc, AddressSanitizer + UndefinedBehaviorSanitizer"
	configure build-asan -Dsanitize=true -Ddiff_steps=1000000
	meson test -C build-asan --print-errorlogs --num-processes 2 --no-suite loss || rc=1
	logs+=(build-asan/meson-logs/testlog.json)
	# Of the loss runs (each moves 1.8 GiB), two: the others run in the first build.
	meson test -C build-asan --print-errorlogs --logbase testlog-loss \
		verbs_loss_inline_loss1 verbs_loss_lcore_loss5 || rc=1
	logs+=(build-asan/meson-logs/testlog-loss.json)

	if command -v clang >/dev/null; then
		say "build: clang, sanitizers, libFuzzer"
		CC=clang configure build-fuzz -Dsanitize=true -Ddiff_steps=1000000
		meson test -C build-fuzz --suite fuzz --print-errorlogs || rc=1
		logs+=(build-fuzz/meson-logs/testlog.json)
	fi

	python3 devtools/test-summary.py "${logs[@]}" || rc=1
	return $rc
}

case "${1:-}" in
run) shift; run_main "$@" ;;
test) run_tests ;;
*) echo "usage: bash devtools/dpv.sh run [dpv-testpmd args] | test" >&2; exit 2 ;;
esac
