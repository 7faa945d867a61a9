/*
 * unit_run: how every unit test's main() runs its suite, in one place.
 */
#ifndef CORRAL_UNIT_RUN_H
#define CORRAL_UNIT_RUN_H

#include <check.h>
#include <stdlib.h>

/* Runs suite s (freed here) and returns main()'s exit status: failure if any test failed. */
static inline int
unit_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
