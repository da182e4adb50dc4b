/*
 * gen_values.c
 *		A generalized numeric quasi-identifier as SQL: the coordinate its
 *		groups are clustered by, and the range its view publishes.
 *
 * One definition serves the writers (generalize.c, gen_store.c,
 * gen_release.c) and keanon.check (keanon.qi_coordinate, keanon.qi_range),
 * so that the check recomputes exactly what was written.
 *
 * A coordinate is a double.  A numeric value beyond a double's range has
 * none (it is refused, by its column's name alone: a value never appears
 * in an error a writer could read), and one below it counts as zero;
 * neither conversion raises the cast's error, which would quote the value.
 *
 * A published range holds every member's true value, bounds included:
 *	- smallint, integer, bigint and date ranges are discrete, and their
 *	  canonical form ends after the largest value, which the type's largest
 *	  value has not: a group holding it publishes a range with no upper
 *	  bound rather than fail;
 *	- a real or double precision value is a binary fraction, which numeric
 *	  casts keep only to 6 or 15 digits: the bounds are rounded outward, at
 *	  17 significant digits, from the value's exact decimal expansion;
 *	- numeric and timestamps are published as they are.
 *
 * A categorical quasi-identifier is matched with its hierarchy's leaves as
 * text.  The text is its ::text cast under fixed settings (DateStyle ISO,
 * MDY; IntervalStyle postgres; TimeZone UTC; floating-point values exact),
 * the same in every session: under the session's own DateStyle a writer
 * who orders day and month the other way printed 1 December as another
 * writer prints 12 January, and matched the wrong leaf.  The watch keeps
 * the leaves of such a column in that form (keanon.leaf_text).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/bytea.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/syscache.h"

#include "keanon_gen.h"

PG_FUNCTION_INFO_V1(keanon_qi_coordinate);
PG_FUNCTION_INFO_V1(keanon_qi_range);
PG_FUNCTION_INFO_V1(keanon_numeric_coordinate);
PG_FUNCTION_INFO_V1(keanon_float8_outward);
PG_FUNCTION_INFO_V1(keanon_leaf_text);

/* significant digits of a published real or double precision bound */
#define OUTWARD_DIGITS 17

/* base-10^9 limbs of a double's exact expansion: 767 digits at most */
#define EXPANSION_LIMBS 96

/*
 * Whether keanon.<name>(a float8 or numeric, then maybe a boolean) exists:
 * a database whose keanon objects predate 0.2.0 (not yet updated, this
 * library serving both) has neither helper, and gets the old casts
 */
static bool
have_helper(const char *name, Oid first, int nargs)
{
	Oid			types[2] = {first, BOOLOID};

	return OidIsValid(LookupFuncName(list_make2(makeString("keanon"), makeString(pstrdup(name))),
									 nargs, types, true));
}

/*
 * The SQL of the coordinate of a numeric column's value col (an
 * expression of the column's type)
 */
char *
KeanonGenCoordinateOf(Oid typid, const char *col)
{
	switch (typid)
	{
		case DATEOID:
			return psprintf("((%s) OPERATOR(pg_catalog.-) DATE '2000-01-01')::pg_catalog.float8", col);
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return psprintf("pg_catalog.date_part('epoch', %s)", col);
		case NUMERICOID:
			if (have_helper("numeric_coordinate", NUMERICOID, 1))
				return psprintf("keanon.numeric_coordinate(%s)", col);
			return psprintf("(%s)::pg_catalog.float8", col);
		default:
			return psprintf("(%s)::pg_catalog.float8", col);
	}
}

/*
 * The SQL of the published range from lo to hi, both included (expressions
 * of the column's type); NULL for a type keanon does not publish as a range
 */
char *
KeanonGenRangeOf(Oid typid, const char *lo, const char *hi)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
			return psprintf("pg_catalog.int4range((%s)::pg_catalog.int4, CASE WHEN (%s) OPERATOR(pg_catalog.<) "
							"2147483647 THEN (%s)::pg_catalog.int4 OPERATOR(pg_catalog.+) 1 END)", lo, hi, hi);
		case INT8OID:
			return psprintf("pg_catalog.int8range(%s, CASE WHEN (%s) OPERATOR(pg_catalog.<) "
							"9223372036854775807::pg_catalog.int8 THEN (%s) OPERATOR(pg_catalog.+) "
							"1::pg_catalog.int8 END)", lo, hi, hi);
		case DATEOID:
			return psprintf("pg_catalog.daterange(%s, CASE WHEN (%s) OPERATOR(pg_catalog.<) DATE '5874897-12-31' "
							"THEN (%s) OPERATOR(pg_catalog.+) 1 END)", lo, hi, hi);
		case FLOAT4OID:
		case FLOAT8OID:
			if (!have_helper("float8_outward", FLOAT8OID, 2))
				return psprintf("pg_catalog.numrange((%s)::pg_catalog.numeric, (%s)::pg_catalog.numeric, '[]')",
								lo, hi);
			return psprintf("pg_catalog.numrange(keanon.float8_outward((%s)::pg_catalog.float8, false), "
							"keanon.float8_outward((%s)::pg_catalog.float8, true), '[]')", lo, hi);
		case NUMERICOID:
			return psprintf("pg_catalog.numrange(%s, %s, '[]')", lo, hi);
		case TIMESTAMPOID:
			return psprintf("pg_catalog.tsrange(%s, %s, '[]')", lo, hi);
		case TIMESTAMPTZOID:
			return psprintf("pg_catalog.tstzrange(%s, %s, '[]')", lo, hi);
	}
	return NULL;
}

/* The text a value casts to, as SQL's ::text does, under the settings in force */
static char *
cast_text(Oid typid, Datum d)
{
	Oid			funcid;
	Oid			out;
	bool		isvarlena;

	switch (find_coercion_pathway(TEXTOID, typid, COERCION_EXPLICIT, &funcid))
	{
		case COERCION_PATH_FUNC:
			if (get_func_nargs(funcid) == 3)
				return TextDatumGetCString(OidFunctionCall3(funcid, d, Int32GetDatum(-1),
															BoolGetDatum(true)));
			return TextDatumGetCString(OidFunctionCall1(funcid, d));
		case COERCION_PATH_RELABELTYPE:
			return TextDatumGetCString(d);
		default:
			getTypeOutputInfo(typid, &out, &isvarlena);
			return OidOutputFunctionCall(out, d);
	}
}

/* Whether a type's text depends on no setting: strings print as they are */
static bool
prints_alike(Oid typid)
{
	char		category;
	bool		preferred;

	get_type_category_preferred(typid, &category, &preferred);
	return category == TYPCATEGORY_STRING;
}

/* Set a setting in the GUC nest level of the caller */
static void
pin(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

/*
 * Whether keanon.leaf_text exists, and with it leaves kept in its form: a
 * database whose keanon objects predate 0.2.0 kept them as the watch's
 * session printed them, and compares the session's text with them
 */
static int	leaves_fixed = -1;	/* -1: not known since pg_proc changed */

bool
KeanonGenLeavesFixed(void)
{
	Oid			any = ANYELEMENTOID;

	if (leaves_fixed < 0)
		leaves_fixed = OidIsValid(LookupFuncName(list_make2(makeString("keanon"), makeString("leaf_text")),
												 1, &any, true));
	return leaves_fixed == 1;
}

/* A function created or dropped (an update of keanon's, say): look again */
static void
leaves_fixed_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	leaves_fixed = -1;
}

/* Register that invalidation (from _PG_init, by KeanonGenCacheInit) */
void
KeanonGenLeavesFixedInit(void)
{
	CacheRegisterSyscacheCallback(PROCOID, leaves_fixed_inval, (Datum) 0);
}

/*
 * A categorical quasi-identifier's value as text, as its leaves are kept
 * (fixed: under the fixed settings, else the session's)
 */
char *
KeanonGenLeafText(Oid typid, Datum d, bool fixed)
{
	int			level;
	char	   *s;
	long int	gmtoff;
	bool		utc = pg_get_timezone_offset(session_timezone, &gmtoff) && gmtoff == 0;

	if (!fixed || prints_alike(typid))
		return cast_text(typid, d);
	/* only what differs is set: a zone always at UTC prints as UTC does */
	if (DateStyle == USE_ISO_DATES && IntervalStyle == INTSTYLE_POSTGRES && utc && extra_float_digits >= 1 &&
		bytea_output == BYTEA_OUTPUT_HEX)
		return cast_text(typid, d);
	level = NewGUCNestLevel();
	if (DateStyle != USE_ISO_DATES)
		pin("DateStyle", "ISO, MDY");
	if (IntervalStyle != INTSTYLE_POSTGRES)
		pin("IntervalStyle", "postgres");
	if (!utc)
		pin("TimeZone", "UTC");
	if (extra_float_digits < 1)
		pin("extra_float_digits", "1");
	if (bytea_output != BYTEA_OUTPUT_HEX)
		pin("bytea_output", "hex");
	s = cast_text(typid, d);
	AtEOXact_GUC(false, level);
	return s;
}

/*
 * The SQL of a categorical quasi-identifier's text (col an expression of
 * its type): keanon.leaf_text, or the plain cast for a string type and
 * where leaves are not kept fixed
 */
char *
KeanonGenLeafSql(Oid typid, const char *col, bool fixed)
{
	if (!fixed || prints_alike(typid))
		return psprintf("(%s)::pg_catalog.text", col);
	return psprintf("keanon.leaf_text(%s)", col);
}

/* keanon.leaf_text(anyelement) → text: KeanonGenLeafText */
Datum
keanon_leaf_text(PG_FUNCTION_ARGS)
{
	Oid			typid = get_fn_expr_argtype(fcinfo->flinfo, 0);

	if (!OidIsValid(typid))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("keanon.leaf_text: could not determine the type of its argument")));
	PG_RETURN_TEXT_P(cstring_to_text(KeanonGenLeafText(typid, PG_GETARG_DATUM(0), true)));
}

/* keanon.qi_coordinate(typ regtype, col text) → text: the SQL above */
Datum
keanon_qi_coordinate(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(KeanonGenCoordinateOf(PG_GETARG_OID(0),
														   text_to_cstring(PG_GETARG_TEXT_PP(1)))));
}

/* keanon.qi_range(typ regtype, lo text, hi text) → text: the SQL above, or NULL */
Datum
keanon_qi_range(PG_FUNCTION_ARGS)
{
	char	   *sql = KeanonGenRangeOf(PG_GETARG_OID(0), text_to_cstring(PG_GETARG_TEXT_PP(1)),
									   text_to_cstring(PG_GETARG_TEXT_PP(2)));

	if (sql == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(sql));
}

/*
 * keanon.numeric_coordinate(numeric) → float8: the nearest double, an
 * infinity past a double's range and zero below it, never an error
 */
Datum
keanon_numeric_coordinate(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(numeric_float8_no_overflow, PG_GETARG_DATUM(0));
}

/*
 * The exact decimal digits of a finite double's magnitude, and the number
 * of them after the decimal point: |x| = mant * 2^exp, an integer times 10
 * to -scale
 */
static char *
exact_digits(double x, int *scale)
{
	uint32		limb[EXPANSION_LIMBS];
	int			nlimbs = 1;
	int			exp;
	uint64		mant = (uint64) ldexp(frexp(fabs(x), &exp), 53);
	StringInfoData buf;

	exp -= 53;
	while (mant != 0 && (mant & 1) == 0)
	{
		mant >>= 1;
		exp++;
	}
	/* mant < 2^53 in base 10^9 */
	limb[0] = (uint32) (mant % 1000000000);
	if (mant >= 1000000000)
		limb[nlimbs++] = (uint32) ((mant / 1000000000) % 1000000000);
	if (mant >= UINT64CONST(1000000000000000000))
		limb[nlimbs++] = (uint32) (mant / UINT64CONST(1000000000000000000));
	/* times 2^exp, or times 5^-exp with the point moved -exp places */
	*scale = exp < 0 ? -exp : 0;
	for (int left = exp < 0 ? -exp : exp; left > 0;)
	{
		int			step = Min(left, exp > 0 ? 29 : 12);
		uint64		by = exp > 0 ? (UINT64CONST(1) << step) : 1;
		uint64		carry = 0;

		if (exp < 0)
			for (int i = 0; i < step; i++)
				by *= 5;
		for (int i = 0; i < nlimbs; i++)
		{
			uint64		v = limb[i] * by + carry;

			limb[i] = (uint32) (v % 1000000000);
			carry = v / 1000000000;
		}
		while (carry > 0)
		{
			if (nlimbs == EXPANSION_LIMBS)
				elog(ERROR, "keanon: the expansion of %g is too long", x);
			limb[nlimbs++] = (uint32) (carry % 1000000000);
			carry /= 1000000000;
		}
		left -= step;
	}
	initStringInfo(&buf);
	appendStringInfo(&buf, "%u", limb[nlimbs - 1]);
	for (int i = nlimbs - 2; i >= 0; i--)
		appendStringInfo(&buf, "%09u", limb[i]);
	return buf.data;
}

/*
 * keanon.float8_outward(x float8, up boolean) → numeric: x rounded at 17
 * significant digits toward minus infinity, or toward plus infinity with
 * up, from its exact value: the bound of a published range that holds x
 */
Datum
keanon_float8_outward(PG_FUNCTION_ARGS)
{
	double		x = PG_GETARG_FLOAT8(0);
	bool		up = PG_GETARG_BOOL(1);
	int			scale;
	char	   *digits;
	int			n;
	bool		dropped = false;
	bool		away;
	StringInfoData num;

	if (!isfinite(x))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("a published bound must be finite")));
	if (x == 0)
		PG_RETURN_DATUM(DirectFunctionCall3(numeric_in, CStringGetDatum("0"),
											ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
	digits = exact_digits(x, &scale);
	n = strlen(digits);
	/* keep the first 17 digits; the magnitude is rounded away from zero when
	 * a dropped digit is not zero and the bound must move that way */
	for (int i = OUTWARD_DIGITS; i < n; i++)
		if (digits[i] != '0')
			dropped = true;
	away = dropped && (up == (x > 0));
	if (n > OUTWARD_DIGITS)
	{
		for (int i = OUTWARD_DIGITS; i < n; i++)
			digits[i] = '0';
		if (away)
		{
			int			i = OUTWARD_DIGITS - 1;

			while (i >= 0 && digits[i] == '9')
				digits[i--] = '0';
			if (i >= 0)
				digits[i]++;
			else
			{
				/* 999...9 became 1000...0: one digit more */
				char	   *wider = palloc(n + 2);

				wider[0] = '1';
				memcpy(wider + 1, digits, n + 1);
				digits = wider;
				n++;
			}
		}
	}
	initStringInfo(&num);
	if (x < 0)
		appendStringInfoChar(&num, '-');
	if (scale >= n)
	{
		appendStringInfoString(&num, "0.");
		for (int i = n; i < scale; i++)
			appendStringInfoChar(&num, '0');
		appendStringInfoString(&num, digits);
	}
	else if (scale > 0)
		appendStringInfo(&num, "%.*s.%s", n - scale, digits, digits + n - scale);
	else
		appendStringInfoString(&num, digits);
	PG_RETURN_DATUM(DirectFunctionCall1(numeric_trim_scale,
										DirectFunctionCall3(numeric_in, CStringGetDatum(num.data),
															ObjectIdGetDatum(InvalidOid),
															Int32GetDatum(-1))));
}
