-- A PostgreSQL 15 database watching tables in every mode, dumped by
-- scripts/test-pg17.sh and restored into PostgreSQL 17 (restored_check.sql)
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION keanon;
CREATE EXTENSION cube;
CREATE TABLE kinds (value text, parent text);
INSERT INTO kinds VALUES ('*', NULL), ('a', '*'), ('b', '*'), ('a1', 'a'), ('a2', 'a'), ('b1', 'b');
CREATE TABLE t_live (id integer PRIMARY KEY, age integer NOT NULL, kind text NOT NULL, salary integer);
INSERT INTO t_live SELECT i, 20 + (i * 37) % 45, (ARRAY['a1', 'a2', 'b1'])[1 + i % 3], 1000 * (1 + (i * 7) % 60)
FROM generate_series(1, 300) i;
CREATE TABLE t_deferred (LIKE t_live INCLUDING ALL);
CREATE TABLE t_release (LIKE t_live INCLUDING ALL);
CREATE TABLE t_gen (LIKE t_live INCLUDING ALL);
CREATE TABLE t_gen_release (LIKE t_live INCLUDING ALL);
INSERT INTO t_deferred SELECT * FROM t_live;
INSERT INTO t_release SELECT * FROM t_live;
INSERT INTO t_gen SELECT * FROM t_live;
INSERT INTO t_gen_release SELECT * FROM t_live;
SELECT keanon.watch('t_live', 'salary', '{age,kind}', 3, 2000);
SELECT keanon.watch('t_deferred', 'salary', '{age,kind}', 3, 2000, mode => 'deferred');
SELECT keanon.watch('t_release', 'salary', '{age,kind}', 3, 2000, mode => 'release');
SELECT keanon.watch('t_gen', 'salary', '{age,kind}', 3, 2000, generalize => 4, hierarchies => '{"kind": "kinds"}');
SELECT keanon.watch('t_gen_release', 'salary', '{age,kind}', 3, 2000, mode => 'release', generalize => 3,
	hierarchies => '{"kind": "kinds"}');
INSERT INTO t_live VALUES (1001, 30, 'a1', 45000);
INSERT INTO t_deferred VALUES (1001, 30, 'a1', 45000);
SELECT keanon.flush('t_deferred');
SELECT keanon.release('t_release');
SELECT keanon.release('t_gen_release');
DELETE FROM t_gen WHERE id % 10 = 0;
-- what a reader of each view sees, to compare after the restore
CREATE TABLE seen AS
SELECT 't_live' AS tab, count(*) AS n, sum(salary) AS s FROM t_live_anon
UNION ALL SELECT 't_deferred', count(*), sum(salary) FROM t_deferred_anon
UNION ALL SELECT 't_release', count(*), sum(salary) FROM t_release_anon
UNION ALL SELECT 't_gen', count(*), sum(salary) FROM t_gen_anon
UNION ALL SELECT 't_gen_release', count(*), sum(salary) FROM t_gen_release_anon;
DO $$
BEGIN
	IF NOT (keanon.check('t_live') AND keanon.check('t_deferred') AND keanon.check('t_release')
			AND keanon.check('t_gen') AND keanon.check('t_gen_release')) THEN
		RAISE EXCEPTION 'a watch does not check before the dump';
	END IF;
END
$$;
