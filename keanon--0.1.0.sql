/* keanon--0.1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION keanon" to load this file. \quit

-- The optimal (k,e)-partitioning of a multiset of numbers, computed in the
-- backend by the same engine that will maintain watched tables.

CREATE FUNCTION keanon.optimal_partitions(
	vals bigint[],
	k integer,
	e bigint)
RETURNS TABLE (
	pid bigint,
	n bigint,
	distinct_values bigint,
	min_value numeric,
	max_value numeric,
	error numeric)
AS 'MODULE_PATHNAME', 'keanon_optimal_partitions_int8'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION keanon.optimal_partitions(bigint[], integer, bigint) IS
'optimal (k,e)-partitioning of the non-null elements of an integer array: one row per partition in ascending order, with exact errors; no rows when no valid partitioning exists';

CREATE FUNCTION keanon.optimal_partitions(
	vals double precision[],
	k integer,
	e double precision)
RETURNS TABLE (
	pid bigint,
	n bigint,
	distinct_values bigint,
	min_value numeric,
	max_value numeric,
	error numeric)
AS 'MODULE_PATHNAME', 'keanon_optimal_partitions_float8'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION keanon.optimal_partitions(double precision[], integer, double precision) IS
'optimal (k,e)-partitioning of the non-null elements of a double precision array: one row per partition in ascending order; errors are computed in double precision; no rows when no valid partitioning exists';

-- Everyone may call keanon's read functions; each checks the caller's
-- privileges on the objects it reads.
GRANT USAGE ON SCHEMA keanon TO PUBLIC;

-- ----------------------------------------------------------------
-- The keanon index access method
-- ----------------------------------------------------------------

CREATE FUNCTION keanon.keanon_handler(internal)
RETURNS index_am_handler
AS 'MODULE_PATHNAME', 'keanon_handler'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION keanon.keanon_handler(internal) IS
'access method handler of keanon indexes';

CREATE ACCESS METHOD keanon TYPE INDEX HANDLER keanon.keanon_handler;
COMMENT ON ACCESS METHOD keanon IS
'optimal (k,e)-partitioning of one numeric column, kept in crash-safe pages; never used for scans';

CREATE OPERATOR CLASS keanon.keanon_int2_ops
DEFAULT FOR TYPE smallint USING keanon AS
	FUNCTION 1 btint2cmp(smallint, smallint),
	FUNCTION 2 int2mi(smallint, smallint);
COMMENT ON OPERATOR CLASS keanon.keanon_int2_ops USING keanon IS
'keanon partitioning of smallint values';

CREATE OPERATOR CLASS keanon.keanon_int4_ops
DEFAULT FOR TYPE integer USING keanon AS
	FUNCTION 1 btint4cmp(integer, integer),
	FUNCTION 2 int4mi(integer, integer);
COMMENT ON OPERATOR CLASS keanon.keanon_int4_ops USING keanon IS
'keanon partitioning of integer values';

CREATE OPERATOR CLASS keanon.keanon_int8_ops
DEFAULT FOR TYPE bigint USING keanon AS
	FUNCTION 1 btint8cmp(bigint, bigint),
	FUNCTION 2 int8mi(bigint, bigint);
COMMENT ON OPERATOR CLASS keanon.keanon_int8_ops USING keanon IS
'keanon partitioning of bigint values';

CREATE OPERATOR CLASS keanon.keanon_numeric_ops
DEFAULT FOR TYPE numeric USING keanon AS
	FUNCTION 1 numeric_cmp(numeric, numeric),
	FUNCTION 2 numeric_sub(numeric, numeric);
COMMENT ON OPERATOR CLASS keanon.keanon_numeric_ops USING keanon IS
'keanon partitioning of numeric values (exact, at the column''s scale)';

CREATE OPERATOR CLASS keanon.keanon_float4_ops
DEFAULT FOR TYPE real USING keanon AS
	FUNCTION 1 btfloat4cmp(real, real),
	FUNCTION 2 float4mi(real, real);
COMMENT ON OPERATOR CLASS keanon.keanon_float4_ops USING keanon IS
'keanon partitioning of real values (sums of errors rounded as double precision)';

CREATE OPERATOR CLASS keanon.keanon_float8_ops
DEFAULT FOR TYPE double precision USING keanon AS
	FUNCTION 1 btfloat8cmp(double precision, double precision),
	FUNCTION 2 float8mi(double precision, double precision);
COMMENT ON OPERATOR CLASS keanon.keanon_float8_ops USING keanon IS
'keanon partitioning of double precision values (sums of errors rounded as double precision)';

CREATE FUNCTION keanon.index_partitions(index regclass,
	OUT pid bigint, OUT n bigint, OUT distinct_values bigint,
	OUT min_value numeric, OUT max_value numeric, OUT error numeric)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'keanon_index_partitions'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION keanon.index_partitions(regclass) IS
'the optimal (k,e)-partitioning held by a keanon index: one row per partition, ordered by min_value';

CREATE FUNCTION keanon.index_check(index regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'keanon_index_check'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION keanon.index_check(regclass) IS
'recompute the optimum from the table and compare it with the keanon index''s pages: true, or an error naming the difference';

CREATE FUNCTION keanon.index_apply(index regclass, vals numeric[], deltas bigint[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'keanon_index_apply'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION keanon.index_apply(regclass, numeric[], bigint[]) IS
'superuser only, for tests: add (delta > 0) or remove (delta < 0) values in a keanon index directly; returns the DP runs recomputed';
REVOKE ALL ON FUNCTION keanon.index_apply(regclass, numeric[], bigint[]) FROM PUBLIC;
