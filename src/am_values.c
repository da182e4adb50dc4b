/*
 * am_values.c
 *		Values of the indexed column as engine numbers, and back.
 *
 * smallint, integer and bigint map exactly to the engine's 128-bit
 * integers.  numeric maps to them scaled by 10^scale, the scale being the
 * column's declared one, the index's scale option, or (unconstrained
 * numeric) the largest scale found at build; a later value with more
 * decimal places is refused with a hint to rebuild.  real and double
 * precision use the engine's float kind.  NaN and infinities are refused
 * everywhere: they have no place in a sorted range.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/float.h"
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
				vt->scale = -1; /* chosen at build */
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
}

/* Decimal places of a numeric value */
int
KeanonNumericScale(Datum num)
{
	return DatumGetInt32(DirectFunctionCall1(numeric_scale, num));
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

/* Parse the text of a finite numeric into an integer scaled by 10^scale */
static KeNum
numeric_text_to_num(const char *str, int scale)
{
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
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("value %s has more decimal places than the keanon index allows (%d)",
								str, scale),
						 errhint("Rebuild the index with a larger \"scale\" option.")));
			continue;
		}
		v = v * 10 + (*p - '0');
		if (v != 0)
			digits++;
		if (frac >= 0)
			frac++;
		if (digits > 34)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("value %s is too large for a keanon index", str)));
	}
	for (int i = Max(frac, 0); i < scale; i++)
	{
		v *= 10;
		if (v != 0 && ++digits > 34)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("value %s is too large for a keanon index", str)));
	}
	out.i = neg ? -v : v;
	return out;
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
				str = DatumGetCString(DirectFunctionCall1(numeric_out, d));
				n = numeric_text_to_num(str, Max(vt->scale, 0));
				pfree(str);
				return n;
			}
	}
	elog(ERROR, "unsupported keanon value type %u", vt->typid);
	return ke_num_int(0);		/* keep compiler quiet */
}

/* An engine number (value, error or bound) as numeric */
Datum
KeanonNumToNumeric(const KeanonValueType *vt, KeNum x)
{
	char		buf[64];
	char		out[80];
	int			scale = Max(vt->scale, 0);

	if (vt->kind == KE_KIND_FLOAT)
		return DirectFunctionCall1(float8_numeric, Float8GetDatum(x.f));
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
		out[pos] = '\0';
	}
	return DirectFunctionCall3(numeric_in, CStringGetDatum(out),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/* The e option in the engine's units; it must be exact for exact kinds */
KeNum
KeanonEFromDouble(const KeanonValueType *vt, double e)
{
	double		scaled;

	if (vt->kind == KE_KIND_FLOAT)
		return ke_num_float(e);
	scaled = e * pow(10.0, Max(vt->scale, 0));
	if (scaled > 1e30 || fabs(scaled - rint(scaled)) > 1e-6 * Max(1.0, fabs(scaled)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("e = %g is not a multiple of the column's smallest step", e),
				 errdetail("The column stores values with %d decimal places.",
						   Max(vt->scale, 0))));
	return (KeNum) {.i = (ke_int128) rint(scaled)};
}
