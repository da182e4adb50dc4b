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
