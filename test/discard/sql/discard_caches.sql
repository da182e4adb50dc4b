--
-- Every mode of keanon under debug_discard_caches = 1: each catalog cache,
-- relation cache and plan entry is thrown away at every use, so that state
-- keanon caches (its watches, plans, hierarchies, index metadata) must be
-- rebuilt, or survive the invalidation, on every path.  Only a server built
-- with assertions accepts the setting (scripts/test-cassert.sh runs this).
-- The tables are made before the setting; every write, flush, release,
-- bound aggregate and check after it.
--
CREATE EXTENSION cube;
CREATE EXTENSION keanon;
CREATE TABLE p (id integer PRIMARY KEY, age integer, sal integer);
INSERT INTO p SELECT i, 20 + i % 40, 1000 + (i * 37) % 500 FROM generate_series(1, 60) i;
CREATE TABLE d (LIKE p INCLUDING ALL);
INSERT INTO d SELECT * FROM p;
CREATE TABLE r (LIKE p INCLUDING ALL);
INSERT INTO r SELECT * FROM p;
CREATE TABLE g (LIKE p INCLUDING ALL);
INSERT INTO g SELECT * FROM p;
SELECT keanon.watch('p', 'sal', '{age}', 3, 50);
SELECT keanon.watch('d', 'sal', '{age}', 3, 50, mode => 'deferred');
SELECT keanon.watch('r', 'sal', '{age}', 3, 50, mode => 'release');
SELECT keanon.watch('g', 'sal', '{age}', 3, 50, generalize => 3);
SET debug_discard_caches = 1;
-- live
INSERT INTO p VALUES (100, 30, 1234);
UPDATE p SET sal = sal + 7 WHERE id % 10 = 0;
DELETE FROM p WHERE id = 5;
UPDATE p SET sal = 5000 WHERE id = 11;
-- deferred (the worker is off: the flush here applies them)
INSERT INTO d VALUES (100, 30, 1234), (101, 33, 1111);
UPDATE d SET sal = 2000 WHERE id = 3;
DELETE FROM d WHERE id = 6;
SELECT mode, pending FROM keanon.status('d');
SELECT keanon.flush('d');
-- release
SELECT keanon.release('r') IS NOT NULL AS released;
INSERT INTO r VALUES (100, 30, 1234), (101, 31, 1300), (102, 32, 1400);
DELETE FROM r WHERE id = 9;
SELECT keanon.release('r') IS NOT NULL AS released;
-- generalized
INSERT INTO g VALUES (100, 30, 1234);
UPDATE g SET age = 50 WHERE id = 7;
DELETE FROM g WHERE id = 8;
-- readers' aggregates over whole views: exact
SELECT keanon.sum_bounds(keanon_pid) = numrange(s, s, '[]') AS sum_exact
FROM p_anon, (SELECT sum(sal) AS s FROM p) t GROUP BY s;
SELECT keanon.count_bounds(keanon_pid, NULL, NULL) = int8range(c, c, '[]') AS count_exact
FROM g_anon, (SELECT count(*) AS c FROM g) t GROUP BY c;
SELECT keanon.republish('p') > 0 AS republished;
TRUNCATE g;
INSERT INTO g SELECT i, 20 + i % 40, 1000 + (i * 37) % 500 FROM generate_series(1, 12) i;
RESET debug_discard_caches;
SELECT keanon.check('p') AS p, keanon.check('d') AS d, keanon.check('r') AS r, keanon.check('g') AS g;
