--
-- The published values of a partition are a uniformly random permutation of
-- its rows' true values, also after the O(1) republication paths.  A row
-- joining a partition shows each of the partition's values (a multiset)
-- with probability proportional to its count, independently of the state
-- before; 600 independent draws are tested with a chi-square test at
-- 4 degrees of freedom each (critical value 35: for the two tests
-- together, a false alarm about once in a million runs).
--
CREATE EXTENSION IF NOT EXISTS keanon;
CREATE TABLE perm (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO perm SELECT i, i % 2, i FROM generate_series(1, 10) i;
SELECT keanon.watch('perm', 'v', '{g}', 5, 1);
SELECT lo, hi, n FROM perm_keanon_parts ORDER BY hi;
CREATE TEMP TABLE seen (step text, shown integer);
DO $$
BEGIN
	FOR i IN 1 .. 600 LOOP
		-- a row of value 3 joins partition 1..5
		INSERT INTO perm VALUES (100, 0, 3);
		INSERT INTO seen SELECT 'joined', keanon_pub FROM perm_keanon_rows WHERE id = 100;
		-- it moves to partition 6..10 as value 8
		UPDATE perm SET v = 8 WHERE id = 100;
		INSERT INTO seen SELECT 'moved', keanon_pub FROM perm_keanon_rows WHERE id = 100;
		-- and leaves
		DELETE FROM perm WHERE id = 100;
	END LOOP;
END
$$;
-- observed counts against the expected: each value 1/6, the doubled one 2/6
WITH expected(step, shown, p) AS (
	VALUES ('joined', 1, 1), ('joined', 2, 1), ('joined', 3, 2), ('joined', 4, 1), ('joined', 5, 1),
		   ('moved', 6, 1), ('moved', 7, 1), ('moved', 8, 2), ('moved', 9, 1), ('moved', 10, 1)
),
observed AS (SELECT step, shown, count(*) AS c FROM seen GROUP BY step, shown)
SELECT step,
	   count(*) FILTER (WHERE e.p IS NULL) AS impossible_values,
	   sum((coalesce(o.c, 0) - 600.0 * e.p / 6) ^ 2 / (600.0 * e.p / 6)) < 35 AS uniform
FROM expected e FULL JOIN observed o USING (step, shown)
GROUP BY step ORDER BY step;
SELECT count(*) FROM seen;
SELECT keanon.check('perm');
SELECT keanon.unwatch('perm');
DROP TABLE perm;

--
-- A change that moves a boundary carries each old partition over to the new
-- one sharing most of its rows: rows leave and join it one at a time, and
-- from a uniform permutation the steps must lead to a uniform permutation.
-- With k = 3, value 45 arriving moves 38 from the first partition to the
-- second (sum-error 20 + 32 = 52 against 28 + 25 = 53).  Each trial starts
-- from a fresh draw (keanon.republish): leaving draws nothing when values
-- are distinct, so trials chained without one would not be independent.
-- Row 30 staying behind must show 10, 20 or 30 alike (2 degrees of freedom:
-- critical value 32), rows 38 and 45 each of 38..70 alike (4: 35).
--
CREATE TABLE shift (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO shift VALUES (1, 0, 10), (2, 0, 20), (3, 0, 30), (4, 0, 38), (5, 0, 50), (6, 0, 60), (7, 0, 70);
SELECT keanon.watch('shift', 'v', '{g}', 3, 1);
SELECT lo, hi, n FROM shift_keanon_parts ORDER BY hi;
INSERT INTO shift VALUES (100, 0, 45);
SELECT lo, hi, n FROM shift_keanon_parts ORDER BY hi;
DELETE FROM shift WHERE id = 100;
TRUNCATE seen;
DO $$
BEGIN
	FOR i IN 1 .. 600 LOOP
		PERFORM keanon.republish('shift');
		INSERT INTO shift VALUES (100, 0, 45);
		INSERT INTO seen SELECT CASE id WHEN 3 THEN 'stayed' WHEN 4 THEN 'moved' ELSE 'joined' END,
							   keanon_pub
						 FROM shift_keanon_rows WHERE id IN (3, 4, 100);
		DELETE FROM shift WHERE id = 100;
	END LOOP;
END
$$;
WITH expected(step, shown, p, df_crit) AS (
	SELECT 'stayed', x, 1.0 / 3, 32 FROM unnest(ARRAY[10, 20, 30]) x
	UNION ALL
	SELECT s, x, 1.0 / 5, 35 FROM unnest(ARRAY['moved', 'joined']) s, unnest(ARRAY[38, 45, 50, 60, 70]) x
),
observed AS (SELECT step, shown, count(*) AS c FROM seen GROUP BY step, shown)
SELECT step,
	   count(*) FILTER (WHERE e.p IS NULL) AS impossible_values,
	   sum((coalesce(o.c, 0) - 600.0 * e.p) ^ 2 / (600.0 * e.p)) < max(e.df_crit) AS uniform
FROM expected e FULL JOIN observed o USING (step, shown)
GROUP BY step ORDER BY step;
SELECT count(*) FROM seen;
SELECT keanon.check('shift');
SELECT keanon.unwatch('shift');
DROP TABLE shift;
