/*
 * am_values.c
 *		Values of the indexed column as engine numbers, and back.
 *
 * smallint, integer and bigint map exactly to the engine's 128-bit
 * integers.  numeric maps to them scaled by 10^scale, the scale being the
 * column's declared one, the index's scale option, or (unconstrained
 * numeric) the most decimal places a value needs at build but at least
 * KEANON_GROWING_SCALE, raised later by KeanonIndexFitScale() when finer
 * values arrive.  Converting a value never changes the scale: a value with
 * more decimal places than the index keeps is refused, with the hint to
 * raise the scale.  An unconstrained numeric index shows values with the
 * decimal places the column's values had at build (display_scale), or
 * more where a value needs them, not with all the digits it keeps.  real
 * and double precision use the engine's float kind.  NaN and infinities
 * are refused everywhere: they have no place in a sorted range.
 */
#include "postgres.h"

#include <ctype.h>
#include <float.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "keanon_am.h"

/* Is typid a type keanon can index? */
bool
KeanonTypeSupported(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case NUMERICOID:
		case FLOAT4OID:
		case FLOAT8OID:
			return true;
		default:
			return false;
	}
}

/* Work out how values of a column become engine numbers */
void
KeanonValueTypeFor(Oid typid, int32 typmod, int scale_option, KeanonValueType *vt)
{
	vt->typid = typid;
	vt->scale = 0;
	vt->grows = false;
	vt->index = InvalidOid;
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			vt->kind = KE_KIND_EXACT;
			break;
		case FLOAT4OID:
		case FLOAT8OID:
			vt->kind = KE_KIND_FLOAT;
			break;
		case NUMERICOID:
			vt->kind = KE_KIND_EXACT;
			if (scale_option >= 0)
				vt->scale = scale_option;
			else if (typmod >= (int32) VARHDRSZ)
			{
				/* the declared scale; a negative one still stores integers */
				int			s = (int16) ((typmod - VARHDRSZ) & 0xffff);

				vt->scale = Max(s, 0);
			}
			else
			{
				vt->scale = -1; /* chosen at build */
				vt->grows = true;
			}
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("keanon cannot index values of type %s",
							format_type_be(typid)),
					 errhint("Use smallint, integer, bigint, numeric, real or double precision.")));
	}
	if (vt->scale > KEANON_MAX_SCALE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("keanon supports at most %d decimal places", KEANON_MAX_SCALE)));
	vt->display_scale = vt->scale;
}

/* Decimal places of a numeric value as written (its display scale) */
int
KeanonNumericScale(Datum num)
{
	return DatumGetInt32(DirectFunctionCall1(numeric_scale, num));
}

/*
 * Refuse, for a deferred watch, a value of an unconstrained numeric column
 * with more decimal places than its index keeps (at least 10): the flush
 * applies later what writers note now, and raising the scale then could
 * leave values noted by others without room in 34 significant digits (two
 * rows of 1e23 and 1e-20, each fitting alone, stopped every flush).  Kept
 * at one scale, every value that fits it fits with all the others.
 */
void
KeanonRefuseFinerValue(const KeanonValueType *vt, int places)
{
	char	   *name = OidIsValid(vt->index) ? get_rel_name(vt->index) : NULL;

	if (!vt->grows || places <= vt->scale)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("a value with %d decimal places is finer than keanon index \"%s\" keeps",
					places, name ? name : "?"),
			 errdetail("A deferred watch keeps the %d decimal places its index has.",
					   vt->scale),
			 errhint("Round the value, or watch the table in live mode.")));
}

/* Decimal places a finite numeric value needs: no trailing zeros */
int
KeanonNumericMinScale(Datum num)
{
	return DatumGetInt32(DirectFunctionCall1(numeric_min_scale, num));
}

/* The name of a value type's index, for messages */
static const char *
index_name(const KeanonValueType *vt)
{
	char	   *name = OidIsValid(vt->index) ? get_rel_name(vt->index) : NULL;

	return name != NULL ? name : "?";
}

/* The qualified name of a value type's index, for hints with SQL */
static const char *
index_sql_name(const KeanonValueType *vt)
{
	char	   *name = OidIsValid(vt->index) ? get_rel_name(vt->index) : NULL;

	if (name == NULL)
		return "...";
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(vt->index)), name);
}

/* Refuse a value of more than 34 significant digits at the index's scale */
static void
too_large(const char *str, const KeanonValueType *vt)
{
	if (vt->scale > 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("value %s is too large for a keanon index", str),
				 errdetail("Keanon index \"%s\" keeps %d decimal places, and 34 significant digits in all.",
						   index_name(vt), vt->scale)));
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("value %s is too large for a keanon index", str),
			 errdetail("A keanon index keeps 34 significant digits.")));
}

/* Refuse a non-finite value */
static void
reject_non_finite(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("keanon cannot partition NaN or infinite values"),
			 errdetail("A sensitive value must be a finite number.")));
}

/*
 * Parse the text of a finite numeric into an integer scaled by 10^scale,
 * the scale of vt
 */
static KeNum
numeric_text_to_num(const char *str, const KeanonValueType *vt)
{
	int			scale = Max(vt->scale, 0);
	const char *p = str;
	bool		neg = false;
	ke_int128	v = 0;
	int			digits = 0;
	int			frac = -1;		/* fractional digits taken, -1 before '.' */
	KeNum		out;

	if (*p == '-')
	{
		neg = true;
		p++;
	}
	for (; *p; p++)
	{
		if (*p == '.')
		{
			frac = 0;
			continue;
		}
		if (frac >= 0 && frac >= scale)
		{
			if (*p != '0')
			{
				int			need = frac;

				for (const char *q = p; *q; q++)
					if (*q != '0')
						need = frac + (int) (q - p) + 1;
				if (need <= KEANON_MAX_SCALE)
					ereport(ERROR,
							(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							 errmsg("value %s has more decimal places than keanon index \"%s\" keeps (%d)",
									str, index_name(vt), scale),
							 errhint("Raise the index's scale: ALTER INDEX %s SET (scale = %d), then REINDEX INDEX %s.",
									 index_sql_name(vt), need, index_sql_name(vt))));
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("value %s has more decimal places than keanon index \"%s\" keeps (%d)",
								str, index_name(vt), scale),
						 errhint("A keanon index keeps at most %d decimal places: round the value.",
								 KEANON_MAX_SCALE)));
			}
			continue;
		}
		v = v * 10 + (*p - '0');
		if (v != 0)
			digits++;
		if (frac >= 0)
			frac++;
		if (digits > 34)
			too_large(str, vt);
	}
	for (int i = Max(frac, 0); i < scale; i++)
	{
		v *= 10;
		if (v != 0 && ++digits > 34)
			too_large(str, vt);
	}
	out.i = neg ? -v : v;
	return out;
}

/*
 * Refuse a NaN or an infinity of a type that has them, as a conversion
 * would: a check cheap enough for every row written
 */
void
KeanonRefuseNonFinite(Oid typid, Datum d)
{
	if ((typid == FLOAT4OID && !isfinite(DatumGetFloat4(d))) ||
		(typid == FLOAT8OID && !isfinite(DatumGetFloat8(d))))
		reject_non_finite();
	if (typid == NUMERICOID)
	{
		Numeric		num = DatumGetNumeric(d);	/* a copy when packed */
		bool		finite = !numeric_is_nan(num) && !numeric_is_inf(num);

		if ((Pointer) num != DatumGetPointer(d))
			pfree(num);
		if (!finite)
			reject_non_finite();
	}
}

/* Convert a value of the indexed type */
KeNum
KeanonDatumToNum(const KeanonValueType *vt, Datum d)
{
	KeNum		n;

	switch (vt->typid)
	{
		case INT2OID:
			return ke_num_int(DatumGetInt16(d));
		case INT4OID:
			return ke_num_int(DatumGetInt32(d));
		case INT8OID:
			return ke_num_int(DatumGetInt64(d));
		case FLOAT4OID:
			if (!isfinite(DatumGetFloat4(d)))
				reject_non_finite();
			return ke_num_float(DatumGetFloat4(d));
		case FLOAT8OID:
			if (!isfinite(DatumGetFloat8(d)))
				reject_non_finite();
			return ke_num_float(DatumGetFloat8(d));
		case NUMERICOID:
			{
				Numeric		num = DatumGetNumeric(d);
				char	   *str;

				if (numeric_is_nan(num) || numeric_is_inf(num))
					reject_non_finite();
				str = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(num)));
				n = numeric_text_to_num(str, vt);
				pfree(str);
				/* a detoasted copy, one per value of a fill or a load */
				if ((Pointer) num != DatumGetPointer(d))
					pfree(num);
				return n;
			}
	}
	elog(ERROR, "unsupported keanon value type %u", vt->typid);
	return ke_num_int(0);		/* keep compiler quiet */
}

/*
 * A double as numeric, exactly as it reads back: the shortest decimal
 * that converts to the same double (float8_numeric keeps 15 digits, so a
 * bound could come out inside the value it bounds)
 */
Datum
KeanonFloatToNumeric(double f)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];

	if (!isfinite(f))
		return DirectFunctionCall1(float8_numeric, Float8GetDatum(f));
	double_to_shortest_decimal_buf(f, buf);
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/* An engine number (value, error or bound) as numeric */
Datum
KeanonNumToNumeric(const KeanonValueType *vt, KeNum x)
{
	char		buf[64];
	char		out[128];
	int			scale = Max(vt->scale, 0);

	if (vt->kind == KE_KIND_FLOAT)
		return KeanonFloatToNumeric(x.f);
	ke_num_format(KE_KIND_EXACT, x, buf, sizeof(buf));
	if (scale == 0)
		return DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
								   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	{
		bool		neg = buf[0] == '-';
		const char *digits = neg ? buf + 1 : buf;
		int			len = strlen(digits);
		int			pos = 0;

		if (neg)
			out[pos++] = '-';
		if (len <= scale)
		{
			out[pos++] = '0';
			out[pos++] = '.';
			for (int i = len; i < scale; i++)
				out[pos++] = '0';
			memcpy(out + pos, digits, len);
			pos += len;
		}
		else
		{
			memcpy(out + pos, digits, len - scale);
			pos += len - scale;
			out[pos++] = '.';
			memcpy(out + pos, digits + len - scale, scale);
			pos += scale;
		}
		/*
		 * An unconstrained column's value shows the decimal places the
		 * column's values had at build, or as many as it needs
		 */
		if (vt->grows)
		{
			int			shown = scale;

			while (shown > Max(vt->display_scale, 0) && out[pos - 1] == '0')
			{
				pos--;
				shown--;
			}
			for (; shown < vt->display_scale; shown++)
				out[pos++] = '0';
			if (shown == 0)
				pos--;			/* the point */
		}
		out[pos] = '\0';
	}
	return DirectFunctionCall3(numeric_in, CStringGetDatum(out),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/*
 * e, the least range of a partition, is held exactly in the engine's own
 * arithmetic, so that "valid iff max - min >= e" holds for the e given and
 * not for a rounded one.
 *
 * The option is text, read as a numeric, never through a double.  In the
 * exact kind every value is an integer count of 10^-scale steps, so every
 * range is too, and range >= e exactly when range >= ceil(e * 10^scale):
 * e is rounded up to whole steps.  In the float kind ranges are doubles,
 * and a double range is >= e exactly when it is >= the least double that
 * is >= e, found by comparing doubles with the numeric exactly.
 */

/* 2^100: exact-kind e must stay below it, far below the engine's infinity */
#define KEANON_E_LIMIT	"1267650600228229401496703205376"

/* A numeric from its text */
static Numeric
numeric_from_text(const char *text)
{
	return DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(text),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(-1)));
}

/* Three-way comparison of two numerics */
static int
num_cmp(Numeric a, Numeric b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(a),
											 NumericGetDatum(b)));
}

/* Refuse the text of an e option */
static void
invalid_e(const char *text, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for keanon option \"e\": \"%s\"", text),
			 errdetail("%s", detail)));
}

/* Is s, less blanks around it, "nan", "inf" or "infinity" in any case and sign? */
static bool
non_finite_word(const char *s)
{
	size_t		len;

	while (isspace((unsigned char) *s))
		s++;
	if (*s == '+' || *s == '-')
		s++;
	len = strlen(s);
	while (len > 0 && isspace((unsigned char) s[len - 1]))
		len--;
	return (len == 3 && pg_strncasecmp(s, "nan", 3) == 0) ||
		(len == 3 && pg_strncasecmp(s, "inf", 3) == 0) ||
		(len == 8 && pg_strncasecmp(s, "infinity", 8) == 0);
}

/*
 * Is s a decimal number numeric_in reads: blanks, a sign, digits with at
 * most one point and at least one digit, an exponent of at most 1000 in
 * size, blanks?
 */
static bool
decimal_syntax_ok(const char *s, bool *exponent_ok)
{
	bool		digits = false;
	long		exponent = 0;

	*exponent_ok = true;
	while (isspace((unsigned char) *s))
		s++;
	if (*s == '+' || *s == '-')
		s++;
	while (isdigit((unsigned char) *s))
	{
		digits = true;
		s++;
	}
	if (*s == '.')
	{
		s++;
		while (isdigit((unsigned char) *s))
		{
			digits = true;
			s++;
		}
	}
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E')
	{
		bool		neg = false;

		s++;
		if (*s == '+' || *s == '-')
			neg = *s++ == '-';
		if (!isdigit((unsigned char) *s))
			return false;
		while (isdigit((unsigned char) *s))
		{
			if (exponent <= NUMERIC_MAX_PRECISION)
				exponent = exponent * 10 + (*s - '0');
			s++;
		}
		if (neg)
			exponent = -exponent;
	}
	while (isspace((unsigned char) *s))
		s++;
	if (*s != '\0')
		return false;
	*exponent_ok = exponent >= -NUMERIC_MAX_PRECISION && exponent <= NUMERIC_MAX_PRECISION;
	return true;
}

/* The text of an e option as a finite numeric of at least 0, or an error */
Numeric
KeanonParseE(const char *text)
{
	bool		exponent_ok;
	Numeric		e;

	if (non_finite_word(text))
		invalid_e(text, "e must be a finite number.");
	if (!decimal_syntax_ok(text, &exponent_ok))
		invalid_e(text, "e must be a decimal number, such as 2000 or 0.5.");
	if (!exponent_ok)
		invalid_e(text, psprintf("The exponent of e must be between %d and %d.",
								 -NUMERIC_MAX_PRECISION, NUMERIC_MAX_PRECISION));
	e = numeric_from_text(text);
	if (num_cmp(e, int64_to_numeric(0)) < 0)
		invalid_e(text, "e must be at least 0.");
	return e;
}

/* -x */
static Numeric
numeric_uminus_opt(Numeric x)
{
	return DatumGetNumeric(DirectFunctionCall1(numeric_uminus, NumericGetDatum(x)));
}

/* 2^n for n >= 0, exactly: products of integers lose nothing */
static Numeric
numeric_pow2(int n)
{
	Numeric		r = int64_to_numeric(1);

	for (; n >= 62; n -= 62)
		r = numeric_mul_opt_error(r, int64_to_numeric(INT64CONST(1) << 62), NULL);
	return numeric_mul_opt_error(r, int64_to_numeric(INT64CONST(1) << n), NULL);
}

/*
 * Three-way comparison of a finite double d >= 0 with a numeric x, exactly:
 * d is an integer times a power of two, and whichever side the power would
 * make fractional is multiplied by its inverse instead.
 */
static int
double_cmp_numeric(double d, Numeric x)
{
	int			exp;
	double		frac = frexp(d, &exp);
	int64		mant = (int64) ldexp(frac, DBL_MANT_DIG);

	exp -= DBL_MANT_DIG;
	if (exp >= 0)
		return num_cmp(numeric_mul_opt_error(int64_to_numeric(mant),
											 numeric_pow2(exp), NULL), x);
	return num_cmp(int64_to_numeric(mant),
				   numeric_mul_opt_error(x, numeric_pow2(-exp), NULL));
}

/* The least double that is >= e, for 0 <= e <= DBL_MAX */
static double
least_double_above(Numeric e)
{
	char	   *str = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(e)));
	double		d = strtod(str, NULL);

	/* strtod rounds to nearest: at most one step either way is left */
	while (double_cmp_numeric(d, e) < 0)
		d = nextafter(d, INFINITY);
	while (d > 0 && double_cmp_numeric(nextafter(d, -INFINITY), e) >= 0)
		d = nextafter(d, -INFINITY);
	pfree(str);
	return d;
}

/*
 * A numeric as the double nearest to it, as a cast to double precision
 * rounds, but infinite (of its sign) past the largest double instead of
 * an error.  NaN is the caller's to refuse.
 */
double
KeanonNumericToDouble(Numeric x)
{
	bool		neg = num_cmp(x, int64_to_numeric(0)) < 0;

	if (numeric_is_inf(x) ||
		double_cmp_numeric(DBL_MAX, neg ? numeric_uminus_opt(x) : x) < 0)
		return neg ? -INFINITY : INFINITY;
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(x)));
}

/*
 * The e option (its text, as in the reloptions) in the engine's units for
 * an index of value type vt, exactly, or an error when the engine cannot
 * hold it.  For numeric columns whose scale is chosen at build, call it
 * once the scale is known.
 */
KeNum
KeanonENum(const KeanonValueType *vt, const char *text)
{
	Numeric		e = KeanonParseE(text);

	Assert(vt->scale >= 0);
	if (vt->kind == KE_KIND_FLOAT)
	{
		if (double_cmp_numeric(DBL_MAX, e) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("e = %s is too large for a keanon index on %s",
							text, format_type_be(vt->typid)),
					 errdetail("e must be at most the largest double precision value, about 1.8e308.")));
		return ke_num_float(least_double_above(e));
	}
	else
	{
		Numeric		scaled = numeric_mul_opt_error(e, numeric_from_text(psprintf("1e%d", vt->scale)),
												   NULL);
		Numeric		steps;
		char	   *digits;
		ke_int128	v = 0;

		/* whole steps of 10^-scale, rounded up */
		steps = DatumGetNumeric(DirectFunctionCall1(numeric_ceil, NumericGetDatum(scaled)));
		if (num_cmp(steps, numeric_from_text(KEANON_E_LIMIT)) >= 0)
		{
			if (vt->scale == 0)
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("e = %s is too large for a keanon index on %s",
								text, format_type_be(vt->typid)),
						 errdetail("e must be less than 2^100.")));
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("e = %s is too large for a keanon index on %s",
							text, format_type_be(vt->typid)),
					 errdetail("Values are kept at scale %d, so e must be less than 2^100 / 10^%d.",
							   vt->scale, vt->scale)));
		}
		digits = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(steps)));
		for (const char *p = digits; *p; p++)
		{
			if (!isdigit((unsigned char) *p))
				elog(ERROR, "unexpected character in whole number \"%s\"", digits);
			v = v * 10 + (*p - '0');
		}
		pfree(digits);
		return (KeNum) {.i = v};
	}
}

/* An engine number as a Datum of the watched column's type */
Datum
KeanonNumToDatum(const KeanonValueType *vt, KeNum x)
{
	switch (vt->typid)
	{
		case INT2OID:
			return Int16GetDatum((int16) x.i);
		case INT4OID:
			return Int32GetDatum((int32) x.i);
		case INT8OID:
			return Int64GetDatum((int64) x.i);
		case FLOAT4OID:
			return Float4GetDatum((float4) x.f);
		case FLOAT8OID:
			return Float8GetDatum(x.f);
		default:
			return KeanonNumToNumeric(vt, x);
	}
}
