-- Watching a table: the published view kept current on every change.
CREATE EXTENSION IF NOT EXISTS keanon;
\set SHOW_CONTEXT never
SET client_min_messages = notice;

-- The research's salary table (report Table 3.1), k = 3, e = 2000
CREATE TABLE people (id serial PRIMARY KEY, postal_code text, age integer,
	sex text, salary bigint);
INSERT INTO people (postal_code, age, sex, salary) VALUES
	('50200', 35, 'Male', 14000), ('50210', 36, 'Male', 15000),
	('50230', 40, 'Male', 16000), ('50300', 41, 'Female', 25000),
	('50310', 43, 'Female', 35000), ('50330', 47, 'Male', 30000),
	('50300', 53, 'Male', 40000), ('50310', 54, 'Female', 35000),
	('50330', 58, 'Male', 45000);
SELECT keanon.watch('people', 'salary', '{postal_code,age,sex}', 3, 2000);
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
SELECT keanon.check('people');
-- the view: quasi-identifiers, permuted salary, partition; nothing else
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'people_anon'::regclass AND attnum > 0 ORDER BY attnum;
-- rows land in partitions by salary, the split run of 35000 by arrival
SELECT postal_code, age, sex,
	   dense_rank() OVER (ORDER BY keanon_pid) AS partition
FROM people_anon ORDER BY age;
-- each partition publishes exactly its true values, permuted
SELECT dense_rank() OVER (ORDER BY keanon_pid) AS partition,
	   array_agg(salary ORDER BY salary) AS published
FROM people_anon GROUP BY keanon_pid ORDER BY keanon_pid;

-- Rows arriving one at a time keep the optimum current.  Where several
-- partitionings have the optimal sum-error, a change keeps the boundaries
-- it can: after 82,000 arrives the partitions are [25,000, 35,000] and
-- [40,000, 82,000] (10,000 + 42,000), where the report's algorithm would
-- move the boundary to give [25,000, 40,000] and [45,000, 82,000] (15,000
-- + 37,000); keanon.check compares the sum-error with the O(n^2) algorithm.
INSERT INTO people (postal_code, age, sex, salary) VALUES ('50400', 30, 'Female', 67000);
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
SELECT keanon.check('people');
INSERT INTO people (postal_code, age, sex, salary) VALUES ('50410', 33, 'Male', 15500);
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
SELECT keanon.check('people');
INSERT INTO people (postal_code, age, sex, salary) VALUES ('50420', 61, 'Female', 82000);
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
SELECT keanon.check('people');
INSERT INTO people (postal_code, age, sex, salary) VALUES ('50430', 62, 'Male', 90000);
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
SELECT keanon.check('people');
INSERT INTO people (postal_code, age, sex, salary) VALUES ('50440', 44, 'Female', 35000);
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
SELECT keanon.check('people');

-- UPDATE of the sensitive value, of a quasi-identifier, of the key; DELETE
UPDATE people SET salary = 31000 WHERE age = 47;
SELECT keanon.check('people');
UPDATE people SET age = age + 1, postal_code = '50999' WHERE sex = 'Female';
SELECT keanon.check('people');
SELECT count(*) FROM people_anon WHERE postal_code = '50999';
UPDATE people SET id = id + 1000 WHERE age > 60;
SELECT keanon.check('people');
DELETE FROM people WHERE age = 33;
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
SELECT keanon.check('people');

-- A multi-row statement is one batch; COPY is maintained too
INSERT INTO people (postal_code, age, sex, salary)
SELECT '6' || i, 20 + i % 45, CASE WHEN i % 2 = 0 THEN 'Male' ELSE 'Female' END,
	   10000 + (i * 7919) % 90000
FROM generate_series(1, 200) i;
SELECT keanon.check('people');
COPY people (postal_code, age, sex, salary) FROM stdin;
70001	29	Male	41000
70002	30	Female	41000
70003	31	Male	99000
\.
SELECT keanon.check('people');
DELETE FROM people WHERE id % 4 = 0;
SELECT keanon.check('people');
SELECT (SELECT count(*) FROM people) = (SELECT count(*) FROM people_anon) AS all_published;

-- NULL salaries are never published, nor counted
INSERT INTO people (postal_code, age, sex, salary) VALUES ('80000', 50, 'Male', NULL);
SELECT count(*) FROM people_anon WHERE postal_code = '80000';
SELECT keanon.check('people');
UPDATE people SET salary = 52000 WHERE postal_code = '80000';
SELECT count(*) FROM people_anon WHERE postal_code = '80000';
UPDATE people SET salary = NULL WHERE postal_code = '80000';
SELECT count(*) FROM people_anon WHERE postal_code = '80000';
SELECT keanon.check('people');

-- Aborted changes leave nothing behind
BEGIN;
INSERT INTO people (postal_code, age, sex, salary) VALUES ('90000', 20, 'Male', 123456);
DELETE FROM people WHERE age > 55;
ROLLBACK;
SELECT keanon.check('people');
BEGIN;
INSERT INTO people (postal_code, age, sex, salary) VALUES ('90001', 20, 'Male', 23456);
SAVEPOINT s;
INSERT INTO people (postal_code, age, sex, salary) VALUES ('90002', 21, 'Male', 33456);
UPDATE people SET salary = salary + 1 WHERE age < 30;
ROLLBACK TO SAVEPOINT s;
SELECT keanon.check('people');
COMMIT;
SELECT keanon.check('people');
SELECT count(*) FROM people_anon WHERE postal_code IN ('90000', '90001', '90002');

-- One exception block per row, 1,100 of them, every seventh undone: a
-- transaction may hold any number of writing subtransactions
CREATE TABLE sxw (id integer PRIMARY KEY, qi integer NOT NULL, salary integer);
INSERT INTO sxw SELECT i, i % 10, 1000 * i FROM generate_series(1, 30) i;
SELECT keanon.watch('sxw', 'salary', '{qi}', 3, 2000);
DO $$
BEGIN
	FOR i IN 31 .. 1130 LOOP
		BEGIN
			INSERT INTO sxw VALUES (i, i % 10, (i * 7919) % 100000);
			IF i % 7 = 0 THEN
				RAISE EXCEPTION 'undone';
			END IF;
		EXCEPTION WHEN raise_exception THEN
			NULL;
		END;
	END LOOP;
END;
$$;
SELECT count(*) AS rows_kept, keanon.check('sxw') FROM sxw;
SELECT count(*) AS published FROM sxw_anon;
SELECT keanon.unwatch('sxw');
DROP TABLE sxw;

-- Also maintained under session_replication_role = replica
SET session_replication_role = replica;
INSERT INTO people (postal_code, age, sex, salary) VALUES ('91000', 22, 'Male', 61000);
RESET session_replication_role;
SELECT keanon.check('people');

-- TRUNCATE withdraws everything; too few rows publish nothing
TRUNCATE people;
SELECT count(*) FROM people_anon;
SELECT keanon.check('people');
INSERT INTO people (postal_code, age, sex, salary) VALUES ('1', 30, 'Male', 10000), ('2', 31, 'Male', 20000);
SELECT count(*) FROM people_anon;
INSERT INTO people (postal_code, age, sex, salary) VALUES ('3', 32, 'Male', 30000);
SELECT count(*) FROM people_anon;
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('people');
DELETE FROM people WHERE salary = 30000;
SELECT count(*) FROM people_anon;
SELECT keanon.check('people');

-- Bad input: a clear error, and nothing changes
CREATE ROLE keanon_analyst_none;
CREATE TABLE staff (id integer PRIMARY KEY, age integer, salary bigint, notes text);
CREATE TABLE nokey (salary integer, age integer);
SELECT keanon.watch('staff', 'salary', '{age}', 1, 2000);
SELECT keanon.watch('staff', 'salary', '{age}', 3, -1);
SELECT keanon.watch('staff', 'salary', '{age}', 3, 'NaN');
SELECT keanon.watch('staff', 'salary', '{age}', NULL, 0);
SELECT keanon.watch('no_such_table', 'salary', '{age}', 3, 0);
SELECT keanon.watch('staff', 'wage', '{age}', 3, 0);
SELECT keanon.watch('staff', 'notes', '{age}', 3, 0);
SELECT keanon.watch('staff', 'salary', '{shoe_size}', 3, 0);
SELECT keanon.watch('staff', 'salary', '{age,salary}', 3, 0);
SELECT keanon.watch('staff', 'salary', '{age,age}', 3, 0);
SELECT keanon.watch('staff', 'salary', '{age}', 3, 0, mode => 'weekly');
SELECT keanon.watch('people', 'salary', '{age}', 3, 0);
SELECT keanon.watch('nokey', 'salary', '{age}', 3, 0);
SELECT keanon.watch('people_anon', 'salary', '{age}', 3, 0);
SELECT keanon.watch('staff', 'salary', '{}', 3, 0);
-- keanon.watch checks in C: its errors, a generalization's too, point into
-- none of its internals (no CONTEXT line)
\set SHOW_CONTEXT errors
SELECT keanon.watch('staff', 'salary', '{age}', 3, -1);
SELECT keanon.watch('people', 'salary', '{age}', 3, 0);
SELECT keanon.watch('staff', 'salary', '{age}', 3, 0, generalize => 1);
-- so do those of the functions whose work is PL/pgSQL (the entries of
-- entry.c), a statement they built included
SELECT keanon.unwatch('staff');
SELECT keanon.k_anonymity('staff', '{shoe_size}');
SELECT * FROM keanon.anonymize('staff', '{age}', 'salary', NULL, 0);
SELECT * FROM keanon.qi_groups('people');
-- but a caller's own frames keep their context lines
CREATE FUNCTION staff_k() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
	RETURN keanon.k_anonymity('staff', '{shoe_size}');
END;
$$;
SELECT staff_k();
DROP FUNCTION staff_k();
\set SHOW_CONTEXT never
-- keanon.watch alone makes a watch of the arguments it checked, and each
-- entry alone calls its work
SET ROLE keanon_analyst_none;
SELECT keanon.watch_build('staff', 'salary', '{age}', '{id}', 3, 0, NULL, 'live', NULL, NULL, NULL, 'i3m');
SELECT keanon.unwatch_body('people');
RESET ROLE;
SELECT p.oid::regprocedure AS callable_work FROM pg_proc p
WHERE p.pronamespace = 'keanon'::regnamespace AND p.proname LIKE '%\_body'
  AND has_function_privilege('keanon_analyst_none', p.oid, 'EXECUTE');
SELECT p.proname AS entry, b.proname AS private_work FROM pg_proc p
LEFT JOIN pg_proc b ON b.proname = p.proname || '_body' AND b.pronamespace = p.pronamespace
	AND b.proargtypes = p.proargtypes AND b.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')
	AND NOT has_function_privilege('public', b.oid, 'EXECUTE')
WHERE p.pronamespace = 'keanon'::regnamespace AND p.prosrc = 'keanon_entry' ORDER BY 1;
SELECT keanon.unwatch('staff');
SELECT count(*) FROM keanon.watches;
SELECT relname FROM pg_class WHERE relname LIKE 'staff%' OR relname LIKE 'nokey%' ORDER BY 1;

-- Names that need quoting are used as names, never as SQL
CREATE TABLE "Odd ""Table""; DROP TABLE people; --" (
	"Key" integer PRIMARY KEY, "Sal ary" numeric(10,2), "Zip;Code" text);
INSERT INTO "Odd ""Table""; DROP TABLE people; --" VALUES
	(1, 10.50, 'a'), (2, 11.25, 'b'), (3, 12.00, 'c'), (4, 13.75, 'd');
SELECT keanon.watch('"Odd ""Table""; DROP TABLE people; --"', 'Sal ary', '{Zip;Code}', 2, 1.5,
	publish_as => 'odd published');
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('"Odd ""Table""; DROP TABLE people; --"');
SELECT keanon.check('"Odd ""Table""; DROP TABLE people; --"');
SELECT count(*) FROM "odd published";
SELECT count(*) FROM people;

-- Privileges: an analyst granted the view alone
CREATE ROLE keanon_analyst;
INSERT INTO people (postal_code, age, sex, salary)
SELECT 'p' || i, 20 + i, 'Male', 1000 * i FROM generate_series(1, 12) i;
GRANT SELECT ON people_anon TO keanon_analyst;
SET ROLE keanon_analyst;
SELECT count(*) FROM people_anon;
SELECT count(*) FROM keanon.partitions('people');
SELECT keanon.sum_bounds(keanon_pid) = (WITH parts AS (SELECT keanon_pid, array_agg(salary ORDER BY salary) AS v, count(*) AS n FROM people_anon GROUP BY 1), hits AS (SELECT keanon_pid, count(*) AS h FROM people_anon WHERE age BETWEEN 30 AND 45 GROUP BY 1) SELECT numrange(sum((SELECT sum(x) FROM unnest(v[1:h]) x)), sum((SELECT sum(x) FROM unnest(v[n - h + 1:n]) x)), '[]') FROM hits JOIN parts USING (keanon_pid)) AS matches_oracle FROM people_anon WHERE age BETWEEN 30 AND 45;
SELECT count(*) FROM people;
SELECT count(*) FROM people_keanon_rows;
SELECT count(*) FROM people_keanon_parts;
SELECT * FROM keanon.index_partitions('people_keanon_idx');
SELECT keanon.check('people');
SELECT keanon.republish('people');
SELECT count(*) FROM keanon.watches;
INSERT INTO people_anon VALUES ('x', 1, 'x', 1, 1);
RESET ROLE;
-- a role that may insert into the table, and nothing of keanon's
CREATE ROLE keanon_clerk;
GRANT INSERT ON people TO keanon_clerk;
GRANT USAGE ON SEQUENCE people_id_seq TO keanon_clerk;
SET ROLE keanon_clerk;
INSERT INTO people (postal_code, age, sex, salary) VALUES ('c1', 40, 'Female', 77000);
RESET ROLE;
SELECT keanon.check('people');

-- Watching again after unwatching: maintenance follows the new watch
CREATE TABLE rewatch (id serial PRIMARY KEY, g integer, v integer);
INSERT INTO rewatch (g, v) SELECT i % 3, i FROM generate_series(1, 30) i;
SELECT keanon.watch('rewatch', 'v', '{g}', 3, 2);
INSERT INTO rewatch (g, v) VALUES (1, 100);
SELECT keanon.unwatch('rewatch');
SELECT keanon.watch('rewatch', 'v', '{g}', 5, 10);
INSERT INTO rewatch (g, v) VALUES (1, 101);
SELECT keanon.check('rewatch');
SELECT count(*) AS partitions, min(distinct_values) AS k_achieved, min(error) AS e_achieved
FROM keanon.partitions('rewatch');
DROP TABLE rewatch;

-- a run split between two partitions: the earlier one holds all of value
-- 5's rows but the last-arriving, the later one that row; rows of 5
-- joining and leaving keep the split, checked against the optimum
CREATE TABLE splitrun (id serial PRIMARY KEY, g integer, v integer);
INSERT INTO splitrun (g, v)
SELECT i % 3, CASE WHEN i <= 4 THEN i WHEN i > 44 THEN i - 39 ELSE 5 END
FROM generate_series(1, 48) i;
SELECT keanon.watch('splitrun', 'v', '{g}', 5, 1);
SELECT lo, hi, lo_last_only, hi_split, n FROM splitrun_keanon_parts ORDER BY hi;
-- the O(1) paths touch a few published rows, not the whole partition (a
-- joining row swaps published values with one row and takes the slot of
-- another, which moves to the end)
CREATE TEMP TABLE splitrun_before AS
SELECT id, keanon_pid, keanon_slot, keanon_pub FROM splitrun_keanon_rows;
CREATE FUNCTION splitrun_rows_changed() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM splitrun_before b JOIN splitrun_keanon_rows r USING (id)
	WHERE (b.keanon_pid, b.keanon_slot, b.keanon_pub)
		IS DISTINCT FROM (r.keanon_pid, r.keanon_slot, r.keanon_pub) $$;
INSERT INTO splitrun (g, v) VALUES (1, 5);
SELECT splitrun_rows_changed() <= 3 AS few_rows_changed;
INSERT INTO splitrun (g, v) VALUES (2, 5);
SELECT keanon.check('splitrun');
DELETE FROM splitrun WHERE id = 10;
SELECT keanon.check('splitrun');
DELETE FROM splitrun WHERE id = (SELECT max(id) FROM splitrun WHERE v = 5);
SELECT keanon.check('splitrun');
INSERT INTO splitrun (g, v) SELECT i % 3, 5 FROM generate_series(1, 20) i;
INSERT INTO splitrun (g, v) VALUES (0, 5);
SELECT lo, hi, lo_last_only, hi_split, n FROM splitrun_keanon_parts ORDER BY hi;
SELECT keanon.check('splitrun');
-- rows moving between partitions whose bounds stay put
TRUNCATE splitrun_before;
INSERT INTO splitrun_before
SELECT id, keanon_pid, keanon_slot, keanon_pub FROM splitrun_keanon_rows WHERE id <> 11;
UPDATE splitrun SET v = 7 WHERE id = 11;
SELECT splitrun_rows_changed() <= 4 AS few_rows_changed;
SELECT keanon.check('splitrun');
UPDATE splitrun SET v = 3 WHERE id = 11;
SELECT keanon.check('splitrun');
SELECT lo, hi, lo_last_only, hi_split, n FROM splitrun_keanon_parts ORDER BY hi;
-- the later partition records the slot of its row of the run's value when
-- placed; stale (or lost), the partition is searched for that row instead,
-- and with the parts table's (hi) index gone, the partitions on either
-- side of the run are found by scanning it
UPDATE splitrun_keanon_parts SET lo_slot = (lo_slot + 1) % n WHERE lo_last_only;
DROP INDEX splitrun_keanon_parts_hi_idx;
TRUNCATE splitrun_before;
INSERT INTO splitrun_before SELECT id, keanon_pid, keanon_slot, keanon_pub FROM splitrun_keanon_rows;
INSERT INTO splitrun (g, v) VALUES (1, 5);
SELECT splitrun_rows_changed() <= 3 AS few_rows_changed;
SELECT keanon.check('splitrun');
UPDATE splitrun_keanon_parts SET lo_slot = NULL WHERE lo_last_only;
TRUNCATE splitrun_before;
INSERT INTO splitrun_before SELECT id, keanon_pid, keanon_slot, keanon_pub FROM splitrun_keanon_rows;
INSERT INTO splitrun (g, v) VALUES (2, 5);
SELECT splitrun_rows_changed() <= 3 AS few_rows_changed;
SELECT lo, hi, lo_last_only, hi_split, n FROM splitrun_keanon_parts ORDER BY hi;
SELECT keanon.check('splitrun');
SELECT keanon.unwatch('splitrun');
DROP FUNCTION splitrun_rows_changed();
DROP TABLE splitrun, splitrun_before;

-- A new watch of a filled table, and a load into an empty watched table
-- (also after TRUNCATE), write each row once, already placed, the index
-- laid out in one pass: numeric values of varying width, NULLs left out
CREATE TABLE bulk (id integer PRIMARY KEY, g integer, v numeric(10,2));
INSERT INTO bulk SELECT i, i % 4, CASE WHEN i % 10 = 0 THEN NULL ELSE (i * 7 % 101) / 4.0 END
FROM generate_series(1, 300) i;
SELECT keanon.watch('bulk', 'v', '{g}', 4, 2);
SELECT count(*) AS published FROM bulk_anon;
SELECT keanon.check('bulk');
SELECT keanon.fill('bulk');
TRUNCATE bulk;
SELECT count(*) AS published FROM bulk_anon;
INSERT INTO bulk SELECT i, i % 4, (i * 13 % 97) / 2.0 + 1000 FROM generate_series(1, 250) i;
SELECT count(*) AS published, min(v) >= 1000 AS new_values FROM bulk_anon;
SELECT keanon.check('bulk');
SELECT keanon.index_check('bulk_keanon_idx');
SELECT keanon.unwatch('bulk');
DROP TABLE bulk;
-- a load with too few distinct values is not published until one is
CREATE TABLE few (id integer PRIMARY KEY, g integer, v integer);
SELECT keanon.watch('few', 'v', '{g}', 3, 0);
INSERT INTO few SELECT i, 0, i % 2 FROM generate_series(1, 10) i;
SELECT count(*) AS published FROM few_anon;
INSERT INTO few VALUES (11, 0, 2);
SELECT count(*) AS published FROM few_anon;
SELECT keanon.check('few');
SELECT keanon.unwatch('few');
DROP TABLE few;
-- in release mode a load waits for keanon.release
CREATE TABLE rbulk (id integer PRIMARY KEY, g integer, v integer);
SELECT keanon.watch('rbulk', 'v', '{g}', 3, 5, mode => 'release');
INSERT INTO rbulk SELECT i, i % 3, i * 3 % 50 FROM generate_series(1, 100) i;
SELECT count(*) AS published FROM rbulk_anon;
SELECT keanon.release('rbulk');
SELECT count(*) AS published FROM rbulk_anon;
SELECT keanon.check('rbulk');
SELECT keanon.unwatch('rbulk');
DROP TABLE rbulk;

-- keanon's trigger functions refuse to be fired other than as watch() does
CREATE TABLE wrongtrig (v integer);
CREATE TRIGGER a BEFORE INSERT ON wrongtrig FOR EACH ROW EXECUTE FUNCTION keanon.maintain();
CREATE TRIGGER b AFTER INSERT ON wrongtrig FOR EACH STATEMENT EXECUTE FUNCTION keanon.lock_watch();
INSERT INTO wrongtrig VALUES (1);
DROP TRIGGER a ON wrongtrig;
INSERT INTO wrongtrig VALUES (1);
SELECT count(*) FROM wrongtrig;
DROP TABLE wrongtrig;

-- unwatch removes it all; dropping a watched table does too
SELECT keanon.unwatch('"Odd ""Table""; DROP TABLE people; --"');
SELECT count(*) FROM pg_class WHERE relname LIKE 'Odd%' OR relname = 'odd published';
DROP TABLE people;
SELECT count(*) FROM keanon.watches;
SELECT count(*) FROM pg_class WHERE relname LIKE 'people%';
DROP OWNED BY keanon_analyst;
DROP OWNED BY keanon_clerk;
DROP ROLE keanon_analyst;
DROP ROLE keanon_analyst_none;
DROP ROLE keanon_clerk;
DROP TABLE nokey, staff, "Odd ""Table""; DROP TABLE people; --";

-- A statement's new rows are paired with their places by number, numbered
-- once: a large UPDATE whose plan reorders rows (a hash join spilling to
-- batches, here forced) after small ones whose plans were kept still
-- publishes each row in its own partition
CREATE TABLE upd (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO upd SELECT i, i % 10, (pg_catalog.hashint4(i) & 65535) FROM generate_series(1, 20000) i;
SELECT keanon.watch('upd', 'v', '{g}', 4, 30);
UPDATE upd SET v = v + 1 WHERE id = 1;
UPDATE upd SET v = v + 1 WHERE id IN (2, 3);
UPDATE upd SET v = v + 1 WHERE id IN (4, 5, 6);
SET work_mem = '64kB';
SET enable_mergejoin = off;
SET enable_nestloop = off;
UPDATE upd SET v = (pg_catalog.hashint4(id + 7) & 65535) WHERE id % 3 = 0;
RESET work_mem;
RESET enable_mergejoin;
RESET enable_nestloop;
SELECT keanon.check('upd');
DROP TABLE upd;

-- A rows table whose partitions no longer hold consecutive rows (here one
-- row moved, by hand, to the last partition) is refused by the next
-- reassignment, with the hint that rebuilds it, not carried over
CREATE TABLE scattered (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO scattered SELECT i, i % 3, i FROM generate_series(1, 40) i;
SELECT keanon.watch('scattered', 'v', '{g}', 3, 0);
UPDATE scattered_keanon_rows SET keanon_pid = (SELECT max(keanon_pid) FROM scattered_keanon_parts)
WHERE v = 1;
-- (the partition's id depends on the watches made before: masked)
DO $$
DECLARE
	m text;
	h text;
BEGIN
	INSERT INTO scattered VALUES (41, 0, 0), (42, 1, 100), (43, 2, 20);
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, h = PG_EXCEPTION_HINT;
	RAISE NOTICE '%: %; %', SQLSTATE, regexp_replace(m, 'partition [0-9]+', 'partition N'), h;
END $$;
SELECT keanon.republish('scattered') = 40 AS republished;
INSERT INTO scattered VALUES (41, 0, 0), (42, 1, 100), (43, 2, 20);
SELECT keanon.check('scattered');
DROP TABLE scattered;

-- Maintenance moves rows and rewrites partitions with heap and index calls
-- (direct.c), not SQL: every btree of the internal tables, the owner's own
-- (an expression and a partial index) included, holds exactly the table's
-- rows afterwards.  With the (keanon_pid, keanon_slot) index, the parts'
-- primary key and their (hi) index gone (and (hi DESC) in its place, which
-- must not be taken for it) the same steps scan the tables instead.
CREATE EXTENSION amcheck;
CREATE TABLE direct (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO direct SELECT i, i % 7, (pg_catalog.hashint4(i) & 4095) FROM generate_series(1, 3000) i;
SELECT keanon.watch('direct', 'v', '{g}', 4, 20);
CREATE INDEX direct_expr ON direct_keanon_rows ((keanon_slot + 1));
CREATE INDEX direct_part ON direct_keanon_rows (keanon_pid) WHERE keanon_slot = 0;
CREATE INDEX direct_big ON direct_keanon_parts (n) WHERE n > 5;
CREATE FUNCTION direct_churn(base integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO direct SELECT i, i % 7, (pg_catalog.hashint4(i) & 4095)
	FROM generate_series(base, base + 99) i;
	FOR i IN base + 100 .. base + 299 LOOP
		INSERT INTO direct VALUES (i, i % 7, pg_catalog.hashint4(i) & 4095);
	END LOOP;
	FOR i IN base + 100 .. base + 299 BY 7 LOOP
		DELETE FROM direct WHERE id = i;
		UPDATE direct SET v = v + 3 WHERE id = i - base;
	END LOOP;
END $$;
SELECT direct_churn(10000);
CREATE FUNCTION direct_btrees_exact() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	i regclass;
BEGIN
	FOR i IN SELECT x.indexrelid::regclass FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
		JOIN pg_am a ON a.oid = c.relam
		WHERE x.indrelid IN ('direct_keanon_rows'::regclass, 'direct_keanon_parts'::regclass)
		  AND a.amname = 'btree'
	LOOP
		PERFORM bt_index_check(i, true);
	END LOOP;
	RETURN true;
END $$;
SELECT direct_btrees_exact();
SELECT keanon.check('direct');
-- a statement of many rows writes them a batch at a time (multi-inserts,
-- 1,000 rows or 64 kB each): 2,500 rows span three batches
INSERT INTO direct SELECT i, i % 7, (pg_catalog.hashint4(i) & 4095) FROM generate_series(30000, 32499) i;
SELECT direct_btrees_exact();
SELECT count(*) FROM direct_keanon_rows WHERE id BETWEEN 30000 AND 32499;
SELECT keanon.check('direct');
DROP INDEX direct_keanon_rows_keanon_pid_keanon_slot_idx;
ALTER TABLE direct_keanon_parts DROP CONSTRAINT direct_keanon_parts_pkey;
DROP INDEX direct_keanon_parts_hi_idx;
CREATE INDEX direct_hi_desc ON direct_keanon_parts (hi DESC);
SELECT direct_churn(20000);
SELECT direct_btrees_exact();
SELECT keanon.check('direct');
-- A summarizing (BRIN) index on a quasi-identifier of the rows table: an
-- UPDATE of that column alone may be HOT from PostgreSQL 16 on, and the new
-- value must still reach the BRIN index (the bitmap scan through it finds
-- every updated row)
CREATE INDEX direct_brin ON direct_keanon_rows USING brin (g) WITH (pages_per_range = 1);
DO $$
BEGIN
	FOR i IN 1 .. 600 BY 3 LOOP
		UPDATE direct SET g = 1000 + i WHERE id = i;
	END LOOP;
END $$;
SET enable_seqscan = off;
SET enable_indexscan = off;
SELECT count(*) AS through_brin FROM direct_keanon_rows WHERE g >= 1000;
RESET enable_seqscan;
RESET enable_indexscan;
SELECT count(*) AS updated FROM direct WHERE g >= 1000;
SELECT keanon.check('direct');
DROP TABLE direct;
DROP FUNCTION direct_churn(integer);
DROP FUNCTION direct_btrees_exact();

-- A multi-row DELETE or UPDATE carries the partitions it changes over: its
-- rows leave them (or are replaced by their new versions) by the O(1) steps,
-- whatever the partitions' size.  Of 612 rows in one partition, deleting 3
-- changes at most 2 others each, and updating 2 values within it at most 1
-- other each; drawing the partition afresh would move all of them.
CREATE TABLE multi_gone (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO multi_gone SELECT i, i % 3, CASE WHEN i <= 600 THEN 0 ELSE i - 600 END
FROM generate_series(1, 612) i;
SELECT keanon.watch('multi_gone', 'v', '{g}', 5, 10);
CREATE TEMP TABLE gone_before AS SELECT id, keanon_pid, keanon_slot, keanon_pub FROM multi_gone_keanon_rows;
DELETE FROM multi_gone WHERE id IN (3, 4, 602);
SELECT count(*) FILTER (WHERE (b.keanon_pid, b.keanon_slot, b.keanon_pub)
						IS DISTINCT FROM (r.keanon_pid, r.keanon_slot, r.keanon_pub)) <= 6 AS few_changed,
	   count(*) AS rows_left
FROM multi_gone_keanon_rows r JOIN gone_before b USING (id);
SELECT keanon.check('multi_gone');
TRUNCATE gone_before;
INSERT INTO gone_before SELECT id, keanon_pid, keanon_slot, keanon_pub FROM multi_gone_keanon_rows;
UPDATE multi_gone SET v = v + 1 WHERE id IN (604, 605);
SELECT count(*) FILTER (WHERE (b.keanon_pid, b.keanon_slot, b.keanon_pub)
						IS DISTINCT FROM (r.keanon_pid, r.keanon_slot, r.keanon_pub)) <= 4 AS few_changed,
	   count(*) FILTER (WHERE b.keanon_pid = r.keanon_pid) AS kept_partition
FROM multi_gone_keanon_rows r JOIN gone_before b USING (id);
SELECT lo, hi, n FROM multi_gone_keanon_parts ORDER BY hi;
SELECT keanon.check('multi_gone');
-- a partition of more than 256 rows finds the rows showing a value through
-- a map of values to slots: 60 statements each updating three rows to
-- values held by many (0) or few, then deleting two, from random draws of
-- rows, each statement changing at most 2 other rows per row leaving; the
-- publication stays exact throughout
SELECT setseed(0.25);
DO $$
DECLARE
	changed bigint;
	ids integer[];
BEGIN
	FOR i IN 1 .. 30 LOOP
		ids := ARRAY(SELECT id FROM multi_gone ORDER BY random() LIMIT 3);
		TRUNCATE gone_before;
		INSERT INTO gone_before SELECT id, keanon_pid, keanon_slot, keanon_pub FROM multi_gone_keanon_rows;
		UPDATE multi_gone SET v = CASE WHEN v = 0 THEN 1 + (i % 5) ELSE 0 END WHERE id = ANY (ids);
		SELECT count(*) INTO changed FROM multi_gone_keanon_rows r JOIN gone_before b USING (id)
		WHERE (b.keanon_slot, b.keanon_pub) IS DISTINCT FROM (r.keanon_slot, r.keanon_pub);
		IF changed > 3 * 3 THEN
			RAISE EXCEPTION 'an UPDATE of 3 rows changed % rows', changed;
		END IF;
		ids := ARRAY(SELECT id FROM multi_gone ORDER BY random() LIMIT 2);
		TRUNCATE gone_before;
		INSERT INTO gone_before SELECT id, keanon_pid, keanon_slot, keanon_pub FROM multi_gone_keanon_rows;
		DELETE FROM multi_gone WHERE id = ANY (ids);
		SELECT count(*) INTO changed FROM multi_gone_keanon_rows r JOIN gone_before b USING (id)
		WHERE (b.keanon_slot, b.keanon_pub) IS DISTINCT FROM (r.keanon_slot, r.keanon_pub);
		IF changed > 2 * 2 THEN
			RAISE EXCEPTION 'a DELETE of 2 rows changed % rows', changed;
		END IF;
	END LOOP;
END
$$;
SELECT count(*) FROM multi_gone;
SELECT keanon.check('multi_gone');
DROP TABLE multi_gone, gone_before;

-- A row leaving a large partition in which its value is rare: sampling
-- slots seldom finds a row showing that value, so the rows showing it are
-- listed: by the (keanon_pid, keanon_pub) index as keanon.watch builds it
-- (slots from 32 up) together with the (keanon_pid, keanon_slot) index
-- below that slot, by that index rebuilt to hold no slot of the partition
-- (so that only the slot index finds the rows), by that index made whole,
-- that index gone, by the slot index alone, or, that one gone too, from the
-- partition's rows.  Each departure in place touches at most two other rows
-- (one takes over the published value, the last slot fills the gap).
CREATE TABLE rare (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO rare SELECT i, i % 3, 0 FROM generate_series(1, 600) i;
INSERT INTO rare SELECT 600 + i, i % 3, i FROM generate_series(1, 14) i;
-- (e = 10: the values 0 .. 14 cannot be split into two partitions)
SELECT keanon.watch('rare', 'v', '{g}', 5, 10);
SELECT lo, hi, n FROM rare_keanon_parts ORDER BY hi;
SELECT pg_get_indexdef('rare_keanon_rows_keanon_pid_keanon_pub_idx'::regclass);
CREATE TEMP TABLE rare_before AS SELECT id, keanon_pid, keanon_slot, keanon_pub FROM rare_keanon_rows;
CREATE FUNCTION rare_change(sql text) RETURNS TABLE (few_rows_changed boolean, btrees boolean, exact boolean)
LANGUAGE plpgsql AS $$
BEGIN
	TRUNCATE rare_before;
	INSERT INTO rare_before SELECT id, keanon_pid, keanon_slot, keanon_pub FROM rare_keanon_rows;
	EXECUTE sql;
	PERFORM bt_index_check(x.indexrelid, true) FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
	WHERE x.indrelid = 'rare_keanon_rows'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'btree');
	RETURN QUERY SELECT (SELECT count(*) FROM rare_before b JOIN rare_keanon_rows r USING (id)
						 WHERE (b.keanon_pid, b.keanon_slot, b.keanon_pub)
							 IS DISTINCT FROM (r.keanon_pid, r.keanon_slot, r.keanon_pub)) <= 3,
						true, keanon.check('rare');
END $$;
SELECT * FROM rare_change('DELETE FROM rare WHERE id = 602');
SELECT * FROM rare_change('UPDATE rare SET v = 0 WHERE id = 603');
DROP INDEX rare_keanon_rows_keanon_pid_keanon_pub_idx;
CREATE INDEX rare_keanon_rows_keanon_pid_keanon_pub_idx ON rare_keanon_rows (keanon_pid, keanon_pub)
WHERE keanon_slot >= 100000;
SELECT * FROM rare_change('DELETE FROM rare WHERE id = 604');
SELECT * FROM rare_change('UPDATE rare SET v = 0 WHERE id = 605');
DROP INDEX rare_keanon_rows_keanon_pid_keanon_pub_idx;
CREATE INDEX rare_keanon_rows_keanon_pid_keanon_pub_idx ON rare_keanon_rows (keanon_pid, keanon_pub);
SELECT * FROM rare_change('DELETE FROM rare WHERE id = 606');
SELECT * FROM rare_change('UPDATE rare SET v = 0 WHERE id = 607');
DROP INDEX rare_keanon_rows_keanon_pid_keanon_pub_idx;
SELECT * FROM rare_change('DELETE FROM rare WHERE id = 608');
SELECT * FROM rare_change('UPDATE rare SET v = 0 WHERE id = 609');
DROP INDEX rare_keanon_rows_keanon_pid_keanon_slot_idx;
SELECT * FROM rare_change('DELETE FROM rare WHERE id = 610');
SELECT * FROM rare_change('UPDATE rare SET v = 0 WHERE id = 611');
SELECT lo, hi, n FROM rare_keanon_parts ORDER BY hi;
DROP TABLE rare, rare_before;
DROP FUNCTION rare_change(text);

-- The (keanon_pid, keanon_pub) index makes every change of a published
-- value a new row version with new index entries.  An owner who drops it
-- (a row leaving a large partition where its value is rare then reads the
-- partition's slots, see docs/behaviour.md) makes such a change a HOT
-- update.  A row joining its partition swaps published values with a row
-- drawn at random (one such change) and takes a random slot (the row there
-- moves to the end: a new version, the slot being indexed); with the index
-- a HOT update is left only where the drawn row already showed the
-- newcomer's value.  Counted within one transaction, since the counts of
-- this session's earlier ones may still be pending.
CREATE TABLE hot (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO hot SELECT i, i % 3, i % 50 FROM generate_series(1, 2000) i;
SELECT keanon.watch('hot', 'v', '{g}', 5, 10) IS NOT NULL AS watched;
CREATE FUNCTION hot_inserts(first integer) RETURNS TABLE (updated boolean, hot bigint)
LANGUAGE plpgsql AS $$
DECLARE
	u0 bigint := pg_stat_get_xact_tuples_updated('hot_keanon_rows'::regclass);
	h0 bigint := pg_stat_get_xact_tuples_hot_updated('hot_keanon_rows'::regclass);
BEGIN
	-- 30 values already there: no bound moves
	FOR i IN 1 .. 30 LOOP
		INSERT INTO hot VALUES (first + i, i % 3, (i * 7) % 50);
	END LOOP;
	RETURN QUERY SELECT pg_stat_get_xact_tuples_updated('hot_keanon_rows'::regclass) - u0 >= 50,
						pg_stat_get_xact_tuples_hot_updated('hot_keanon_rows'::regclass) - h0;
END $$;
SELECT updated, hot < 10 AS few_hot FROM hot_inserts(2000);
DROP INDEX hot_keanon_rows_keanon_pid_keanon_pub_idx;
SELECT updated, hot >= 25 AS most_hot FROM hot_inserts(3000);
SELECT keanon.check('hot');
DROP TABLE hot;
DROP FUNCTION hot_inserts(integer);

-- A single-row INSERT is read from the transition table and written to the
-- rows table directly: a quasi-identifier stored out of line in the table
-- arrives whole, a row without a value is not watched, and a row of a
-- table with no valid partitioning yet waits unplaced
CREATE TABLE single (id integer PRIMARY KEY, note text, v integer);
ALTER TABLE single ALTER note SET STORAGE EXTERNAL;
SELECT keanon.watch('single', 'v', '{note}', 3, 10);
INSERT INTO single VALUES (1, 'a', 5);
INSERT INTO single VALUES (2, 'b', NULL);
INSERT INTO single VALUES (3, 'c', 50);
SELECT count(*) AS rows, count(keanon_pid) AS placed FROM single_keanon_rows;
INSERT INTO single VALUES (4, (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 400) i), 20);
SELECT pg_relation_size(reltoastrelid) > 0 AS out_of_line FROM pg_class WHERE oid = 'single'::regclass;
INSERT INTO single SELECT i, 'n' || i, i * 7 FROM generate_series(5, 12) i;
INSERT INTO single VALUES (13, 'last', 3);
SELECT (SELECT array_agg(note || ':' || v ORDER BY note, v) FROM single WHERE v IS NOT NULL) =
	   (SELECT array_agg(r.note || ':' || r.v ORDER BY r.note, r.v) FROM single_keanon_rows r)
	   AS rows_hold_table,
	   (SELECT array_agg(note ORDER BY note) FROM single WHERE v IS NOT NULL) =
	   (SELECT array_agg(note ORDER BY note) FROM single_anon) AS view_shows_all,
	   (SELECT array_agg(v ORDER BY v) FROM single WHERE v IS NOT NULL) =
	   (SELECT array_agg(v ORDER BY v) FROM single_anon) AS same_values;
SELECT count(bt_index_check(x.indexrelid, true)) AS btrees_checked
FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam
WHERE x.indrelid = 'single_keanon_rows'::regclass AND a.amname = 'btree';
SELECT keanon.check('single');
DROP TABLE single;

-- A multi-row INSERT writes its rows directly too: read from the
-- statement's transition table (rows without a value skipped, a value
-- stored out of line copied), sorted into (partition, slot) order, then
-- written with their index entries, so that an owner's row trigger on the
-- rows table sees none of them; nor does it see the new rows of a
-- multi-row UPDATE giving rows new values, read from its transition table
-- and written the same way.
CREATE TABLE multi (id integer PRIMARY KEY, note text, v integer);
ALTER TABLE multi ALTER note SET STORAGE EXTERNAL;
INSERT INTO multi SELECT i, 'first ' || i, (i * 53) % 211 FROM generate_series(1, 30) i;
SELECT keanon.watch('multi', 'v', '{note}', 3, 10);
-- (kept to the end of the single-row tests below, which use it too)
CREATE TABLE rows_table_writes (tab name, op text, id integer);
CREATE FUNCTION note_rows_table_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.rows_table_writes
	VALUES (TG_TABLE_NAME, TG_OP, (to_jsonb(CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END) ->> 'id')::integer);
	RETURN NULL;
END $$;
CREATE TRIGGER note_sql AFTER INSERT ON multi_keanon_rows
	FOR EACH ROW EXECUTE FUNCTION note_rows_table_write();
-- whether the rows table holds the table's rows with a value (each seen as
-- the expression image), the view shows their notes, the btrees are sound
-- and the partitioning is the optimum; kept to the end of single2 below
CREATE FUNCTION rows_agree(tab text, image text) RETURNS TABLE (rows_hold_table boolean,
	view_shows_all boolean, btrees_checked bigint, exact boolean) LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format($q$
	SELECT (SELECT array_agg(%2$s ORDER BY %2$s) FROM %1$I WHERE v IS NOT NULL) =
		   (SELECT array_agg(%2$s ORDER BY %2$s) FROM %3$I),
		   (SELECT array_agg(note ORDER BY note) FROM %1$I WHERE v IS NOT NULL) =
		   (SELECT array_agg(note ORDER BY note) FROM %4$I),
		   (SELECT count(bt_index_check(x.indexrelid, true))
			FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam
			WHERE x.indrelid = %3$L::regclass AND a.amname = 'btree'),
		   keanon.check(%1$L)$q$, tab, image, tab || '_keanon_rows', tab || '_anon');
END $$;
INSERT INTO multi SELECT i, CASE WHEN i = 37 THEN repeat(md5(i::text), 300) ELSE 'n' || i END,
	CASE WHEN i % 5 = 0 THEN NULL ELSE (i * 37) % 101 END FROM generate_series(31, 70) i;
INSERT INTO multi SELECT i, 'm' || i, (i * 13) % 97 FROM generate_series(71, 90) i
ON CONFLICT (id) DO NOTHING;
SELECT count(*) AS rows, count(keanon_pid) AS placed, count(*) FILTER (WHERE length(note) > 9000) AS long_note
FROM multi_keanon_rows;
-- arrivals continue the table's, in the statement's order
SELECT array_agg(id ORDER BY keanon_arrival) = array_agg(id ORDER BY id) AS arrival_in_order
FROM multi_keanon_rows;
SELECT * FROM rows_agree('multi', $$id || ':' || note || ':' || v$$);
SELECT count(*) AS sql_inserts FROM rows_table_writes;
UPDATE multi SET v = v + 1000 WHERE id IN (2, 3, 41);
SELECT array_agg(id ORDER BY id) AS sql_inserts FROM rows_table_writes;
SELECT * FROM rows_agree('multi', $$id || ':' || note || ':' || v$$);
-- quasi-identifiers only, and a key: the rows stay or move as the SQL did
UPDATE multi SET note = 'renamed ' || id WHERE id IN (4, 5, 6);
UPDATE multi SET id = id + 100, note = 'rekeyed' WHERE id IN (7, 8);
SELECT * FROM rows_agree('multi', $$id || ':' || note || ':' || v$$);
SELECT keanon.check('multi');
DROP TABLE multi;

-- A single-row DELETE finds its row through the rows table's primary key
-- (here on text and integer) and removes it directly: a row without a
-- value was never watched, an unplaced row only leaves, a placed one
-- leaves its partition.  A single-row UPDATE does the same when its key or
-- value changes, its new row then fresh, and otherwise gives the row its
-- new quasi-identifiers.  With that primary key gone, both run by SQL.
CREATE TABLE single2 (region text, id integer, note text, v integer, PRIMARY KEY (region, id));
ALTER TABLE single2 ALTER note SET STORAGE EXTERNAL;
SELECT keanon.watch('single2', 'v', '{note}', 3, 10);
INSERT INTO single2 VALUES ('b', 1, 'x', NULL);
INSERT INTO single2 VALUES ('a', 1, 'p', 5), ('a', 2, 'q', 9);
DELETE FROM single2 WHERE region = 'b';
DELETE FROM single2 WHERE region = 'a' AND id = 2;
SELECT count(*) AS rows, count(keanon_pid) AS placed FROM single2_keanon_rows;
INSERT INTO single2 SELECT 'c', i, 'n' || i, i * 3 FROM generate_series(1, 30) i;
DELETE FROM single2 WHERE region = 'c' AND id = 7;
DELETE FROM single2 WHERE region = 'c' AND id = 30;
DELETE FROM single2 WHERE region = 'a';
SELECT * FROM rows_agree('single2', $$region || id || ':' || v$$);
CREATE FUNCTION single2_updates() RETURNS TABLE (step text, rows_hold_table boolean,
	view_shows_all boolean, btrees_checked bigint, exact boolean) LANGUAGE plpgsql AS $$
DECLARE
	u text;
BEGIN
	FOREACH u IN ARRAY ARRAY[
		'UPDATE single2 SET note = ''renamed'' WHERE region = ''c'' AND id = 3',
		'UPDATE single2 SET note = note WHERE region = ''c'' AND id = 4',
		'UPDATE single2 SET v = 13 WHERE region = ''c'' AND id = 5',
		'UPDATE single2 SET v = 200, note = ''high'' WHERE region = ''c'' AND id = 6',
		'UPDATE single2 SET note = (SELECT string_agg(md5(i::text), '''') FROM generate_series(1, 400) i) WHERE region = ''c'' AND id = 11',
		'UPDATE single2 SET note = ''short again'' WHERE region = ''c'' AND id = 11',
		'UPDATE single2 SET note = repeat(''y'', 9000) WHERE region = ''c'' AND id = 13',
		'UPDATE single2 SET id = 99 WHERE region = ''c'' AND id = 8',
		'UPDATE single2 SET region = ''d'', v = v + 1 WHERE region = ''c'' AND id = 9',
		'UPDATE single2 SET v = NULL WHERE region = ''c'' AND id = 10',
		'UPDATE single2 SET v = 61 WHERE region = ''c'' AND id = 10',
		'UPDATE single2 SET note = ''gone'' WHERE region = ''zz''',
		'INSERT INTO single2 VALUES (''c'', 14, ''upsert'', 77) ON CONFLICT (region, id) DO UPDATE SET v = EXCLUDED.v, note = EXCLUDED.note',
		'INSERT INTO single2 VALUES (''e'', 1, ''upsert new'', 78) ON CONFLICT (region, id) DO UPDATE SET v = EXCLUDED.v',
		'MERGE INTO single2 t USING (VALUES (''c'', 15, 4), (''e'', 2, 80)) s(region, id, v) ON (t.region, t.id) = (s.region, s.id) '
		'WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.region, s.id, ''merged'', s.v)',
		'MERGE INTO single2 t USING (VALUES (''c'', 16)) s(region, id) ON (t.region, t.id) = (s.region, s.id) WHEN MATCHED THEN DELETE'] LOOP
		EXECUTE u;
		RETURN QUERY SELECT u, * FROM rows_agree('single2', $i$region || id || ':' || v$i$);
	END LOOP;
END $$;
-- the direct paths run no SQL on the rows table: a row trigger its owner
-- added there sees only the SQL path's deletions (once the key is gone)
TRUNCATE rows_table_writes;
CREATE TRIGGER note_sql AFTER DELETE ON single2_keanon_rows
	FOR EACH ROW EXECUTE FUNCTION note_rows_table_write();
SELECT * FROM single2_updates();
SELECT count(*) AS sql_deletes FROM rows_table_writes;
SELECT count(*) FILTER (WHERE note = 'renamed') AS renamed, count(*) FILTER (WHERE note = 'high') AS high,
	   count(*) FILTER (WHERE note = repeat('y', 9000)) AS long_note
FROM single2_anon;
SELECT pg_relation_size(reltoastrelid) > 0 AS rows_out_of_line FROM pg_class WHERE oid = 'single2_keanon_rows'::regclass;
ALTER TABLE single2_keanon_rows DROP CONSTRAINT single2_keanon_rows_pkey;
DELETE FROM single2 WHERE region = 'c' AND id = 12;
DELETE FROM single2 WHERE region = 'c' AND id = 1;
SELECT array_agg(id ORDER BY id) AS sql_deletes FROM rows_table_writes;
SELECT * FROM rows_agree('single2', $$region || id || ':' || v$$);
UPDATE single2 SET note = 'again' WHERE region = 'c' AND id = 3;
UPDATE single2 SET v = 14 WHERE region = 'c' AND id = 5;
SELECT * FROM rows_agree('single2', $$region || id || ':' || v$$);
-- a primary key on the key's columns in another order serves as well
ALTER TABLE single2_keanon_rows ADD PRIMARY KEY (id, region);
DELETE FROM single2 WHERE region = 'c' AND id = 2;
UPDATE single2 SET id = 98 WHERE region = 'c' AND id = 17;
UPDATE single2 SET v = 33 WHERE region = 'c' AND id = 18;
UPDATE single2 SET note = 'reordered' WHERE region = 'c' AND id = 19;
SELECT * FROM rows_agree('single2', $$region || id || ':' || v$$);
SELECT count(*) FILTER (WHERE note = 'reordered') AS reordered FROM single2_anon;
DROP TABLE single2, rows_table_writes;
DROP FUNCTION note_rows_table_write();
DROP FUNCTION single2_updates();
DROP FUNCTION rows_agree(text, text);

-- A single-row UPDATE moving a value across the table applies its old and
-- new value one by one: it reads the partitions and rows around each (as
-- the indexes' tuple counts of the transaction show), not the hundreds of
-- partitions between them
CREATE TABLE span (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO span SELECT i, i % 5, pg_catalog.hashint4(i) & 1048575 FROM generate_series(1, 5000) i;
SELECT keanon.watch('span', 'v', '{g}', 5, 20);
SELECT count(*) AS partitions, count(*) FILTER (WHERE lo > (SELECT v FROM span WHERE id = 5)) AS above
FROM span_keanon_parts;
BEGIN;
UPDATE span SET v = 1048580 WHERE id = 5;
SELECT (SELECT sum(pg_stat_get_xact_tuples_fetched(indexrelid)) FROM pg_index
		WHERE indrelid = 'span_keanon_parts'::regclass) < 40 AS few_partitions_read,
	   (SELECT sum(pg_stat_get_xact_tuples_fetched(indexrelid)) FROM pg_index
		WHERE indrelid = 'span_keanon_rows'::regclass) < 80 AS few_rows_read;
COMMIT;
SELECT keanon.check('span');
DROP TABLE span;
DROP EXTENSION amcheck;

-- A statement that changes more of the keanon index than work_mem holds
-- installs the pages it changed least recently before it ends (each logged
-- as at its end); the state is still the optimum, a savepoint rolled back
-- after such a statement is undone, and so is one rolled back past
-- work_mem's worth of page images (by a rebuild)
CREATE TABLE wide (id integer PRIMARY KEY, g integer, v integer);
SELECT keanon.watch('wide', 'v', '{g}', 3, 10);
SET work_mem = '64kB';
INSERT INTO wide SELECT i, i % 7, i * 3 FROM generate_series(1, 60000) i;
SELECT pg_relation_size('wide_keanon_idx') / 8192 > 300 AS more_pages_than_work_mem;
SELECT keanon.check('wide');
BEGIN;
INSERT INTO wide SELECT i, i % 7, i * 3 + 1 FROM generate_series(60001, 60100) i;
SAVEPOINT s;
INSERT INTO wide SELECT i, i % 7, i * 3 - 179999 FROM generate_series(60101, 120000) i;
ROLLBACK TO SAVEPOINT s;
UPDATE wide SET v = v + 1 WHERE id % 1000 = 0;
COMMIT;
SELECT count(*) FROM wide;
SELECT keanon.check('wide');
RESET work_mem;
DROP TABLE wide;

-- One row that would move every boundary: on evenly spaced values (k = 2,
-- e = 1) every placement of the one three-value partition is optimal, and
-- the report's algorithm moves it to the bottom when a value arrives above
-- the top.  A change keeps the boundaries it can: each arrival rewrites a
-- few rows, not half the table.  A rebuild of the index from the table
-- (after a rollback, REINDEX, a crash or a restore) lays out the report's
-- optimum; until the next writer takes the published partitioning back,
-- keanon.check checks the publication is an optimum of the rows.
CREATE TABLE even (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO even SELECT i, i % 3, i FROM generate_series(1, 2000) i;
SELECT keanon.watch('even', 'v', '{g}', 2, 1);
-- rows of the rows table this transaction wrote (inserted or updated)
CREATE FUNCTION even_rows_written() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM even_keanon_rows WHERE xmin = pg_current_xact_id()::xid $$;
BEGIN;
INSERT INTO even VALUES (3001, 0, 6001);
SELECT even_rows_written() <= 3 AS few_rows_written;
COMMIT;
SELECT keanon.check('even');
-- the report's optimum differs (its three-value partition is {1, 2, 3}),
-- with the same sum-error
SELECT (SELECT array_agg(max_value ORDER BY max_value) FROM keanon.partitions('even'))
	<> (SELECT array_agg(max_value ORDER BY max_value)
		FROM keanon.optimal_partitions(ARRAY(SELECT v FROM even)::bigint[], 2, 1)) AS another_optimum,
	(SELECT sum(error) FROM keanon.partitions('even'))
	= (SELECT sum(error) FROM keanon.optimal_partitions(ARRAY(SELECT v FROM even)::bigint[], 2, 1)) AS same_error;
SELECT max_value FROM keanon.partitions('even') WHERE distinct_values = 3;
CREATE TEMP TABLE even_parts AS SELECT min_value, max_value FROM keanon.partitions('even');
-- a rolled back write: the index is rebuilt from the table, and the
-- publication is still checked and kept
BEGIN;
INSERT INTO even VALUES (3002, 0, 6002);
ROLLBACK;
SELECT keanon.check('even');
SELECT count(*) AS partitions_moved FROM (
	SELECT min_value, max_value FROM keanon.partitions('even') EXCEPT SELECT * FROM even_parts) s;
-- REINDEX likewise; a reader's check, then the next writer, take the
-- publication's partitioning
REINDEX INDEX even_keanon_idx;
SELECT keanon.check('even');
BEGIN;
INSERT INTO even VALUES (3003, 0, 1500);
SELECT even_rows_written() <= 3 AS few_rows_written;
COMMIT;
SELECT keanon.check('even');
SELECT count(*) <= 1 AS few_partitions_moved FROM (
	SELECT min_value, max_value FROM keanon.partitions('even') EXCEPT SELECT * FROM even_parts) s;
-- a publication that is no optimum of the rows is refused, not adopted
REINDEX INDEX even_keanon_idx;
UPDATE even_keanon_parts SET hi = hi + 1, hi_split = false
WHERE keanon_pid = (SELECT min(keanon_pid) FROM even_keanon_parts);
SELECT keanon.check('even');
INSERT INTO even VALUES (3007, 0, 6007);
SELECT keanon.republish('even') > 0 AS republished;
SELECT keanon.check('even');
INSERT INTO even VALUES (3008, 0, 6008);
SELECT keanon.check('even');
DROP TABLE even;
DROP FUNCTION even_rows_written();
