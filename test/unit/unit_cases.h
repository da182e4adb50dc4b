/*
 * unit_cases.h
 *		The unit tests' bookkeeping of cases, shared by ke_test.c, kc_test.c
 *		and fd_test.c (each includes it once, after its own headers).
 *
 * A case begins with case_begin(), records failures with fail(), and ends
 * with case_end().  One bug tends to fail thousands of random cases alike,
 * so only the first MAX_FAIL_LINES lines of a case and the first
 * MAX_FAIL_CASES failing cases are printed; the rest are counted.  While
 * `quiet` is set (a failing sequence replayed to shrink it) nothing is
 * printed.  The including file may define MAX_FAIL_LINES and
 * MAX_FAIL_CASES first.
 */
#ifndef UNIT_CASES_H
#define UNIT_CASES_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#ifndef MAX_FAIL_LINES
#define MAX_FAIL_LINES	8		/* failure lines printed per test case */
#endif
#ifndef MAX_FAIL_CASES
#define MAX_FAIL_CASES	30		/* failing cases whose lines are printed */
#endif

static int	cases_passed;
static int	cases_failed;
static int	cases_hidden;		/* failing cases past MAX_FAIL_CASES */
static char case_name[256];
static int	case_failures;
static bool quiet;				/* replaying while shrinking: count, don't print */

/* Start a test case */
static void
case_begin(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(case_name, sizeof(case_name), fmt, ap);
	va_end(ap);
	case_failures = 0;
}

/* Finish the current test case; true when it passed */
static bool
case_end(void)
{
	if (case_failures == 0)
		cases_passed++;
	else
	{
		if (cases_failed >= MAX_FAIL_CASES)
			cases_hidden++;
		else if (case_failures > MAX_FAIL_LINES && !quiet)
			printf("FAIL [%s] ... %d more failure lines not shown\n",
				   case_name, case_failures - MAX_FAIL_LINES);
		cases_failed++;
	}
	return case_failures == 0;
}

/* Record one failure of the current case, printing it unless quiet */
static void
fail(const char *fmt,...)
{
	va_list		ap;

	case_failures++;
	if (quiet || case_failures > MAX_FAIL_LINES || cases_failed >= MAX_FAIL_CASES)
		return;
	printf("FAIL [%s] ", case_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

#endif							/* UNIT_CASES_H */
