-- Release mode: safe successive releases.
CREATE EXTENSION IF NOT EXISTS keanon;
\set SHOW_CONTEXT never

-- No release partition may take only part of a previous partition's rows:
-- counts, over a release's rows, the previous partitions whose rows are
-- spread over more than one new partition (the releases table keeps each
-- release's partition ranges).
CREATE FUNCTION breaches(tab regclass, rel regclass, col name, no bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	lo text[];
	hi text[];
	bad bigint := 0;
	spread bigint;
BEGIN
	SELECT r.lo, r.hi INTO lo, hi FROM keanon.releases r
	WHERE r.relid = tab AND r.release_no = no - 1;
	IF lo IS NULL THEN
		RETURN 0;
	END IF;
	FOR i IN 1 .. cardinality(lo) LOOP
		EXECUTE format('SELECT count(DISTINCT keanon_pid) FROM %s WHERE %I BETWEEN $1 AND $2', rel, col)
		INTO spread USING lo[i]::numeric, hi[i]::numeric;
		IF spread > 1 THEN
			bad := bad + 1;
		END IF;
	END LOOP;
	RETURN bad;
END;
$$;

-- The research's salary table, watched in release mode: nothing is
-- published until the first release
CREATE TABLE people (id serial PRIMARY KEY, postal_code text, age integer,
	sex text, salary bigint);
INSERT INTO people (postal_code, age, sex, salary) VALUES
	('50200', 35, 'Male', 14000), ('50210', 36, 'Male', 15000),
	('50230', 40, 'Male', 16000), ('50300', 41, 'Female', 25000),
	('50310', 43, 'Female', 35000), ('50330', 47, 'Male', 30000),
	('50300', 53, 'Male', 40000), ('50310', 54, 'Female', 35000),
	('50330', 58, 'Male', 45000);
SELECT keanon.watch('people', 'salary', '{postal_code,age,sex}', 3, 2000, mode => 'release');
SELECT count(*) FROM people_anon;
SELECT count(*) FROM keanon.partitions('people');
SELECT keanon.check('people');

-- Release 1 is the plain optimum (nothing to respect yet)
SELECT keanon.release('people');
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
SELECT keanon.sum_bounds(keanon_pid) FROM people_anon WHERE age BETWEEN 40 AND 48;
SELECT keanon.check('people');

-- Salaries of 82000 and 90000 arrive: the view does not move...
INSERT INTO people (postal_code, age, sex, salary) VALUES
	('50400', 30, 'Female', 82000), ('50410', 31, 'Male', 90000);
SELECT count(*) FROM people_anon;
-- ...while the live optimum would now be
SELECT n, distinct_values, min_value, max_value, error
FROM keanon.index_partitions('people_keanon_idx');
-- Release 2 keeps release 1's partitions whole: {25000..35000} and
-- {35000..45000} share the value 35000, so they stay together
SELECT keanon.release('people');
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
SELECT breaches('people', 'people_keanon_release', 'salary', 2);
SELECT keanon.check('people');

-- More rows, and a deletion: a previous partition that lost rows is kept whole
INSERT INTO people (postal_code, age, sex, salary)
SELECT 'x' || i, 20 + i, 'Male', 100000 + i * 1000 FROM generate_series(1, 6) i;
DELETE FROM people WHERE salary = 15000;
SELECT keanon.release('people');
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
SELECT breaches('people', 'people_keanon_release', 'salary', 3);
SELECT keanon.check('people');
SELECT release_no, rows_published, partitions, sum_error, unconstrained_sum_error
FROM keanon.releases('people');

-- A release is refused, and the last one stays published, when no valid
-- partitioning exists (one partition of every row never breaches, so that
-- is the only way a release can fail)
DELETE FROM people WHERE salary > 16000;
SELECT keanon.release('people');
SELECT count(*) FROM keanon.releases('people');
SELECT count(*) FROM people_anon;
SELECT keanon.check('people');

-- Errors
CREATE TABLE live (id integer PRIMARY KEY, age integer, v integer);
INSERT INTO live SELECT i, i, i FROM generate_series(1, 6) i;
SELECT keanon.watch('live', 'v', '{age}', 2, 0);
SELECT keanon.release('live');
SELECT keanon.republish('people');
SELECT keanon.watch('live', 'v', '{age}', 2, 0, mode => 'weekly');
CREATE TABLE tiny (id integer PRIMARY KEY, age integer, v integer);
INSERT INTO tiny VALUES (1, 1, 1);
SELECT keanon.watch('tiny', 'v', '{age}', 2, 0, mode => 'release');
SELECT keanon.release('tiny');
SELECT keanon.check('live'), keanon.check('tiny');

-- Random rounds of inserts, deletes and releases: every release is valid,
-- never breaches the one before and checks against a recomputation
CREATE TABLE churn (id serial PRIMARY KEY, grp integer, v integer);
SELECT setseed(0.27);
INSERT INTO churn (grp, v) SELECT i % 5, (random() * 60)::integer FROM generate_series(1, 40) i;
SELECT keanon.watch('churn', 'v', '{grp}', 3, 4, mode => 'release');
DO $$
DECLARE
	no bigint;
	bad bigint := 0;
BEGIN
	FOR round IN 1 .. 25 LOOP
		INSERT INTO churn (grp, v)
		SELECT i % 5, (random() * 80)::integer FROM generate_series(1, (random() * 6)::integer) i;
		DELETE FROM churn WHERE id IN (SELECT id FROM churn ORDER BY random() LIMIT (random() * 4)::integer);
		no := keanon.release('churn');
		bad := bad + breaches('churn', 'churn_keanon_release', 'v', no);
		IF NOT keanon.check('churn') THEN
			RAISE EXCEPTION 'check failed after release %', no;
		END IF;
	END LOOP;
	RAISE NOTICE 'releases: %, breaches: %', no, bad;
END;
$$;
SELECT count(*) AS releases, bool_and(sum_error >= unconstrained_sum_error) AS never_below_optimum
FROM keanon.releases('churn');

-- Single-row UPDATEs moving values across the table (each change goes to
-- the engine where it lands) and DELETEs, released and checked
CREATE TABLE far (id integer PRIMARY KEY, grp integer, v integer);
INSERT INTO far SELECT i, i % 5, pg_catalog.hashint4(i) & 65535 FROM generate_series(1, 2000) i;
SELECT keanon.watch('far', 'v', '{grp}', 4, 10, mode => 'release');
SELECT keanon.release('far');
UPDATE far SET v = 70000 WHERE id = 1;
UPDATE far SET v = 0 WHERE id = 2;
UPDATE far SET v = 32768 WHERE id = 3;
UPDATE far SET v = v WHERE id = 4;
UPDATE far SET grp = 9 WHERE id = 5;
DELETE FROM far WHERE id = 6;
SELECT keanon.release('far');
SELECT keanon.check('far');
SELECT breaches('far', 'far_keanon_release', 'v', 2);
SELECT (SELECT count(*) FROM far_anon) = (SELECT count(*) FROM far) AS all_released,
	   (SELECT count(*) FROM far_anon WHERE grp = 9) AS moved_group;

SELECT keanon.unwatch('people');
SELECT count(*) FROM keanon.releases WHERE relid = 'churn'::regclass;
SELECT count(*) FROM pg_class WHERE relname LIKE 'people_keanon%';
DROP TABLE people, live, tiny, churn, far;
DROP FUNCTION breaches;
