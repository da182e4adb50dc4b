-- Release mode: safe successive releases.
CREATE EXTENSION IF NOT EXISTS keanon;
\set SHOW_CONTEXT never

-- The subtraction attack: a reader who kept two releases (snapshots of
-- the view: quasi-identifiers, published value v, partition pid) compares
-- each partition of the later one with the earlier partitions whose range
-- it covers.  It counts as a breach an earlier partition the later one
-- takes only part of, and a set of values the later partition holds beyond
-- those (what arrived) or lacks (what left) that is neither empty nor at
-- least k distinct values spanning at least e.  Published values are a
-- permutation of the true ones within each partition, so the multisets
-- compared are exactly what the reader sees.
CREATE FUNCTION subtraction_breaches(old regclass, new regclass, k integer, e numeric)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	p record;
	d record;
	bad bigint := 0;
	n bigint;
BEGIN
	FOR p IN EXECUTE format('SELECT pid, min(v)::numeric AS lo, max(v)::numeric AS hi FROM %s GROUP BY pid', new) LOOP
		EXECUTE format('SELECT count(*) FROM (SELECT min(v) AS lo, max(v) AS hi FROM %s GROUP BY pid) o '
					   'WHERE o.lo < $2 AND o.hi > $1 AND NOT (o.lo >= $1 AND o.hi <= $2)', old)
		INTO n USING p.lo, p.hi;
		bad := bad + n;
		FOR d IN EXECUTE format(
			'WITH covered AS (SELECT pid FROM %1$s GROUP BY pid HAVING min(v) >= $1 AND max(v) <= $2), '
			'o AS (SELECT v, count(*) AS c FROM %1$s WHERE pid IN (SELECT pid FROM covered) GROUP BY v), '
			'n AS (SELECT v, count(*) AS c FROM %2$s WHERE pid = $3 GROUP BY v), '
			'diff AS (SELECT v, coalesce(n.c, 0) - coalesce(o.c, 0) AS d FROM n FULL JOIN o USING (v)) '
			'SELECT sign(d) AS way, count(*) AS distinct_values, (max(v) - min(v))::numeric AS span '
			'FROM diff WHERE d <> 0 GROUP BY sign(d)', old, new)
			USING p.lo, p.hi, p.pid LOOP
			IF d.distinct_values < k OR d.span < e THEN
				bad := bad + 1;
			END IF;
		END LOOP;
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

-- Release 1 is the plain optimum (nothing to respect yet); each release
-- is kept as a reader would keep it
SELECT keanon.release('people');
CREATE TABLE people_r1 AS SELECT postal_code, age, sex, salary AS v, keanon_pid AS pid FROM people_anon;
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
-- Release 2 keeps release 1's partitions whole, and withholds the two
-- newcomers: added to any partition, two values fall short of k = 3, and
-- subtraction would narrow each to two candidates
SELECT keanon.release('people');
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
CREATE TABLE people_r2 AS SELECT postal_code, age, sex, salary AS v, keanon_pid AS pid FROM people_anon;
SELECT subtraction_breaches('people_r1', 'people_r2', 3, 2000);
SELECT keanon.check('people');

-- More rows, and a deletion: the deleted row is retained, as released, so
-- its partition does not shrink; the newcomers, with the two withheld
-- before, now make (k,e)-anonymous additions
INSERT INTO people (postal_code, age, sex, salary)
SELECT 'x' || i, 20 + i, 'Male', 100000 + i * 1000 FROM generate_series(1, 6) i;
DELETE FROM people WHERE salary = 15000;
SELECT keanon.release('people');
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
CREATE TABLE people_r3 AS SELECT postal_code, age, sex, salary AS v, keanon_pid AS pid FROM people_anon;
SELECT subtraction_breaches('people_r2', 'people_r3', 3, 2000) AS breaches_2_3,
	   subtraction_breaches('people_r1', 'people_r3', 3, 2000) AS breaches_1_3;
SELECT count(*) AS deleted_yet_released FROM people_anon WHERE age = 36;
SELECT keanon.check('people');
SELECT release_no, rows_published, partitions, sum_error, rows_withheld, rows_retained
FROM keanon.releases('people');

-- A release with nothing safe to add publishes the last one again (its
-- values permuted afresh), and says so: every row it holds is retained
DELETE FROM people WHERE salary > 16000;
SELECT keanon.release('people');
SELECT release_no, rows_published, partitions, rows_withheld, rows_retained
FROM keanon.releases('people') ORDER BY release_no DESC LIMIT 1;
CREATE TABLE people_r4 AS SELECT postal_code, age, sex, salary AS v, keanon_pid AS pid FROM people_anon;
SELECT subtraction_breaches('people_r3', 'people_r4', 3, 2000) AS breaches_3_4,
	   subtraction_breaches('people_r1', 'people_r4', 3, 2000) AS breaches_1_4;
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

-- Random rounds of inserts, updates, deletes and releases: every release
-- checks, and no pair of kept releases, consecutive or not, breaches
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
		UPDATE churn SET v = v + 1 WHERE id IN (SELECT id FROM churn ORDER BY random() LIMIT (random() * 2)::integer);
		no := keanon.release('churn');
		EXECUTE format('CREATE TABLE churn_r%s AS SELECT grp, v, keanon_pid AS pid FROM churn_anon', no);
		IF NOT keanon.check('churn') THEN
			RAISE EXCEPTION 'check failed after release %', no;
		END IF;
	END LOOP;
	FOR a IN 1 .. no LOOP
		FOR b IN a + 1 .. no LOOP
			bad := bad + subtraction_breaches(format('churn_r%s', a)::regclass,
											  format('churn_r%s', b)::regclass, 3, 4);
		END LOOP;
	END LOOP;
	RAISE NOTICE 'releases: %, breaches over every pair: %', no, bad;
	FOR a IN 1 .. no LOOP
		EXECUTE format('DROP TABLE churn_r%s', a);
	END LOOP;
END;
$$;
SELECT count(*) AS releases,
	   bool_and(rows_published = lag_published + added) AS nothing_ever_leaves
FROM (SELECT rows_published, coalesce(lag(rows_published) OVER w, 0) AS lag_published,
			 rows_published - coalesce(lag(rows_published) OVER w, 0) AS added
	  FROM keanon.releases('churn') WINDOW w AS (ORDER BY release_no)) r;

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
-- the three moved values arrive alone: each is withheld, and the old
-- versions of the three, with the deleted row, are retained; the
-- regrouped row keeps its value, so its released row shows its new group
-- in its partition
SELECT rows_withheld, rows_retained FROM keanon.releases('far') WHERE release_no = 2;
SELECT (SELECT count(*) FROM far_anon) =
	   (SELECT count(*) FROM far) - rows_withheld + rows_retained AS accounted,
	   (SELECT count(*) FROM far_anon WHERE grp = 9) AS moved_group
FROM keanon.releases('far') WHERE release_no = 2;

-- One person's two versions: employees whose department changes while
-- their pay stays, among 100 newcomers.  A reader links an employee's rows
-- across releases by the employee number (a quasi-identifier that does not
-- change).  Were the moved rows' old versions retained and their new ones
-- added among the newcomers, intersecting the two candidate sets would
-- leave fewer than k values, the true one among them, for some 130 of
-- them; relabelled in place, for none
CREATE TABLE staff (id integer PRIMARY KEY, emp integer, dept integer, pay integer);
INSERT INTO staff SELECT i, 1000 + i, i % 7, (pg_catalog.hashint4(i) & 4095) * 10 FROM generate_series(1, 600) i;
SELECT keanon.watch('staff', 'pay', '{emp,dept}', 3, 50, mode => 'release');
SELECT keanon.release('staff');
CREATE TABLE staff_r1 AS SELECT emp, dept, pay AS v, keanon_pid AS pid FROM staff_anon;
UPDATE staff SET dept = dept + 10 WHERE id % 4 = 0;
INSERT INTO staff SELECT i, 1000 + i, i % 7, (pg_catalog.hashint4(i) & 4095) * 10 FROM generate_series(601, 700) i;
SELECT keanon.release('staff');
SELECT keanon.check('staff');
CREATE TABLE staff_r2 AS SELECT emp, dept, pay AS v, keanon_pid AS pid FROM staff_anon;
-- the 150 moved rows are relabelled in place, none retained (a newcomer waits)
SELECT rows_withheld, rows_retained FROM keanon.releases('staff') WHERE release_no = 2;
-- each employee shows once, the moved ones in their new department
SELECT count(*) FILTER (WHERE dept >= 10) AS moved_shown, count(*) - count(DISTINCT emp) AS twice FROM staff_r2;
-- The reader's attack: every row of an employee number in either release
-- gives candidate values, intersected (the pay assumed unchanged): a row
-- of the first release, its partition's values; a row of the second that
-- the first does not hold, its partition's added values (what subtraction
-- of the first release's covered partitions leaves) when some were added,
-- else all its partition's values; and where the employee's row of the
-- first release vanished from the second, the second's row shows the same
-- released row relabelled: all its partition's values
WITH kept AS (SELECT DISTINCT n.pid AS pid2, o.pid AS pid1 FROM staff_r2 n JOIN staff_r1 o ON o.emp = n.emp AND o.dept = n.dept),
old_counts AS (SELECT c.pid2, o.v, count(*) AS c FROM kept c JOIN staff_r1 o ON o.pid = c.pid1 GROUP BY 1, 2),
new_counts AS (SELECT pid AS pid2, v, count(*) AS c FROM staff_r2 GROUP BY 1, 2),
added AS (SELECT n.pid2, n.v FROM new_counts n LEFT JOIN old_counts o USING (pid2, v) WHERE n.c > coalesce(o.c, 0)),
fresh AS (SELECT n.* FROM staff_r2 n WHERE NOT EXISTS (SELECT 1 FROM staff_r1 o WHERE o.emp = n.emp AND o.dept = n.dept)),
whole AS (SELECT f.* FROM fresh f WHERE NOT EXISTS (SELECT 1 FROM added a WHERE a.pid2 = f.pid)
	OR EXISTS (SELECT 1 FROM staff_r1 o WHERE o.emp = f.emp
		AND NOT EXISTS (SELECT 1 FROM staff_r2 n WHERE n.emp = o.emp AND n.dept = o.dept))),
cands AS (
	SELECT 'a' || o.pid AS src, o.emp, p.v FROM staff_r1 o JOIN staff_r1 p ON p.pid = o.pid
	UNION ALL
	SELECT 'b' || w.pid, w.emp, p.v FROM whole w JOIN staff_r2 p ON p.pid = w.pid
	UNION ALL
	SELECT 'b' || f.pid, f.emp, a.v FROM fresh f JOIN added a ON a.pid2 = f.pid
	WHERE NOT EXISTS (SELECT 1 FROM whole w WHERE w.emp = f.emp AND w.pid = f.pid)),
need AS (SELECT emp, count(DISTINCT src) AS n FROM cands GROUP BY emp),
inter AS (SELECT c.emp, c.v FROM cands c JOIN need USING (emp) GROUP BY c.emp, need.n, c.v
	HAVING count(DISTINCT c.src) = need.n),
left_ AS (SELECT i.emp, count(*) AS k, bool_or(i.v = s.pay) AS holds_truth FROM inter i JOIN staff s ON s.emp = i.emp GROUP BY i.emp)
SELECT count(*) FILTER (WHERE k < 3 AND holds_truth) AS exposed, count(*) FILTER (WHERE NOT holds_truth) AS misled,
	min(k) >= 3 AS at_least_k, count(*) AS employees FROM left_;

-- A key deleted and inserted again with the same value is another row: the
-- departed employee's released row stays as released (relabelled, it
-- would show the newcomer in the departed one's partition, and tell anyone
-- who knew either pay the other)
DELETE FROM staff WHERE id = 2;
INSERT INTO staff VALUES (2, 9002, 3, (pg_catalog.hashint4(2) & 4095) * 10);
SELECT keanon.release('staff');
SELECT keanon.check('staff');
SELECT count(*) FILTER (WHERE emp = 1002) AS departed_kept, count(*) FILTER (WHERE emp = 9002) AS newcomer_shown
FROM staff_anon;
SELECT rows_retained FROM keanon.releases('staff') WHERE release_no = 3;
-- keanon.check meets each partition's previous ranges by a binary search
-- in their order (it compared every pair: minutes at 10^6 rows): a
-- previous range recorded across the last release's first boundary is
-- found, and the check passes again once the record is restored
CREATE TABLE staff_rec AS SELECT lo, hi FROM keanon.releases
WHERE relid = 'staff'::regclass AND release_no = 2;
UPDATE keanon.releases SET
	lo = ARRAY[((SELECT min(l::integer) FROM keanon.releases r, unnest(r.lo) l
				 WHERE r.relid = 'staff'::regclass AND r.release_no = 3) + 1)::text],
	hi = ARRAY[((SELECT l::integer FROM keanon.releases r, unnest(r.lo) l
				 WHERE r.relid = 'staff'::regclass AND r.release_no = 3 ORDER BY 1 OFFSET 1 LIMIT 1) + 1)::text]
WHERE relid = 'staff'::regclass AND release_no = 2;
SELECT keanon.check('staff');
UPDATE keanon.releases r SET lo = s.lo, hi = s.hi FROM staff_rec s
WHERE r.relid = 'staff'::regclass AND r.release_no = 2;
SELECT keanon.check('staff');
DROP TABLE staff_rec;

SELECT keanon.unwatch('people');
SELECT count(*) FROM keanon.releases WHERE relid = 'churn'::regclass;
SELECT count(*) FROM pg_class WHERE relname LIKE 'people_keanon%';
DROP TABLE people, live, tiny, churn, far, staff, staff_r1, staff_r2, people_r1, people_r2, people_r3, people_r4;

-- ----------------------------------------------------------------
-- Attacks by subtraction, from the research's example on (k = 3,
-- e = 2000): the six salaries, then one newcomer, a departure, a raise
-- ----------------------------------------------------------------
CREATE TABLE pay (name text PRIMARY KEY, salary integer);
INSERT INTO pay VALUES ('Tom', 84000), ('Mike', 86000), ('Alice', 87000),
	('Bob', 88000), ('Kate', 89000), ('Paul', 90000);
SELECT keanon.watch('pay', 'salary', '{name}', 3, 2000, mode => 'release');
SELECT keanon.release('pay');
CREATE TABLE pay_r1 AS SELECT name, salary AS v, keanon_pid AS pid FROM pay_anon;
SELECT min(v), max(v), count(*) FROM pay_r1 GROUP BY pid ORDER BY 1;
-- Ann alone: subtraction would give her exact salary, so she waits
INSERT INTO pay VALUES ('Ann', 82000);
SELECT keanon.release('pay');
CREATE TABLE pay_r2 AS SELECT name, salary AS v, keanon_pid AS pid FROM pay_anon;
SELECT count(*) FILTER (WHERE name = 'Ann') AS ann_released, count(*) AS released FROM pay_r2;
SELECT subtraction_breaches('pay_r1', 'pay_r2', 3, 2000);
-- a departure: Bob stays released as he was, so no partition shrinks;
-- between releases the view, its bounds and the check do not move
DELETE FROM pay WHERE name = 'Bob';
SELECT keanon.check('pay');
SELECT count(*), keanon.sum_bounds(keanon_pid) FROM pay_anon;
-- a raise: the old salary stays released; the new one would arrive alone
UPDATE pay SET salary = 89500 WHERE name = 'Kate';
SELECT keanon.release('pay');
CREATE TABLE pay_r3 AS SELECT name, salary AS v, keanon_pid AS pid FROM pay_anon;
SELECT name, count(*) FROM pay_r3 WHERE name IN ('Bob', 'Kate', 'Ann') GROUP BY name ORDER BY name;
SELECT rows_withheld, rows_retained FROM keanon.releases('pay') WHERE release_no = 3;
SELECT subtraction_breaches('pay_r2', 'pay_r3', 3, 2000) AS breaches_2_3,
	   subtraction_breaches('pay_r1', 'pay_r3', 3, 2000) AS breaches_1_3;
-- Jo and Oven arrive: with Ann they are three values spanning 3000, the
-- research's answer (its candidate i = 7, j = 3, taking Bob's partition
-- apart, is never formed): {82000 .. 87000} and {88000 .. 90000}
INSERT INTO pay VALUES ('Jo', 83000), ('Oven', 85000);
SELECT keanon.release('pay');
CREATE TABLE pay_r4 AS SELECT name, salary AS v, keanon_pid AS pid FROM pay_anon;
SELECT min(v), max(v), count(*), count(*) FILTER (WHERE name IN ('Ann', 'Jo', 'Oven')) AS newcomers
FROM pay_r4 GROUP BY pid ORDER BY 1;
SELECT sum_error, rows_withheld FROM keanon.releases('pay') WHERE release_no = 4;
SELECT subtraction_breaches('pay_r3', 'pay_r4', 3, 2000) AS breaches_3_4,
	   subtraction_breaches('pay_r1', 'pay_r4', 3, 2000) AS breaches_1_4,
	   subtraction_breaches('pay_r2', 'pay_r4', 3, 2000) AS breaches_2_4;
SELECT keanon.check('pay');
-- keanon.check finds a release that adds a non-(k,e) set: Paul's row
-- marked as added by release 4, alone in its partition
UPDATE pay_keanon_release SET keanon_since = 4 WHERE name = 'Paul';
SELECT keanon.check('pay');
UPDATE pay_keanon_release SET keanon_since = 1 WHERE name = 'Paul';
-- or one that lost a row of the release before
DELETE FROM pay_keanon_release WHERE name = 'Bob';
SELECT keanon.check('pay');
-- the attack keanon closed: comparing release 1 with an unsafe release
-- (the newcomer alone added to the first partition), as main published it
CREATE TABLE pay_unsafe AS SELECT * FROM pay_r1
UNION ALL SELECT 'Ann', 82000, (SELECT min(pid) FROM pay_r1);
SELECT subtraction_breaches('pay_r1', 'pay_unsafe', 3, 2000) AS unsafe_breaches;
DROP TABLE pay, pay_r1, pay_r2, pay_r3, pay_r4, pay_unsafe;

-- ----------------------------------------------------------------
-- The statistical attack at scale: 2,000 uniform salaries (k = 5,
-- e = 5000), then 100 inserts and 100 deletes.  Every newcomer's
-- candidate values (what its partition adds) are (k,e)-anonymous and
-- hold its true value; no leaver is exposed
-- ----------------------------------------------------------------
CREATE TABLE big (id integer PRIMARY KEY, grp integer, salary integer);
SELECT setseed(0.61);
INSERT INTO big SELECT i, i % 17, 20000 + (random() * 100000)::integer FROM generate_series(1, 2000) i;
SELECT keanon.watch('big', 'salary', '{id}', 5, 5000, mode => 'release');
SELECT keanon.release('big');
CREATE TABLE big_r1 AS SELECT id, salary AS v, keanon_pid AS pid FROM big_anon;
INSERT INTO big SELECT i, i % 17, 20000 + (random() * 100000)::integer FROM generate_series(2001, 2100) i;
DELETE FROM big WHERE id IN (SELECT id FROM big WHERE id <= 2000 ORDER BY random() LIMIT 100);
SELECT keanon.release('big');
CREATE TABLE big_r2 AS SELECT id, salary AS v, keanon_pid AS pid FROM big_anon;
SELECT subtraction_breaches('big_r1', 'big_r2', 5, 5000);
-- each released newcomer's candidates: its partition's values beyond
-- those of the release-1 partitions it covers
WITH newcomer AS (SELECT n.id, n.pid, b.salary AS truth FROM big_r2 n JOIN big b USING (id)
				  WHERE n.id > 2000),
	 part AS (SELECT pid, min(v) AS lo, max(v) AS hi FROM big_r2 GROUP BY pid),
	 cand AS (SELECT p.pid, x.v FROM part p,
			  LATERAL (SELECT v FROM big_r2 WHERE pid = p.pid
					   EXCEPT ALL
					   SELECT v FROM big_r1 WHERE pid IN (SELECT pid FROM big_r1 GROUP BY pid
														  HAVING min(v) >= p.lo AND max(v) <= p.hi)) x)
SELECT count(*) AS newcomers_released,
	   bool_and(c.n_distinct >= 5 AND c.span >= 5000) AS candidates_ke_anonymous,
	   bool_and(EXISTS (SELECT 1 FROM cand WHERE cand.pid = nc.pid AND cand.v = nc.truth)) AS truth_among_them,
	   min(c.n_distinct) AS fewest_candidates
FROM newcomer nc JOIN LATERAL (SELECT count(DISTINCT v) AS n_distinct, max(v) - min(v) AS span
							   FROM cand WHERE cand.pid = nc.pid) c ON true;
SELECT rows_withheld + (SELECT count(*) FROM big_r2 WHERE id > 2000) AS newcomers_accounted,
	   rows_retained FROM keanon.releases('big') WHERE release_no = 2;
SELECT keanon.check('big');
DROP TABLE big, big_r1, big_r2;

-- ----------------------------------------------------------------
-- Scheduled releases: the background worker releases a watch whenever
-- its interval has passed since the last release
-- ----------------------------------------------------------------
CREATE FUNCTION releases_reach(tab regclass, n bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	ok boolean;
BEGIN
	FOR i IN 1 .. 300 LOOP
		SELECT count(*) >= n INTO ok FROM keanon.releases(tab);
		EXIT WHEN ok;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN ok;
END;
$$;
CREATE TABLE sched (id integer PRIMARY KEY, grp integer, v integer);
INSERT INTO sched SELECT i, i % 3, i * 10 FROM generate_series(1, 12) i;
SELECT keanon.watch('sched', 'v', '{grp}', 3, 10, mode => 'release', release_every => '1 second');
SELECT release_every FROM keanon.watches WHERE relid = 'sched'::regclass;
SELECT releases_reach('sched', 1) AS first_release_made;
INSERT INTO sched SELECT i, i % 3, i * 10 FROM generate_series(13, 20) i;
SELECT releases_reach('sched', (SELECT count(*) + 1 FROM keanon.releases('sched'))) AS next_release_made;
SELECT keanon.check('sched');
-- the owner stops the schedule; bad schedules are refused
SELECT keanon.schedule_releases('sched', NULL);
SELECT release_every FROM keanon.watches WHERE relid = 'sched'::regclass;
SELECT keanon.schedule_releases('sched', '-1 second');
SELECT keanon.schedule_releases('sched', '0');
CREATE TABLE unsched (id integer PRIMARY KEY, grp integer, v integer);
SELECT keanon.watch('unsched', 'v', '{grp}', 3, 10, release_every => '1 day');
SELECT keanon.watch('unsched', 'v', '{grp}', 3, 10);
SELECT keanon.schedule_releases('unsched', '1 day');
DROP TABLE sched, unsched;
DROP FUNCTION releases_reach;
DROP FUNCTION subtraction_breaches;

-- An unconstrained numeric column of a release watch raises its scale
-- only as far as the last release's values allow too.  A writer could stop
-- every release: rows of 1e22 released, then deleted (the release keeps
-- them, the index no longer), then a row of 1e-20 raised the scale past
-- what the released 1e22 fits in, and every release, check and bound
-- aggregate failed after.  The finer value is refused in its statement.
CREATE TABLE rscale (id integer PRIMARY KEY, q integer, s numeric);
INSERT INTO rscale SELECT g, g, g * 10 FROM generate_series(1, 9) g;
SELECT keanon.watch('rscale', 's', '{q}', 3, 5, mode => 'release') IS NOT NULL AS watched;
SELECT keanon.release('rscale') IS NOT NULL AS released;
INSERT INTO rscale VALUES (10, 10, 1e22), (11, 11, 1e22 + 10), (12, 12, 1e22 + 20);
SELECT keanon.release('rscale') IS NOT NULL AS released;
DELETE FROM rscale WHERE id >= 10;
INSERT INTO rscale VALUES (13, 13, 1e-20);
UPDATE rscale SET s = 1e-20 WHERE id = 1;
INSERT INTO rscale VALUES (13, 13, 1e-10);
SELECT keanon.release('rscale') IS NOT NULL AS released;
SELECT keanon.sum_bounds(keanon_pid) IS NOT NULL AS summed FROM rscale_anon;
SELECT keanon.check('rscale');
DROP TABLE rscale;
