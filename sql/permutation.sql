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

--
-- Rows crossing partitions: in a partition carried over, a row that leaves
-- and one that joins, paired at random, make a replace step (the joiner
-- takes the leaver's slot and published value, and a row drawn among those
-- showing the leaver's value shows the joiner's).  With k = 4 the twelve
-- values make three partitions of four; 20 and 24 arriving in one INSERT
-- push 49 and 61 into the second partition and 108 and 120 into the third,
-- so the first and second each carry over two stayers, two leavers and two
-- joiners.  From a fresh draw each trial, the published values of each of
-- the two partitions' rows (in id order) must be each of the 24
-- arrangements alike, and so must their slots (23 degrees of freedom:
-- critical value 76, about 1.5 in 10^7).
--
CREATE TABLE cross4 (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO cross4 SELECT row_number() OVER (), 0, x
FROM unnest('{14, 22, 49, 61, 79, 93, 108, 120, 123, 149, 167, 183}'::integer[]) x;
SELECT keanon.watch('cross4', 'v', '{g}', 4, 1);
SELECT lo, hi, n FROM cross4_keanon_parts ORDER BY hi;
CREATE TEMP TABLE pids AS SELECT id, keanon_pid FROM cross4_keanon_rows;
INSERT INTO cross4 VALUES (100, 0, 20), (101, 0, 24);
SELECT lo, hi, n FROM cross4_keanon_parts ORDER BY hi;
-- each partition carried over: its id goes on with the rows it keeps
SELECT p.keanon_pid = r.keanon_pid AS same_partition_id, array_agg(r.v ORDER BY r.v) AS kept
FROM cross4_keanon_rows r JOIN pids p USING (id)
GROUP BY 1 ORDER BY 2;
DELETE FROM cross4 WHERE id >= 100;
CREATE TEMP TABLE arranged (part text, what text, arrangement text);
-- per partition and draw, how many of the 24 arrangements were seen, and
-- whether alike (1,200 trials: 50 expected of each)
CREATE FUNCTION pg_temp.arranged_alike()
RETURNS TABLE (part text, what text, draws numeric, arrangements bigint, uniform boolean)
LANGUAGE sql AS $$
	SELECT part, what, sum(c), count(DISTINCT arrangement), sum((c - 50.0) ^ 2 / 50.0) < 76
	FROM (SELECT part, what, arrangement, count(*) AS c FROM arranged GROUP BY 1, 2, 3) o
	GROUP BY part, what ORDER BY part, what
$$;
-- 1,200 trials on table tab (arranged emptied first): a fresh draw, the change, the arrangements
-- of the published values and of the slots of the rows of value below
-- upto, rows below split named 'low' and the others 'high', then undo
CREATE FUNCTION pg_temp.arrange(tab text, change text, undo text, split integer, upto integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	TRUNCATE arranged;
	FOR i IN 1 .. 1200 LOOP
		PERFORM keanon.republish(tab::regclass);
		EXECUTE change;
		EXECUTE format('INSERT INTO arranged
			SELECT CASE WHEN v < %s THEN ''low'' ELSE ''high'' END, w.what,
				   string_agg(CASE w.what WHEN ''pub'' THEN keanon_pub ELSE keanon_slot END::text, '','' ORDER BY id)
			FROM %I, (VALUES (''pub''), (''slot'')) w(what)
			WHERE v < %s
			GROUP BY 1, 2', split, tab || '_keanon_rows', upto);
		EXECUTE undo;
	END LOOP;
END
$$;
SELECT pg_temp.arrange('cross4', 'INSERT INTO cross4 VALUES (100, 0, 20), (101, 0, 24)',
					  'DELETE FROM cross4 WHERE id >= 100', 40, 100);
SELECT * FROM pg_temp.arranged_alike();
SELECT keanon.check('cross4');
SELECT keanon.unwatch('cross4');
DROP TABLE cross4, pids;

-- What a replace step writes: with k = 10 the thirty values make three
-- partitions of ten; 1 arriving pushes 576 into the second partition and
-- 1172 out of it into the third, so the second carries over nine rows that
-- stay, one leaver and one joiner.  Of the nine, at most one may change (the
-- one drawn to show the joiner's value in place of the leaver's), where a
-- leave and a join would move up to four.  Over 200 trials from fresh
-- draws, one changes about 9 times in 10 (not when the leaver showed its
-- own value).
CREATE TABLE cross10 (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO cross10 SELECT row_number() OVER (), 0, x
FROM unnest('{13, 108, 109, 164, 211, 260, 266, 318, 454, 576, 764, 826, 831, 875, 942,
			  1025, 1060, 1077, 1081, 1172, 1192, 1335, 1418, 1506, 1604, 1747, 1874, 1887,
			  1963, 1995}'::integer[]) x;
SELECT keanon.watch('cross10', 'v', '{g}', 10, 1);
SELECT lo, hi, n FROM cross10_keanon_parts ORDER BY hi;
CREATE TEMP TABLE stayers_changed (changed bigint);
DO $$
BEGIN
	FOR i IN 1 .. 200 LOOP
		PERFORM keanon.republish('cross10');
		CREATE TEMP TABLE before AS SELECT id, keanon_pid, keanon_slot, keanon_pub FROM cross10_keanon_rows;
		INSERT INTO cross10 VALUES (100, 0, 1);
		INSERT INTO stayers_changed
		SELECT count(*) FILTER (WHERE (r.keanon_slot, r.keanon_pub) IS DISTINCT FROM (b.keanon_slot, b.keanon_pub))
		FROM cross10_keanon_rows r JOIN before b USING (id)
		WHERE r.v BETWEEN 764 AND 1081 AND r.keanon_pid = b.keanon_pid;
		DROP TABLE before;
		DELETE FROM cross10 WHERE id = 100;
	END LOOP;
END
$$;
SELECT count(*) AS trials, max(changed) AS most_stayers_changed,
	   count(*) FILTER (WHERE changed = 1) >= 140 AS one_changed_often
FROM stayers_changed;
SELECT keanon.check('cross10');
SELECT keanon.unwatch('cross10');
DROP TABLE cross10;

-- Rows a multi-row statement deletes (or updates, deleting the old
-- versions) leave the partitions carried over by the same steps: with
-- k = 4 the values 10 .. 80 make {10 .. 40} and {50 .. 80}; rows 3 (30)
-- and 6 (60) updated to 65 and 25 in one statement leave each partition a
-- departed row and a new version joining in its place.  From a fresh draw
-- each trial, the published values and the slots of each partition's rows
-- (in id order) must be each of the 24 arrangements alike (critical value
-- 76 as above).
CREATE TABLE gone4 (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO gone4 SELECT i, 0, 10 * i FROM generate_series(1, 8) i;
SELECT keanon.watch('gone4', 'v', '{g}', 4, 1);
CREATE TEMP TABLE pids AS SELECT id, keanon_pid FROM gone4_keanon_rows;
UPDATE gone4 SET v = CASE id WHEN 3 THEN 65 ELSE 25 END WHERE id IN (3, 6);
SELECT lo, hi, n FROM gone4_keanon_parts ORDER BY hi;
-- both partitions carried over: the rows that stayed keep their ids
SELECT p.keanon_pid = r.keanon_pid AS same_partition_id, array_agg(r.v ORDER BY r.v) AS rows
FROM gone4_keanon_rows r JOIN pids p USING (id)
GROUP BY 1 ORDER BY 2;
UPDATE gone4 SET v = 10 * id WHERE id IN (3, 6);
SELECT pg_temp.arrange('gone4', 'UPDATE gone4 SET v = CASE id WHEN 3 THEN 65 ELSE 25 END WHERE id IN (3, 6)',
					  'UPDATE gone4 SET v = 10 * id WHERE id IN (3, 6)', 45, 1000);
SELECT * FROM pg_temp.arranged_alike();
SELECT keanon.check('gone4');
SELECT keanon.unwatch('gone4');
DROP TABLE gone4, pids;

-- Rows joining a partition in one statement, its bounds staying, take the
-- join step one after the other, in memory, and the partition's other
-- rows are not read (a large batch so reads a few rows of each partition
-- it adds to).  The partitions table shows that path: its row updated,
-- where the reassignment deletes and inserts it.  With k = 5 the values
-- 1 .. 10 make {1 .. 5} and {6 .. 10}; 3 and 4 arriving in one INSERT
-- leave the bounds.  From a fresh draw each trial (1,200 trials), each
-- newcomer's published value must be each of {1, 2, 3, 3, 4, 4, 5} alike
-- (4 degrees of freedom: critical value 35, about 5 in 10^7), the two
-- jointly those of a uniform permutation, P(a, b) = c(a) (c(b) - [a = b])
-- / 42 (24: 75, about 4 in 10^7), each newcomer's slot each of 0 .. 6
-- alike (6: 40, about 5 in 10^7), and the partition a permutation of its
-- values with slots 0 .. 6 after every trial.
CREATE TABLE joins (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO joins SELECT i, 0, i FROM generate_series(1, 10) i;
SELECT keanon.watch('joins', 'v', '{g}', 5, 1);
SELECT pg_stat_force_next_flush();
SELECT n_tup_upd, n_tup_del FROM pg_stat_user_tables WHERE relname = 'joins_keanon_parts' \gset before_
INSERT INTO joins VALUES (100, 0, 3), (101, 0, 4);
SELECT pg_stat_force_next_flush();
SELECT n_tup_upd - :before_n_tup_upd AS parts_updated, n_tup_del - :before_n_tup_del AS parts_deleted
FROM pg_stat_user_tables WHERE relname = 'joins_keanon_parts';
SELECT lo, hi, n FROM joins_keanon_parts ORDER BY hi;
DELETE FROM joins WHERE id >= 100;
CREATE TEMP TABLE joined (pub100 integer, pub101 integer, slot100 integer, slot101 integer);
DO $$
BEGIN
	FOR i IN 1 .. 1200 LOOP
		PERFORM keanon.republish('joins');
		INSERT INTO joins VALUES (100, 0, 3), (101, 0, 4);
		IF (SELECT array_agg(keanon_pub ORDER BY keanon_pub) IS DISTINCT FROM '{1,2,3,3,4,4,5}'
				OR array_agg(keanon_slot ORDER BY keanon_slot) IS DISTINCT FROM '{0,1,2,3,4,5,6}'
			FROM joins_keanon_rows WHERE v <= 5) THEN
			RAISE EXCEPTION 'trial %: the partition is no permutation of its values', i;
		END IF;
		INSERT INTO joined
		SELECT max(keanon_pub) FILTER (WHERE id = 100), max(keanon_pub) FILTER (WHERE id = 101),
			   max(keanon_slot) FILTER (WHERE id = 100), max(keanon_slot) FILTER (WHERE id = 101)
		FROM joins_keanon_rows WHERE id >= 100;
		DELETE FROM joins WHERE id >= 100;
	END LOOP;
END
$$;
WITH c(x, n) AS (VALUES (1, 1), (2, 1), (3, 2), (4, 2), (5, 1)),
s AS (SELECT 100 AS who, pub100 AS pub FROM joined UNION ALL SELECT 101, pub101 FROM joined),
observed AS (SELECT who, pub, count(*) AS o FROM s GROUP BY 1, 2),
expected AS (SELECT who, x AS pub, n / 7.0 AS p FROM (VALUES (100), (101)) w(who), c)
SELECT who, count(*) FILTER (WHERE e.p IS NULL) AS impossible_values,
	   sum((coalesce(o.o, 0) - 1200 * e.p) ^ 2 / (1200 * e.p)) FILTER (WHERE e.p IS NOT NULL) < 35 AS values_uniform
FROM expected e FULL JOIN observed o USING (who, pub)
GROUP BY who ORDER BY who;
WITH c(x, n) AS (VALUES (1, 1), (2, 1), (3, 2), (4, 2), (5, 1)),
expected AS (SELECT a.x AS pub100, b.x AS pub101, a.n * (b.n - (a.x = b.x)::int) / 42.0 AS p
			 FROM c a, c b),
observed AS (SELECT pub100, pub101, count(*) AS o FROM joined GROUP BY 1, 2)
SELECT count(*) FILTER (WHERE coalesce(e.p, 0) = 0 AND o.o > 0) AS impossible_pairs,
	   sum((coalesce(o.o, 0) - 1200 * e.p) ^ 2 / (1200 * e.p)) FILTER (WHERE e.p > 0) < 75 AS pairs_uniform
FROM expected e FULL JOIN observed o USING (pub100, pub101);
WITH s AS (SELECT 100 AS who, slot100 AS slot FROM joined UNION ALL SELECT 101, slot101 FROM joined),
observed AS (SELECT who, slot, count(*) AS o FROM s GROUP BY 1, 2),
expected AS (SELECT who, slot FROM (VALUES (100), (101)) w(who), generate_series(0, 6) slot)
SELECT who, count(*) FILTER (WHERE e.slot IS NULL) AS impossible_slots,
	   sum((coalesce(o.o, 0) - 1200 / 7.0) ^ 2 / (1200 / 7.0)) FILTER (WHERE e.slot IS NOT NULL) < 40 AS slots_uniform
FROM expected e FULL JOIN observed o USING (who, slot)
GROUP BY who ORDER BY who;
SELECT keanon.check('joins');
SELECT keanon.unwatch('joins');
DROP TABLE joins;

-- Not only arrivals: with k = 3 the run of 30 is split, the second
-- partition holding its last row (id 6) beside 40 and 50.  When that row
-- leaves and a 50 arrives in one change, the bounds stay and the second
-- partition grows by one, yet its 30 is now id 5, come from the first
-- partition: the join steps must not take it (in live mode, an UPDATE
-- moving id 6 to 50; in deferred mode, a DELETE and an INSERT flushed
-- together).
CREATE TABLE splitrun (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO splitrun VALUES (1, 0, 10), (2, 0, 20), (3, 0, 30), (4, 0, 30), (5, 0, 30),
	(6, 0, 30), (7, 0, 40), (8, 0, 50);
SELECT keanon.watch('splitrun', 'v', '{g}', 3, 1);
SELECT lo, lo_last_only, hi, hi_split, n FROM splitrun_keanon_parts ORDER BY hi, hi_split DESC;
UPDATE splitrun SET v = 50 WHERE id = 6;
SELECT lo, lo_last_only, hi, hi_split, n FROM splitrun_keanon_parts ORDER BY hi, hi_split DESC;
SELECT id, v, keanon_pid = (SELECT max(keanon_pid) FROM splitrun_keanon_rows) AS in_second
FROM splitrun_keanon_rows WHERE v = 30 ORDER BY id;
SELECT keanon.check('splitrun');
SELECT keanon.unwatch('splitrun');
UPDATE splitrun SET v = 30 WHERE id = 6;
SELECT keanon.watch('splitrun', 'v', '{g}', 3, 1, mode => 'deferred');
DELETE FROM splitrun WHERE id = 6;
INSERT INTO splitrun VALUES (9, 0, 50);
SELECT keanon.flush('splitrun') AS applied;
SELECT lo, lo_last_only, hi, hi_split, n FROM splitrun_keanon_parts ORDER BY hi, hi_split DESC;
SELECT keanon.check('splitrun');
SELECT keanon.unwatch('splitrun');
DROP TABLE splitrun;

-- A row of an UPDATE leaving a partition that keeps its bounds, for a new
-- extreme where the boundaries move, leaves in place by the leave step:
-- the partition's row is updated, not deleted and drawn again, and its
-- other rows are not read (a single-row UPDATE out of a partition of
-- 10^5 equal values so costs a few row writes).  With k = 3, {10 .. 40}
-- and {50, 60, 70}; 20 moving to 1000 leaves {10, 30, 40} and makes
-- {50, 60, 70, 1000}.  From a fresh draw each trial (1,200 trials), the
-- rows of 10 and 30 must each show 10, 30 and 40 alike (2 degrees of
-- freedom: critical value 32, about 1 in 10^7), jointly as a uniform
-- permutation (6 pairs, 5: 37), and the partition must be a permutation
-- of its values with slots 0 .. 2 after every trial.
CREATE TABLE leaves (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO leaves VALUES (1, 0, 10), (2, 0, 20), (3, 0, 30), (4, 0, 40), (5, 0, 50), (6, 0, 60), (7, 0, 70);
SELECT keanon.watch('leaves', 'v', '{g}', 3, 1);
SELECT lo, hi, n FROM leaves_keanon_parts ORDER BY hi;
SELECT pg_stat_force_next_flush();
SELECT n_tup_upd, n_tup_del FROM pg_stat_user_tables WHERE relname = 'leaves_keanon_parts' \gset before_
UPDATE leaves SET v = 1000 WHERE id = 2;
SELECT pg_stat_force_next_flush();
SELECT n_tup_upd - :before_n_tup_upd AS parts_updated, n_tup_del - :before_n_tup_del AS parts_deleted
FROM pg_stat_user_tables WHERE relname = 'leaves_keanon_parts';
SELECT lo, hi, n FROM leaves_keanon_parts ORDER BY hi;
SELECT keanon.check('leaves');
UPDATE leaves SET v = 20 WHERE id = 2;
CREATE TEMP TABLE left_behind (pub1 integer, pub3 integer);
DO $$
BEGIN
	FOR i IN 1 .. 1200 LOOP
		PERFORM keanon.republish('leaves');
		UPDATE leaves SET v = 1000 WHERE id = 2;
		IF (SELECT array_agg(keanon_pub ORDER BY keanon_pub) IS DISTINCT FROM '{10,30,40}'
				OR array_agg(keanon_slot ORDER BY keanon_slot) IS DISTINCT FROM '{0,1,2}'
			FROM leaves_keanon_rows WHERE v <= 40) THEN
			RAISE EXCEPTION 'trial %: the partition is no permutation of its values', i;
		END IF;
		INSERT INTO left_behind
		SELECT max(keanon_pub) FILTER (WHERE id = 1), max(keanon_pub) FILTER (WHERE id = 3)
		FROM leaves_keanon_rows WHERE id IN (1, 3);
		UPDATE leaves SET v = 20 WHERE id = 2;
	END LOOP;
END
$$;
WITH s AS (SELECT 1 AS who, pub1 AS pub FROM left_behind UNION ALL SELECT 3, pub3 FROM left_behind),
observed AS (SELECT who, pub, count(*) AS o FROM s GROUP BY 1, 2),
expected AS (SELECT who, pub FROM (VALUES (1), (3)) w(who), (VALUES (10), (30), (40)) x(pub))
SELECT who, count(*) FILTER (WHERE e.pub IS NULL) AS impossible_values,
	   sum((coalesce(o.o, 0) - 400.0) ^ 2 / 400.0) FILTER (WHERE e.pub IS NOT NULL) < 32 AS values_uniform
FROM expected e FULL JOIN observed o USING (who, pub)
GROUP BY who ORDER BY who;
WITH expected AS (SELECT a AS pub1, b AS pub3 FROM unnest('{10,30,40}'::int[]) a,
				  unnest('{10,30,40}'::int[]) b WHERE a <> b),
observed AS (SELECT pub1, pub3, count(*) AS o FROM left_behind GROUP BY 1, 2)
SELECT count(*) FILTER (WHERE e.pub1 IS NULL) AS impossible_pairs,
	   sum((coalesce(o.o, 0) - 200.0) ^ 2 / 200.0) FILTER (WHERE e.pub1 IS NOT NULL) < 37 AS pairs_uniform
FROM expected e FULL JOIN observed o USING (pub1, pub3);
SELECT keanon.check('leaves');
SELECT keanon.unwatch('leaves');
DROP TABLE leaves;
