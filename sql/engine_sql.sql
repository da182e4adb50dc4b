--
-- keanon.optimal_partitions(): the engine's optimal (k,e)-partitioning of
-- an array, checked against the reference oracle's results
--
CREATE EXTENSION keanon;

-- the report's salary example (Table 3.1), k = 3, e = 2000
SELECT * FROM keanon.optimal_partitions(
	'{14000,15000,16000,25000,30000,35000,35000,40000,45000}'::bigint[], 3, 2000);

-- the same salaries in arrival order: the input need not be sorted
SELECT * FROM keanon.optimal_partitions(
	'{14000,15000,16000,25000,35000,30000,40000,35000,45000}'::bigint[], 3, 2000);

-- its sum-error
SELECT sum(error) AS sum_error FROM keanon.optimal_partitions(
	'{14000,15000,16000,25000,30000,35000,35000,40000,45000}'::bigint[], 3, 2000);

-- the report's worked examples with k = 3, e = 2 (Tables 3.5 to 3.8)
SELECT * FROM keanon.optimal_partitions(
	'{54,55,56,65,70,75,75,80,85}'::bigint[], 3, 2);
-- after inserting 67 the sum-error drops from 22 to 17
SELECT * FROM keanon.optimal_partitions(
	'{54,55,56,65,67,70,75,75,80,85}'::bigint[], 3, 2);
-- after inserting 55 instead it stays at 22
SELECT * FROM keanon.optimal_partitions(
	'{54,55,55,56,65,70,75,75,80,85}'::bigint[], 3, 2);
-- too few distinct values: no valid partitioning, every row suppressed
SELECT * FROM keanon.optimal_partitions('{5,5,5,7,7}'::bigint[], 3, 0);

-- every result against the oracle's groups, as (min, max, rows) triples
WITH golden(name, vals, k, e, groups) AS (
	VALUES
	('table 3.5/3.6', '{54,55,56,65,70,75,75,80,85}'::bigint[], 3, 2::bigint,
	 '{{54,56,3},{65,75,3},{75,85,3}}'::numeric[]),
	('table 3.7', '{54,55,56,65,67,70,75,75,80,85}', 3, 2,
	 '{{54,56,3},{65,70,3},{75,85,4}}'),
	('table 3.8', '{54,55,55,56,65,70,75,75,80,85}', 3, 2,
	 '{{54,56,4},{65,75,3},{75,85,3}}'),
	('table 3.1 salaries', '{14000,15000,16000,25000,30000,35000,35000,40000,45000}', 3, 2000,
	 '{{14000,16000,3},{25000,35000,3},{35000,45000,3}}'),
	('too few distinct', '{5,5,5,7,7}', 3, 0,
	 '{}')
)
SELECT g.name,
	   coalesce((SELECT array_agg(ARRAY[p.min_value, p.max_value, p.n] ORDER BY p.pid)
				 FROM keanon.optimal_partitions(g.vals, g.k, g.e) p), '{}') = g.groups
	   AS matches_oracle
FROM golden g;

-- double precision values: errors in double arithmetic
SELECT * FROM keanon.optimal_partitions(
	'{0.5,1.25,2.0,2.0,3.5,7.75,8.0,9.5}'::float8[], 3, 1.5);
SELECT * FROM keanon.optimal_partitions(
	'{54,55,56,65,70,75,75,80,85}'::float8[], 3, 2);

-- NULL elements are ignored
SELECT * FROM keanon.optimal_partitions(
	'{54,NULL,55,56,65,NULL,70,75,75,80,85}'::bigint[], 3, 2);
SELECT * FROM keanon.optimal_partitions(
	'{NULL,0.5,1.25,2.0,2.0,3.5,7.75,8.0,9.5,NULL}'::float8[], 3, 1.5);

-- empty input, and input with nothing but NULLs
SELECT * FROM keanon.optimal_partitions('{}'::bigint[], 3, 2);
SELECT * FROM keanon.optimal_partitions('{NULL,NULL}'::float8[], 3, 2);

-- values that never span e
SELECT * FROM keanon.optimal_partitions('{1,2,3,4}'::bigint[], 2, 10);
SELECT * FROM keanon.optimal_partitions('{0.25,0.5,0.75}'::float8[], 2, 0.625);

-- errors wider than bigint stay exact
SELECT * FROM keanon.optimal_partitions(
	'{-9223372036854775808,0,9223372036854775807}'::bigint[], 3, 0);

-- a larger input: 1..1000 with k = 3, e = 2
SELECT count(*) AS partitions, sum(n) AS rows, sum(error) AS sum_error,
	   min(pid) AS first_pid, max(pid) AS last_pid
FROM keanon.optimal_partitions(ARRAY(SELECT generate_series(1, 1000))::bigint[], 3, 2);
SELECT * FROM keanon.optimal_partitions(ARRAY(SELECT generate_series(1, 1000))::bigint[], 3, 2)
WHERE pid IN (1, 2, 333);

-- double precision errors past the largest double: every partitioning of
-- these values has a sum-error that overflows, yet valid ones exist
SELECT pid, n, distinct_values, min_value::float8, max_value::float8, error::float8
FROM keanon.optimal_partitions('{1.7e308,-1.7e308,0,1}'::float8[], 2, 0);
-- against exact arithmetic: the least sum-error over every partitioning,
-- found by trying every set of cuts in numeric
CREATE FUNCTION brute_optimum(vals float8[], k integer, e float8) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE
	d numeric[] := ARRAY(SELECT (v::text)::numeric FROM unnest(vals) v WHERE v IS NOT NULL ORDER BY v);
	n integer := cardinality(d);
	best numeric;
	total numeric;
	first integer;
	ok boolean;
BEGIN
	FOR cuts IN 0 .. (1 << greatest(n - 1, 0)) - 1 LOOP
		total := 0;
		first := 1;
		ok := n > 0;
		FOR i IN 1 .. n LOOP
			IF i = n OR (cuts >> (i - 1)) & 1 = 1 THEN
				IF (SELECT count(DISTINCT x) FROM unnest(d[first:i]) x) < k OR d[i] - d[first] < e::numeric
				   OR (i < n AND d[i] = d[i + 1]) THEN
					ok := false;
				END IF;
				total := total + d[i] - d[first];
				first := i + 1;
			END IF;
		END LOOP;
		IF ok AND (best IS NULL OR total < best) THEN
			best := total;
		END IF;
	END LOOP;
	RETURN best;
END;
$$;
-- a valid partitioning exists exactly when one of all the values is valid;
-- the engine's partitions must be valid, cover every value, and here (no
-- tie between different exact sums) reach the exact optimum
SELECT vals, k, e,
	   (SELECT count(*) > 0 FROM keanon.optimal_partitions(vals, k, e)) =
		   (SELECT count(DISTINCT v) >= k AND max(v)::numeric - min(v)::numeric >= e::numeric
			FROM unnest(vals) v) AS feasible_right,
	   (SELECT count(*) = 0 OR (bool_and(distinct_values >= k AND max_value - min_value >= e::numeric)
								AND sum(n) = (SELECT count(v) FROM unnest(vals) v))
		FROM keanon.optimal_partitions(vals, k, e)) AS valid,
	   (SELECT sum(max_value - min_value) FROM keanon.optimal_partitions(vals, k, e))
		   IS NOT DISTINCT FROM brute_optimum(vals, k, e) AS optimal
FROM (VALUES ('{1.7e308,-1.7e308,0,1}'::float8[], 2, 0::float8),
			 ('{1.7e308,-1.7e308,0,1}', 2, 1e308),
			 ('{1.7e308,-1.7e308,0,1}', 3, 0),
			 ('{1.7e308,-1.7e308,0,1}', 5, 0),
			 ('{-1.7976931348623157e308,1.7976931348623157e308}', 2, 1e308),
			 ('{-1.7e308,-1.6e308,1.6e308,1.7e308}', 2, 0),
			 ('{-1e308,-1e308,5,1e308,1.5e308,1.7e308}', 2, 1e300)) t(vals, k, e);
DROP FUNCTION brute_optimum;

-- STRICT: a NULL argument gives no rows
SELECT count(*) FROM keanon.optimal_partitions(NULL::bigint[], 3, 2);
SELECT count(*) FROM keanon.optimal_partitions('{1,2,3}'::bigint[], NULL, 2);
SELECT count(*) FROM keanon.optimal_partitions('{1,2,3}'::float8[], 3, NULL);

-- bad input
SELECT * FROM keanon.optimal_partitions('{1,2,3}'::bigint[], 1, 0);
SELECT * FROM keanon.optimal_partitions('{1,2,3}'::float8[], -5, 0);
SELECT * FROM keanon.optimal_partitions('{1,2,3}'::bigint[], 1000001, 0);
SELECT * FROM keanon.optimal_partitions('{1,2,3}'::bigint[], 2, -1);
SELECT * FROM keanon.optimal_partitions('{1,2,3}'::float8[], 2, -0.5);
SELECT * FROM keanon.optimal_partitions('{1,2,3}'::float8[], 2, 'NaN');
SELECT * FROM keanon.optimal_partitions('{1,2,3}'::float8[], 2, 'Infinity');
SELECT * FROM keanon.optimal_partitions('{1,NaN,3}'::float8[], 2, 1);
SELECT * FROM keanon.optimal_partitions('{1,2,-Infinity}'::float8[], 2, 1);
SELECT * FROM keanon.optimal_partitions('[0:2]={1,2,Infinity}'::float8[], 2, 1);
SELECT * FROM keanon.optimal_partitions('{{1,2},{3,4}}'::bigint[], 2, 1);
SELECT * FROM keanon.optimal_partitions('{{1,2},{3,4}}'::float8[], 2, 1);

DROP EXTENSION keanon;
