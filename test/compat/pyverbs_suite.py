#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""rdma-core's pyverbs test suite, as Debian's python3-pyverbs ships it, on dpverbs.

The suite (/usr/share/doc/rdma-core/tests, some files gzipped) is copied to a
temporary directory, unpacked and run unmodified with /usr/bin/python3 on dpv0 of an
in-process ring pair (dpv0 and dpv1 joined to each other: the suite runs both sides
of its traffic tests in one process), through the drop-in libibverbs.so.1 of the
build (DPV_DROPIN_LIBDIR), and pyverbs' librdmacm binding on the drop-in
librdmacm.so.1 (DPV_RDMACM_LIBDIR). EAL's memory comes from DPV_EAL_MEM (--no-huge by
default; the hugepage variant passes its own).

The run fails when any test fails or errors, and when a test skips for a reason that
is not in ALLOWED_SKIPS: each entry says why a provider would skip it too. Exit 77 when python3-pyverbs is not installed.

Usage: pyverbs_suite.py             run the suite and judge it
       pyverbs_suite.py --suite DIR (inside the child) run the copy in DIR, write results
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SUITE_SRC = '/usr/share/doc/rdma-core/tests'
SKIP = 77

# Skip reasons (regular expressions on the suite's message) that a provider gives too:
# what the device does not have, what belongs to another vendor's device, or what the
# machine lacks. Each with why, and where a message is shared by tests of what dpverbs
# offers and of what it does not, a pattern the test's id must match too.
ALLOWED_SKIPS = [
    (r"Can not run the test over non MLX5 device|Could not open mlx5 context|"
     r"PCI device must be passed by the user",
     'mlx5-only: mlx5dv and DevX tests for ConnectX devices (and mlx5 VFIO)'),
    (r"Converting timestamp to nanoseconds is not supported",
     'mlx5-only: the stamp turned into nanoseconds by mlx5dv (mlx5dv_ts_to_ns); '
     'dpverbs stamps completions too, in hca_core_clock units'),
    (r"Can not run the test over non EFA device|Not supported on non EFA devices",
     'EFA-only: efadv and SRD tests for Amazon EFA'),
    (r"Device memory is not supported",
     'no device memory (ibv_alloc_dm): a software device has none'),
    (r"Device \S+ doesn't have net interface",
     'rdma_cm tests: they find the address in the kernel netdev of the device '
     '(/sys/class/infiniband/DEV/device/net), which a dpverbs device has not, and then '
     'fork their passive and active sides from the suite\'s process, which has the '
     'device open: each child has a copy of the device, not the same one, so neither '
     'reaches the other (the drop-in librdmacm does connect two dpverbs processes: '
     'test/compat/rdmacm.sh)'),
    (r"Allocating dmabuf is not supported|Device /dev/dri/renderD\d+ is not present|"
     r"Lack of permission to access /dev/dri|cuda-python .* must be installed|"
     r"Reg dma-buf MR is not supported by the RDMA driver",
     'no GPU dmabuf on this machine, and no dmabuf regions (ibv_reg_dmabuf_mr: EOPNOTSUPP)'),
    (r"Huge pages of size 2M is not supported in this platform|"
     r"There are no huge pages of size 2M allocated",
     'no 2 MiB hugepages free on this machine'),
    (r"Importing a device is not supported|Some object imports are not supported",
     'no imports (ibv_import_device: EOPNOTSUPP): dpverbs objects have no kernel object '
     'to share with another context'),
    (r"Create QP type 8 is not supported|Create Raw Packet QP .*is not supported",
     'no raw packet QPs: dpverbs is a RoCE device, not an Ethernet NIC to programs'),
    (r"All gid indices populated, cannot check bad flow",
     'one GID per port (gid_tbl_len 1, index 0 in use): no empty index to query'),
]

def run_suite(suite_dir, out):
    """In the child: load the suite as its run_tests.py does, and record each result."""
    import unittest
    sys.path.insert(0, suite_dir)
    os.chdir(suite_dir)
    sys.argv = ['run_tests.py', '--dev', 'dpv0']
    from args_parser import parser
    from importlib.machinery import SourceFileLoader
    tests = SourceFileLoader('tests', os.path.join(suite_dir, '__init__.py')).load_module()
    parser.parse_args()
    results = []

    class Recorder(unittest.TextTestResult):
        def addSuccess(self, test):
            super().addSuccess(test)
            results.append((test.id(), 'ok', ''))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            results.append((test.id(), 'skip', reason))

        def addError(self, test, err):
            super().addError(test, err)
            results.append((test.id(), 'error', f'{err[0].__name__}: {err[1]}'))

        def addFailure(self, test, err):
            super().addFailure(test, err)
            results.append((test.id(), 'fail', f'{err[0].__name__}: {err[1]}'))

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            results.append((test.id(), 'ok', 'expected failure'))

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            results.append((test.id(), 'fail', 'unexpected success'))

    loader = unittest.TestLoader()
    suite = tests.load_tests(loader, unittest.TestSuite(), None)
    unittest.TextTestRunner(verbosity=2, resultclass=Recorder).run(suite)
    with open(out, 'w') as f:
        json.dump(results, f)


def judge(results):
    """Every result against the lists; returns the lines of the problems."""
    problems = []
    counts = {'ok': 0, 'skip': 0, 'error': 0, 'fail': 0}
    skip_seen = {}
    for test_id, result, why in results:
        if result == 'ok':
            counts['ok'] += 1
        elif result == 'skip':
            counts['skip'] += 1
            for pattern, reason, *only in ALLOWED_SKIPS:
                if re.search(pattern, why) and (not only or re.search(only[0], test_id)):
                    skip_seen[reason] = skip_seen.get(reason, 0) + 1
                    break
            else:
                problems.append(f'{test_id}: skipped for a reason not allowed: {why}')
        else:
            counts[result] += 1
            problems.append(f'{test_id}: {result}: {why}')
    for reason, n in sorted(skip_seen.items(), key=lambda kv: -kv[1]):
        print(f'skipped {n:3}: {reason}')
    print('passed {ok}, skipped {skip}, failed {fail}, errors {error}'.format(**counts))
    return problems


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--suite':
        run_suite(sys.argv[2], os.path.join(sys.argv[2], 'results.json'))
        return 0
    # Whether it is there, without loading it here: this process has no EAL settings.
    if importlib.util.find_spec('pyverbs') is None:
        print('skipped: python3-pyverbs is not installed (apt-get install python3-pyverbs)')
        return SKIP
    if not os.path.isfile(os.path.join(SUITE_SRC, 'run_tests.py')):
        print(f'skipped: {SUITE_SRC} is missing (python3-pyverbs ships it)')
        return SKIP
    libdir = os.environ.get('DPV_DROPIN_LIBDIR')
    if not libdir or not os.path.isfile(os.path.join(libdir, 'libibverbs.so.1')):
        print('DPV_DROPIN_LIBDIR does not name the drop-in libibverbs.so.1 of the build')
        return 1
    rdmacm_dir = os.environ.get('DPV_RDMACM_LIBDIR')
    if not rdmacm_dir or not os.path.isfile(os.path.join(rdmacm_dir, 'librdmacm.so.1')):
        print('DPV_RDMACM_LIBDIR does not name the drop-in librdmacm.so.1 of the build')
        return 1
    mem = os.environ.get('DPV_EAL_MEM', '--no-huge --no-shconf -m 512')
    with tempfile.TemporaryDirectory(prefix='dpv-pyverbs-') as tmp:
        suite_dir = os.path.join(tmp, 'tests')
        shutil.copytree(SUITE_SRC, suite_dir)
        for name in os.listdir(suite_dir):
            if name.endswith('.gz'):
                subprocess.run(['gunzip', os.path.join(suite_dir, name)], check=True)
        env = dict(os.environ)
        env.update({
            'LD_LIBRARY_PATH': rdmacm_dir + ':' + libdir,
            'DPV_RING_PAIRS': '1',
            'DPV_PORT_IPV4': '10.0.0.1,10.0.0.2',
            'DPV_EAL_ARGS': f'-l 0 --no-pci {mem} --no-telemetry --log-level=lib.eal:error',
        })
        child = subprocess.run(['/usr/bin/python3', os.path.abspath(__file__), '--suite',
                                suite_dir], env=env, timeout=600)
        results_file = os.path.join(suite_dir, 'results.json')
        if not os.path.isfile(results_file):
            print(f'the suite ended (exit {child.returncode}) without its results')
            return 1
        with open(results_file) as f:
            results = json.load(f)
    if not results:
        print('the suite ran no test')
        return 1
    problems = judge(results)
    for p in problems:
        print('FAILED ' + p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
