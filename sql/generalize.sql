--
-- Generalized quasi-identifiers: groups of at least k rows, each published
-- as its least general tuple, kept current on every kind of write.  Every
-- section ends with keanon.check, which recomputes the groups' tuples from
-- the true values in SQL, apart from the C code; the view is also checked
-- here directly against the true table.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
CREATE EXTENSION IF NOT EXISTS cube;
\set SHOW_CONTEXT never
SET client_min_messages = notice;

-- a workclass hierarchy: * -> {private, government, self-employed}
CREATE TABLE work_h (value text, parent text);
INSERT INTO work_h VALUES ('*', NULL), ('private', '*'), ('government', '*'), ('self-employed', '*'),
	('federal', 'government'), ('state', 'government'), ('local', 'government'),
	('inc', 'self-employed'), ('not-inc', 'self-employed'), ('Private', 'private');

CREATE TABLE staff (id integer PRIMARY KEY, age integer NOT NULL, work text,
	joined date NOT NULL, salary integer);
INSERT INTO staff
SELECT i, 20 + (i * 7919) % 45,
	(ARRAY['Private', 'federal', 'state', 'local', 'inc', 'not-inc'])[1 + (i * 31) % 6],
	DATE '2010-01-01' + (i * 97) % 3000, 30000 + (i * 104729) % 50000
FROM generate_series(1, 60) i;

-- every published combination is shared by at least generalize rows, and
-- contains the true values of each row that shows it (the true rows are
-- matched to the view's by group only through the owner's audit)
CREATE FUNCTION gen_view_ok(tab regclass, view regclass, k integer) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	smallest bigint;
	outside bigint;
	n_view bigint;
	n_true bigint;
BEGIN
	EXECUTE format('SELECT min(c) FROM (SELECT count(*) c FROM %s GROUP BY age, work, joined) s', view)
	INTO smallest;
	EXECUTE format('SELECT count(*) FROM %s', view) INTO n_view;
	EXECUTE format('SELECT count(*) FROM %s WHERE salary IS NOT NULL', tab) INTO n_true;
	EXECUTE format($q$SELECT count(*) FROM %s t
		JOIN keanon.qi_members(%L) m ON (m.key->>'id')::integer = t.id
		JOIN keanon.qi_groups(%L) g ON g.group_id = m.group_id
		WHERE NOT ((g.generalized->>'age')::int4range @> t.age
				   AND (g.generalized->>'joined')::daterange @> t.joined
				   AND EXISTS (WITH RECURSIVE up AS (SELECT t.work AS v
							   UNION SELECT h.parent FROM work_h h JOIN up ON h.value = up.v WHERE h.parent IS NOT NULL)
							   SELECT 1 FROM up WHERE up.v = g.generalized->>'work'))$q$, tab, tab, tab)
	INTO outside;
	RETURN format('smallest group %s, rows %s of %s, outside their group %s',
				  CASE WHEN smallest >= k THEN 'ok' ELSE coalesce(smallest::text, 'none') END,
				  n_view, n_true, outside);
END;
$$;

-- bad input: refused with nothing made
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 3);
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 1,
	hierarchies => '{"work": "work_h"}');
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 3,
	hierarchies => '{"work": "work_h"}', qi_method => 'kmeans');
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 3,
	hierarchies => '{"work": "no_such_h"}');
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 3,
	hierarchies => '{"salary": "work_h"}');
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 5,
	hierarchies => '{"work": "work_h"}', mode => 'release');
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0,
	hierarchies => '{"work": "work_h"}');
CREATE TABLE bad_h (value text, parent text);
INSERT INTO bad_h VALUES ('*', NULL), ('x', '*'), ('x', '*');
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 3,
	hierarchies => '{"work": "bad_h"}');
TRUNCATE bad_h;
INSERT INTO bad_h VALUES ('*', NULL), ('a', 'b'), ('b', 'a'), ('Private', '*');
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 3,
	hierarchies => '{"work": "bad_h"}');
TRUNCATE bad_h;
INSERT INTO bad_h VALUES ('*', NULL), ('r2', NULL), ('Private', '*');
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 3,
	hierarchies => '{"work": "bad_h"}');
TRUNCATE bad_h;
-- a stored value that is an inner node, not a leaf
INSERT INTO bad_h SELECT * FROM work_h;
INSERT INTO bad_h VALUES ('Private-x', 'Private');
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 3,
	hierarchies => '{"work": "bad_h"}');
SELECT count(*) AS watches, (SELECT count(*) FROM pg_class WHERE relname LIKE 'staff_keanon%') AS objects
FROM keanon.watches WHERE relid = 'staff'::regclass;

-- the watch, I3M
SELECT keanon.watch('staff', 'salary', ARRAY['age', 'work', 'joined'], 3, 0, generalize => 3,
	hierarchies => '{"work": "work_h"}');
\d staff_anon
SELECT keanon.check('staff');
SELECT gen_view_ok('staff', 'staff_anon', 3);
SELECT sum(size) = (SELECT count(*) FROM staff WHERE salary IS NOT NULL) AS sizes_add_up, min(size) >= 3 AND max(size) <= 5 AS sizes_in_range,
	round(max(total_il)::numeric, 6) = round(sum(il)::numeric, 6) AS total_is_sum
FROM keanon.qi_groups('staff');

-- the privacy report's overall row: the smallest group and the total IL
SELECT r.smallest_group = (SELECT min(size) FROM keanon.qi_groups('staff')) AS smallest_group_ok,
	round(r.information_loss::numeric, 9) = (SELECT round(max(total_il)::numeric, 9) FROM keanon.qi_groups('staff')) AS il_ok
FROM keanon.privacy_report('staff') r WHERE r.pid IS NULL;

-- every kind of write
INSERT INTO staff VALUES (101, 33, 'state', '2015-05-05', 41000);
INSERT INTO staff SELECT 200 + i, 25 + i, 'inc', DATE '2012-01-01' + i, 50000 + i FROM generate_series(1, 9) i;
UPDATE staff SET age = age + 1 WHERE id % 5 = 0;
UPDATE staff SET salary = salary + 7 WHERE id % 7 = 0;
UPDATE staff SET work = 'local' WHERE id IN (101, 201);
UPDATE staff SET id = id + 1000 WHERE id = 3;
UPDATE staff SET salary = NULL WHERE id = 4;
UPDATE staff SET salary = 44444 WHERE id = 4;
DELETE FROM staff WHERE id % 4 = 1;
MERGE INTO staff USING (SELECT 2 AS id UNION ALL SELECT 600) s ON staff.id = s.id
WHEN MATCHED THEN UPDATE SET age = 64, work = 'federal'
WHEN NOT MATCHED THEN INSERT VALUES (s.id, 29, 'not-inc', '2018-08-08', 29000);
COPY staff FROM stdin;
301	61	Private	2019-09-09	61000
302	62	Private	2019-09-10	62000
303	63	federal	2019-09-11	63000
\.
SELECT keanon.check('staff');
SELECT gen_view_ok('staff', 'staff_anon', 3);

-- a statement that changes nothing generalized, and one that fails
UPDATE staff SET salary = salary WHERE id = 2;
INSERT INTO staff VALUES (400, 40, 'no-such-work', '2020-01-01', 1000);
INSERT INTO staff VALUES (401, 40, NULL, '2020-01-01', 1000);
SELECT keanon.check('staff');

-- savepoints: a change rolled back leaves the groups as they were
BEGIN;
SAVEPOINT s;
DELETE FROM staff WHERE id < 40;
ROLLBACK TO s;
INSERT INTO staff VALUES (402, 50, 'inc', '2011-11-11', 52000);
COMMIT;
SELECT keanon.check('staff');
SELECT gen_view_ok('staff', 'staff_anon', 3);

-- the owner's functions
SELECT keanon.optimize('staff') >= 0 AS optimized;
SELECT keanon.check('staff');
SELECT keanon.regeneralize('staff') BETWEEN (SELECT count(*) / 5 FROM staff) AND (SELECT count(*) / 3 FROM staff) AS groups;
SELECT keanon.check('staff');
SELECT gen_view_ok('staff', 'staff_anon', 3);

-- deletes down to fewer than k rows: then nothing is published
DELETE FROM staff WHERE id > 4;
SELECT count(*) AS rows_left FROM staff WHERE salary IS NOT NULL;
SELECT count(*) AS published FROM staff_anon;
SELECT keanon.check('staff');
INSERT INTO staff VALUES (500, 30, 'inc', '2013-03-03', 33000), (501, 31, 'inc', '2013-03-04', 34000);
SELECT count(*) AS published FROM staff_anon;
SELECT keanon.check('staff');
TRUNCATE staff;
SELECT count(*) AS groups FROM keanon.qi_groups('staff');
INSERT INTO staff SELECT i, 20 + i % 30, 'federal', DATE '2001-01-01' + i, 1000 * i FROM generate_series(1, 20) i;
SELECT keanon.check('staff');
SELECT gen_view_ok('staff', 'staff_anon', 3);

-- a watch made on an empty table starts with spans of 1 from 0; the
-- static clustering of regeneralize measures them on the rows published
CREATE TABLE staff3 (LIKE staff INCLUDING ALL);
SELECT keanon.watch('staff3', 'salary', ARRAY['age', 'work', 'joined'], 2, 0, generalize => 3,
	hierarchies => '{"work": "work_h"}');
SELECT qi_ranges, qi_origins FROM keanon.watches WHERE relid = 'staff3'::regclass;
INSERT INTO staff3 SELECT * FROM staff;
SELECT keanon.regeneralize('staff3') > 0 AS regrouped;
SELECT w.qi_ranges = ARRAY[(max(s.age) - min(s.age))::float8, NULL, (max(s.joined) - min(s.joined))::float8] AS spans_measured,
	w.qi_origins = ARRAY[min(s.age)::float8, 0, (min(s.joined) - DATE '2000-01-01')::float8] AS least_values_measured
FROM keanon.watches w, staff3 s WHERE w.relid = 'staff3'::regclass AND s.salary IS NOT NULL
GROUP BY w.qi_ranges, w.qi_origins;
INSERT INTO staff3 VALUES (77777, 41, 'local', '2016-06-06', 43210);
SELECT keanon.check('staff3');
SELECT keanon.unwatch('staff3');

-- the similar-B-tree, in deferred mode
CREATE TABLE staff2 (LIKE staff INCLUDING ALL);
INSERT INTO staff2 SELECT * FROM staff;
SELECT keanon.watch('staff2', 'salary', ARRAY['age', 'work', 'joined'], 2, 0, generalize => 4,
	hierarchies => '{"work": "work_h"}', qi_method => 'sbtree', mode => 'deferred');
INSERT INTO staff2 SELECT 100 + i, 20 + (i * 13) % 40, (ARRAY['Private', 'inc', 'state'])[1 + i % 3],
	DATE '2005-01-01' + i * 11, 40000 + i FROM generate_series(1, 50) i;
DELETE FROM staff2 WHERE id % 3 = 0;
UPDATE staff2 SET age = age + 10 WHERE id % 4 = 0;
-- the explicit flush and the worker's may share the work: none is left
SELECT keanon.flush('staff2') IS NOT NULL AS flushed;
SELECT pending AS left_pending FROM keanon.status('staff2');
SELECT keanon.check('staff2');
SELECT gen_view_ok('staff2', 'staff2_anon', 4);

-- bound answers over the generalized view, against the true table: for
-- random age predicates, a row whose published range lies inside the
-- predicate is certainly selected, one that overlaps it perhaps; every
-- interval must hold the true answer, and COUNT's must be exactly
-- [rows certain, rows certain or perhaps]
CREATE FUNCTION gen_bounds_violations(tab regclass, view regclass, released regclass DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	bad bigint := 0;
	tight bigint := 0;
	b record;
	t record;
	q int4range;
	lo integer;
BEGIN
	PERFORM setseed(0.42);
	FOR i IN 1 .. 150 LOOP
		lo := 15 + (random() * 60)::int;
		q := int4range(lo, lo + (random() * 25)::int, '[]');
		EXECUTE format('SELECT keanon.sum_bounds(keanon_pid, age <@ $1) s, keanon.count_bounds(keanon_pid, age <@ $1, NULL, NULL) c,
						keanon.min_bounds(keanon_pid, age <@ $1) mn, keanon.max_bounds(keanon_pid, age <@ $1) mx,
						keanon.avg_bounds(keanon_pid, age <@ $1) a,
						count(*) FILTER (WHERE age <@ $1) AS certain, count(*) AS maybe
						FROM %s WHERE age && $1', view) INTO b USING q;
		IF released IS NULL THEN
			EXECUTE format('SELECT coalesce(sum(salary), 0) s, count(*) c, min(salary) mn, max(salary) mx, avg(salary) a
							FROM %s WHERE salary IS NOT NULL AND age <@ $1
							AND id IN (SELECT (key->>''id'')::int FROM keanon.qi_members(%L))', tab, tab) INTO t USING q;
		ELSE
			-- release mode: the truth is the release's rows, as released
			EXECUTE format('SELECT coalesce(sum(salary), 0) s, count(*) c, min(salary) mn, max(salary) mx, avg(salary) a
							FROM %s WHERE age <@ $1', released) INTO t USING q;
		END IF;
		IF b.maybe = 0 THEN
			IF t.c <> 0 THEN bad := bad + 1; END IF;
			CONTINUE;
		END IF;
		IF NOT (b.s @> t.s::numeric AND b.c @> t.c) THEN bad := bad + 1; END IF;
		IF t.c > 0 AND NOT (b.mn @> t.mn::numeric AND b.mx @> t.mx::numeric AND b.a @> t.a) THEN
			bad := bad + 1;
		END IF;
		IF lower(b.c) <> b.certain OR upper(b.c) - 1 <> b.maybe THEN tight := tight + 1; END IF;
	END LOOP;
	RETURN format('violations %s, counts not tight %s', bad, tight);
END;
$$;
SELECT gen_bounds_violations('staff2', 'staff2_anon');
SELECT gen_bounds_violations('staff', 'staff_anon');
-- with every row certain, the plain aggregates' answers
SELECT (SELECT keanon.sum_bounds(keanon_pid, true) FROM staff2_anon WHERE age && '[30,50]')
	 = (SELECT keanon.sum_bounds(keanon_pid) FROM staff2_anon WHERE age && '[30,50]') AS same_as_plain;

-- a deferred writer's row the flush could not place is refused in the
-- writer's own statement, and later writers' rows keep being published
INSERT INTO staff2 VALUES (800, 40, 'no-such-work', '2020-01-01', 1000);
INSERT INTO staff2 VALUES (801, 40, NULL, '2020-01-01', 1000);
INSERT INTO staff2 VALUES (802, 40, NULL, '2020-01-01', NULL);
INSERT INTO staff2 VALUES (803, 41, 'inc', '2020-01-02', 1003), (804, 42, 'inc', '2020-01-03', 1004);
SELECT keanon.flush('staff2') IS NOT NULL AS flushed;
SELECT pending AS left_pending FROM keanon.status('staff2');
SELECT keanon.check('staff2');
DELETE FROM staff2 WHERE id = 802;

-- a padded category (char(n) casts to text without its blanks, as the
-- flush reads it) and a quasi-identifier that is also the key
CREATE TABLE padded (id integer PRIMARY KEY, kind char(8) NOT NULL, salary integer);
INSERT INTO padded SELECT i, (ARRAY['x1', 'x2', 'y1'])[1 + i % 3], 1000 * i FROM generate_series(1, 12) i;
CREATE TABLE padded_h (value text, parent text);
INSERT INTO padded_h VALUES ('*', NULL), ('x', '*'), ('y', '*'), ('x1', 'x'), ('x2', 'x'), ('y1', 'y');
SELECT keanon.watch('padded', 'salary', ARRAY['id', 'kind'], 2, 0, generalize => 3,
	hierarchies => '{"kind": "padded_h"}', mode => 'deferred');
INSERT INTO padded VALUES (13, 'y1', 13000), (14, 'x2', 14000);
UPDATE padded SET id = id + 100 WHERE id < 4;
SELECT keanon.flush('padded') IS NOT NULL AS flushed;
SELECT pending AS left_pending FROM keanon.status('padded');
SELECT keanon.check('padded');
SELECT min(c) >= 3 AS k_anonymous FROM (SELECT count(*) c FROM padded_anon GROUP BY id, kind) s;
SELECT keanon.unwatch('padded');

-- renaming a generalized quasi-identifier or the key follows into the
-- groups, the members and the view
ALTER TABLE staff2 RENAME COLUMN age TO years;
ALTER TABLE staff2 RENAME COLUMN id TO staff_id;
INSERT INTO staff2 VALUES (900, 33, 'inc', '2010-10-10', 50500), (901, 34, 'inc', '2010-10-11', 50600);
UPDATE staff2 SET years = years + 1 WHERE staff_id % 5 = 0;
-- the explicit flush and the worker's may share the work: none is left
SELECT keanon.flush('staff2') IS NOT NULL AS flushed;
SELECT pending AS left_pending FROM keanon.status('staff2');
SELECT keanon.check('staff2');
SELECT min(c) >= 4 AS k_anonymous FROM (SELECT count(*) c FROM staff2_anon GROUP BY years, work, joined) s;

-- unwatch drops every internal table
SELECT keanon.unwatch('staff2');
SELECT count(*) AS left_over FROM pg_class WHERE relname LIKE 'staff2_keanon%';

-- release mode: each release groups the rows that join in it among
-- themselves, and a released group never changes (no reader learns a
-- newcomer's quasi-identifiers by subtracting two releases); generalize
-- cannot exceed k, since a release adds no rows or at least k
CREATE TABLE rstaff (id integer PRIMARY KEY, age integer NOT NULL, work text NOT NULL, salary integer);
INSERT INTO rstaff SELECT i, 20 + (i * 7919) % 45, (ARRAY['Private', 'federal', 'state', 'local', 'inc', 'not-inc'])[1 + (i * 31) % 6],
	30000 + (i * 104729) % 50000 FROM generate_series(1, 50) i;
SELECT keanon.watch('rstaff', 'salary', '{age,work}', 3, 1000, mode => 'release', generalize => 4,
	hierarchies => '{"work": "work_h"}');
SELECT keanon.watch('rstaff', 'salary', '{age,work}', 3, 1000, mode => 'release', generalize => 3,
	hierarchies => '{"work": "work_h"}');
SELECT count(*) AS before_the_first_release FROM rstaff_anon;
SELECT keanon.release('rstaff');
SELECT keanon.check('rstaff');
-- every published combination holds 3 rows or more, and contains the true
-- values of each row released with it
CREATE FUNCTION rstaff_outside() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM rstaff_keanon_release r JOIN rstaff_keanon_groups g USING (keanon_group)
	WHERE NOT (g.age @> r.age AND EXISTS (WITH RECURSIVE up AS (SELECT r.work AS v
			   UNION SELECT h.parent FROM work_h h JOIN up ON h.value = up.v WHERE h.parent IS NOT NULL)
			   SELECT 1 FROM up WHERE up.v = g.work))
$$;
SELECT min(c) >= 3 AS k_anonymous, sum(c) AS rows_released, rstaff_outside() AS outside_their_group
FROM (SELECT count(*) c FROM rstaff_anon GROUP BY age, work) s;
CREATE TABLE rstaff_r1 AS SELECT age, work FROM rstaff_anon;
-- writes between releases change nothing published
INSERT INTO rstaff SELECT i, 20 + (i * 7919) % 45, (ARRAY['Private', 'federal', 'state', 'local', 'inc', 'not-inc'])[1 + (i * 31) % 6],
	30000 + (i * 104729) % 50000 FROM generate_series(51, 75) i;
DELETE FROM rstaff WHERE id % 10 = 0;
UPDATE rstaff SET age = age + 1 WHERE id % 7 = 0;
SELECT count(*) AS still_release_1 FROM rstaff_anon;
SELECT keanon.release('rstaff');
SELECT keanon.check('rstaff');
-- release 1's rows all still show with their tuples; what release 2 adds
-- forms whole tuples of 3 rows or more; each group joined in one release
SELECT (SELECT count(*) FROM (SELECT age, work FROM rstaff_r1 EXCEPT ALL SELECT age, work FROM rstaff_anon) d)
		AS release_1_rows_changed,
	(SELECT count(*) FROM (SELECT 1 FROM (SELECT age, work FROM rstaff_anon EXCEPT ALL SELECT age, work FROM rstaff_r1) a
						   GROUP BY age, work HAVING count(*) < 3) s) AS added_tuples_below_3,
	(SELECT count(*) FROM (SELECT 1 FROM rstaff_keanon_release GROUP BY keanon_group
						   HAVING count(DISTINCT keanon_since) > 1) s) AS groups_of_two_releases,
	rstaff_outside() AS outside_their_group;
SELECT release_no, rows_published, rows_withheld, rows_retained FROM keanon.releases('rstaff') ORDER BY 1;
SELECT count(*) = (SELECT rows_published FROM keanon.releases('rstaff') WHERE release_no = 2) AS members_listed
FROM keanon.qi_members('rstaff');
SELECT smallest_group >= 3 AS report_k FROM keanon.privacy_report('rstaff') WHERE pid IS NULL;
-- bound answers over the release hold its true values
SELECT gen_bounds_violations('rstaff', 'rstaff_anon', 'rstaff_keanon_release');
-- the groups are the releases': never rebuilt nor optimized
SELECT keanon.regeneralize('rstaff');
SELECT keanon.optimize('rstaff');
-- a row no release could group is refused in its writer's statement
INSERT INTO rstaff VALUES (500, 40, 'no-such-work', 1000);
SELECT keanon.unwatch('rstaff');
SELECT count(*) AS left_over FROM pg_class WHERE relname LIKE 'rstaff_keanon%';
DROP TABLE rstaff, rstaff_r1;
DROP FUNCTION rstaff_outside();
