--
-- Deferred watches: writers only note the keys they change; keanon.flush
-- (and the background worker) applies the committed changes as one batch.
-- Each section compares with the oracle: keanon.optimal_partitions over
-- the table's values, and keanon.check.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
\set SHOW_CONTEXT never
SET client_min_messages = notice;

-- the worker stays off until its own section, so that what is pending here
-- is what this session left pending (keanon's settings exist once it is
-- loaded)
LOAD 'keanon';
ALTER SYSTEM SET keanon.worker = off;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SHOW keanon.worker;

-- wait (at most a minute) until a condition holds; whether it did
CREATE FUNCTION deferred_wait(cond text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	ok boolean;
BEGIN
	FOR i IN 1 .. 600 LOOP
		PERFORM pg_stat_clear_snapshot();
		EXECUTE cond INTO ok;
		EXIT WHEN ok;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN ok;
END;
$$;

-- the published partitions against the oracle over the table's values: an
-- optimum (its rows and sum-error, every partition with k distinct values
-- over a range of e; a change keeps the boundaries it can, so it need not
-- be the optimum optimal_partitions gives)
CREATE FUNCTION deferred_matches_oracle(tab regclass, col name, k integer, e bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	vals bigint[];
BEGIN
	EXECUTE format('SELECT array_agg(%I) FROM %s WHERE %I IS NOT NULL', col, tab, col) INTO vals;
	RETURN (SELECT ARRAY[coalesce(sum(n), 0), coalesce(sum(error), 0),
						 count(*) FILTER (WHERE distinct_values < k OR error < e)]
			FROM keanon.partitions(tab)) =
		   (SELECT ARRAY[coalesce(sum(n), 0), coalesce(sum(error), 0), 0]
			FROM keanon.optimal_partitions(coalesce(vals, '{}'), k, e));
END;
$$;

-- The research's salary table, k = 3, e = 2000, in deferred mode
CREATE TABLE dpeople (id integer PRIMARY KEY, postal_code text, age integer,
	sex text, salary bigint, note text);
INSERT INTO dpeople VALUES
	(1, '50200', 35, 'Male', 14000), (2, '50210', 36, 'Male', 15000),
	(3, '50230', 40, 'Male', 16000), (4, '50300', 41, 'Female', 25000),
	(5, '50310', 43, 'Female', 35000), (6, '50330', 47, 'Male', 30000),
	(7, '50300', 53, 'Male', 40000), (8, '50310', 54, 'Female', 35000),
	(9, '50330', 58, 'Male', 45000);
SELECT keanon.watch('dpeople', 'salary', '{postal_code,age,sex}', 3, 2000, mode => 'deferred');
-- the rows present are published at once, as in live mode
SELECT mode, pending, oldest_pending, lag, published FROM keanon.status('dpeople');
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('dpeople');
SELECT deferred_matches_oracle('dpeople', 'salary', 3, 2000);
-- a pending list beside the rows table, and a row trigger in place of the
-- statement triggers
SELECT relname FROM pg_class WHERE relname LIKE 'dpeople\_keanon\_%' ORDER BY relname;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'dpeople'::regclass ORDER BY tgname;

-- writes wait in the list; the view does not move
INSERT INTO dpeople VALUES (10, '50400', 30, 'Female', 67000), (11, '50401', 31, 'Male', 68000);
UPDATE dpeople SET salary = 17000 WHERE id = 1;
UPDATE dpeople SET age = 99 WHERE id = 2;
DELETE FROM dpeople WHERE id = 3;
-- a change to a column the watch does not publish notes nothing
UPDATE dpeople SET note = 'seen' WHERE id = 4;
SELECT pending, oldest_pending <= now() AS oldest_in_past, lag >= '0'::interval AS lag_known, published
FROM keanon.status('dpeople');
SELECT count(*) AS rows_published FROM dpeople_anon;
SELECT age FROM dpeople_anon WHERE age = 99;
-- the flush applies all five keys at once
SELECT keanon.flush('dpeople');
SELECT pending, lag, published FROM keanon.status('dpeople');
SELECT count(*) AS rows_published FROM dpeople_anon;
SELECT age FROM dpeople_anon WHERE age = 99;
SELECT deferred_matches_oracle('dpeople', 'salary', 3, 2000);
SELECT keanon.check('dpeople');
-- a flush with nothing pending changes nothing
SELECT generation AS gen FROM keanon.watches WHERE relid = 'dpeople'::regclass \gset
SELECT keanon.flush('dpeople');
SELECT generation = :gen AS unchanged FROM keanon.watches WHERE relid = 'dpeople'::regclass;

-- a key changed: both keys are noted, the row moves with its new key
UPDATE dpeople SET id = 100 WHERE id = 5;
SELECT pending FROM keanon.status('dpeople');
SELECT keanon.flush('dpeople');
SELECT id, keanon_pid IS NOT NULL AS published FROM dpeople_keanon_rows WHERE id IN (5, 100) ORDER BY id;
SELECT keanon.check('dpeople');

-- NULL sensitive values are noted, never published; a value arriving later is
INSERT INTO dpeople VALUES (12, '50500', 60, 'Male', NULL);
SELECT keanon.flush('dpeople');
SELECT count(*) FROM dpeople_keanon_rows WHERE id = 12;
UPDATE dpeople SET salary = 50000 WHERE id = 12;
SELECT keanon.flush('dpeople');
SELECT count(*) FROM dpeople_keanon_rows WHERE id = 12;
SELECT deferred_matches_oracle('dpeople', 'salary', 3, 2000);

-- a row inserted and deleted before a flush leaves nothing behind
INSERT INTO dpeople VALUES (13, '50600', 61, 'Male', 99000);
DELETE FROM dpeople WHERE id = 13;
SELECT keanon.flush('dpeople');
SELECT count(*) FROM dpeople_keanon_rows WHERE id = 13;
SELECT keanon.check('dpeople');

-- a savepoint rolled back takes its notes along; an aborted transaction too
BEGIN;
INSERT INTO dpeople VALUES (14, '50700', 62, 'Female', 51000);
SAVEPOINT a;
INSERT INTO dpeople VALUES (15, '50701', 63, 'Female', 52000);
ROLLBACK TO SAVEPOINT a;
COMMIT;
BEGIN;
INSERT INTO dpeople VALUES (16, '50702', 64, 'Male', 53000);
ROLLBACK;
SELECT pending FROM keanon.status('dpeople');
SELECT keanon.flush('dpeople');
SELECT array_agg(id ORDER BY id) FROM dpeople_keanon_rows WHERE id >= 14;
SELECT keanon.check('dpeople');

-- uncommitted changes of this transaction are not anyone else's: a flush
-- inside it publishes them only with its commit
BEGIN;
INSERT INTO dpeople VALUES (17, '50800', 65, 'Male', 54000);
SELECT keanon.flush('dpeople');
ROLLBACK;
SELECT count(*) FROM dpeople_keanon_rows WHERE id = 17;
SELECT keanon.check('dpeople');

-- keanon.check flushes first (a change committed after its flush is left
-- pending and out of its comparison: see the isolation spec watch_deferred)
INSERT INTO dpeople VALUES (18, '50900', 66, 'Female', 55000);
SELECT keanon.check('dpeople');
SELECT pending FROM keanon.status('dpeople');

-- many rows at once, then many changes: one batch each
INSERT INTO dpeople SELECT i, 'z' || (i % 7), 20 + i % 50, CASE WHEN i % 2 = 0 THEN 'Male' ELSE 'Female' END,
	(pg_catalog.hashint4(i) & 65535) * 3
FROM generate_series(1000, 2999) i;
SELECT keanon.flush('dpeople');
UPDATE dpeople SET salary = salary + 7 WHERE id % 3 = 0;
DELETE FROM dpeople WHERE id % 5 = 0;
UPDATE dpeople SET sex = 'X' WHERE id % 11 = 0;
SELECT keanon.flush('dpeople') > 0 AS applied;
SELECT deferred_matches_oracle('dpeople', 'salary', 3, 2000);
SELECT keanon.check('dpeople');
-- Batches far smaller than their table (a flush, a multi-row statement of
-- a live watch) are applied change by change and republished range by
-- range: after every round of scattered inserts, deletes and updates, with
-- repeated values (split runs), each watch agrees with a recomputation
-- from scratch (keanon.check raises otherwise) and with the oracle
CREATE TABLE scat (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO scat SELECT i, i % 10, (pg_catalog.hashint4(i) & 1023) * 7 FROM generate_series(1, 4000) i;
CREATE TABLE scat_live (LIKE scat INCLUDING ALL);
INSERT INTO scat_live SELECT * FROM scat;
SELECT keanon.watch('scat', 'v', '{g}', 4, 30, mode => 'deferred');
SELECT keanon.watch('scat_live', 'v', '{g}', 4, 30);
SELECT setseed(0.25);
DO $$
DECLARE
	bad integer := 0;
BEGIN
	FOR r IN 1 .. 20 LOOP
		INSERT INTO scat SELECT 100000 + r * 1000 + i, i % 10, (random() * 7200)::integer
		FROM generate_series(1, 40) i;
		DELETE FROM scat WHERE id IN (SELECT id FROM scat ORDER BY random() LIMIT 30);
		UPDATE scat SET v = (random() * 7200)::integer
		WHERE id IN (SELECT id FROM scat ORDER BY random() LIMIT 30);
		UPDATE scat SET v = v + 1 WHERE id IN (SELECT id FROM scat ORDER BY random() LIMIT 5);
		PERFORM keanon.flush('scat');
		INSERT INTO scat_live SELECT 100000 + r * 1000 + i, i % 10, (random() * 7200)::integer
		FROM generate_series(1, 40) i;
		DELETE FROM scat_live WHERE id IN (SELECT id FROM scat_live ORDER BY random() LIMIT 30);
		UPDATE scat_live SET v = (random() * 7200)::integer
		WHERE id IN (SELECT id FROM scat_live ORDER BY random() LIMIT 30);
		IF NOT (keanon.check('scat') AND keanon.check('scat_live')
				AND deferred_matches_oracle('scat', 'v', 4, 30)
				AND deferred_matches_oracle('scat_live', 'v', 4, 30)) THEN
			bad := bad + 1;
		END IF;
	END LOOP;
	RAISE NOTICE 'scattered rounds differing from the oracle: %', bad;
END;
$$;
SELECT (SELECT count(*) FROM scat) AS rows_deferred, (SELECT count(*) FROM scat_live) AS rows_live;
DROP TABLE scat, scat_live;

-- republish draws afresh over what the pending changes make of the table
INSERT INTO dpeople VALUES (19, '51000', 67, 'Male', 56000);
SELECT keanon.republish('dpeople') = (SELECT count(*) FROM dpeople WHERE salary IS NOT NULL) AS all_published;
SELECT pending FROM keanon.status('dpeople');
SELECT keanon.check('dpeople');

-- TRUNCATE empties the pending list with the rest
INSERT INTO dpeople VALUES (20, '51100', 68, 'Male', 57000);
TRUNCATE dpeople;
SELECT pending, published FROM keanon.status('dpeople');
SELECT count(*) FROM dpeople_keanon_pending;
INSERT INTO dpeople VALUES (1, 'a', 1, 'M', 10), (2, 'b', 2, 'M', 20), (3, 'c', 3, 'F', 30000);
SELECT keanon.flush('dpeople');
SELECT deferred_matches_oracle('dpeople', 'salary', 3, 2000);
SELECT keanon.check('dpeople');

-- A deferred watch follows the table's life as a live one does: renamed
-- key and quasi-identifier columns (the pending list's key too), a new
-- owner (who takes the pending list along), an unlogged table (whose
-- pending list is unlogged too)
CREATE ROLE keanon_downer;
CREATE TABLE dlife (k1 integer, k2 text, q integer, s integer, PRIMARY KEY (k1, k2));
INSERT INTO dlife SELECT i, 'x' || i, i % 3, i * 10 FROM generate_series(1, 12) i;
SELECT keanon.watch('dlife', 's', '{q}', 3, 5, mode => 'deferred');
INSERT INTO dlife VALUES (100, 'new', 1, 999);
ALTER TABLE dlife RENAME COLUMN k2 TO kk;
ALTER TABLE dlife RENAME COLUMN q TO qq;
SELECT attname FROM pg_attribute WHERE attrelid = 'dlife_keanon_pending'::regclass AND attnum > 0 ORDER BY attnum;
UPDATE dlife SET kk = 'moved' WHERE k1 = 1;
UPDATE dlife SET qq = 7 WHERE k1 = 2;
ALTER TABLE dlife OWNER TO keanon_downer;
SELECT c.relname, r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
WHERE c.relname = 'dlife_keanon_pending';
SELECT keanon.flush('dlife');
SELECT k1, kk, qq FROM dlife_keanon_rows WHERE k1 IN (1, 2, 100) ORDER BY k1;
SELECT keanon.check('dlife');
DROP TABLE dlife;
DROP ROLE keanon_downer;
CREATE UNLOGGED TABLE dunlogged (id integer PRIMARY KEY, q integer, s integer);
SELECT keanon.watch('dunlogged', 's', '{q}', 2, 0, mode => 'deferred');
SELECT relpersistence FROM pg_class WHERE relname = 'dunlogged_keanon_pending';
INSERT INTO dunlogged VALUES (1, 1, 1), (2, 2, 2), (3, 3, 3);
SELECT keanon.flush('dunlogged');
SELECT keanon.check('dunlogged');
DROP TABLE dunlogged;

-- A flush reads the changed rows in the table's own layout: around
-- columns dropped before and after the watch and one added after it,
-- through inserts alone, quasi-identifier and value updates, deletes, and
-- values of a finer scale than any published
CREATE TABLE dlayout (gone1 text, id integer PRIMARY KEY, gone2 integer, q integer,
	s numeric, note text);
INSERT INTO dlayout SELECT 'x', i, i, i % 4, i * 1.5, 'n' FROM generate_series(1, 40) i;
ALTER TABLE dlayout DROP COLUMN gone1;
SELECT keanon.watch('dlayout', 's', '{q}', 3, 4, mode => 'deferred');
ALTER TABLE dlayout DROP COLUMN gone2;
ALTER TABLE dlayout ADD COLUMN extra integer DEFAULT 7;
INSERT INTO dlayout (id, q, s, note) SELECT i, i % 4, i * 1.25, 'm' FROM generate_series(41, 60) i;
SELECT keanon.flush('dlayout');
UPDATE dlayout SET q = q + 10 WHERE id % 5 = 0;
UPDATE dlayout SET s = s + 0.125 WHERE id % 7 = 0;
DELETE FROM dlayout WHERE id % 9 = 0;
INSERT INTO dlayout (id, q, s) VALUES (100, 1, 3.0625), (101, 2, NULL);
SELECT keanon.flush('dlayout');
-- every row with a value published once, with its own quasi-identifier and value
SELECT count(*) AS mismatched FROM (SELECT id, q, s FROM dlayout WHERE s IS NOT NULL) d
	FULL JOIN dlayout_keanon_rows r USING (id)
WHERE r.id IS NULL OR d.id IS NULL OR r.q IS DISTINCT FROM d.q OR r.s IS DISTINCT FROM d.s;
SELECT count(*) AS published, pg_catalog.max(scale(s)) AS finest FROM dlayout_keanon_rows;
SELECT keanon.check('dlayout');
DROP TABLE dlayout;

-- ----------------------------------------------------------------
-- Bad input, each refused with its errcode and nothing changed
-- ----------------------------------------------------------------
\set VERBOSITY sqlstate
SELECT keanon.watch('dpeople', 'salary', '{age}', 3, 2000, mode => 'later');
\set VERBOSITY default
SELECT keanon.watch('dpeople', 'salary', '{age}', 3, 2000, mode => 'later');
CREATE TABLE dnot (id integer PRIMARY KEY, v integer);
SELECT keanon.flush('dnot');
SELECT keanon.status('dnot');
-- a live watch has nothing pending: flush does nothing
SELECT keanon.watch('dnot', 'v', '{id}', 2, 0);
SELECT keanon.flush('dnot');
SELECT mode, pending, oldest_pending, lag FROM keanon.status('dnot');
-- the row trigger refuses to be anything else
CREATE TRIGGER wrong AFTER INSERT ON dnot FOR EACH STATEMENT EXECUTE FUNCTION keanon.note_change();
INSERT INTO dnot VALUES (1, 1);
DROP TRIGGER wrong ON dnot;
CREATE TRIGGER wrong AFTER INSERT ON dnot FOR EACH ROW EXECUTE FUNCTION keanon.note_change();
INSERT INTO dnot VALUES (2, 2);
DROP TRIGGER wrong ON dnot;
SELECT keanon.note_change();
SELECT keanon.unwatch('dnot');
DROP TABLE dnot;
-- register_watch keeps modes and their tables together
SELECT keanon.register_watch('dpeople', 'salary', '{age}', '{id}', 3, 2000, 'deferred',
	'dpeople_anon', 'dpeople_keanon_rows', 'dpeople_keanon_parts', NULL, NULL);
-- the pending list keeps the shape watch() gave it: a change is refused,
-- and past keanon's event trigger nothing is noted
ALTER TABLE dpeople_keanon_pending ALTER COLUMN id TYPE bigint;
ALTER EVENT TRIGGER keanon_on_alter DISABLE;
ALTER TABLE dpeople_keanon_pending ALTER COLUMN id TYPE bigint;
ALTER EVENT TRIGGER keanon_on_alter ENABLE;
INSERT INTO dpeople VALUES (90, 'x', 1, 'M', 1);
ALTER TABLE dpeople_keanon_pending ALTER COLUMN id TYPE integer;
INSERT INTO dpeople VALUES (90, 'x', 1, 'M', 1);
DELETE FROM dpeople WHERE id = 90;
SELECT keanon.flush('dpeople');
SELECT keanon.check('dpeople');

-- ----------------------------------------------------------------
-- Attacks by the roles keanon does not trust
-- ----------------------------------------------------------------
CREATE ROLE keanon_dwriter;
CREATE ROLE keanon_dreader;
GRANT INSERT, UPDATE, DELETE, SELECT ON dpeople TO keanon_dwriter;
GRANT SELECT ON dpeople_anon TO keanon_dreader;
CREATE SCHEMA dwriter_schema AUTHORIZATION keanon_dwriter;
-- look-alikes of what a flush, status or the trigger call, in the
-- attacker's schema, first on every search_path below
CREATE TABLE dcalls (n integer);
GRANT INSERT ON dcalls TO PUBLIC;
CREATE FUNCTION dwriter_schema.count(anyelement) RETURNS bigint LANGUAGE sql
	AS 'INSERT INTO public.dcalls VALUES (1); SELECT 0::bigint';
CREATE FUNCTION dwriter_schema.min(timestamptz) RETURNS timestamptz LANGUAGE sql
	AS 'INSERT INTO public.dcalls VALUES (1); SELECT now()';
CREATE FUNCTION dwriter_schema.now() RETURNS timestamptz LANGUAGE sql
	AS 'INSERT INTO public.dcalls VALUES (1); SELECT pg_catalog.now()';
CREATE FUNCTION dwriter_schema.int4eq_evil(integer, integer) RETURNS boolean LANGUAGE sql
	AS 'INSERT INTO public.dcalls VALUES (1); SELECT $1 OPERATOR(pg_catalog.=) $2';
CREATE OPERATOR dwriter_schema.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = dwriter_schema.int4eq_evil);
ALTER FUNCTION dwriter_schema.count(anyelement) OWNER TO keanon_dwriter;
ALTER FUNCTION dwriter_schema.min(timestamptz) OWNER TO keanon_dwriter;
ALTER FUNCTION dwriter_schema.now() OWNER TO keanon_dwriter;
ALTER FUNCTION dwriter_schema.int4eq_evil(integer, integer) OWNER TO keanon_dwriter;

-- the writer writes under its own search_path; it reaches nothing else
SET ROLE keanon_dwriter;
SET search_path = dwriter_schema, public;
INSERT INTO dpeople VALUES (4, 'd', 4, 'F', 40000), (5, 'e', 5, 'M', 50000);
UPDATE dpeople SET salary = 11 WHERE id = 1;
DELETE FROM dpeople WHERE id = 2;
-- the pending list, the rows table, the flush and the trigger are not its own
SELECT * FROM dpeople_keanon_pending;
INSERT INTO dpeople_keanon_pending VALUES (1, now());
DELETE FROM dpeople_keanon_pending;
SELECT keanon.flush('dpeople');
SELECT * FROM keanon.status('dpeople') WHERE false;
RESET search_path;
RESET ROLE;
-- the owner flushes and checks with the attacker's schema first: no
-- look-alike runs
SET search_path = dwriter_schema, public;
SELECT keanon.flush('dpeople');
SELECT pending FROM keanon.status('dpeople');
SELECT keanon.check('dpeople');
RESET search_path;
SELECT count(*) AS lookalike_calls FROM dcalls;
-- PUBLIC holds nothing on the pending list
SELECT relname, relacl FROM pg_class WHERE oid = 'dpeople_keanon_pending'::regclass;
-- a reader of the view may ask for the status, not flush; no one else may
SET ROLE keanon_dreader;
SELECT mode, pending FROM keanon.status('dpeople');
SELECT keanon.flush('dpeople');
RESET ROLE;
CREATE ROLE keanon_dstranger;
SET ROLE keanon_dstranger;
SELECT keanon.status('dpeople');
RESET ROLE;

-- The order rows come back in says nothing about their true values: rows
-- loaded in value order and applied by one flush come back in a random
-- order.  The attack hands each partition's published values, sorted, to
-- its rows in the order the view returns them; at chance, the hits are
-- sum_v c_v^2 / n per partition, and more than mean + 6 sqrt(mean) + 6
-- means the order leaks (see attack.sql).
CREATE TABLE dord (id integer PRIMARY KEY, tag integer, s integer);
SELECT keanon.watch('dord', 's', '{tag}', 5, 50, mode => 'deferred');
INSERT INTO dord SELECT i, i, v
FROM (SELECT i, (pg_catalog.hashint4(i) & 65535) AS v FROM generate_series(1, 1200) i) x
ORDER BY v, i;
SELECT keanon.flush('dord');
CREATE FUNCTION dorder_attack(ordered boolean) RETURNS TABLE (rows_seen bigint, at_chance boolean)
LANGUAGE plpgsql AS $$
DECLARE
	hits bigint;
	expect numeric;
BEGIN
	CREATE TEMP TABLE dseen AS
	SELECT row_number() OVER () AS pos, tag, pub, pid
	FROM (SELECT tag, s AS pub, keanon_pid AS pid FROM dord_anon) v;
	IF ordered THEN
		-- the test can tell: a list in true-value order leaks
		DELETE FROM dseen;
		INSERT INTO dseen SELECT row_number() OVER (ORDER BY keanon_pid, s, id), tag, keanon_pub, keanon_pid
		FROM dord_keanon_rows;
	END IF;
	WITH g AS (SELECT tag, pid, row_number() OVER (PARTITION BY pid ORDER BY pos) AS rp FROM dseen),
		 pv AS (SELECT pid, pub, row_number() OVER (PARTITION BY pid ORDER BY pub) AS rk FROM dseen)
	SELECT count(*) FILTER (WHERE pv.pub = t.s) INTO hits
	FROM g JOIN pv ON pv.pid = g.pid AND pv.rk = g.rp JOIN dord t ON t.id = g.tag;
	SELECT sum(c * c / n::numeric) INTO expect
	FROM (SELECT pid, pub, count(*) AS c, sum(count(*)) OVER (PARTITION BY pid) AS n
		  FROM dseen GROUP BY pid, pub) x;
	RETURN QUERY SELECT (SELECT count(*) FROM dseen), hits <= expect + 6 * sqrt(expect) + 6;
	DROP TABLE dseen;
END;
$$;
SELECT * FROM dorder_attack(true);
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT * FROM dorder_attack(false);
-- and after a second batch in value order joins the first
INSERT INTO dord SELECT i, i, v
FROM (SELECT i, (pg_catalog.hashint4(i) & 65535) AS v FROM generate_series(1201, 2000) i) x
ORDER BY v, i;
SELECT keanon.flush('dord');
SELECT * FROM dorder_attack(false);
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT keanon.check('dord');

-- A key of an extension's type (ltree): the flush finds the rows table's
-- rows by the key type's own equality (an IN looked = up by name where
-- only pg_catalog is searched, and every flush failed)
CREATE EXTENSION IF NOT EXISTS ltree;
CREATE TABLE dlt (id ltree PRIMARY KEY, qi integer, s integer);
INSERT INTO dlt SELECT ('a.b' || i)::ltree, i % 10, i * 7 % 100 FROM generate_series(1, 40) i;
SELECT keanon.watch('dlt', 's', '{qi}', 3, 10, mode => 'deferred') IS NOT NULL AS watched;
INSERT INTO dlt VALUES ('x.y', 1, 55);
UPDATE dlt SET s = s + 1 WHERE id = 'a.b3';
UPDATE dlt SET qi = 9 WHERE id = 'a.b5';
DELETE FROM dlt WHERE id = 'a.b4';
SELECT keanon.flush('dlt') AS flushed;
SELECT keanon.check('dlt');
SELECT count(*) AS published FROM dlt_anon;
DROP TABLE dlt CASCADE;

-- A generalized deferred watch whose view shows nothing yet (fewer than K
-- rows) tells a reader no count of what waits either
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS cube;
RESET client_min_messages;
CREATE TABLE dgs (id integer PRIMARY KEY, age integer, s integer);
SELECT keanon.watch('dgs', 's', '{age}', 3, 5, generalize => 5, mode => 'deferred') IS NOT NULL AS watched;
INSERT INTO dgs VALUES (1, 30, 10), (2, 31, 20), (3, 32, 30);
GRANT SELECT ON dgs_anon TO keanon_dreader;
SET ROLE keanon_dreader;
SELECT count(*) AS view_rows FROM dgs_anon;
SELECT mode, pending, lag IS NULL AS no_lag, published FROM keanon.status('dgs');
RESET ROLE;
SELECT count(*) AS noted FROM dgs_keanon_pending;
SELECT keanon.flush('dgs') AS flushed, keanon.check('dgs');
DROP TABLE dgs CASCADE;

-- ----------------------------------------------------------------
-- The background worker applies what writers commit
-- ----------------------------------------------------------------
-- the pending rows, read directly: keanon.status would start a worker too
CREATE VIEW dord_keanon_pending_count AS SELECT count(*) AS pending FROM dord_keanon_pending;
ALTER SYSTEM RESET keanon.worker;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SHOW keanon.worker;
INSERT INTO dord SELECT i, i, (pg_catalog.hashint4(i) & 65535) FROM generate_series(2001, 2300) i;
-- wait for it to apply them
SELECT deferred_wait('SELECT (SELECT pending FROM keanon.status(''dord'')) = 0');
SELECT pending, published FROM keanon.status('dord');
SELECT count(*) AS workers FROM pg_stat_activity WHERE backend_type = 'keanon worker';
SELECT keanon.check('dord');
-- idle for 10 seconds, it exits (so as not to keep DROP DATABASE waiting)
SELECT deferred_wait('SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = ''keanon worker'')');
SELECT count(*) AS workers FROM pg_stat_activity WHERE backend_type = 'keanon worker';
-- the next transaction that writes starts one again as it commits
INSERT INTO dord SELECT i, i, (pg_catalog.hashint4(i) & 65535) FROM generate_series(2301, 2400) i;
SELECT deferred_wait('SELECT (SELECT pending FROM dord_keanon_pending_count) = 0');
SELECT pending FROM dord_keanon_pending_count;
SELECT count(*) AS workers FROM pg_stat_activity WHERE backend_type = 'keanon worker';
SELECT keanon.check('dord');

-- unwatching removes the pending list and the row trigger
DROP VIEW dord_keanon_pending_count;
SELECT keanon.unwatch('dord');
SELECT count(*) FROM pg_class WHERE relname LIKE 'dord\_keanon\_%';
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'dord'::regclass AND NOT tgisinternal;
-- dropping the pending list ends the watch
DROP TABLE dpeople_keanon_pending;
SELECT count(*) FROM keanon.watches WHERE relid = 'dpeople'::regclass;
-- with no deferred watch left, the worker exits
SELECT deferred_wait('SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = ''keanon worker'')');
SELECT count(*) AS workers FROM pg_stat_activity WHERE backend_type = 'keanon worker';

-- a value a live watch refuses is refused in the deferred writer's own
-- statement, and the watch goes on publishing the others
CREATE TABLE dbad (id int PRIMARY KEY, name text, v numeric);
SELECT keanon.watch('dbad', 'v', ARRAY['name'], 2, 1, mode => 'deferred');
INSERT INTO dbad VALUES (1, 'a', 1.5), (2, 'b', 2), (3, 'c', 3);
INSERT INTO dbad VALUES (4, 'x', 1e40);
INSERT INTO dbad VALUES (4, 'x', 'NaN');
UPDATE dbad SET v = 'Infinity' WHERE id = 1;
-- an unconstrained column's index keeps its scale (at least 10 places):
-- a finer value is refused in the writer's statement, since raising the
-- scale at the flush could leave the values already noted without room in
-- 34 digits (1e23 and 1e-20 each fitted alone, and stopped every flush)
INSERT INTO dbad VALUES (4, 'd', 4.125);
INSERT INTO dbad VALUES (5, 'e', 1e-30);
INSERT INTO dbad VALUES (5, 'e', 1e23);
INSERT INTO dbad VALUES (6, 'f', 1e-20);
INSERT INTO dbad VALUES (6, 'f', 1e-10);
SELECT keanon.flush('dbad') AS applied;
SELECT keanon.check('dbad');
SELECT count(*) AS published FROM dbad_anon;
CREATE TABLE dbadf (id int PRIMARY KEY, name text, f float8);
SELECT keanon.watch('dbadf', 'f', ARRAY['name'], 2, 1, mode => 'deferred');
INSERT INTO dbadf VALUES (1, 'a', 1), (2, 'b', 'NaN');
INSERT INTO dbadf VALUES (1, 'a', 1), (2, 'b', '-Infinity');
INSERT INTO dbadf VALUES (1, 'a', 1), (2, 'b', 2);
SELECT keanon.flush('dbadf') AS applied;
SELECT keanon.check('dbadf');
DROP TABLE dbad, dbadf;

-- Flushes mixing every kind of change: partitions that only gain rows take
-- them by join steps (the partitions table's rows updated, not replaced),
-- the others are reassigned, and after each round the publication is the
-- optimum of the table, checked against the O(n^2) algorithm and by
-- keanon.check (every partition a permutation of its values, slots
-- 0 .. n - 1).  Values repeat (about two rows a value) and partitions are
-- small, so runs split between partitions, and a round's few changes
-- leave most partitions they reach only gaining rows, while some reach
-- the rows of a split run.
SELECT setseed(0.75);
CREATE TABLE dmix (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO dmix SELECT i, i % 7, (random() * 1500)::int FROM generate_series(1, 3000) i;
SELECT keanon.watch('dmix', 'v', '{g}', 3, 1, mode => 'deferred');
CREATE TEMP TABLE dmix_rounds (round integer, optimal boolean, checked boolean);
SELECT pg_stat_force_next_flush();
SELECT n_tup_upd AS parts_upd FROM pg_stat_user_tables WHERE relname = 'dmix_keanon_parts' \gset before_
DO $$
BEGIN
	FOR r IN 1 .. 30 LOOP
		INSERT INTO dmix SELECT 3000 + 100 * r + i, i % 7, (random() * 1500)::int
		FROM generate_series(1, 30) i;
		DELETE FROM dmix WHERE id IN (SELECT id FROM dmix ORDER BY random() LIMIT 10);
		UPDATE dmix SET v = (random() * 1500)::int
		WHERE id IN (SELECT id FROM dmix ORDER BY random() LIMIT 10);
		PERFORM keanon.flush('dmix');
		INSERT INTO dmix_rounds
		SELECT r, deferred_matches_oracle('dmix', 'v', 3, 1), keanon.check('dmix');
	END LOOP;
END
$$;
SELECT count(*) AS rounds, bool_and(optimal) AS optimal, bool_and(checked) AS checked FROM dmix_rounds;
-- and aimed at split runs: the last row of a run split between two
-- partitions leaves as a row arrives inside the later partition
TRUNCATE dmix_rounds;
DO $$
DECLARE
	p record;
BEGIN
	FOR r IN 1 .. 20 LOOP
		SELECT pt.keanon_pid, pt.lo, pt.hi INTO p FROM dmix_keanon_parts pt
		WHERE pt.lo_last_only AND pt.hi - pt.lo >= 2 ORDER BY random() LIMIT 1;
		EXIT WHEN NOT FOUND;
		DELETE FROM dmix WHERE id = (SELECT id FROM dmix_keanon_rows
									 WHERE keanon_pid = p.keanon_pid AND v = p.lo);
		INSERT INTO dmix VALUES (10000 + r, 0, p.lo + 1 + floor(random() * (p.hi - p.lo - 1))::int);
		PERFORM keanon.flush('dmix');
		INSERT INTO dmix_rounds
		SELECT r, deferred_matches_oracle('dmix', 'v', 3, 1), keanon.check('dmix');
	END LOOP;
END
$$;
SELECT count(*) >= 10 AS rounds, bool_and(optimal) AS optimal, bool_and(checked) AS checked FROM dmix_rounds;
SELECT pg_stat_force_next_flush();
SELECT n_tup_upd - :before_parts_upd > 0 AS some_partitions_joined
FROM pg_stat_user_tables WHERE relname = 'dmix_keanon_parts';
SELECT count(*) = (SELECT count(*) FROM dmix) AS all_published FROM dmix_anon;
DROP TABLE dmix;

-- A writer who sets a value it may not read learns nothing from what its
-- own statement wrote: the row is noted whether or not the value was
-- already the row's (only a wrong guess was noted, which
-- pg_stat_xact_user_tables showed the writer)
CREATE TABLE dor (id integer PRIMARY KEY, age integer, s integer);
INSERT INTO dor SELECT g, 20 + g, 1000 * g FROM generate_series(1, 12) g;
SELECT keanon.watch('dor', 's', '{age}', 3, 1000, mode => 'deferred') IS NOT NULL AS watched;
GRANT UPDATE (s, age), SELECT (age) ON dor TO keanon_dwriter;
SET ROLE keanon_dwriter;
BEGIN;
SELECT n_tup_ins AS before FROM pg_stat_xact_user_tables WHERE relname = 'dor_keanon_pending' \gset
UPDATE dor SET s = 5000 WHERE age = 25;
SELECT n_tup_ins - :before AS noted_for_the_value_it_held FROM pg_stat_xact_user_tables WHERE relname = 'dor_keanon_pending';
ROLLBACK;
BEGIN;
SELECT n_tup_ins AS before FROM pg_stat_xact_user_tables WHERE relname = 'dor_keanon_pending' \gset
UPDATE dor SET s = 6000 WHERE age = 25;
SELECT n_tup_ins - :before AS noted_for_another FROM pg_stat_xact_user_tables WHERE relname = 'dor_keanon_pending';
ROLLBACK;
-- so is one whose quasi-identifier it wrote (a generalized one is not
-- published as it is); an UPDATE of a column keanon does not watch notes
-- nothing
BEGIN;
SELECT n_tup_ins AS before FROM pg_stat_xact_user_tables WHERE relname = 'dor_keanon_pending' \gset
UPDATE dor SET age = age WHERE age = 25;
SELECT n_tup_ins - :before AS noted_for_a_quasi_identifier FROM pg_stat_xact_user_tables WHERE relname = 'dor_keanon_pending';
ROLLBACK;
RESET ROLE;
ALTER TABLE dor ADD COLUMN note text;
UPDATE dor SET note = 'x' WHERE age = 25;
SELECT count(*) AS noted_for_another_column FROM dor_keanon_pending;
UPDATE dor SET s = s WHERE age = 25;
SELECT keanon.flush('dor') AS flushed, keanon.check('dor');
DROP TABLE dor;

-- An owner's code that a flush runs (a policy on the pending list, a
-- trigger on its DELETE) retyped the sensitive column between the pending
-- rows read and their values used, which read an integer as a numeric's
-- pointer and crashed the server: the flush holds the watched table open,
-- so such an ALTER is refused, and the values read are checked for type
CREATE ROLE keanon_dretype;
GRANT CREATE ON SCHEMA public TO keanon_dretype;
SET ROLE keanon_dretype;
CREATE TABLE dret (id integer PRIMARY KEY, q integer, s numeric);
INSERT INTO dret SELECT g, g % 5, g * 10 FROM generate_series(1, 20) g;
SELECT keanon.watch('dret', 's', '{q}', 3, 1, mode => 'deferred') IS NOT NULL AS watched;
DROP TRIGGER keanon_columns ON dret;
CREATE FUNCTION dret_flip(want text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF want = 'int' AND current_setting('dret.state', true) = 'a' THEN
		PERFORM set_config('dret.state', 'b', false);
		PERFORM set_config('keanon.following_ddl', 'on', true);
		ALTER TABLE public.dret ALTER COLUMN s TYPE integer USING s::integer;
		PERFORM set_config('keanon.following_ddl', 'off', true);
	ELSIF want = 'numeric' AND current_setting('dret.state', true) = 'b' THEN
		PERFORM set_config('dret.state', 'c', false);
		PERFORM set_config('keanon.following_ddl', 'on', true);
		ALTER TABLE public.dret ALTER COLUMN s TYPE numeric;
		PERFORM set_config('keanon.following_ddl', 'off', true);
	END IF;
	RETURN true;
END $$;
CREATE FUNCTION dret_back() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM public.dret_flip('numeric'); RETURN OLD; END $$;
ALTER TABLE dret_keanon_pending ENABLE ROW LEVEL SECURITY;
ALTER TABLE dret_keanon_pending FORCE ROW LEVEL SECURITY;
CREATE POLICY dret_p ON dret_keanon_pending USING (public.dret_flip('int'));
CREATE TRIGGER dret_back BEFORE DELETE ON dret_keanon_pending FOR EACH ROW EXECUTE FUNCTION dret_back();
INSERT INTO dret VALUES (100, 1, 5000);
SELECT set_config('dret.state', 'a', false) AS armed;
\set VERBOSITY terse
SELECT keanon.flush('dret');
\set VERBOSITY default
SELECT format_type(atttypid, atttypmod) AS sensitive_type FROM pg_attribute
WHERE attrelid = 'dret'::regclass AND attname = 's';
SELECT set_config('dret.state', '', false) AS disarmed;
SELECT keanon.flush('dret') AS flushed, keanon.check('dret');
RESET ROLE;
DROP TABLE dret;
DROP FUNCTION dret_flip(text), dret_back();
REVOKE CREATE ON SCHEMA public FROM keanon_dretype;
DROP ROLE keanon_dretype;

DROP TABLE dpeople, dord, dcalls;
DROP FUNCTION deferred_matches_oracle(regclass, name, integer, bigint);
DROP FUNCTION dorder_attack(boolean);
DROP FUNCTION deferred_wait(text);
DROP SCHEMA dwriter_schema CASCADE;
DROP ROLE keanon_dwriter, keanon_dreader, keanon_dstranger;
