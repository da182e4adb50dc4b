--
-- Attacks on a watched table by the roles keanon does not trust: readers of
-- the published view, writers of the watched table, and any other role
-- with a schema of its own.  Each section is an attack that worked on an
-- earlier keanon; each ends by asking keanon.check.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
\set SHOW_CONTEXT never

-- ----------------------------------------------------------------
-- 1. The order rows come back in says nothing about their true values
-- ----------------------------------------------------------------
-- The attack: within each partition, hand the partition's published values,
-- sorted, to its rows in the order the view returns them, and count the
-- rows whose guess is their true value.  If that order is independent of
-- the true values, the row at each position holds a value drawn at random
-- from the partition's multiset, so the expected number of hits is the sum
-- over partitions of sum_v c_v^2 / n (c_v rows of value v among n); the
-- count is a sum of independent per-partition counts with variance below
-- that mean, so more than mean + 6 sqrt(mean) + 6 hits means the order
-- leaks (a false alarm less than once in a million runs).  A leak scores
-- all rows.

-- the true values, kept apart from the attack's view of them
CREATE TABLE ord (id integer PRIMARY KEY, tag integer, s integer);
-- loaded in value order: the watched table's own order is the worst case
INSERT INTO ord SELECT i, i, v
FROM (SELECT i, (pg_catalog.hashint4(i) & 65535) AS v FROM generate_series(1, 1200) i) x
ORDER BY v, i;
SELECT keanon.watch('ord', 's', '{tag}', 5, 50);

-- the rows as an attacker saw them, in the order seen
CREATE TABLE seen_order (pos bigint, tag integer, pub integer, pid bigint);

CREATE FUNCTION order_attack(truth regclass) RETURNS TABLE (rows_seen bigint, at_chance boolean)
LANGUAGE plpgsql AS $$
DECLARE
	hits bigint;
	expect numeric;
BEGIN
	EXECUTE format($q$
		WITH g AS (SELECT tag, pid, row_number() OVER (PARTITION BY pid ORDER BY pos) AS rp
				   FROM seen_order),
			 pv AS (SELECT pid, pub, row_number() OVER (PARTITION BY pid ORDER BY pub) AS rk
					FROM seen_order)
		SELECT count(*) FILTER (WHERE pv.pub = t.s)
		FROM g JOIN pv ON pv.pid = g.pid AND pv.rk = g.rp JOIN %s t ON t.id = g.tag$q$, truth)
	INTO hits;
	SELECT sum(c * c / n::numeric) INTO expect
	FROM (SELECT pid, pub, count(*) AS c, sum(count(*)) OVER (PARTITION BY pid) AS n
		  FROM seen_order GROUP BY pid, pub) x;
	RETURN QUERY SELECT (SELECT count(*) FROM seen_order), hits <= expect + 6 * sqrt(expect) + 6;
END;
$$;

-- the test can tell: a list in true-value order within partitions leaks
DELETE FROM seen_order;
INSERT INTO seen_order SELECT row_number() OVER (ORDER BY keanon_pid, s, id), tag, keanon_pub, keanon_pid
FROM ord_keanon_rows;
SELECT * FROM order_attack('ord');

-- what a reader sees, in the order it sees it: the view's rows under the
-- plan the settings choose, numbered in the order the plan returns them
-- (or by ord), for order_attack to score
CREATE FUNCTION see(v regclass, ord text DEFAULT '', filter text DEFAULT 'true') RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM seen_order;
	EXECUTE format('INSERT INTO seen_order SELECT row_number() OVER (%s), tag, s, keanon_pid FROM %s WHERE %s',
				   ord, v, filter);
END;
$$;

-- a reader granted the view alone
CREATE ROLE keanon_attack_reader;
GRANT SELECT ON ord_anon TO keanon_attack_reader;
GRANT SELECT, INSERT, DELETE ON seen_order TO keanon_attack_reader;
-- a sequential scan
SET ROLE keanon_attack_reader;
SELECT see('ord_anon');
RESET ROLE;
SELECT * FROM order_attack('ord');
-- an index scan of the rows table, by partition and published value (over
-- every slot, as an owner may index it: keanon.watch's index holds only
-- slots from 32 up, which no query of the view selects), then (that index
-- set aside) by partition and slot
DROP INDEX ord_keanon_rows_keanon_pid_keanon_pub_idx;
CREATE INDEX ord_keanon_rows_keanon_pid_keanon_pub_idx ON ord_keanon_rows (keanon_pid, keanon_pub);
SET ROLE keanon_attack_reader;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT row_number() OVER (), tag, s, keanon_pid FROM ord_anon WHERE keanon_pid > 0;
SELECT see('ord_anon', filter => 'keanon_pid > 0');
RESET ROLE;
SELECT * FROM order_attack('ord');
DROP INDEX ord_keanon_rows_keanon_pid_keanon_pub_idx;
SET ROLE keanon_attack_reader;
EXPLAIN (COSTS OFF) SELECT row_number() OVER (), tag, s, keanon_pid FROM ord_anon WHERE keanon_pid > 0;
SELECT see('ord_anon', filter => 'keanon_pid > 0');
RESET ROLE;
CREATE INDEX ON ord_keanon_rows (keanon_pid, keanon_pub);
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT * FROM order_attack('ord');
-- ordered by every column the reader sees
SET ROLE keanon_attack_reader;
SELECT see('ord_anon', ord => 'ORDER BY keanon_pid, tag');
RESET ROLE;
SELECT * FROM order_attack('ord');
SET ROLE keanon_attack_reader;
SELECT see('ord_anon', ord => 'ORDER BY keanon_pid, s, tag');
RESET ROLE;
SELECT * FROM order_attack('ord');
-- a parallel scan (INSERT ... SELECT plans no parallel scan, CREATE TABLE
-- AS does; the owner's plan is the reader's: the view is a security barrier)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) CREATE TABLE seen_par AS
SELECT row_number() OVER () AS pos, tag, s AS pub, keanon_pid AS pid FROM (SELECT * FROM ord_anon WHERE tag > 0) x;
CREATE TABLE seen_par AS
SELECT row_number() OVER () AS pos, tag, s AS pub, keanon_pid AS pid FROM (SELECT * FROM ord_anon WHERE tag > 0) x;
RESET ALL;
SET client_min_messages = warning;
DELETE FROM seen_order;
INSERT INTO seen_order SELECT * FROM seen_par;
DROP TABLE seen_par;
SELECT * FROM order_attack('ord');
-- after the owner clusters the rows table on its partition index, and
-- after VACUUM FULL
SELECT format('CLUSTER ord_keanon_rows USING %I', c.relname) AS cluster_cmd
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'ord_keanon_rows'::regclass AND i.indkey::text = (
	SELECT a.attnum || ' ' || b.attnum FROM pg_attribute a, pg_attribute b
	WHERE a.attrelid = 'ord_keanon_rows'::regclass AND a.attname = 'keanon_pid'
	  AND b.attrelid = 'ord_keanon_rows'::regclass AND b.attname = 'keanon_slot') \gset
:cluster_cmd;
SET ROLE keanon_attack_reader;
SELECT see('ord_anon');
RESET ROLE;
SELECT * FROM order_attack('ord');
VACUUM FULL ord_keanon_rows;
SET ROLE keanon_attack_reader;
SELECT see('ord_anon');
RESET ROLE;
SELECT * FROM order_attack('ord');
-- after republish
SELECT keanon.republish('ord');
SET ROLE keanon_attack_reader;
SELECT see('ord_anon');
RESET ROLE;
SELECT * FROM order_attack('ord');
SELECT keanon.check('ord');

-- a load in value order into an empty watched table
CREATE TABLE ord2 (id integer PRIMARY KEY, tag integer, s integer);
SELECT keanon.watch('ord2', 's', '{tag}', 5, 50);
INSERT INTO ord2 SELECT id, tag, s FROM ord ORDER BY s, id;
GRANT SELECT ON ord2_anon TO keanon_attack_reader;
SET ROLE keanon_attack_reader;
SELECT see('ord2_anon');
RESET ROLE;
SELECT * FROM order_attack('ord2');
-- a second load in value order into the full table
INSERT INTO ord2 SELECT id + 10000, tag + 10000, s FROM ord ORDER BY s, id;
SET ROLE keanon_attack_reader;
SELECT see('ord2_anon');
RESET ROLE;
CREATE TABLE ord2_truth AS SELECT id, s FROM ord2;
SELECT * FROM order_attack('ord2_truth');
SELECT keanon.check('ord2');

-- release mode: the release as published
CREATE TABLE ord3 (id integer PRIMARY KEY, tag integer, s integer);
INSERT INTO ord3 SELECT id, tag, s FROM ord ORDER BY s, id;
SELECT keanon.watch('ord3', 's', '{tag}', 5, 50, mode => 'release');
SELECT keanon.release('ord3');
GRANT SELECT ON ord3_anon TO keanon_attack_reader;
SET ROLE keanon_attack_reader;
SELECT see('ord3_anon');
RESET ROLE;
SELECT * FROM order_attack('ord3');
SELECT keanon.check('ord3');

-- the rows joining a partition one at a time sit at random slots: an
-- index scan over slots is at chance after 600 single-row inserts too
CREATE TABLE ord4 (id integer PRIMARY KEY, tag integer, s integer);
INSERT INTO ord4 SELECT id, tag, s FROM ord WHERE id <= 600;
SELECT keanon.watch('ord4', 's', '{tag}', 5, 50);
DO $$
BEGIN
	FOR i IN 601 .. 1200 LOOP
		INSERT INTO ord4 SELECT id, tag, s FROM ord WHERE id = i;
	END LOOP;
END
$$;
DELETE FROM seen_order;
INSERT INTO seen_order SELECT row_number() OVER (ORDER BY keanon_pid, keanon_slot), id, keanon_pub, keanon_pid
FROM ord4_keanon_rows;
SELECT * FROM order_attack('ord4');
SELECT keanon.check('ord4');

-- a single read does not tell which row took a newcomer's value: the view
-- returns a partition's rows in the same random order, whichever rows the
-- newcomer's join rewrote.  After each of 300 single-row INSERTs (each
-- value new to the table, so that one row shows it), the row showing the
-- newcomer's value sits at a position of its partition, counted in the
-- order a reader gets the rows in: uniform over the partition when the
-- order tells nothing, (rank - 1) / (n - 1) of mean 1/2 (standard
-- deviation 0.29 / sqrt(300) = 0.017; within 0.1: over five of them), and
-- last in its partition about sum(1/n) times.  Where the view followed the
-- rows' physical places, the rewritten row came last in its partition.
CREATE TABLE nc (id integer PRIMARY KEY, tag integer, s integer);
INSERT INTO nc SELECT i, i, 2 * i FROM generate_series(1, 1000) i;
SELECT keanon.watch('nc', 's', '{tag}', 5, 40);
CREATE TABLE nc_seen (rel float8, last boolean, n bigint);
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		INSERT INTO nc VALUES (1000 + i, 1000 + i, 2 * ((i * 379) % 1000) + 1);
		WITH o AS (SELECT row_number() OVER () AS pos, keanon_pid, s FROM nc_anon),
			 me AS (SELECT pos, keanon_pid FROM o WHERE s = 2 * ((i * 379) % 1000) + 1),
			 p AS (SELECT count(*) FILTER (WHERE o.pos < me.pos) AS rank, count(*) AS n
				   FROM o JOIN me ON o.keanon_pid = me.keanon_pid)
		INSERT INTO nc_seen SELECT p.rank::float8 / (p.n - 1), p.rank = p.n - 1, p.n FROM p;
	END LOOP;
END
$$;
SELECT count(*) AS trials, abs(avg(rel) - 0.5) < 0.1 AS position_at_chance,
	count(*) FILTER (WHERE last) <= sum(1.0 / n) + 6 * sqrt(sum(1.0 / n)) + 6 AS last_at_chance
FROM nc_seen;
SELECT keanon.check('nc');
DROP TABLE nc, nc_seen;

-- nor do the buffers a plan reads: the view's order is no index's, so a
-- LIMIT (or a cursor) over a partition reads all its rows before it
-- returns one.  Read one by one in slot order through the (keanon_pid,
-- keanon_slot) index, the rows told by the pages they were on (EXPLAIN's
-- buffers, pg_statio's counters) which rows a newcomer's join had
-- rewritten, one of which shows its true value: a sixth to a third of
-- guesses held it, against one in eleven by chance.
CREATE TABLE nb (id integer PRIMARY KEY, tag integer, s integer);
INSERT INTO nb SELECT i, i, 7 * i FROM generate_series(1, 400) i;
SELECT keanon.watch('nb', 's', '{tag}', 10, 50);
CREATE FUNCTION nb_rows_read(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q INTO plan;
	RETURN (WITH RECURSIVE n(node) AS (SELECT plan -> 0 -> 'Plan'
			UNION ALL SELECT c FROM n, json_array_elements(n.node -> 'Plans') c)
		SELECT sum((node ->> 'Actual Rows')::bigint) FROM n WHERE node ->> 'Relation Name' = 'nb_keanon_rows');
END
$$;
SELECT keanon_pid AS p, count(*) AS n FROM nb_anon GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1 \gset
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT nb_rows_read(format('SELECT * FROM nb_anon WHERE keanon_pid = %s LIMIT 1', :p)) = :n AS first_row_reads_all,
	nb_rows_read(format('SELECT * FROM nb_anon WHERE keanon_pid = %s LIMIT 3', :p)) = :n AS three_rows_read_all,
	nb_rows_read('SELECT * FROM nb_anon LIMIT 1') >= :n AS whole_view_reads_a_partition;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP FUNCTION nb_rows_read(text);
DROP TABLE nb;

-- ----------------------------------------------------------------
-- 2. Maintenance plans are never shared between watched tables
-- ----------------------------------------------------------------
CREATE TABLE pa (id integer PRIMARY KEY, qi integer, s integer);
CREATE TABLE pb (id integer PRIMARY KEY, s integer, secret integer, qi integer);
CREATE TABLE pc (id integer PRIMARY KEY, qi integer, s bigint);
INSERT INTO pa SELECT i, i, i * 10 FROM generate_series(1, 12) i;
INSERT INTO pb SELECT i, i * 10, 0, i FROM generate_series(1, 12) i;
INSERT INTO pc SELECT i, i, i * 10 FROM generate_series(1, 12) i;
SELECT keanon.watch('pa', 's', '{qi}', 3, 0), keanon.watch('pb', 's', '{qi}', 3, 0),
	   keanon.watch('pc', 's', '{qi}', 3, 0);
INSERT INTO pa VALUES (13, 13, 130);
INSERT INTO pb VALUES (13, 55, 424242, 13);
INSERT INTO pc VALUES (13, 13, 5000000000);
INSERT INTO pa SELECT i, i, i * 10 FROM generate_series(14, 16) i;
INSERT INTO pb SELECT i, i * 10, 777777, i FROM generate_series(14, 16) i;
INSERT INTO pc SELECT i, i, i * 10 FROM generate_series(14, 16) i;
-- nothing but pb's own s is published in pb's view
SELECT count(*) AS foreign_values FROM pb_anon WHERE s IN (424242, 777777);
SELECT (SELECT array_agg(s ORDER BY s) FROM pb_anon) = (SELECT array_agg(s ORDER BY s) FROM pb) AS pb_own_values;
SELECT keanon.check('pa'), keanon.check('pb'), keanon.check('pc');
-- the watched table's shape changes under a kept plan
ALTER TABLE pa ADD COLUMN extra integer DEFAULT 7;
INSERT INTO pa (id, qi, s) VALUES (20, 20, 200);
UPDATE pa SET extra = 8, s = 201 WHERE id = 20;
ALTER TABLE pa DROP COLUMN extra;
INSERT INTO pa VALUES (21, 21, 210);
UPDATE pb SET s = s + 1 WHERE id = 3;
DELETE FROM pc WHERE id = 4;
SELECT keanon.check('pa'), keanon.check('pb'), keanon.check('pc');
DROP TABLE pa, pb, pc;

-- ----------------------------------------------------------------
-- 3. search_path: nobody's operators or functions run in keanon's code
-- ----------------------------------------------------------------
-- Eve may read a view and write a table, and owns a schema of look-alikes
-- of the built-in operators and functions keanon's statements use.  Each
-- records who ran it, then does what the built-in does; none may ever run
-- while keanon acts, whoever calls keanon with whatever search_path.
CREATE ROLE keanon_eve;
CREATE SCHEMA eve AUTHORIZATION keanon_eve;
CREATE TABLE eve.ran (who name, what text);
GRANT INSERT ON eve.ran TO PUBLIC;
SET ROLE keanon_eve;
CREATE FUNCTION eve.int8eq(bigint, bigint) RETURNS boolean LANGUAGE sql AS
$$ INSERT INTO eve.ran VALUES (current_user, '=(bigint,bigint)'); SELECT $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR eve.= (FUNCTION = eve.int8eq, LEFTARG = bigint, RIGHTARG = bigint);
CREATE FUNCTION eve.int4eq(integer, integer) RETURNS boolean LANGUAGE sql AS
$$ INSERT INTO eve.ran VALUES (current_user, '=(integer,integer)'); SELECT $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR eve.= (FUNCTION = eve.int4eq, LEFTARG = integer, RIGHTARG = integer);
CREATE FUNCTION eve.int4gt(integer, integer) RETURNS boolean LANGUAGE sql AS
$$ INSERT INTO eve.ran VALUES (current_user, '>(integer,integer)'); SELECT $1 OPERATOR(pg_catalog.>) $2 $$;
CREATE OPERATOR eve.> (FUNCTION = eve.int4gt, LEFTARG = integer, RIGHTARG = integer);
CREATE FUNCTION eve.int8pl(bigint, bigint) RETURNS bigint LANGUAGE sql AS
$$ INSERT INTO eve.ran VALUES (current_user, '+(bigint,bigint)'); SELECT $1 OPERATOR(pg_catalog.+) $2 $$;
CREATE OPERATOR eve.+ (FUNCTION = eve.int8pl, LEFTARG = bigint, RIGHTARG = bigint);
CREATE FUNCTION eve.tideq(tid, tid) RETURNS boolean LANGUAGE sql AS
$$ INSERT INTO eve.ran VALUES (current_user, '=(tid,tid)'); SELECT $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR eve.= (FUNCTION = eve.tideq, LEFTARG = tid, RIGHTARG = tid);
CREATE FUNCTION eve.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE sql AS
$$ INSERT INTO eve.ran VALUES (current_user, 'unnest'); SELECT pg_catalog.unnest($1) $$;
CREATE FUNCTION eve.cardinality(anyarray) RETURNS integer LANGUAGE sql AS
$$ INSERT INTO eve.ran VALUES (current_user, 'cardinality'); SELECT pg_catalog.cardinality($1) $$;
CREATE FUNCTION eve.array_upper(anyarray, integer) RETURNS integer LANGUAGE sql AS
$$ INSERT INTO eve.ran VALUES (current_user, 'array_upper'); SELECT pg_catalog.array_upper($1, $2) $$;
CREATE FUNCTION eve.nullif_spy(integer) RETURNS integer LANGUAGE sql AS
$$ INSERT INTO eve.ran VALUES (current_user, 'spy'); SELECT $1 $$;
RESET ROLE;

CREATE TABLE victim (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO victim SELECT i, i % 7, (i * 37) % 101 FROM generate_series(1, 60) i;
GRANT SELECT, INSERT, UPDATE, DELETE ON victim TO keanon_eve;
-- the owner (here a superuser) watches under eve's search_path
SET search_path = eve, pg_catalog, public;
SELECT keanon.watch('public.victim', 's', '{qi}', 3, 5);
RESET search_path;
GRANT SELECT ON victim_anon TO keanon_eve;

SET ROLE keanon_eve;
SET search_path = eve, pg_catalog, public;
-- as a writer: every kind of change, one row and many
INSERT INTO public.victim VALUES (100, 1, 50);
INSERT INTO public.victim SELECT i, i % 7, (i * 13) % 101 FROM generate_series(101, 120) i;
UPDATE public.victim SET s = s + 1 WHERE id IN (3, 4);
UPDATE public.victim SET qi = qi + 1 WHERE id = 5;
UPDATE public.victim SET id = id + 1000 WHERE id = 6;
DELETE FROM public.victim WHERE id = 7;
DELETE FROM public.victim WHERE id BETWEEN 108 AND 112;
COPY public.victim FROM stdin;
200	1	77
201	2	78
\.
-- as a reader: the view, every aggregate, the partitions, the report
SELECT count(*) > 0 AS read_view FROM public.victim_anon WHERE keanon_pid > 0;
SELECT keanon.sum_bounds(keanon_pid) IS NOT NULL AS s, keanon.min_bounds(keanon_pid) IS NOT NULL AS mi,
	   keanon.max_bounds(keanon_pid) IS NOT NULL AS ma, keanon.avg_bounds(keanon_pid) IS NOT NULL AS av,
	   keanon.count_bounds(keanon_pid, 10, 60) IS NOT NULL AS c
FROM public.victim_anon WHERE qi = 2;
SELECT count(*) > 0 AS partitions FROM keanon.partitions('public.victim');
SELECT count(*) > 0 AS report FROM keanon.privacy_report('public.victim');
RESET search_path;
RESET ROLE;
-- the owner's own calls under eve's search_path
SET search_path = eve, pg_catalog, public;
SELECT keanon.republish('public.victim') > 0 AS republished;
SELECT keanon.check('public.victim');
RESET search_path;
CREATE TABLE victim_r (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO victim_r SELECT * FROM victim;
SET search_path = eve, pg_catalog, public;
SELECT keanon.watch('public.victim_r', 's', '{qi}', 3, 5, mode => 'release');
SELECT keanon.release('public.victim_r');
INSERT INTO public.victim_r VALUES (500, 1, 3);
SELECT keanon.release('public.victim_r');
SELECT keanon.check('public.victim_r');
SELECT keanon.unwatch('public.victim_r');
RESET search_path;
-- nothing of eve's ran
SELECT count(*) AS eve_code_ran_as_others FROM eve.ran WHERE who <> 'keanon_eve';
SELECT keanon.check('victim');

-- ----------------------------------------------------------------
-- 4. Bounds hold the exact answer: AVG is rounded outward
-- ----------------------------------------------------------------
CREATE TABLE avg3 (id integer PRIMARY KEY, qi integer, s smallint);
INSERT INTO avg3 VALUES (1, 1, -32768), (2, 1, 0), (3, 1, 32767);
SELECT keanon.watch('avg3', 's', '{qi}', 3, 0);
-- the true mean is -1/3
SELECT lower(r) * 3 <= -1 AS low_holds, upper(r) * 3 >= -1 AS high_holds
FROM (SELECT keanon.avg_bounds(keanon_pid) AS r FROM avg3_anon) x;
SELECT keanon.check('avg3');

-- ----------------------------------------------------------------
-- 5. keanon's own state: nobody but keanon writes it or uses it up
-- ----------------------------------------------------------------
-- PUBLIC may write, truncate or consume nothing in keanon's schema
SELECT c.relname, p.priv
FROM pg_class c, unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p(priv)
WHERE c.relnamespace = 'keanon'::regnamespace AND c.relkind IN ('r', 'S', 'v', 'p')
  AND has_table_privilege('keanon_eve', c.oid, p.priv);
SELECT count(*) AS sequences FROM pg_class
WHERE relnamespace = 'keanon'::regnamespace AND relkind = 'S';
SET ROLE keanon_eve;
INSERT INTO keanon.watches (relid, watch_no, sensitive, quasi_identifiers, key_columns, k, e, mode,
	view, rows_table, parts_table)
VALUES ('eve.ran', 99, 'who', '{what}', '{who}', 2, 0, 'live', 'eve.ran', 'eve.ran', 'eve.ran');
UPDATE keanon.watches SET k = 2;
DELETE FROM keanon.watches;
DELETE FROM keanon.releases;
-- eve sees no watch of others
SELECT count(*) AS watches_seen FROM keanon.watches;
-- nor may she register, forget or unwatch another role's table
SELECT keanon.register_watch('public.victim', 's', '{qi}', '{id}', 2, 0, 'live',
	'public.victim_anon', 'public.victim_keanon_rows', 'public.victim_keanon_parts', NULL, NULL);
SELECT * FROM keanon.forget_watch('public.victim'::regclass);
SELECT keanon.unwatch('public.victim');
-- nor point a watch of her own table at another role's table
CREATE TABLE eve.mine (id integer PRIMARY KEY, qi integer, s integer);
SELECT keanon.register_watch('eve.mine', 's', '{qi}', '{id}', 2, 0, 'release',
	'public.victim_anon', 'public.victim_keanon_rows', 'public.victim_keanon_parts', 'public.victim', NULL);
-- nor take a watched table's writers' lock from a decoy of hers
CREATE TRIGGER decoy BEFORE INSERT ON eve.mine FOR EACH STATEMENT EXECUTE FUNCTION keanon.lock_watch();
INSERT INTO eve.mine VALUES (1, 1, 1);
-- nor watch a temporary table
CREATE TEMP TABLE eve_tmp (id integer PRIMARY KEY, qi integer, s integer);
SELECT keanon.watch('eve_tmp', 's', '{qi}', 2, 0);
DROP TABLE eve_tmp;
-- nor register her own table with a list of names holding a NULL or
-- nested, which every later load of the watch read as names (a crash)
CREATE TABLE eve.nul (id integer PRIMARY KEY, a integer, s integer);
CREATE VIEW eve.nul_v AS SELECT * FROM eve.nul;
CREATE TABLE eve.nul_r (id integer, a integer, s integer);
CREATE TABLE eve.nul_p (x integer);
SELECT keanon.register_watch('eve.nul', 's', ARRAY[NULL]::name[], '{id}', 2, 1, 'live',
	'eve.nul_v', 'eve.nul_r', 'eve.nul_p', NULL, NULL);
SELECT keanon.register_watch('eve.nul', 's', '{a}', ARRAY['id', NULL]::name[], 2, 1, 'live',
	'eve.nul_v', 'eve.nul_r', 'eve.nul_p', NULL, NULL);
SELECT keanon.register_watch('eve.nul', 's', '{{a}}', '{id}', 2, 1, 'live',
	'eve.nul_v', 'eve.nul_r', 'eve.nul_p', NULL, NULL);
SELECT keanon.register_watch('eve.nul', 's', '{a}', '{}', 2, 1, 'live',
	'eve.nul_v', 'eve.nul_r', 'eve.nul_p', NULL, NULL);
SELECT * FROM keanon.status('eve.nul');
DROP VIEW eve.nul_v;
DROP TABLE eve.nul, eve.nul_r, eve.nul_p;
RESET ROLE;
SELECT keanon.check('victim');

-- ----------------------------------------------------------------
-- 6. A watch of a role that is not a superuser lives and dies cleanly
-- ----------------------------------------------------------------
CREATE ROLE keanon_alice;
CREATE SCHEMA alice AUTHORIZATION keanon_alice;
SET ROLE keanon_alice;
CREATE TABLE alice.pay (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO alice.pay SELECT i, i % 3, i * 10 FROM generate_series(1, 30) i;
SELECT keanon.watch('alice.pay', 's', '{qi}', 3, 10);
INSERT INTO alice.pay VALUES (31, 1, 5);
SELECT keanon.check('alice.pay');
SELECT count(*) AS own_watches FROM keanon.watches;
-- the internal objects go with the table, dropped by its owner
DROP TABLE alice.pay;
CREATE TABLE alice.pay2 (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO alice.pay2 SELECT i, i % 3, i * 10 FROM generate_series(1, 30) i;
SELECT keanon.watch('alice.pay2', 's', '{qi}', 3, 10);
SELECT keanon.unwatch('alice.pay2');
RESET ROLE;
SELECT count(*) AS left_behind FROM pg_class WHERE relnamespace = 'alice'::regnamespace;
SELECT count(*) AS watches_left FROM keanon.watches w
WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = w.relid);
-- a watch whose internal objects changed hands (past keanon's event
-- trigger) is refused, not trusted
SET ROLE keanon_alice;
SELECT keanon.watch('alice.pay2', 's', '{qi}', 3, 10);
RESET ROLE;
ALTER EVENT TRIGGER keanon_on_alter DISABLE;
ALTER TABLE alice.pay2_keanon_rows OWNER TO keanon_eve;
ALTER EVENT TRIGGER keanon_on_alter ENABLE;
INSERT INTO alice.pay2 VALUES (40, 1, 400);
ALTER TABLE alice.pay2_keanon_rows OWNER TO keanon_alice;
INSERT INTO alice.pay2 VALUES (40, 1, 400);
-- with the event trigger, an internal object given away goes back to the
-- table's owner
ALTER TABLE alice.pay2_keanon_rows OWNER TO keanon_eve;
SELECT relowner::regrole AS rows_owner FROM pg_class WHERE oid = 'alice.pay2_keanon_rows'::regclass;
INSERT INTO alice.pay2 VALUES (41, 1, 410);
SELECT keanon.check('alice.pay2');
DROP SCHEMA alice CASCADE;
DROP ROLE keanon_alice;

DROP TABLE ord, ord2, ord2_truth, ord3, ord4, seen_order, victim, victim_r, avg3;
DROP FUNCTION order_attack(regclass);
DROP FUNCTION see(regclass, text, text);
DROP SCHEMA eve CASCADE;
DROP ROLE keanon_eve;
DROP OWNED BY keanon_attack_reader;
DROP ROLE keanon_attack_reader;

-- ----------------------------------------------------------------
-- 8. The owner's changes to keanon's tables are refused, never read blindly
-- ----------------------------------------------------------------
-- The owner may ALTER and write the internal tables.  A NOT NULL dropped
-- from the partitions table is refused at the ALTER, and (the ALTER's
-- check set aside) at every write after; a NULL or a missing count in a
-- partition's lists, a NULL value in the rows table or the release table,
-- a retyped column of the release table: each an error where keanon reads
-- it (a bound aggregate, a privacy report, a write, a release), never a
-- crash or a read past an array.
\set VERBOSITY terse
CREATE TABLE tp (id integer PRIMARY KEY, zip integer, s integer);
INSERT INTO tp SELECT g, g % 7, (g * 37) % 101 FROM generate_series(1, 200) g;
SELECT keanon.watch('tp', 's', '{zip}', 3, 5);
ALTER TABLE tp_keanon_parts ALTER COLUMN vals DROP NOT NULL;
SET keanon.following_ddl = on;
ALTER TABLE tp_keanon_parts ALTER COLUMN vals DROP NOT NULL;
RESET keanon.following_ddl;
UPDATE tp_keanon_parts SET vals = NULL;
INSERT INTO tp VALUES (1001, 1, 8);
SELECT keanon.sum_bounds(keanon_pid) FROM tp_anon;
SELECT count(*) FROM keanon.privacy_report('tp');
DROP TABLE tp CASCADE;
CREATE TABLE tp (id integer PRIMARY KEY, zip integer, s numeric);
INSERT INTO tp SELECT g, g % 7, (g * 37) % 101 FROM generate_series(1, 200) g;
SELECT keanon.watch('tp', 's', '{zip}', 3, 5);
SELECT keanon.sum_bounds(keanon_pid) FROM tp_anon WHERE zip = 1;
BEGIN;
UPDATE tp_keanon_parts SET vals = array_prepend(NULL::numeric, vals[2:]);
SELECT keanon.sum_bounds(keanon_pid) FROM tp_anon;
ROLLBACK;
BEGIN;
UPDATE tp_keanon_parts SET cnts = '{1}';
SELECT keanon.sum_bounds(keanon_pid) FROM tp_anon WHERE zip = 1;
ROLLBACK;
BEGIN;
UPDATE tp_keanon_parts SET vals = vals[1:1] || NULL::numeric || vals[3:];
SELECT count(*) FROM keanon.privacy_report('tp');
ROLLBACK;
BEGIN;
UPDATE tp_keanon_parts SET vals = vals[1:1] || NULL::numeric || vals[3:];
INSERT INTO tp SELECT 1000 + g, 1, g FROM generate_series(1, 3) g;
ROLLBACK;
-- a placed row without its published value, read directly by a carry-over
CREATE TABLE tn2 (id integer PRIMARY KEY, age integer, salary numeric);
INSERT INTO tn2 SELECT g, 20 + g % 30, 1000 * g FROM generate_series(1, 40) g;
SELECT keanon.watch('tn2', 'salary', '{age}', 3, 2000);
BEGIN;
UPDATE tn2_keanon_rows SET keanon_pub = NULL WHERE id = 7;
DELETE FROM tn2 WHERE id = 6;
ROLLBACK;
SELECT keanon.check('tn2');
DROP TABLE tn2;
SELECT keanon.check('tp');
CREATE TABLE tq (id integer PRIMARY KEY, zip integer, s numeric);
INSERT INTO tq VALUES (1, 1, 10), (2, 2, 20);
SELECT keanon.watch('tq', 's', '{zip}', 3, 5);
UPDATE tq_keanon_rows SET s = NULL WHERE id = 1;
INSERT INTO tq VALUES (3, 3, 30), (4, 4, 40);
CREATE TABLE tr (id integer PRIMARY KEY, zip integer, s numeric);
INSERT INTO tr SELECT g, g % 7, (g * 37) % 101 FROM generate_series(1, 200) g;
SELECT keanon.watch('tr', 's', '{zip}', 3, 5, mode => 'release');
SELECT keanon.release('tr') IS NOT NULL AS released;
UPDATE tr_keanon_release SET s = NULL WHERE id = 5;
SELECT keanon.release('tr') IS NOT NULL AS released;
UPDATE tr_keanon_release SET s = 5 WHERE id = 5;
ALTER TABLE tr_keanon_release ALTER COLUMN s TYPE text;
SELECT keanon.release('tr') IS NOT NULL AS released;
-- the rows table's key made not unique by its owner, a key twice: two new
-- versions, each with the value of one released row, would relabel it
-- twice; the release refuses
CREATE TABLE tk (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO tk SELECT i, i % 5, i * 10 FROM generate_series(1, 60) i;
SELECT keanon.watch('tk', 'v', '{g}', 3, 20, mode => 'release');
SELECT keanon.release('tk') IS NOT NULL AS released;
ALTER TABLE tk_keanon_rows DROP CONSTRAINT tk_keanon_rows_pkey;
INSERT INTO tk_keanon_rows (id, g, v, keanon_arrival) VALUES (1, 99, 10, 0);
UPDATE tk_keanon_rows SET g = 98 WHERE id = 1 AND g <> 99;
SELECT keanon.release('tk') IS NOT NULL AS released;
-- in deferred mode, the pending list retyped by a trigger of the owner's
-- between two rows of one statement (keanon_on_alter set aside): refused
-- at the next row; a release holding a NULL, or retyped: keanon.check says so
CREATE TABLE tpd(id int primary key, q int, s int);
INSERT INTO tpd SELECT g, g%10, g*7%100 FROM generate_series(1,50) g;
SELECT keanon.watch('tpd','s','{q}',3,5,mode=>'deferred');
CREATE FUNCTION tpd_evil() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  IF NEW.id = 1001 THEN SET keanon.following_ddl = on;
    EXECUTE 'ALTER TABLE tpd_keanon_pending ALTER COLUMN id TYPE text'; END IF;
  RETURN NULL; END $$;
CREATE TRIGGER zzz AFTER INSERT ON tpd FOR EACH ROW EXECUTE FUNCTION tpd_evil();
INSERT INTO tpd VALUES (1001,1,1),(1002,2,2),(1003,3,3);
RESET keanon.following_ddl;
CREATE TABLE trc(id int primary key, q int, s numeric);
INSERT INTO trc SELECT g, g%10, g*7%100 FROM generate_series(1,30) g;
SELECT keanon.watch('trc','s','{q}',3,5,mode=>'release'); SELECT keanon.release('trc') IS NOT NULL;
UPDATE trc_keanon_release SET s = NULL WHERE id = 1;
SELECT keanon.check('trc');
UPDATE trc_keanon_release SET s = 7 WHERE id = 1;
SELECT keanon.check('trc');
BEGIN; SET LOCAL keanon.following_ddl=on; ALTER TABLE trc_keanon_release ALTER s TYPE int8 USING 1e12::int8; COMMIT;
SELECT keanon.check('trc');
DROP TABLE tpd, trc CASCADE;
DROP FUNCTION tpd_evil();
\set VERBOSITY default
DROP TABLE tp, tq, tr, tk CASCADE;

-- ----------------------------------------------------------------
-- 9. Who reads what a watch derives from every row
-- ----------------------------------------------------------------
\set VERBOSITY terse
CREATE ROLE keanon_eve;
-- row security: a role that may read some rows of the table is not a
-- reader of all of them (partitions, reports, index reads, checks and
-- bounds are about every row)
CREATE TABLE rls (id integer PRIMARY KEY, who text, age integer, salary integer);
INSERT INTO rls SELECT g, CASE WHEN g <= 3 THEN 'keanon_eve' ELSE 'other' END, 20 + g % 40, 1000 * g
FROM generate_series(1, 30) g;
SELECT keanon.watch('rls', 'salary', '{age}', 2, 0);
CREATE INDEX rls_plain_idx ON rls USING keanon (salary) WITH (k = 2);
ALTER TABLE rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON rls FOR SELECT USING (who = current_user);
GRANT SELECT ON rls TO keanon_eve;
SET ROLE keanon_eve;
SELECT count(*) FROM rls;
SELECT count(*) FROM keanon.partitions('rls');
SELECT count(*) FROM keanon.privacy_report('rls');
SELECT count(*) FROM keanon.index_partitions('rls_plain_idx');
SELECT keanon.check('rls');
SELECT keanon.sum_bounds(keanon_pid) FROM rls_keanon_rows;
RESET ROLE;
SELECT min(keanon_pid) AS rls_pid FROM rls_anon \gset
SET ROLE keanon_eve;
-- a pid of a watch eve may not read, and one of no watch: the same error
\set VERBOSITY sqlstate
SELECT keanon.sum_bounds(x) FROM (VALUES (:rls_pid::bigint)) v(x);
SELECT keanon.sum_bounds(x) FROM (VALUES (999000000000001::bigint)) v(x);
\set VERBOSITY terse
RESET ROLE;
-- the view, without USAGE on its schema: as a query of it would be
CREATE SCHEMA hidden;
CREATE TABLE hidden.h (id integer PRIMARY KEY, age integer, salary integer);
INSERT INTO hidden.h SELECT g, g % 40, 1000 * g FROM generate_series(1, 30) g;
SELECT keanon.watch('hidden.h', 'salary', '{age}', 2, 0);
GRANT SELECT ON hidden.h_anon TO keanon_eve;
SELECT 'hidden.h'::regclass::oid AS h_oid \gset
SET ROLE keanon_eve;
SELECT count(*) FROM keanon.partitions(:h_oid);
RESET ROLE;
GRANT USAGE ON SCHEMA hidden TO keanon_eve;
SET ROLE keanon_eve;
SELECT count(*) FROM keanon.partitions(:h_oid);
RESET ROLE;
-- after an aborted write, a reader's check or index read does not repair
-- the index, which would hold the writers' lock to the end of its
-- transaction; the owner's does
GRANT SELECT ON rls TO keanon_eve;
ALTER TABLE rls DISABLE ROW LEVEL SECURITY;
BEGIN; INSERT INTO rls VALUES (1000, 'x', 1, 5); ROLLBACK;
BEGIN;
SET LOCAL ROLE keanon_eve;
SELECT keanon.check('rls');
ROLLBACK;
BEGIN;
SET LOCAL ROLE keanon_eve;
SELECT count(*) FROM keanon.index_partitions('rls_plain_idx');
ROLLBACK;
-- the owner's own wrapper, run by eve, repairs as the owner
CREATE FUNCTION rls_owner_check() RETURNS boolean SECURITY DEFINER SET search_path = pg_catalog
LANGUAGE sql AS $$ SELECT keanon.check('public.rls') $$;
GRANT EXECUTE ON FUNCTION rls_owner_check() TO keanon_eve;
BEGIN;
SET LOCAL ROLE keanon_eve;
SELECT rls_owner_check();
ROLLBACK;
DROP FUNCTION rls_owner_check();
SELECT keanon.check('rls');
-- a value a writer rewrites in another form (1.5 as 1.5000, 0 as -0) is the
-- same value: its row stays, and keanon.check agrees
CREATE TABLE nform (id integer PRIMARY KEY, age integer, salary numeric);
INSERT INTO nform SELECT g, g % 5, g * 1.5 FROM generate_series(1, 20) g;
SELECT keanon.watch('nform', 'salary', '{age}', 2, 0);
UPDATE nform SET salary = salary * 1.000 WHERE id = 1;
SELECT keanon.check('nform');
CREATE TABLE fform (id integer PRIMARY KEY, age integer, salary float8);
INSERT INTO fform SELECT g, g % 5, g - 1 FROM generate_series(1, 20) g;
SELECT keanon.watch('fform', 'salary', '{age}', 2, 0);
UPDATE fform SET salary = -salary WHERE salary = 0;
SELECT keanon.check('fform');
\set VERBOSITY default
DROP TABLE rls, hidden.h, nform, fform CASCADE;
DROP SCHEMA hidden;
DROP ROLE keanon_eve;

-- ----------------------------------------------------------------
-- 10. A key's equality is its type's own operator, never a look-alike
-- ----------------------------------------------------------------
-- A domain over citext as the key: citext's "=" lives in a schema where
-- others may create (public here), and an operator "=" for the domain put
-- there matched keanon's comparisons of keys better than citext's own: it
-- ran as the table's owner in the worker's flush, a live UPDATE,
-- keanon.check and a generalized view.  keanon casts both sides of each
-- comparison to the operator's own types now.
CREATE EXTENSION IF NOT EXISTS citext;
CREATE EXTENSION IF NOT EXISTS cube;
CREATE DOMAIN att_email AS citext;
CREATE TABLE dk_live (id att_email PRIMARY KEY, age integer NOT NULL, s integer);
INSERT INTO dk_live SELECT 'u' || g || '@x', 20 + g % 30, 1000 * g FROM generate_series(1, 30) g;
CREATE TABLE dk_def AS SELECT * FROM dk_live;
ALTER TABLE dk_def ADD PRIMARY KEY (id);
CREATE TABLE dk_gen AS SELECT * FROM dk_live;
ALTER TABLE dk_gen ADD PRIMARY KEY (id);
SELECT keanon.watch('dk_live', 's', '{age}', 3, 1000) IS NOT NULL AS live,
	keanon.watch('dk_def', 's', '{age}', 3, 1000, mode => 'deferred') IS NOT NULL AS deferred;
-- keys in another case are one key, as citext compares them
UPDATE dk_live SET s = s + 1 WHERE id IN ('U1@X', 'U2@X');
SELECT keanon.check('dk_live');
CREATE ROLE keanon_att_mallory;
GRANT CREATE ON SCHEMA public TO keanon_att_mallory;
GRANT INSERT, UPDATE ON dk_live, dk_def TO keanon_att_mallory;
GRANT SELECT (age) ON dk_live, dk_def TO keanon_att_mallory;
CREATE TABLE att_ran (who name);
GRANT INSERT ON att_ran TO PUBLIC;
SET ROLE keanon_att_mallory;
CREATE FUNCTION public.att_eq(att_email, att_email) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.att_ran VALUES (current_user);
	RETURN $1::public.citext OPERATOR(public.=) $2::public.citext;
END
$$;
CREATE OPERATOR public.= (LEFTARG = att_email, RIGHTARG = att_email, FUNCTION = public.att_eq);
UPDATE dk_live SET age = age + 1 WHERE age < 30;
UPDATE dk_def SET age = age + 1 WHERE age < 30;
INSERT INTO dk_def VALUES ('new@x', 44, 77777);
RESET ROLE;
SELECT keanon.watch('dk_gen', 's', '{age}', 3, 1000, generalize => 3) IS NOT NULL AS generalized;
SELECT keanon.flush('dk_def') >= 0 AS flushed;
SELECT pending FROM keanon.status('dk_def');
SELECT count(*) AS published FROM dk_gen_anon;
SELECT keanon.check('dk_live') AND keanon.check('dk_def') AND keanon.check('dk_gen') AS checked;
SELECT count(*) AS look_alike_ran FROM att_ran;
DROP TABLE dk_live, dk_def, dk_gen, att_ran CASCADE;
DROP OPERATOR public.= (att_email, att_email);
DROP FUNCTION public.att_eq(att_email, att_email);
DROP DOMAIN att_email;
REVOKE CREATE ON SCHEMA public FROM keanon_att_mallory;
DROP ROLE keanon_att_mallory;
DROP EXTENSION citext;
-- keys whose equality is polymorphic (an array of a typmod, an enum) are
-- compared as their own types, in every mode
CREATE TYPE att_mood AS ENUM ('low', 'mid', 'high');
CREATE TABLE ak (id varchar(5)[] PRIMARY KEY, mood att_mood NOT NULL, s integer);
INSERT INTO ak SELECT ARRAY['a' || g, 'b'], (ARRAY['low', 'mid', 'high']::att_mood[])[1 + g % 3], 1000 * g
FROM generate_series(1, 20) g;
CREATE TABLE ek (id att_mood, n integer, s integer, PRIMARY KEY (id, n));
INSERT INTO ek SELECT (ARRAY['low', 'mid', 'high']::att_mood[])[1 + g % 3], g, 1000 * g FROM generate_series(1, 20) g;
SELECT keanon.watch('ak', 's', '{mood}', 3, 1000, mode => 'deferred') IS NOT NULL AS deferred,
	keanon.watch('ek', 's', '{n}', 3, 1000) IS NOT NULL AS live;
UPDATE ak SET s = s + 1, mood = 'high' WHERE mood = 'low';
DELETE FROM ak WHERE s < 3000;
UPDATE ek SET s = s + 7 WHERE n % 2 = 0;
UPDATE ek SET id = 'high' WHERE n = 1;
SELECT keanon.flush('ak') >= 0 AS flushed;
SELECT keanon.check('ak') AND keanon.check('ek') AS checked;
DROP TABLE ak, ek;
DROP TYPE att_mood;

-- ----------------------------------------------------------------
-- 11. No notice tells a writer where a value it may not read lies
-- ----------------------------------------------------------------
-- A writer with INSERT and DELETE, and SELECT on the key alone, deletes
-- every row but one in a transaction it rolls back and inserts two
-- values: no valid partitioning is left exactly when the row's value lies
-- between them.  The notice saying so is for a session whose role may
-- read the sensitive column (the owner's, here), never for the writer's.
CREATE TABLE probe_pay (id integer PRIMARY KEY, dept integer, salary integer);
INSERT INTO probe_pay SELECT i, i % 4, 20000 + (i * 7919) % 80000 FROM generate_series(1, 60) i;
SELECT keanon.watch('probe_pay', 'salary', '{dept}', 3, 1000) IS NOT NULL AS watched;
CREATE ROLE keanon_att_writer;
GRANT INSERT, DELETE ON probe_pay TO keanon_att_writer;
GRANT SELECT (id) ON probe_pay TO keanon_att_writer;
SELECT salary BETWEEN 24000 AND 24999 AS between_probes FROM probe_pay WHERE id = 41;
CREATE FUNCTION probe_41(lo integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM public.probe_pay WHERE id <> 41;
	INSERT INTO public.probe_pay VALUES (1000001, 0, lo), (1000002, 0, lo + 999);
	RAISE EXCEPTION 'rolled back';
EXCEPTION WHEN raise_exception THEN
	NULL;
END;
$$;
SET client_min_messages = notice;
-- the owner (this session) is told
SELECT probe_41(24000);
-- the writer, logged in as itself, is not
SET SESSION AUTHORIZATION keanon_att_writer;
SELECT probe_41(24000);
SELECT probe_41(50000);
RESET SESSION AUTHORIZATION;
-- nor is a writer that may read the table but for the rows a policy hides
GRANT SELECT ON probe_pay TO keanon_att_writer;
ALTER TABLE probe_pay ENABLE ROW LEVEL SECURITY;
CREATE POLICY probe_see ON probe_pay FOR SELECT USING (id <> 41);
CREATE POLICY probe_add ON probe_pay FOR INSERT WITH CHECK (true);
CREATE POLICY probe_drop ON probe_pay FOR DELETE USING (true);
SET SESSION AUTHORIZATION keanon_att_writer;
SELECT count(*) AS rows_it_sees FROM probe_pay;
SELECT probe_41(24000);
RESET SESSION AUTHORIZATION;
SET client_min_messages = warning;
SELECT keanon.check('probe_pay');
DROP FUNCTION probe_41(integer);
DROP TABLE probe_pay;
DROP ROLE keanon_att_writer;

-- ----------------------------------------------------------------
-- 7. Dropping the extension leaves no table of true values behind
-- ----------------------------------------------------------------
CREATE TABLE leftover (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO leftover SELECT i, i % 3, i FROM generate_series(1, 10) i;
SELECT keanon.watch('leftover', 's', '{qi}', 2, 1);
\set VERBOSITY terse
DROP EXTENSION keanon;
DROP EXTENSION keanon CASCADE;
\set VERBOSITY default
SELECT relname FROM pg_class WHERE relname LIKE 'leftover%' ORDER BY relname;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'leftover'::regclass;
CREATE EXTENSION keanon;
SELECT keanon.watch('leftover', 's', '{qi}', 2, 1);
SELECT keanon.check('leftover');
DROP TABLE leftover;
