-- Bound aggregates over published views.
CREATE EXTENSION IF NOT EXISTS keanon;

-- The research's examples (report Tables 3.1/3.4)
CREATE TABLE people (id serial PRIMARY KEY, postal_code text, age integer,
	sex text, salary bigint);
INSERT INTO people (postal_code, age, sex, salary) VALUES
	('50200', 35, 'Male', 14000), ('50210', 36, 'Male', 15000),
	('50230', 40, 'Male', 16000), ('50300', 41, 'Female', 25000),
	('50310', 43, 'Female', 35000), ('50330', 47, 'Male', 30000),
	('50300', 53, 'Male', 40000), ('50310', 54, 'Female', 35000),
	('50330', 58, 'Male', 45000);
SELECT keanon.watch('people', 'salary', '{postal_code,age,sex}', 3, 2000);
-- SUM(salary) for ages 40-48: the true 106000 lies in [104000,106000]
SELECT keanon.sum_bounds(keanon_pid), (SELECT sum(salary) FROM people WHERE age BETWEEN 40 AND 48) AS truth
FROM people_anon WHERE age BETWEEN 40 AND 48;
-- MIN and MAX for women: [25000,30000] (the report's 35000 is loose) and [35000,45000]
SELECT keanon.min_bounds(keanon_pid), keanon.max_bounds(keanon_pid)
FROM people_anon WHERE sex = 'Female';
-- COUNT is exact; count_bounds bounds how many fall in a salary range
SELECT count(*), keanon.count_bounds(keanon_pid, NULL, NULL),
	   keanon.count_bounds(keanon_pid, 20000, 32000),
	   keanon.count_bounds(keanon_pid, 35000, NULL),
	   keanon.count_bounds(keanon_pid, 14999.5, 15000.5)
FROM people_anon WHERE age BETWEEN 40 AND 48;
SELECT keanon.avg_bounds(keanon_pid) FROM people_anon WHERE age BETWEEN 40 AND 48;
-- AVG's ends are the SUM bounds' quotients rounded outward to the column's
-- places plus four, trailing zeros dropped
SELECT bool_and(lower(a) <= lower(s) / n AND lower(s) / n - lower(a) < 0.0001
				AND upper(a) >= upper(s) / n AND upper(a) - upper(s) / n < 0.0001) AS outward,
	   bool_or(scale(lower(a)) > 0 OR scale(upper(a)) > 0) AS some_not_whole,
	   bool_and(scale(lower(a)) <= 4 AND scale(upper(a)) <= 4) AS four_places
FROM (SELECT keanon.avg_bounds(keanon_pid) AS a, keanon.sum_bounds(keanon_pid) AS s, count(*) AS n
	  FROM people_anon GROUP BY age % 7) x;

-- GROUP BY, FILTER, HAVING, empty input, NULL keanon_pid
SELECT sex, keanon.sum_bounds(keanon_pid), keanon.min_bounds(keanon_pid),
	   keanon.max_bounds(keanon_pid), count(*)
FROM people_anon GROUP BY sex ORDER BY sex;
SELECT keanon.sum_bounds(keanon_pid) FILTER (WHERE age < 45) AS young,
	   keanon.sum_bounds(keanon_pid) FILTER (WHERE age >= 45) AS old
FROM people_anon;
SELECT sex FROM people_anon GROUP BY sex
HAVING upper(keanon.sum_bounds(keanon_pid)) > 100000 ORDER BY sex;
SELECT keanon.sum_bounds(keanon_pid), keanon.min_bounds(keanon_pid),
	   keanon.avg_bounds(keanon_pid), keanon.count_bounds(keanon_pid, 0, 1)
FROM people_anon WHERE false;
SELECT keanon.sum_bounds(NULL::bigint) FROM generate_series(1, 3);
SELECT keanon.sum_bounds(12345);

-- Every supported type, with an independent check of each bound: the
-- bounds are recomputed here in plain SQL from the true values of each
-- partition (read from keanon's private rows table, which only the owner
-- may do), and the true aggregate over the source table must lie inside.
CREATE FUNCTION bound_oracle(src regclass, rows_t regclass, col name, pred text,
	OUT sum_lo numeric, OUT sum_hi numeric, OUT min_lo numeric, OUT min_hi numeric,
	OUT max_lo numeric, OUT max_hi numeric, OUT truth_sum numeric,
	OUT truth_min numeric, OUT truth_max numeric)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format($q$
		WITH hits AS (SELECT keanon_pid AS pid, count(*) AS h FROM %2$s
					  WHERE keanon_pid IS NOT NULL AND (%4$s) GROUP BY 1),
			 parts AS (SELECT keanon_pid AS pid, array_agg(%3$I::numeric ORDER BY %3$I) AS v,
							  count(*) AS n
					   FROM %2$s WHERE keanon_pid IS NOT NULL GROUP BY 1)
		SELECT sum((SELECT sum(x) FROM unnest(p.v[1:h.h]) x)),
			   sum((SELECT sum(x) FROM unnest(p.v[p.n - h.h + 1:p.n]) x)),
			   min(p.v[1]), min(p.v[p.n - h.h + 1]), max(p.v[h.h]), max(p.v[p.n])
		FROM hits h JOIN parts p USING (pid)$q$, src, rows_t, col, pred)
	INTO sum_lo, sum_hi, min_lo, min_hi, max_lo, max_hi;
	EXECUTE format('SELECT sum(%2$I), min(%2$I), max(%2$I) FROM %1$s WHERE %2$I IS NOT NULL AND (%3$s)',
				   src, col, pred)
	INTO truth_sum, truth_min, truth_max;
END;
$$;

CREATE TABLE typed (id integer PRIMARY KEY, grp integer, a smallint, b integer,
	c numeric(10,2), d real, f double precision);
SELECT setseed(0.42);
INSERT INTO typed
SELECT i, i % 17, (random() * 60)::smallint, (random() * 100000)::integer,
	   round((random() * 5000)::numeric, 2), (random() * 64)::integer / 4.0,
	   (random() * 1000)::integer / 8.0
FROM generate_series(1, 600) i;
UPDATE typed SET b = NULL WHERE id % 50 = 0;
CREATE TABLE typed_a AS SELECT id, grp, a FROM typed;
ALTER TABLE typed_a ADD PRIMARY KEY (id);
CREATE TABLE typed_b AS SELECT id, grp, b FROM typed;
ALTER TABLE typed_b ADD PRIMARY KEY (id);
CREATE TABLE typed_c AS SELECT id, grp, c FROM typed;
ALTER TABLE typed_c ADD PRIMARY KEY (id);
CREATE TABLE typed_d AS SELECT id, grp, d FROM typed;
ALTER TABLE typed_d ADD PRIMARY KEY (id);
CREATE TABLE typed_f AS SELECT id, grp, f FROM typed;
ALTER TABLE typed_f ADD PRIMARY KEY (id);
SELECT keanon.watch('typed_a', 'a', '{grp}', 3, 5);
SELECT keanon.watch('typed_b', 'b', '{grp}', 4, 1000);
SELECT keanon.watch('typed_c', 'c', '{grp}', 3, 50.5);
SELECT keanon.watch('typed_d', 'd', '{grp}', 2, 1.5);
SELECT keanon.watch('typed_f', 'f', '{grp}', 5, 10);
-- some churn, so that partitions have been maintained, not only built
DELETE FROM typed_b WHERE id % 7 = 0;
UPDATE typed_c SET c = c + 0.25 WHERE id % 5 = 0;
INSERT INTO typed_f SELECT 1000 + i, i % 17, (i * 37 % 800) / 8.0 FROM generate_series(1, 50) i;
SELECT t, keanon.check(t::regclass)
FROM unnest('{typed_a,typed_b,typed_c,typed_d,typed_f}'::text[]) t;

CREATE FUNCTION compare_bounds(src text, col name, pred text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	o record;
	k record;
BEGIN
	o := bound_oracle(src::regclass, (src || '_keanon_rows')::regclass, col, pred);
	EXECUTE format('SELECT keanon.sum_bounds(keanon_pid) AS s, keanon.min_bounds(keanon_pid) AS mi, '
				   'keanon.max_bounds(keanon_pid) AS ma FROM %I WHERE %s', src || '_anon', pred)
	INTO k;
	IF k.s IS NULL AND o.sum_lo IS NULL THEN
		RETURN 'empty';
	END IF;
	IF k.s <> numrange(o.sum_lo, o.sum_hi, '[]') THEN
		RETURN format('sum %s, oracle [%s,%s]', k.s, o.sum_lo, o.sum_hi);
	END IF;
	IF k.mi <> numrange(o.min_lo, o.min_hi, '[]') OR k.ma <> numrange(o.max_lo, o.max_hi, '[]') THEN
		RETURN format('min %s max %s, oracle [%s,%s] [%s,%s]', k.mi, k.ma, o.min_lo, o.min_hi, o.max_lo, o.max_hi);
	END IF;
	IF NOT (k.s @> o.truth_sum AND k.mi @> o.truth_min AND k.ma @> o.truth_max) THEN
		RETURN format('truth outside: sum %s in %s', o.truth_sum, k.s);
	END IF;
	RETURN 'ok';
END;
$$;
SELECT t, count(*) FILTER (WHERE r = 'ok') AS ok, count(*) FILTER (WHERE r = 'empty') AS empty,
	   string_agg(r, '; ') FILTER (WHERE r NOT IN ('ok', 'empty')) AS failures
FROM unnest('{typed_a:a,typed_b:b,typed_c:c,typed_d:d,typed_f:f}'::text[]) tc,
	 LATERAL (SELECT split_part(tc, ':', 1) AS t, split_part(tc, ':', 2) AS col) x,
	 LATERAL (SELECT compare_bounds(x.t, x.col::name, format('grp %% %s = %s', m, r)) AS r
			  FROM generate_series(2, 6) m, generate_series(0, 1) r
			  UNION ALL SELECT compare_bounds(x.t, x.col::name, format('grp BETWEEN %s AND %s', g, g + w))
			  FROM generate_series(0, 16, 4) g, generate_series(0, 8, 3) w
			  UNION ALL SELECT compare_bounds(x.t, x.col::name, 'grp > 100')) c
GROUP BY t ORDER BY t;

-- A parallel plan gives the same answers.  The view returns its rows in
-- order (partition, slot), which its readers' aggregates take serially; the
-- owner's own query of the rows table takes partial aggregates in workers,
-- combined, and must agree with the view's
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
CREATE TABLE big (id integer PRIMARY KEY, grp integer, v integer);
INSERT INTO big SELECT i, i % 10, (i * 7919) % 10007 FROM generate_series(1, 20000) i;
SELECT keanon.watch('big', 'v', '{grp}', 4, 10);
ANALYZE big_keanon_rows;
EXPLAIN (COSTS OFF)
SELECT keanon.sum_bounds(keanon_pid), keanon.count_bounds(keanon_pid, 100, 5000)
FROM big_keanon_rows WHERE keanon_pid IS NOT NULL AND grp < 5;
CREATE TEMP TABLE par AS
SELECT keanon.sum_bounds(keanon_pid) AS s, keanon.min_bounds(keanon_pid) AS mi,
	   keanon.max_bounds(keanon_pid) AS ma, keanon.avg_bounds(keanon_pid) AS av,
	   keanon.count_bounds(keanon_pid, 100, 5000) AS c
FROM big_keanon_rows WHERE keanon_pid IS NOT NULL AND grp < 5;
SET max_parallel_workers_per_gather = 0;
SELECT p.s = q.s AND p.mi = q.mi AND p.ma = q.ma AND p.av = q.av AND p.c = q.c AS same
FROM par p, (SELECT keanon.sum_bounds(keanon_pid) AS s, keanon.min_bounds(keanon_pid) AS mi,
	   keanon.max_bounds(keanon_pid) AS ma, keanon.avg_bounds(keanon_pid) AS av,
	   keanon.count_bounds(keanon_pid, 100, 5000) AS c
	FROM big_anon WHERE grp < 5) q;
SELECT compare_bounds('big', 'v', 'grp < 5');
RESET ALL;
SELECT keanon.check('big');

-- count_bounds against an oracle: per partition, h of its n rows hit and g
-- of its values lie in [lo, hi] (NULL: unbounded), compared as numeric
CREATE FUNCTION count_oracle(src text, col name, pred text, lo numeric, hi numeric)
RETURNS int8range LANGUAGE plpgsql AS $$
DECLARE
	r int8range;
BEGIN
	EXECUTE format($q$
		WITH hits AS (SELECT keanon_pid AS pid, count(*) AS h FROM %1$I
					  WHERE keanon_pid IS NOT NULL AND (%3$s) GROUP BY 1),
			 parts AS (SELECT keanon_pid AS pid, count(*) AS n,
							  count(*) FILTER (WHERE ($1 IS NULL OR %2$I::numeric >= $1)
												 AND ($2 IS NULL OR %2$I::numeric <= $2)) AS g
					   FROM %1$I WHERE keanon_pid IS NOT NULL GROUP BY 1)
		SELECT int8range(sum(greatest(0, h - (n - g)))::bigint, sum(least(h, g))::bigint, '[]')
		FROM hits JOIN parts USING (pid)$q$, src || '_keanon_rows', col, pred)
	INTO r USING lo, hi;
	RETURN r;
END;
$$;
CREATE FUNCTION compare_counts(src text, col name, pred text, lo numeric, hi numeric)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	got int8range;
	want int8range := count_oracle(src, col, pred, lo, hi);
BEGIN
	EXECUTE format('SELECT keanon.count_bounds(keanon_pid, $1, $2) FROM %I WHERE %s',
				   src || '_anon', pred) INTO got USING lo, hi;
	RETURN CASE WHEN got IS NOT DISTINCT FROM want THEN 'ok'
		   ELSE format('[%s, %s]: %s, oracle %s', lo, hi, got, want) END;
END;
$$;

-- Ends beyond every value of the column are just wide ends, infinite ends
-- unbounded or empty, on integer, numeric and bigint columns alike
SELECT t, count(*) FILTER (WHERE r = 'ok') AS ok,
	   string_agg(r, '; ') FILTER (WHERE r <> 'ok') AS failures
FROM unnest('{typed_a:a,typed_b:b,typed_c:c}'::text[]) tc,
	 LATERAL (SELECT split_part(tc, ':', 1) AS t, split_part(tc, ':', 2) AS col) x,
	 LATERAL (SELECT compare_counts(x.t, x.col::name, p, lo, hi) AS r
			  FROM unnest('{grp < 9, grp % 3 = 1}'::text[]) p,
				   (VALUES (1e40, NULL::numeric), (NULL, 1e40), (-1e40, 1e40), (NULL, -1e40),
						   ('-Infinity', 'Infinity'), ('Infinity', NULL), (NULL, '-Infinity'),
						   ('-Infinity', 30.5), (12.25, 'Infinity'), (-9.9e39, 2500.005),
						   (99999999999999999999, NULL)) b(lo, hi)) c
GROUP BY t ORDER BY t;
-- NaN is refused
SELECT keanon.count_bounds(keanon_pid, 'NaN', NULL) FROM typed_b_anon;
SELECT keanon.count_bounds(keanon_pid, 0, 'NaN') FROM typed_c_anon;
-- bounds must be the same on every row: the first row does not decide
-- (the detail names the first two bounds met, in the rows' random order)
\set VERBOSITY terse
SELECT keanon.count_bounds(keanon_pid, CASE WHEN grp < 8 THEN 0 ELSE 1000 END, 50000)
FROM typed_b_anon;
SELECT keanon.count_bounds(keanon_pid, 0, CASE WHEN grp = 16 THEN NULL ELSE 50000 END)
FROM typed_b_anon;
\set VERBOSITY default
SELECT keanon.count_bounds(pid, lo, 100)
FROM (VALUES (1000000000001, 5), (1000000000001, 5), (1000000000002, 7)) v(pid, lo);
-- GROUP BY the bounds to count against several
SELECT lo, keanon.count_bounds(keanon_pid, lo, 50000) =
		   count_oracle('typed_b', 'b', format('grp < 8 AND (grp < 4) = %L', lo = 0), lo, 50000)
		   AS matches_oracle
FROM (SELECT keanon_pid, CASE WHEN grp < 4 THEN 0 ELSE 1000 END AS lo FROM typed_b_anon WHERE grp < 8) s
GROUP BY lo ORDER BY lo;
SELECT t, keanon.check(t::regclass) FROM unnest('{typed_a,typed_b,typed_c}'::text[]) t;

-- Sums are exact beyond 128 bits: numeric(40,2) values near the largest a
-- keanon index holds (34 significant digits at the column's scale),
-- 20000 rows of them, and bigint values near 2^63
CREATE TABLE wide (id integer PRIMARY KEY, grp integer, v numeric(40,2), w bigint);
INSERT INTO wide
SELECT i, i % 13, 99999999999999999999999999999999.99 - (i % 5) * 1234567890123.45,
	   CASE WHEN i % 4 = 0 THEN -9223372036854775808 + i ELSE 9223372036854775807 - i * 1000 END
FROM generate_series(1, 20000) i;
CREATE TABLE wide_v AS SELECT id, grp, v FROM wide;
ALTER TABLE wide_v ADD PRIMARY KEY (id);
CREATE TABLE wide_w AS SELECT id, grp, w FROM wide;
ALTER TABLE wide_w ADD PRIMARY KEY (id);
SELECT keanon.watch('wide_v', 'v', '{grp}', 3, 0);
SELECT keanon.watch('wide_w', 'w', '{grp}', 3, 1000000);
SELECT compare_bounds('wide_v', 'v', p) AS v, compare_bounds('wide_w', 'w', p) AS w
FROM unnest('{true, grp < 7, grp = 3}'::text[]) p;
-- every row selected: the bounds close on the true sum, past 2^127 steps
SELECT keanon.sum_bounds(keanon_pid) = numrange(t.s, t.s, '[]') AS exact, t.s * 100 > 2::numeric ^ 127 AS past_128_bits
FROM wide_v_anon, (SELECT sum(v) AS s FROM wide_v) t GROUP BY t.s;
SELECT keanon.avg_bounds(keanon_pid) @> (SELECT avg(v) FROM wide_v) AS avg_holds
FROM wide_v_anon;
-- values the index cannot hold are refused, not mangled
INSERT INTO wide_v VALUES (0, 0, 10000000000000000000000000000000000000.00);
SELECT keanon.check('wide_v'), keanon.check('wide_w');
DROP TABLE wide, wide_v, wide_w;
DROP FUNCTION count_oracle, compare_counts;

-- An analyst granted only the view gets bounds; others do not
CREATE ROLE keanon_reader;
GRANT SELECT ON people_anon TO keanon_reader;
SET ROLE keanon_reader;
SELECT keanon.sum_bounds(keanon_pid) FROM people_anon WHERE age BETWEEN 40 AND 48;
RESET ROLE;
REVOKE SELECT ON people_anon FROM keanon_reader;
CREATE VIEW leak AS SELECT keanon_pid FROM people_anon;
GRANT SELECT ON leak TO keanon_reader;
SET ROLE keanon_reader;
SELECT keanon.sum_bounds(keanon_pid) FROM leak;
RESET ROLE;
DROP VIEW leak;
DROP ROLE keanon_reader;

SELECT keanon.check('people');
DROP TABLE people, typed, typed_a, typed_b, typed_c, typed_d, typed_f, big;
DROP FUNCTION bound_oracle, compare_bounds;

-- AVG over a float column keeps the significant digits of the quotient
-- (numeric division's, 16 at least), not an exact column's places
CREATE TABLE tiny (id integer PRIMARY KEY, g integer, v float8);
INSERT INTO tiny SELECT i, i % 3, i * 1e-8 FROM generate_series(1, 100) i;
SELECT keanon.watch('tiny', 'v', '{g}', 4, 1e-7) IS NOT NULL AS watched;
SELECT a @> (SELECT avg(v)::numeric FROM tiny WHERE g = 1) AS holds,
	   upper(a) - lower(a) <= upper(s) / n - lower(s) / n + 1e-20 AS as_tight_as_the_sums
FROM (SELECT keanon.avg_bounds(keanon_pid) AS a, keanon.sum_bounds(keanon_pid) AS s, count(*) AS n
	  FROM tiny_anon WHERE g = 1) x;
DROP TABLE tiny;
