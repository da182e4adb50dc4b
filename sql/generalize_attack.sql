--
-- Attacks on a generalized watch: what a reader of the view, a writer or
-- another role can learn or change beyond the published groups.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
CREATE EXTENSION IF NOT EXISTS cube;
\set SHOW_CONTEXT never
SET client_min_messages = notice;

CREATE TABLE ga_h (value text, parent text);
INSERT INTO ga_h VALUES ('*', NULL), ('a', '*'), ('b', '*'), ('a1', 'a'), ('a2', 'a'), ('b1', 'b'), ('b2', 'b');
-- ages and salaries independent of each other and of the key's order
CREATE TABLE ga (id integer PRIMARY KEY, age integer NOT NULL, cat text NOT NULL, salary integer);
INSERT INTO ga SELECT i, (i::bigint * 7919) % 5000, (ARRAY['a1', 'a2', 'b1', 'b2'])[1 + (i::bigint * 104729) % 4],
	10000 + (i::bigint * 15485863) % 90000 FROM generate_series(1, 600) i;
SELECT keanon.watch('ga', 'salary', ARRAY['age', 'cat'], 4, 1000, generalize => 5,
	hierarchies => '{"cat": "ga_h"}');
-- then rows arrive one by one, as a table grows
DO $$
BEGIN
	FOR i IN 601 .. 800 LOOP
		INSERT INTO ga VALUES (i, (i::bigint * 7919) % 5000, (ARRAY['a1', 'a2', 'b1', 'b2'])[1 + (i::bigint * 104729) % 4],
			10000 + (i::bigint * 15485863) % 90000);
	END LOOP;
END;
$$;
SELECT keanon.check('ga');

-- 1. The view's row order follows published values alone: within each
-- group, the position of a row says nothing of its true age.  The owner
-- links the view's rows to the true ones where (group, partition,
-- published value) is unique, and measures the rank correlation between
-- the position in the group and the true age: near 0.  An order that
-- followed the true age (checked on the same data) would give 1.
CREATE FUNCTION ga_order_correlation(leaky boolean) RETURNS numeric
LANGUAGE sql AS $$
	WITH v AS (SELECT row_number() OVER () AS pos, * FROM ga_anon),
	r AS (SELECT m.keanon_group AS gid, x.keanon_pid, x.keanon_pub, t.age
		  FROM ga_keanon_rows x JOIN ga_keanon_members m ON m.id = x.id JOIN ga t ON t.id = x.id),
	uniq AS (SELECT gid, keanon_pid, keanon_pub, min(age) AS age FROM r
			 GROUP BY 1, 2, 3 HAVING count(*) = 1),
	linked AS (SELECT u.gid, u.age, CASE WHEN leaky THEN u.age ELSE v.pos END AS pos
			   FROM v JOIN uniq u ON u.keanon_pid = v.keanon_pid AND u.keanon_pub = v.salary
			   JOIN ga_keanon_groups g ON g.keanon_group = u.gid
			   WHERE g.age = v.age AND g.cat = v.cat),
	ranked AS (SELECT gid, rank() OVER (PARTITION BY gid ORDER BY pos) AS rp,
					  rank() OVER (PARTITION BY gid ORDER BY age) AS ra FROM linked)
	SELECT round(corr(rp, ra)::numeric, 1) FROM ranked
$$;
SELECT ga_order_correlation(false) BETWEEN -0.2 AND 0.2 AS order_independent_of_age,
	   ga_order_correlation(true) AS leaky_order_would_show;
-- under any plan the same order
SET enable_hashjoin = off;
CREATE TEMP TABLE plan1 AS SELECT row_number() OVER () AS pos, * FROM ga_anon;
SET enable_hashjoin = on;
SET enable_mergejoin = off;
SET enable_nestloop = off;
CREATE TEMP TABLE plan2 AS SELECT row_number() OVER () AS pos, * FROM ga_anon;
RESET enable_mergejoin;
RESET enable_nestloop;
SELECT count(*) AS rows_out_of_order FROM plan1 JOIN plan2 USING (pos)
WHERE (plan1.age, plan1.cat, plan1.keanon_pid, plan1.salary) IS DISTINCT FROM
	  (plan2.age, plan2.cat, plan2.keanon_pid, plan2.salary);

-- 2. Every published combination is shared by at least 5 rows
SELECT min(c) >= 5 AS k_anonymous FROM (SELECT count(*) c FROM ga_anon GROUP BY age, cat) s;

-- 3. Another role: reads the view, nothing else
CREATE ROLE keanon_ga_reader;
GRANT SELECT ON ga_anon TO keanon_ga_reader;
SET ROLE keanon_ga_reader;
SELECT count(*) > 0 AS reads_view FROM ga_anon;
SELECT * FROM ga_keanon_members LIMIT 1;
SELECT * FROM ga_keanon_groups LIMIT 1;
SELECT * FROM ga_keanon_hier LIMIT 1;
INSERT INTO ga_keanon_groups (keanon_group) VALUES (-1);
SELECT * FROM keanon.qi_members('ga') LIMIT 1;
SELECT * FROM keanon.qi_groups('ga') LIMIT 1;
SELECT keanon.regeneralize('ga');
SELECT keanon.optimize('ga');
SELECT keanon.register_generalization('ga', 2, 'i3m', '{1}', 'ga_keanon_hier', 'ga_keanon_groups', 'ga_keanon_members', '{0}');
-- bound answers work for the reader, over rows certain and perhaps selected
SELECT keanon.count_bounds(keanon_pid, age <@ int4range(1000, 2000, '[]'), NULL, NULL) IS NOT NULL AS bounds
FROM ga_anon WHERE age && int4range(1000, 2000, '[]');
RESET ROLE;
-- PUBLIC holds no privilege on the internal tables
SELECT c.relname, c.relacl FROM pg_class c WHERE c.relname LIKE 'ga\_keanon\_%' AND c.relkind = 'r' ORDER BY 1;

-- 4. A writer's refused value is named by its column, never shown
GRANT INSERT ON ga TO keanon_ga_reader;
SET ROLE keanon_ga_reader;
INSERT INTO ga VALUES (5000, 40, 'secret-category', 50000);
RESET ROLE;

-- 5. The owner's tampering: a hierarchy copy made inconsistent is caught
-- before use, not followed into a crash (a new session, which has not
-- cached the generalization yet)
\c -
UPDATE ga_keanon_hier SET parent = node WHERE dim = 2 AND node = 1;
INSERT INTO ga VALUES (5001, 40, 'a1', 50000);
UPDATE ga_keanon_hier SET parent = 0 WHERE dim = 2 AND node = 1;
UPDATE ga_keanon_hier SET leaf_hi = 1000 WHERE dim = 2 AND node = 0;
INSERT INTO ga VALUES (5001, 40, 'a1', 50000);
UPDATE ga_keanon_hier SET leaf_hi = 3 WHERE dim = 2 AND node = 0;
UPDATE ga_keanon_members SET keanon_x = '{1}' WHERE id = 7;
DELETE FROM ga WHERE id = 7;
UPDATE ga_keanon_members SET keanon_x = ARRAY[x.age::float8, l.leaf_lo::float8]
FROM ga x, ga_keanon_hier l WHERE x.id = ga_keanon_members.id AND ga_keanon_members.id = 7
	AND l.dim = 2 AND l.value = x.cat;
INSERT INTO ga VALUES (5001, 40, 'a1', 50000);
SELECT keanon.check('ga');

DROP TABLE ga CASCADE;
DROP ROLE keanon_ga_reader;

-- 6. Release mode, by subtraction: a reader keeps every release (tuples,
-- published values, partitions) and compares any two.  A breach is a row
-- of the earlier release whose tuple the later one no longer shows (a
-- group changed or shrank: the difference would single out who left or
-- moved), or a tuple the later release adds that fewer than k rows share
-- (a newcomer singled out by its quasi-identifiers).
CREATE FUNCTION qi_subtraction_breaches(old regclass, new regclass, k integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	lost bigint;
	thin bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM (SELECT age, cat FROM %s EXCEPT ALL SELECT age, cat FROM %s) d', old, new)
	INTO lost;
	EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM (SELECT age, cat FROM %s EXCEPT ALL SELECT age, cat FROM %s) a '
				   'GROUP BY age, cat HAVING count(*) < $1) s', new, old) INTO thin USING k;
	RETURN lost + thin;
END;
$$;
CREATE TABLE gr (id serial PRIMARY KEY, age integer NOT NULL, cat text NOT NULL, salary integer);
SELECT setseed(0.61);
INSERT INTO gr (age, cat, salary) SELECT (random() * 80)::integer, (ARRAY['a1', 'a2', 'b1', 'b2'])[1 + (random() * 3)::integer],
	(random() * 100000)::integer FROM generate_series(1, 60);
SELECT keanon.watch('gr', 'salary', ARRAY['age', 'cat'], 3, 1000, mode => 'release', generalize => 3,
	hierarchies => '{"cat": "ga_h"}');
-- twenty rounds of inserts, deletes, updates and releases; every release
-- checks, and no pair of kept releases, consecutive or not, breaches
DO $$
DECLARE
	no bigint;
	bad bigint := 0;
BEGIN
	FOR round IN 1 .. 20 LOOP
		INSERT INTO gr (age, cat, salary) SELECT (random() * 80)::integer,
			(ARRAY['a1', 'a2', 'b1', 'b2'])[1 + (random() * 3)::integer], (random() * 100000)::integer
		FROM generate_series(1, (random() * 8)::integer);
		DELETE FROM gr WHERE id IN (SELECT id FROM gr ORDER BY random() LIMIT (random() * 4)::integer);
		UPDATE gr SET age = age + 1 WHERE id IN (SELECT id FROM gr ORDER BY random() LIMIT (random() * 3)::integer);
		no := keanon.release('gr');
		EXECUTE format('CREATE TABLE gr_r%s AS SELECT age, cat, salary, keanon_pid FROM gr_anon', no);
		IF NOT keanon.check('gr') THEN
			RAISE EXCEPTION 'check failed after release %', no;
		END IF;
	END LOOP;
	FOR a IN 1 .. no LOOP
		FOR b IN a + 1 .. no LOOP
			bad := bad + qi_subtraction_breaches(format('gr_r%s', a)::regclass, format('gr_r%s', b)::regclass, 3);
		END LOOP;
	END LOOP;
	RAISE NOTICE 'releases: %, breaches over every pair: %', no, bad;
	FOR a IN 1 .. no LOOP
		EXECUTE format('DROP TABLE gr_r%s', a);
	END LOOP;
END;
$$;
SELECT min(c) >= 3 AS last_release_k_anonymous FROM (SELECT count(*) c FROM gr_anon GROUP BY age, cat) s;
-- the attacker is not blind: a live view read before and after one INSERT
-- shows the newcomer's tuple on fewer than k new rows, or a changed group
SELECT keanon.unwatch('gr');
SELECT keanon.watch('gr', 'salary', ARRAY['age', 'cat'], 3, 1000, generalize => 3, hierarchies => '{"cat": "ga_h"}');
CREATE TABLE gr_live1 AS SELECT age, cat FROM gr_anon;
INSERT INTO gr (age, cat, salary) VALUES (41, 'a2', 55000);
CREATE TABLE gr_live2 AS SELECT age, cat FROM gr_anon;
SELECT qi_subtraction_breaches('gr_live1', 'gr_live2', 3) > 0 AS live_subtraction_flagged;
DROP TABLE gr CASCADE;
DROP TABLE gr_live1, gr_live2;
DROP FUNCTION qi_subtraction_breaches(regclass, regclass, integer);

-- the owner's changes to the group tables are errors where keanon reads
-- them, never a crash: a NULL in the members' coordinates (its NOT NULL
-- dropped), a NULL coordinate, a member's key retyped (here to name, read
-- as the table's text otherwise)
\set VERBOSITY terse
CREATE TABLE gt (id text PRIMARY KEY, age integer, s integer);
INSERT INTO gt SELECT E'\\x04AAA' || i, 20 + i % 50, (i * 37) % 101 FROM generate_series(1, 200) i;
SELECT keanon.watch('gt', 's', '{age}', 3, 5, generalize => 3);
SET keanon.following_ddl = on;
ALTER TABLE gt_keanon_members ALTER keanon_x DROP NOT NULL;
RESET keanon.following_ddl;
BEGIN;
UPDATE gt_keanon_members SET keanon_x = NULL;
INSERT INTO gt SELECT 'x' || i, 30, i FROM generate_series(1, 10) i;
ROLLBACK;
BEGIN;
UPDATE gt_keanon_members SET keanon_x = array_prepend(NULL::float8, keanon_x[2:]);
INSERT INTO gt SELECT 'x' || i, 30, i FROM generate_series(1, 10) i;
ROLLBACK;
CREATE OR REPLACE VIEW gt_anon WITH (security_barrier) AS
	SELECT gr.age, r.keanon_pub AS s, r.keanon_pid FROM gt_keanon_rows r JOIN gt_keanon_groups gr ON false;
ALTER TABLE gt_keanon_members ALTER COLUMN id TYPE name;
INSERT INTO gt SELECT E'\\x04AAAx' || i, 30, i FROM generate_series(1, 10) i;
\set VERBOSITY default
DROP TABLE gt CASCADE;
-- a group's box or a member's coordinates outside the hierarchy's leaves
-- (the clustering core indexes the hierarchy by them), or a box between
-- leaves: errors where keanon reads them
\set VERBOSITY terse
CREATE TABLE gth(value text, parent text);
INSERT INTO gth VALUES ('any',NULL),('a','any'),('b','any'),('c','any'),('d','any');
CREATE TABLE gtc(id int primary key, cat text, age int, s int);
INSERT INTO gtc SELECT i,(ARRAY['a','b','c','d'])[1+i%4],20+i%30,i*13%100 FROM generate_series(1,60) i;
CREATE TABLE gtc2 AS SELECT * FROM gtc; ALTER TABLE gtc2 ADD PRIMARY KEY (id);
SELECT keanon.watch('gtc','s','{cat,age}',3,5,generalize=>3,hierarchies=>'{"cat":"gth"}');
SELECT keanon.watch('gtc2','s','{cat,age}',3,5,generalize=>3,hierarchies=>'{"cat":"gth"}');
BEGIN;
UPDATE gtc_keanon_groups SET keanon_lo[1]=2e9, keanon_hi[1]=2e9;
INSERT INTO gtc VALUES (1000,'a',25,50);
ROLLBACK;
BEGIN;
UPDATE gtc_keanon_groups SET keanon_lo[1]=1.5;
INSERT INTO gtc VALUES (1000,'a',25,50);
ROLLBACK;
UPDATE gtc2_keanon_members SET keanon_x[1]=2e9; DELETE FROM gtc2 WHERE id BETWEEN 1 AND 12;
SELECT keanon.check('gtc');
\set VERBOSITY default
DROP TABLE gtc, gtc2, gth CASCADE;

\set VERBOSITY terse
CREATE ROLE keanon_eve;
-- a generalized watch whose view shows nothing yet (fewer than K rows):
-- a reader of the view gets nothing of its partitions either
CREATE TABLE few (id integer PRIMARY KEY, age integer, salary integer);
INSERT INTO few SELECT g, g, 1000 * g FROM generate_series(1, 20) g;
SELECT keanon.watch('few', 'salary', '{age}', 2, 0, generalize => 50);
GRANT SELECT ON few_anon TO keanon_eve;
SET ROLE keanon_eve;
SELECT count(*) FROM few_anon;
SELECT count(*) FROM keanon.partitions('few');
SELECT count(*) FROM keanon.privacy_report('few');
SELECT published FROM keanon.status('few');
RESET ROLE;
SELECT min(keanon_pid) AS few_pid FROM few_keanon_parts \gset
SET ROLE keanon_eve;
SELECT keanon.sum_bounds(x) FROM (VALUES (:few_pid::bigint)) v(x);
RESET ROLE;
SELECT keanon.check('few');
\set VERBOSITY default
DROP TABLE few CASCADE;
DROP ROLE keanon_eve;

-- A published range holds every member's true value: real and double
-- precision bounds rounded outward from their exact binary values (a
-- numeric cast keeps 6 or 15 digits: 123456.703125 was published as
-- [123457,123457]), and a discrete range holding its type's largest value
-- has no upper bound (int4range(x, 2147483647, '[]') does not exist)
SELECT keanon.float8_outward(x, false) AS down, keanon.float8_outward(x, true) AS up
FROM (VALUES (0.1::float8), (-0.1), (123456.703125), (0.30000000000000004), (0)) v(x);
SELECT x, down::float8 <= x AND up::float8 >= x AS holds, up - down <= pg_catalog.abs(x::numeric) * 1e-16 AS tight,
	length(trim(leading '0' from trim(trailing '0' from replace(abs(down)::text, '.', '')))) AS down_digits
FROM (VALUES (1e300::float8), (-1e300), (5e-324), (2.2250738585072014e-308)) v(x),
	LATERAL (SELECT keanon.float8_outward(x, false) AS down, keanon.float8_outward(x, true) AS up) o;
CREATE TABLE gx (id integer PRIMARY KEY, x real NOT NULL, y float8 NOT NULL, n integer NOT NULL,
	d date NOT NULL, b bigint NOT NULL, s integer);
INSERT INTO gx SELECT i, 123456.7 + (i % 3), 0.30000000000000004 + (i % 3),
	CASE WHEN i % 2 = 0 THEN 2147483647 ELSE i END,
	CASE WHEN i % 2 = 0 THEN DATE '5874897-12-31' ELSE DATE '2020-01-01' + i END,
	CASE WHEN i % 2 = 0 THEN 9223372036854775807 ELSE i END, (i * 37) % 101
FROM generate_series(1, 30) i;
SELECT keanon.watch('gx', 's', '{x,y,n,d,b}', 3, 5, generalize => 3, mode => 'deferred');
SELECT keanon.check('gx');
-- each row's values inside the ranges of the group it belongs to
CREATE FUNCTION gx_covered() RETURNS TABLE (rows bigint, covered boolean) LANGUAGE sql AS $$
	SELECT count(*), bool_and(lower(g.x)::float8 <= t.x AND upper(g.x)::float8 >= t.x
		AND lower(g.y)::float8 <= t.y AND upper(g.y)::float8 >= t.y
		AND g.n @> t.n AND g.d @> t.d AND g.b @> t.b)
	FROM gx t JOIN keanon.qi_members('gx') m ON (m.key->>'id')::integer = t.id
	JOIN gx_keanon_groups g ON g.keanon_group = m.group_id
$$;
SELECT * FROM gx_covered();
SELECT count(*) FILTER (WHERE upper_inf(n)) > 0 AS unbounded_above FROM gx_keanon_groups;
-- a writer's rows of such values no longer stop every later flush
CREATE ROLE keanon_gx_writer;
GRANT INSERT, UPDATE (s) ON gx TO keanon_gx_writer;
SET ROLE keanon_gx_writer;
INSERT INTO gx VALUES (1001, 1, 1, 2147483647, DATE '5874897-12-31', 9223372036854775807, 50),
	(1002, 1, 1, 2147483647, DATE '5874897-12-31', 9223372036854775807, 51),
	(1003, 1, 1, 2147483647, DATE '5874897-12-31', 9223372036854775807, 52);
RESET ROLE;
SELECT keanon.flush('gx') > 0 AS flushed, keanon.check('gx');
SELECT * FROM gx_covered();
-- a numeric value past a double's range has no coordinate: refused by its
-- column's name alone, to a writer who cannot read it (the cast's error
-- quoted it); one below a double's range counts as zero
CREATE TABLE gn (id integer PRIMARY KEY, amt numeric NOT NULL, s integer);
INSERT INTO gn SELECT i, i, i FROM generate_series(1, 12) i;
SELECT keanon.watch('gn', 's', '{amt}', 3, 1, generalize => 3);
INSERT INTO gn VALUES (100, 1.234567e-350, NULL), (101, 7.654321e400, NULL);
GRANT SELECT (id), UPDATE (s) ON gn TO keanon_gx_writer;
SET ROLE keanon_gx_writer;
UPDATE gn SET s = 7 WHERE id = 100;
UPDATE gn SET s = 8 WHERE id = 101;
RESET ROLE;
SELECT keanon.check('gn');
SELECT count(*) AS rows, bool_and(g.amt @> t.amt) AS covered
FROM gn t JOIN keanon.qi_members('gn') m ON (m.key->>'id')::integer = t.id
JOIN gn_keanon_groups g ON g.keanon_group = m.group_id;
DROP FUNCTION gx_covered();
DROP TABLE gx, gn CASCADE;
DROP ROLE keanon_gx_writer;

-- The owner empties a group (its count zero, its place everywhere):
-- keanon.optimize looked up the hierarchy leaf of the empty group's box
-- (minus infinity as an index) and crashed the server; an empty group now
-- covers nothing, and keanon.check names the damage
CREATE TABLE ge_h (value text, parent text);
INSERT INTO ge_h VALUES ('any', NULL), ('a', 'any'), ('b', 'any'), ('c', 'any');
CREATE TABLE ge (id integer PRIMARY KEY, w text, age integer, s integer);
INSERT INTO ge SELECT i, (ARRAY['a', 'b', 'c'])[1 + i % 3], 20 + i % 30, i FROM generate_series(1, 30) i;
SELECT keanon.watch('ge', 's', ARRAY['w', 'age'], 3, 0, generalize => 3,
					hierarchies => '{"w": "ge_h"}') IS NOT NULL AS watched;
UPDATE ge_keanon_groups SET keanon_n = 0,
	keanon_place = cube(ARRAY[-1e300, -1e300, -1e300]::float8[], ARRAY[1e300, 1e300, 1e300]::float8[])
WHERE keanon_group = (SELECT min(keanon_group) FROM ge_keanon_groups);
SELECT keanon.optimize('ge') >= 0 AS optimized;
SELECT keanon.check('ge');
DROP TABLE ge, ge_h CASCADE;

-- A writer's session settings: a value compared with its hierarchy's
-- leaves as text is printed exactly by the writer's check and by the flush
-- alike.  With extra_float_digits = 0, 0.1 + 2e-17 printed as the leaf
-- 0.1, passed the writer's check, and stopped every later flush (the
-- flush printed it exactly); an owner's flush with extra_float_digits = 0
-- took the leaf 0.30000000000000004 for no leaf.
CREATE ROLE keanon_gs_writer;
CREATE TABLE gs_fh (value float8, parent float8);
INSERT INTO gs_fh VALUES (-1, NULL), (0.1, -1), (0.2, -1), (0.1::float8 + 0.2::float8, -1), (0.4, -1);
CREATE TABLE gs_f (id integer PRIMARY KEY, x float8, s integer);
INSERT INTO gs_f SELECT i, (ARRAY[0.1, 0.2, 0.1::float8 + 0.2::float8, 0.4]::float8[])[1 + i % 4], i * 100
FROM generate_series(1, 20) i;
SELECT value::text AS leaf FROM gs_fh WHERE value > 0.29 AND value < 0.31;
SELECT keanon.watch('gs_f', 's', '{x}', k => 3, e => 100, generalize => 3,
					hierarchies => '{"x": "gs_fh"}', mode => 'deferred') IS NOT NULL AS watched;
GRANT INSERT ON gs_f TO keanon_gs_writer;
SET ROLE keanon_gs_writer;
SET extra_float_digits = 0;
INSERT INTO gs_f VALUES (101, 0.1 + 2e-17, 8888);
INSERT INTO gs_f VALUES (102, 0.1::float8 + 0.2::float8, 7777);
RESET extra_float_digits;
RESET ROLE;
SET extra_float_digits = 0;
SELECT keanon.flush('gs_f') AS flushed, keanon.check('gs_f');
RESET extra_float_digits;

-- Two finite but huge values: their group's sum of coordinates overflowed
-- to infinity, which every later write read as a damaged group (each of
-- them then failed, the owner's too).  Refused in the writer's statement,
-- by the column's name.
CREATE TABLE gs_h (id integer PRIMARY KEY, x float8, s integer);
INSERT INTO gs_h SELECT i, i, i * 100 FROM generate_series(1, 20) i;
SELECT keanon.watch('gs_h', 's', '{x}', k => 3, e => 100, generalize => 3) IS NOT NULL AS watched;
CREATE TABLE gs_hn (id integer PRIMARY KEY, x numeric, s integer);
INSERT INTO gs_hn SELECT i, i, i * 100 FROM generate_series(1, 20) i;
SELECT keanon.watch('gs_hn', 's', '{x}', k => 3, e => 100, generalize => 3,
					mode => 'deferred') IS NOT NULL AS watched;
GRANT INSERT ON gs_h, gs_hn TO keanon_gs_writer;
SET ROLE keanon_gs_writer;
INSERT INTO gs_h VALUES (100, 1e308, 1), (101, 1e308, 2);
INSERT INTO gs_h VALUES (102, -1.7e308, 3);
INSERT INTO gs_hn VALUES (100, 1e300, 1), (101, 1e300, 2);
INSERT INTO gs_h VALUES (103, 1e290, 3), (104, -1e290, 4), (105, 5, 5);
INSERT INTO gs_hn VALUES (103, 7, 4);
RESET ROLE;
INSERT INTO gs_h VALUES (106, 7, 6);
SELECT keanon.check('gs_h');
SELECT keanon.flush('gs_hn') AS flushed, keanon.check('gs_hn');

-- TRUNCATE of a release watch with generalization: the last release, its
-- partitions and its groups stay published (it named a members table that
-- such a watch does not have, and failed)
CREATE TABLE gs_r (id integer PRIMARY KEY, a integer, s integer);
INSERT INTO gs_r SELECT i, i, i * 10 FROM generate_series(1, 20) i;
SELECT keanon.watch('gs_r', 's', '{a}', k => 3, e => 10, generalize => 3, mode => 'release') IS NOT NULL AS watched;
SELECT keanon.release('gs_r') IS NOT NULL AS released;
SELECT count(*) AS published FROM gs_r_anon;
TRUNCATE gs_r;
SELECT count(*) AS still_published FROM gs_r_anon;
SELECT keanon.check('gs_r');
DROP TABLE gs_f, gs_fh, gs_h, gs_hn, gs_r CASCADE;
DROP ROLE keanon_gs_writer;

-- A role that may create in cube's schema adds cube(float8[], float8[],
-- boolean DEFAULT ...) there: a call of cube($6, $7) in keanon's statements
-- became ambiguous in every new session, and every write, flush and
-- regeneralization failed.  keanon builds a group's place with the
-- extension's own function, found by its exact signature, and binds it.
CREATE ROLE keanon_gs_mallory;
SELECT n.nspname AS cube_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'cube' \gset
GRANT CREATE ON SCHEMA :"cube_schema" TO keanon_gs_mallory;
CREATE TABLE gs_cube (id integer PRIMARY KEY, age integer, zip integer, salary integer);
INSERT INTO gs_cube SELECT g, 20 + g % 40, 1000 + g % 97, 1000 + g FROM generate_series(1, 200) g;
SELECT keanon.watch('gs_cube', 'salary', '{age,zip}', k => 3, e => 10, generalize => 5) IS NOT NULL AS watched;
SET ROLE keanon_gs_mallory;
CREATE FUNCTION :"cube_schema".cube(float8[], float8[], boolean DEFAULT true)
RETURNS :"cube_schema".cube LANGUAGE sql AS 'SELECT NULL::cube';
RESET ROLE;
\c
SET client_min_messages = warning;
INSERT INTO gs_cube SELECT g, 20 + g % 40, 1000 + g % 97, 1000 + g FROM generate_series(201, 260) g;
SELECT keanon.regeneralize('gs_cube') IS NOT NULL AS regeneralized;
SELECT keanon.check('gs_cube');
SELECT count(*) AS published FROM gs_cube_anon;
DROP FUNCTION :"cube_schema".cube(float8[], float8[], boolean);
REVOKE CREATE ON SCHEMA :"cube_schema" FROM keanon_gs_mallory;
DROP TABLE gs_cube CASCADE;
DROP ROLE keanon_gs_mallory;

-- Groups of one tuple are not told apart by the view's order: it lists
-- rows by their groups' published tuples, then partition and published
-- value (by the groups' internal numbers, the partition order restarted
-- at each group, and the numbers follow the order the groups were made in)
CREATE TABLE gs_ord (id integer PRIMARY KEY, q integer, s integer);
INSERT INTO gs_ord SELECT i, 1, (i * 37) % 101 FROM generate_series(1, 60) i;
SELECT keanon.watch('gs_ord', 's', '{q}', k => 3, e => 5, generalize => 4) IS NOT NULL AS watched;
SELECT count(DISTINCT group_id) > 1 AS several_groups, count(DISTINCT q) AS tuples
FROM keanon.qi_groups('gs_ord') CROSS JOIN (SELECT DISTINCT q FROM gs_ord_anon) t;
WITH v AS (SELECT row_number() OVER () AS pos, keanon_pid, s FROM gs_ord_anon)
SELECT bool_and((keanon_pid, s) >= (prev_pid, prev_s) OR prev_pid IS NULL) AS one_order
FROM (SELECT keanon_pid, s, lag(keanon_pid) OVER (ORDER BY pos) AS prev_pid,
			 lag(s) OVER (ORDER BY pos) AS prev_s FROM v) o;
SELECT keanon.check('gs_ord');
DROP TABLE gs_ord CASCADE;

-- A categorical date or time quasi-identifier is matched with its
-- hierarchy's leaves as text.  Printed under the writer's own settings, 1
-- December was, for a writer who puts the day first, the text another puts
-- for 12 January, and a row was generalized under the wrong day; a writer
-- in another time zone could not be matched at all, and in deferred mode
-- the flush, printing in the worker's zone, failed.  The watch keeps the
-- leaves in ISO style, in UTC, and prints every value so.
SET DateStyle = 'SQL, DMY';
CREATE TABLE gs_days (value text, parent text);
INSERT INTO gs_days VALUES ('any', NULL), ('December', 'any'), ('January', 'any'), ('01/12/2020', 'December'),
	('02/12/2020', 'December'), ('12/01/2020', 'January'), ('13/01/2020', 'January');
CREATE TABLE gs_day (id integer PRIMARY KEY, day date NOT NULL, s integer);
INSERT INTO gs_day SELECT g, (ARRAY[date '2020-12-01', date '2020-12-02', date '2020-01-12', date '2020-01-13'])[1 + g % 4],
	1000 + 37 * g FROM generate_series(1, 40) g;
SELECT keanon.watch('gs_day', 's', '{day}', k => 3, e => 10, generalize => 3,
	hierarchies => '{"day": "gs_days"}') IS NOT NULL AS watched;
SELECT array_agg(value ORDER BY leaf_lo) AS leaves FROM gs_day_keanon_hier WHERE height = 0;
SET DateStyle = 'SQL, MDY';
INSERT INTO gs_day VALUES (101, '2020-12-01', 9000), (102, '2020-12-01', 9100), (103, '2020-12-01', 9200);
SET DateStyle = 'German';
INSERT INTO gs_day VALUES (104, '2020-01-13', 9300);
RESET DateStyle;
-- each row is a member at its own day's leaf
SELECT m.id, h.value AS leaf FROM gs_day_keanon_members m
JOIN gs_day_keanon_hier h ON h.dim = 1 AND h.height = 0 AND h.leaf_lo = m.keanon_x[1]
WHERE m.id > 100 ORDER BY m.id;
SELECT keanon.check('gs_day');
-- a hierarchy whose leaf is no date, or with two leaves of one day, is refused
CREATE TABLE gs_days_bad (value text, parent text);
INSERT INTO gs_days_bad VALUES ('any', NULL), ('2020-12-01', 'any'), ('2020-12-02', 'any'), ('2020-01-12', 'any'),
	('2020-01-13', 'any'), ('someday', 'any');
CREATE TABLE gs_day2 AS SELECT * FROM gs_day WHERE id <= 40;
ALTER TABLE gs_day2 ADD PRIMARY KEY (id);
SELECT keanon.watch('gs_day2', 's', '{day}', k => 3, e => 10, generalize => 3, hierarchies => '{"day": "gs_days_bad"}');
UPDATE gs_days_bad SET value = 'Tue 01 Dec 2020' WHERE value = 'someday';
SELECT keanon.watch('gs_day2', 's', '{day}', k => 3, e => 10, generalize => 3, hierarchies => '{"day": "gs_days_bad"}');
-- nor is a quasi-identifier whose text depends on other settings
CREATE TABLE gs_money (id integer PRIMARY KEY, price money NOT NULL, s integer);
INSERT INTO gs_money SELECT g, (g % 2)::numeric::money, g * 100 FROM generate_series(1, 20) g;
CREATE TABLE gs_prices (value money, parent money);
INSERT INTO gs_prices VALUES (9, NULL), (0, 9), (1, 9);
SELECT keanon.watch('gs_money', 's', '{price}', k => 3, e => 10, generalize => 3, hierarchies => '{"price": "gs_prices"}');
CREATE DOMAIN gs_price AS money;
ALTER TABLE gs_money ALTER COLUMN price TYPE gs_price;
SELECT keanon.watch('gs_money', 's', '{price}', k => 3, e => 10, generalize => 3, hierarchies => '{"price": "gs_prices"}');
-- at any depth: an array of regclass (a writer's temporary table named
-- like a catalog printed one way in its session, another in the flush's),
-- a composite holding money, a range over a domain over money is no range
CREATE TABLE gs_rels (id integer PRIMARY KEY, rels regclass[] NOT NULL, s integer);
INSERT INTO gs_rels SELECT g, ARRAY[(CASE WHEN g % 2 = 0 THEN 'pg_class' ELSE 'pg_type' END)::regclass], g * 100
FROM generate_series(1, 20) g;
CREATE TABLE gs_rels_h (value text, parent text);
INSERT INTO gs_rels_h VALUES ('any', NULL), ('{pg_class}', 'any'), ('{pg_type}', 'any');
SELECT keanon.watch('gs_rels', 's', '{rels}', k => 3, e => 10, generalize => 3, mode => 'deferred',
	hierarchies => '{"rels": "gs_rels_h"}');
CREATE TYPE gs_priced AS (label text, price gs_price);
CREATE TABLE gs_priced_t (id integer PRIMARY KEY, p gs_priced NOT NULL, s integer);
INSERT INTO gs_priced_t SELECT g, ROW('a', (g % 2)::numeric::money)::gs_priced, g * 100 FROM generate_series(1, 20) g;
CREATE TABLE gs_priced_h (value text, parent text);
INSERT INTO gs_priced_h VALUES ('any', NULL), ('(a,$0.00)', 'any'), ('(a,$1.00)', 'any');
SELECT keanon.watch('gs_priced_t', 's', '{p}', k => 3, e => 10, generalize => 3, hierarchies => '{"p": "gs_priced_h"}');
SELECT count(*) AS not_watched FROM keanon.watches
WHERE relid IN ('gs_day2'::regclass, 'gs_money'::regclass, 'gs_rels'::regclass, 'gs_priced_t'::regclass);

-- a deferred watch of a timestamptz quasi-identifier, its hierarchy
-- written in Paris; a writer in Tokyo, the flush wherever it runs
SET TimeZone = 'Europe/Paris';
CREATE TABLE gs_stamps (value text, parent text);
INSERT INTO gs_stamps VALUES ('any', NULL), ('2020-01-01 01:00:00+01', 'any'), ('2020-01-02 01:00:00+01', 'any');
CREATE TABLE gs_stamp (id integer PRIMARY KEY, at timestamptz NOT NULL, s integer);
INSERT INTO gs_stamp SELECT g, timestamptz '2020-01-01 00:00:00+00' + (g % 2) * interval '1 day', 1000 + 37 * g
FROM generate_series(1, 20) g;
SELECT keanon.watch('gs_stamp', 's', '{at}', k => 3, e => 10, generalize => 3, mode => 'deferred',
	hierarchies => '{"at": "gs_stamps"}') IS NOT NULL AS watched;
SELECT array_agg(value ORDER BY leaf_lo) AS leaves FROM gs_stamp_keanon_hier WHERE height = 0;
SET TimeZone = 'Asia/Tokyo';
SET DateStyle = 'SQL, DMY';
INSERT INTO gs_stamp VALUES (101, '2020-01-02 09:00:00+09', 9000), (102, '2020-01-01 09:00:00+09', 9100),
	(103, '2020-01-01 09:00:00+09', 9200);
RESET DateStyle;
SET TimeZone = 'America/New_York';
SELECT keanon.flush('gs_stamp') AS flushed, keanon.check('gs_stamp');
RESET TimeZone;
SELECT m.id, h.value AS leaf FROM gs_stamp_keanon_members m
JOIN gs_stamp_keanon_hier h ON h.dim = 1 AND h.height = 0 AND h.leaf_lo = m.keanon_x[1]
WHERE m.id > 100 ORDER BY m.id;
-- a hierarchy of the column's own type is read as values, not as text:
-- printed in Kolkata's SQL style a leaf reads '01/01/2020 05:30:00 IST',
-- and IST read back is Israel's time
SET TimeZone = 'Asia/Kolkata';
SET DateStyle = 'SQL, DMY';
CREATE TABLE gs_instants (value timestamptz, parent timestamptz);
INSERT INTO gs_instants VALUES ('2000-01-01 00:00:00+00', NULL), ('2020-01-01 00:00:00+00', '2000-01-01 00:00:00+00'),
	('2020-01-02 00:00:00+00', '2000-01-01 00:00:00+00');
CREATE TABLE gs_instant (id integer PRIMARY KEY, at timestamptz NOT NULL, s integer);
INSERT INTO gs_instant SELECT g, timestamptz '2020-01-01 00:00:00+00' + (g % 2) * interval '1 day', 1000 + 37 * g
FROM generate_series(1, 20) g;
SELECT keanon.watch('gs_instant', 's', '{at}', k => 3, e => 10, generalize => 3,
	hierarchies => '{"at": "gs_instants"}') IS NOT NULL AS watched;
RESET DateStyle;
RESET TimeZone;
SELECT array_agg(value ORDER BY leaf_lo) AS leaves FROM gs_instant_keanon_hier WHERE height = 0;
SELECT keanon.check('gs_instant');
DROP TABLE gs_day, gs_day2, gs_days, gs_days_bad, gs_money, gs_prices, gs_stamp, gs_stamps, gs_instant, gs_instants,
	gs_rels, gs_rels_h, gs_priced_t, gs_priced_h CASCADE;
DROP TYPE gs_priced;
DROP DOMAIN gs_price;

-- an owner's cast to text that runs a block with an exception handler
-- (which releases every lightweight lock when it catches): keanon.check
-- reads the index between its queries, and holds none of its pages then
-- (it failed with "lock BufferContent is not held"); a cast that writes
-- the watched table itself would have waited on a page lock it held
CREATE TYPE gs_mood AS ENUM ('calm', 'glad');
CREATE TABLE gs_mood_log (n integer);
CREATE FUNCTION gs_mood_text(gs_mood) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		INSERT INTO public.gs_mood_log VALUES (1 / 0);
	EXCEPTION WHEN division_by_zero THEN
		INSERT INTO public.gs_mood_log VALUES (1);
	END;
	RETURN format('%s', $1);
END;
$$;
CREATE CAST (gs_mood AS text) WITH FUNCTION gs_mood_text(gs_mood);
CREATE TABLE gs_moods (value text, parent text);
INSERT INTO gs_moods VALUES ('any', NULL), ('calm', 'any'), ('glad', 'any');
CREATE TABLE gs_feel (id integer PRIMARY KEY, mood gs_mood NOT NULL, s integer);
INSERT INTO gs_feel SELECT g, (ARRAY['calm', 'glad']::gs_mood[])[1 + g % 2], 1000 + 37 * g FROM generate_series(1, 30) g;
SELECT keanon.watch('gs_feel', 's', '{mood}', k => 3, e => 10, generalize => 3,
	hierarchies => '{"mood": "gs_moods"}') IS NOT NULL AS watched;
SELECT keanon.check('gs_feel');
INSERT INTO gs_feel VALUES (31, 'glad', 5000);
SELECT keanon.check('gs_feel');
SELECT count(*) > 0 AS cast_ran FROM gs_mood_log;
-- an owner's trigger on the members table that writes the watched table:
-- that write would open the watch's index a second time, and the outer
-- write installed its older pages over the nested one's (the row was
-- lost, check failed); it is refused, and the statement with it
CREATE FUNCTION gs_nest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.gs_feel VALUES (1000 + NEW.id, 'calm', 4242);
	RETURN NULL;
END;
$$;
CREATE TRIGGER gs_nest AFTER INSERT ON gs_feel_keanon_members FOR EACH ROW EXECUTE FUNCTION gs_nest();
\set VERBOSITY terse
INSERT INTO gs_feel VALUES (32, 'calm', 5100);
\set VERBOSITY default
DROP TRIGGER gs_nest ON gs_feel_keanon_members;
DROP FUNCTION gs_nest();
INSERT INTO gs_feel VALUES (32, 'calm', 5100);
SELECT count(*) AS rows, keanon.check('gs_feel') FROM gs_feel;
DROP TABLE gs_feel, gs_moods, gs_mood_log CASCADE;
DROP CAST (gs_mood AS text);
DROP FUNCTION gs_mood_text(gs_mood);
DROP TYPE gs_mood;

-- keanon.partitions read the partitions table by position after the
-- owner's policy on the groups table had run, and a policy that changed a
-- column's type showed a reader backend addresses as counts: the columns
-- read are checked for type
CREATE ROLE keanon_ga_retype;
GRANT CREATE ON SCHEMA public TO keanon_ga_retype;
SET ROLE keanon_ga_retype;
CREATE TABLE gr2 (id integer PRIMARY KEY, q integer, s numeric);
INSERT INTO gr2 SELECT g, g % 5, g * 10 FROM generate_series(1, 30) g;
SELECT keanon.watch('gr2', 's', '{q}', 3, 1, generalize => 3) IS NOT NULL AS watched;
CREATE FUNCTION gr2_retype() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF current_setting('gr2.state', true) = 'a' THEN
		PERFORM set_config('gr2.state', 'b', false);
		PERFORM set_config('keanon.following_ddl', 'on', true);
		ALTER TABLE public.gr2_keanon_parts DROP COLUMN n, ADD COLUMN n text NOT NULL DEFAULT repeat('x', 40);
		PERFORM set_config('keanon.following_ddl', 'off', true);
	END IF;
	RETURN true;
END $$;
ALTER TABLE gr2_keanon_groups ENABLE ROW LEVEL SECURITY;
ALTER TABLE gr2_keanon_groups FORCE ROW LEVEL SECURITY;
CREATE POLICY gr2_p ON gr2_keanon_groups USING (public.gr2_retype());
SELECT sum(n) AS rows FROM keanon.partitions('gr2');
SELECT set_config('gr2.state', 'a', false) AS armed;
SELECT sum(n) AS rows FROM keanon.partitions('gr2');
-- a double's bounds are read raw: hi retyped, lo left
CREATE TABLE gr3 (id integer PRIMARY KEY, q integer, s float8);
INSERT INTO gr3 SELECT g, g % 5, g * 10 FROM generate_series(1, 30) g;
SELECT keanon.watch('gr3', 's', '{q}', 3, 1, generalize => 3) IS NOT NULL AS watched;
CREATE FUNCTION gr3_retype() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF current_setting('gr3.state', true) = 'a' THEN
		PERFORM set_config('gr3.state', 'b', false);
		PERFORM set_config('keanon.following_ddl', 'on', true);
		ALTER TABLE public.gr3_keanon_parts ALTER COLUMN hi TYPE text;
		PERFORM set_config('keanon.following_ddl', 'off', true);
	END IF;
	RETURN true;
END $$;
ALTER TABLE gr3_keanon_groups ENABLE ROW LEVEL SECURITY;
ALTER TABLE gr3_keanon_groups FORCE ROW LEVEL SECURITY;
CREATE POLICY gr3_p ON gr3_keanon_groups USING (public.gr3_retype());
SELECT set_config('gr3.state', 'a', false) AS armed;
SELECT sum(n) AS rows FROM keanon.partitions('gr3');
RESET ROLE;
DROP TABLE gr2, gr3;
DROP FUNCTION gr2_retype(), gr3_retype();
REVOKE CREATE ON SCHEMA public FROM keanon_ga_retype;
DROP ROLE keanon_ga_retype;
