/* SPDX-License-Identifier: BSD-3-Clause */
/* The groups of the test_verbs program, one per file, run by test_verbs.c. */
#ifndef TEST_VERBS_H
#define TEST_VERBS_H

#include "verbs_test.h"

int run_device_tests(void);
int run_rc_tests(void);
int run_srq_tests(void);
int run_tm_tests(void);
int run_ud_tests(void);
int run_error_tests(void);
int run_channel_tests(void);
int run_misuse_tests(void);
int run_capture_tests(void);
int run_compat_tests(void);
int run_thread_tests(void);
int run_td_tests(void);
int run_timestamp_tests(void);

#endif /* TEST_VERBS_H */
