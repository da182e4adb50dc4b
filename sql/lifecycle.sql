--
-- A watch through the life of a real database: tables it cannot follow are
-- refused up front, schema changes it cannot follow are refused, drops in
-- any order leave nothing behind, and everything else keeps the
-- publication exact (each section ends with keanon.check).
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
\set SHOW_CONTEXT never

-- ----------------------------------------------------------------
-- Tables whose writes could bypass the triggers are refused
-- ----------------------------------------------------------------
CREATE TABLE parted (id integer, qi integer, s integer, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
SELECT keanon.watch('parted', 's', '{qi}', 2, 0);
SELECT keanon.watch('parted_1', 's', '{qi}', 2, 0);
CREATE TABLE inh_parent (id integer PRIMARY KEY, qi integer, s integer);
CREATE TABLE inh_child (id integer PRIMARY KEY, qi integer, s integer) INHERITS (inh_parent);
SELECT keanon.watch('inh_parent', 's', '{qi}', 2, 0);
SELECT keanon.watch('inh_child', 's', '{qi}', 2, 0);
DROP TABLE parted, inh_parent CASCADE;
-- a deferrable primary key
CREATE TABLE dk (id integer PRIMARY KEY DEFERRABLE, qi integer, s integer);
SELECT keanon.watch('dk', 's', '{qi}', 2, 0);
DROP TABLE dk;

-- and a watched table cannot become one later
CREATE TABLE w1 (id integer PRIMARY KEY, qi integer, s integer, other integer);
INSERT INTO w1 SELECT i, i % 3, i * 10, i FROM generate_series(1, 20) i;
SELECT keanon.watch('w1', 's', '{qi}', 3, 10);
CREATE TABLE w1_child () INHERITS (w1);
CREATE TABLE w1_parent (id integer PRIMARY KEY, qi integer, s integer, other integer);
ALTER TABLE w1 INHERIT w1_parent;
CREATE TABLE w1_parted (id integer PRIMARY KEY, qi integer, s integer, other integer) PARTITION BY RANGE (id);
ALTER TABLE w1_parted ATTACH PARTITION w1 FOR VALUES FROM (0) TO (1000);
ALTER TABLE w1 SET UNLOGGED;
DROP TABLE w1_parent, w1_parted;
SELECT keanon.check('w1');

-- ----------------------------------------------------------------
-- Schema changes: renames followed, drops and type changes refused
-- ----------------------------------------------------------------
-- a renamed watched column is renamed along: in the view too
ALTER TABLE w1 RENAME COLUMN s TO salary;
ALTER TABLE w1 RENAME COLUMN qi TO q;
ALTER TABLE w1 RENAME COLUMN id TO ident;
SELECT attname FROM pg_attribute WHERE attrelid = 'w1_anon'::regclass AND attnum > 0 ORDER BY attnum;
SELECT sensitive, quasi_identifiers, key_columns FROM keanon.watches WHERE relid = 'w1'::regclass;
INSERT INTO w1 (ident, q, salary) VALUES (30, 1, 300);
UPDATE w1 SET salary = salary + 1, q = 2 WHERE ident = 2;
SELECT keanon.check('w1');
ALTER TABLE w1 RENAME COLUMN salary TO s;
ALTER TABLE w1 RENAME COLUMN q TO qi;
ALTER TABLE w1 RENAME COLUMN ident TO id;
ALTER TABLE w1 RENAME COLUMN qi TO keanon_qi;
-- dropping or retyping a watched column, or changing the key, is refused
ALTER TABLE w1 DROP COLUMN qi;
ALTER TABLE w1 DROP COLUMN qi CASCADE;
ALTER TABLE w1 ALTER COLUMN s TYPE bigint;
ALTER TABLE w1 ALTER COLUMN qi TYPE bigint;
ALTER TABLE w1 DROP CONSTRAINT w1_pkey;
ALTER TABLE w1 DROP CONSTRAINT w1_pkey, ADD PRIMARY KEY (id, qi);
-- the same key made again in one statement is the same key
ALTER TABLE w1 DROP CONSTRAINT w1_pkey, ADD CONSTRAINT w1_pkey PRIMARY KEY (id);
-- other columns change freely, and maintenance goes on
ALTER TABLE w1 ADD COLUMN extra text DEFAULT 'x';
ALTER TABLE w1 DROP COLUMN other;
INSERT INTO w1 (id, qi, s) VALUES (21, 1, 205), (22, 2, 5);
UPDATE w1 SET s = s + 1, extra = 'y' WHERE id = 3;
DELETE FROM w1 WHERE id = 4;
SELECT keanon.check('w1');
DELETE FROM w1 WHERE id = 30;
-- renaming the table or its schema, in this session and the next
CREATE SCHEMA rs1;
ALTER TABLE w1 SET SCHEMA rs1;
INSERT INTO rs1.w1 (id, qi, s) VALUES (23, 0, 77);
ALTER TABLE rs1.w1 RENAME TO w1r;
INSERT INTO rs1.w1r (id, qi, s) VALUES (24, 0, 78);
ALTER SCHEMA rs1 RENAME TO rs2;
INSERT INTO rs2.w1r (id, qi, s) VALUES (25, 0, 79);
SELECT keanon.check('rs2.w1r');
\c
SET client_min_messages = warning;
\set SHOW_CONTEXT never
INSERT INTO rs2.w1r (id, qi, s) VALUES (26, 0, 80);
SELECT keanon.check('rs2.w1r');

-- ----------------------------------------------------------------
-- Drops in any order leave nothing behind
-- ----------------------------------------------------------------
-- the schema of a watched table, by CASCADE
DROP SCHEMA rs2 CASCADE;
SELECT count(*) AS left_behind FROM pg_class WHERE relname LIKE 'w1%';
SELECT count(*) AS watches_left FROM keanon.watches w
WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = w.relid);
-- the view alone, then the rows table alone: the watch ends, the table lives
CREATE TABLE w2 (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO w2 SELECT i, i % 3, i * 10 FROM generate_series(1, 20) i;
SELECT keanon.watch('w2', 's', '{qi}', 3, 10);
SET client_min_messages = notice;
DROP VIEW w2_anon;
SET client_min_messages = warning;
SELECT count(*) AS watched FROM keanon.watches WHERE relid = 'w2'::regclass;
SELECT relname FROM pg_class WHERE relname LIKE 'w2%' ORDER BY relname;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'w2'::regclass;
INSERT INTO w2 VALUES (21, 0, 1);
SELECT keanon.watch('w2', 's', '{qi}', 3, 10);
DROP TABLE w2_keanon_rows CASCADE;
SELECT count(*) AS watched FROM keanon.watches WHERE relid = 'w2'::regclass;
SELECT relname FROM pg_class WHERE relname LIKE 'w2%' ORDER BY relname;
SELECT keanon.watch('w2', 's', '{qi}', 3, 10);
SELECT keanon.check('w2');
DROP TABLE w2;

-- ----------------------------------------------------------------
-- Names: internal names never collide, user names never meet keanon's
-- ----------------------------------------------------------------
CREATE TABLE a_table_name_that_is_long_enough_to_share_fifty_c_x
	(id integer PRIMARY KEY, qi integer, s integer);
CREATE TABLE a_table_name_that_is_long_enough_to_share_fifty_c_y
	(id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO a_table_name_that_is_long_enough_to_share_fifty_c_x
SELECT i, i, i FROM generate_series(1, 6) i;
INSERT INTO a_table_name_that_is_long_enough_to_share_fifty_c_y
SELECT i, i, i FROM generate_series(1, 6) i;
SELECT keanon.watch('a_table_name_that_is_long_enough_to_share_fifty_c_x', 's', '{qi}', 2, 0,
	publish_as => 'long_x_anon');
SELECT keanon.watch('a_table_name_that_is_long_enough_to_share_fifty_c_y', 's', '{qi}', 2, 0,
	publish_as => 'long_y_anon');
SELECT keanon.check('a_table_name_that_is_long_enough_to_share_fifty_c_x'),
	   keanon.check('a_table_name_that_is_long_enough_to_share_fifty_c_y');
DROP TABLE a_table_name_that_is_long_enough_to_share_fifty_c_x,
	a_table_name_that_is_long_enough_to_share_fifty_c_y;
-- a default view name already taken, an empty one, reserved column names
CREATE TABLE nm (id integer PRIMARY KEY, qi integer, s integer, keanon_pid integer);
CREATE VIEW nm_anon AS SELECT 1 AS x;
SELECT keanon.watch('nm', 's', '{qi}', 2, 0);
SELECT keanon.watch('nm', 's', '{qi}', 2, 0, publish_as => '');
SELECT keanon.watch('nm', 's', '{qi,keanon_pid}', 2, 0, publish_as => 'nm_pub');
SELECT keanon.watch('nm', 's', '{qi}', 2, 0, publish_as => 'nm_pub');
INSERT INTO nm VALUES (1, 1, 1, 1), (2, 2, 2, 2);
SELECT keanon.check('nm');
DROP TABLE nm;
DROP VIEW nm_anon;

-- ----------------------------------------------------------------
-- Quasi-identifiers of any type, even without an equality operator
-- ----------------------------------------------------------------
CREATE TABLE qt (id integer PRIMARY KEY, j json, p point, s integer);
INSERT INTO qt SELECT i, json_build_object('a', i % 3), point(i % 2, 0), i FROM generate_series(1, 12) i;
SELECT keanon.watch('qt', 's', '{j,p}', 3, 2);
UPDATE qt SET j = '{"a": 9}' WHERE id = 1;
UPDATE qt SET p = point(5, 5), s = s + 100 WHERE id = 2;
UPDATE qt SET s = s WHERE id = 3;
SELECT count(*) AS updated_qi FROM qt_anon WHERE j::text = '{"a": 9}';
SELECT keanon.check('qt');

-- ----------------------------------------------------------------
-- A statement that changes nothing changes nothing
-- ----------------------------------------------------------------
SELECT generation AS g0 FROM keanon.watches WHERE relid = 'qt'::regclass \gset
UPDATE qt SET s = s WHERE false;
DELETE FROM qt WHERE false;
INSERT INTO qt SELECT * FROM qt WHERE false;
UPDATE qt SET s = s WHERE id = 5;
SELECT generation = :g0 AS unchanged FROM keanon.watches WHERE relid = 'qt'::regclass;
UPDATE qt SET s = s + 1 WHERE id = 5;
SELECT generation = :g0 + 1 AS bumped FROM keanon.watches WHERE relid = 'qt'::regclass;
SELECT keanon.check('qt');
DROP TABLE qt;

-- ----------------------------------------------------------------
-- TRUNCATE empties the internal tables by TRUNCATE, not row by row
-- ----------------------------------------------------------------
CREATE TABLE tr (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO tr SELECT i, i % 3, i FROM generate_series(1, 50) i;
SELECT keanon.watch('tr', 's', '{qi}', 3, 2);
SELECT pg_relation_filenode('tr_keanon_rows') AS rows_node,
	   pg_relation_filenode('tr_keanon_idx') AS idx_node \gset
BEGIN;
TRUNCATE tr;
SELECT count(*) AS published_in_xact FROM tr_anon;
ROLLBACK;
SELECT count(*) AS published_after_rollback FROM tr_anon;
SELECT keanon.check('tr');
TRUNCATE tr;
SELECT pg_relation_filenode('tr_keanon_rows') <> :rows_node AS rows_truncated,
	   pg_relation_filenode('tr_keanon_idx') <> :idx_node AS index_rebuilt,
	   (SELECT count(*) FROM tr_keanon_parts) AS partitions;
SELECT keanon.check('tr');
INSERT INTO tr SELECT i, i % 3, i FROM generate_series(1, 7) i;
INSERT INTO tr VALUES (8, 1, 100);
SELECT count(*) AS published FROM tr_anon;
SELECT keanon.check('tr');
DROP TABLE tr;

-- ----------------------------------------------------------------
-- Watching a large table reports its phases
-- ----------------------------------------------------------------
CREATE TABLE big (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO big SELECT i, i % 10, (i * 7919) % 100003 FROM generate_series(1, 100000) i;
SET client_min_messages = notice;
SELECT keanon.watch('big', 's', '{qi}', 5, 100);
SET client_min_messages = warning;
SELECT keanon.check('big');
-- VACUUM of its rows table reads a window of a large keanon index, not the
-- whole of it, and still finds the pages the index frees
SELECT pg_relation_size('big_keanon_idx') / 8192 AS index_pages \gset
SELECT pg_stat_force_next_flush();
SELECT coalesce(idx_blks_read, 0) + coalesce(idx_blks_hit, 0) AS before_vacuum
FROM pg_statio_all_indexes WHERE indexrelid = 'big_keanon_idx'::regclass \gset
VACUUM big_keanon_rows;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT :index_pages > 256 AS large_index,
	   coalesce(idx_blks_read, 0) + coalesce(idx_blks_hit, 0) - :before_vacuum < :index_pages / 2 AS read_less_than_half
FROM pg_statio_all_indexes WHERE indexrelid = 'big_keanon_idx'::regclass;
DELETE FROM big WHERE id % 2 = 0;
VACUUM big_keanon_rows;
INSERT INTO big SELECT i, i % 10, (i * 7919) % 100003 FROM generate_series(100001, 150000) i;
SELECT pg_relation_size('big_keanon_idx') / 8192 < :index_pages * 1.2 AS freed_pages_used_again;
SELECT keanon.check('big');
DROP TABLE big;

-- ----------------------------------------------------------------
-- Unconstrained numeric: the index's scale follows the finest value
-- ----------------------------------------------------------------
CREATE TABLE un (id integer PRIMARY KEY, qi integer, s numeric);
INSERT INTO un VALUES (1, 1, 1.5), (2, 2, 2.25), (3, 1, 10), (4, 2, 11), (5, 1, 12.5);
SELECT keanon.watch('un', 's', '{qi}', 2, 0.5);
INSERT INTO un VALUES (6, 1, 3.000000000001);
INSERT INTO un VALUES (7, 2, 7.0625), (8, 1, 0.0000000000000001);
SELECT min_value, max_value FROM keanon.partitions('un') ORDER BY min_value LIMIT 1;
SELECT keanon.check('un');
-- in release mode a release's ranges keep their meaning when the scale rises
CREATE TABLE unr (id integer PRIMARY KEY, qi integer, s numeric);
INSERT INTO unr SELECT id, qi, s FROM un WHERE id <= 5;
SELECT keanon.watch('unr', 's', '{qi}', 2, 0.5, mode => 'release');
SELECT keanon.release('unr');
INSERT INTO unr VALUES (6, 1, 3.000000000001), (7, 2, 20.5), (8, 1, 21.125);
SELECT keanon.release('unr');
SELECT keanon.check('unr');
DROP TABLE un, unr;

-- ----------------------------------------------------------------
-- A row leaving a huge partition finds a row showing its value by index
-- ----------------------------------------------------------------
-- one value in 100,000 rows, each other value in 3; a row of value 1
-- leaves the dominant value's partition (its run keeps 2 rows: the O(1)
-- leave), and the rows read to do it are few, not the partition's
CREATE TABLE dom (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO dom SELECT i, i % 7, 0 FROM generate_series(1, 100000) i;
INSERT INTO dom SELECT 100000 + i, i % 7, (i - 1) / 3 + 1 FROM generate_series(1, 30) i;
SELECT keanon.watch('dom', 's', '{qi}', 3, 0);
SELECT n > 100000 AS dominant_partition FROM keanon.partitions('dom') WHERE min_value = 0;
SELECT pg_stat_force_next_flush();
SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) AS read0
FROM pg_stat_user_tables WHERE relid = 'dom_keanon_rows'::regclass \gset
DELETE FROM dom WHERE id = 100001;
SELECT pg_stat_force_next_flush();
SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) - :read0 < 1000 AS few_rows_read
FROM pg_stat_user_tables WHERE relid = 'dom_keanon_rows'::regclass;
SELECT keanon.check('dom');
DROP TABLE dom;

-- ----------------------------------------------------------------
-- Unlogged tables: the internal tables share their persistence
-- ----------------------------------------------------------------
CREATE UNLOGGED TABLE ul (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO ul SELECT i, i % 3, i FROM generate_series(1, 10) i;
SELECT keanon.watch('ul', 's', '{qi}', 2, 1);
SELECT c.relname, c.relpersistence FROM pg_class c
WHERE c.relname IN ('ul_keanon_rows', 'ul_keanon_parts', 'ul_keanon_idx') ORDER BY c.relname;
SELECT keanon.check('ul');
DROP TABLE ul;

-- ----------------------------------------------------------------
-- A member of the owning role watches: the owner holds the objects
-- ----------------------------------------------------------------
CREATE ROLE keanon_lc_owner;
CREATE ROLE keanon_lc_member IN ROLE keanon_lc_owner;
CREATE SCHEMA lc AUTHORIZATION keanon_lc_owner;
SET ROLE keanon_lc_owner;
CREATE TABLE lc.t (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO lc.t SELECT i, i % 3, i FROM generate_series(1, 10) i;
SET ROLE keanon_lc_member;
SELECT keanon.watch('lc.t', 's', '{qi}', 2, 1);
INSERT INTO lc.t VALUES (11, 1, 11);
RESET ROLE;
SELECT c.relname, r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
WHERE c.relnamespace = 'lc'::regnamespace AND c.relkind IN ('r', 'v') ORDER BY c.relname;
SELECT keanon.check('lc.t');
-- a new owner of the table takes the watch's objects along
CREATE ROLE keanon_lc_next;
GRANT USAGE ON SCHEMA lc TO keanon_lc_next;
ALTER TABLE lc.t OWNER TO keanon_lc_next;
SELECT c.relname, r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
WHERE c.relnamespace = 'lc'::regnamespace AND c.relkind IN ('r', 'v') ORDER BY c.relname;
INSERT INTO lc.t VALUES (12, 2, 12);
SELECT keanon.check('lc.t');
-- dropping the keanon index ends the watch
SET client_min_messages = notice;
DROP INDEX lc.t_keanon_idx;
SET client_min_messages = warning;
SELECT count(*) AS watched FROM keanon.watches WHERE relid = 'lc.t'::regclass;
SELECT count(*) AS left_behind FROM pg_class WHERE relnamespace = 'lc'::regnamespace AND (relname LIKE 't\_keanon%' OR relname = 't_anon');
DROP SCHEMA lc CASCADE;
DROP ROLE keanon_lc_next;
DROP ROLE keanon_lc_member;
DROP ROLE keanon_lc_owner;

-- ----------------------------------------------------------------
-- Out-of-range k and e: keanon's own words, before anything is made
-- ----------------------------------------------------------------
CREATE TABLE kr (id integer PRIMARY KEY, qi integer, s numeric(40, 2));
SELECT keanon.watch('kr', 's', '{qi}', 2000000, 0);
SELECT keanon.watch('kr', 's', '{qi}', 2, 1e30);
SELECT count(*) AS made FROM pg_class WHERE relname LIKE 'kr\_%' AND relname <> 'kr_pkey';
DROP TABLE kr;

-- ----------------------------------------------------------------
-- REINDEX CONCURRENTLY: refused for the keanon index (a concurrent build
-- would miss the changes made meanwhile); the invalid copy it leaves
-- behind is not mistaken for the watch's index, and a plain REINDEX works
-- ----------------------------------------------------------------
CREATE TABLE rc (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO rc SELECT i, i % 3, i * 10 FROM generate_series(1, 30) i;
SELECT keanon.watch('rc', 's', '{qi}', 3, 20);
REINDEX INDEX CONCURRENTLY rc_keanon_idx;
-- (the server's warning that it skips the invalid copy is worded
-- differently in PostgreSQL 15 and 17; only the error is shown)
SET client_min_messages = error;
REINDEX TABLE CONCURRENTLY rc_keanon_rows;
RESET client_min_messages;
SELECT count(*) AS keanon_indexes, count(*) FILTER (WHERE i.indisvalid) AS valid
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
WHERE i.indrelid = 'rc_keanon_rows'::regclass AND a.amname = 'keanon';
INSERT INTO rc VALUES (31, 1, 310), (32, 2, 5);
UPDATE rc SET s = s + 1 WHERE id % 4 = 0;
SELECT keanon.check('rc');
CREATE INDEX CONCURRENTLY rc_second ON rc_keanon_rows USING keanon (s) WITH (k = 3, e = 20);
REINDEX INDEX rc_keanon_idx;
DELETE FROM rc WHERE id % 5 = 0;
SELECT keanon.check('rc');
-- a rebuild of the whole table makes those copies valid: writes are then
-- refused with the way out, not with an internal error, until they go
VACUUM FULL rc_keanon_rows;
INSERT INTO rc VALUES (40, 1, 400);
DO $$
DECLARE
	x regclass;
BEGIN
	FOR x IN SELECT i.indexrelid::regclass FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			 JOIN pg_am a ON a.oid = c.relam
			 WHERE i.indrelid = 'rc_keanon_rows'::regclass AND a.amname = 'keanon'
			   AND i.indexrelid <> 'rc_keanon_idx'::regclass LOOP
		EXECUTE format('DROP INDEX %s', x);
	END LOOP;
END $$;
INSERT INTO rc VALUES (40, 1, 400);
SELECT keanon.check('rc');
DROP TABLE rc;

-- ----------------------------------------------------------------
-- Keys of an extension's type (citext): multi-row statements, check,
-- flushes and releases compare them by the type's own equality, which the
-- pinned search_path would not find by name
-- ----------------------------------------------------------------
CREATE EXTENSION IF NOT EXISTS citext;
CREATE TABLE ck (name citext PRIMARY KEY, grp integer, v integer);
INSERT INTO ck SELECT 'n' || i, i % 3, i * 10 FROM generate_series(1, 30) i;
SELECT keanon.watch('ck', 'v', '{grp}', 3, 20);
INSERT INTO ck SELECT 'm' || i, i % 3, i * 7 FROM generate_series(1, 20) i;
UPDATE ck SET v = v + 1 WHERE grp = 1;
UPDATE ck SET name = upper(name) || 'x' WHERE grp = 2;
DELETE FROM ck WHERE v > 250;
SELECT keanon.check('ck');
CREATE TABLE ckd (name citext PRIMARY KEY, grp integer, v integer);
INSERT INTO ckd SELECT 'n' || i, i % 3, i * 10 FROM generate_series(1, 30) i;
SELECT keanon.watch('ckd', 'v', '{grp}', 3, 20, mode => 'deferred');
INSERT INTO ckd SELECT 'm' || i, i % 3, i * 7 FROM generate_series(1, 20) i;
UPDATE ckd SET v = v + 1 WHERE grp = 1;
DELETE FROM ckd WHERE v > 250;
-- the explicit flush and the worker's may share the work: none is left
SELECT keanon.flush('ckd') IS NOT NULL AS flushed;
SELECT pending AS left_pending FROM keanon.status('ckd');
SELECT keanon.check('ckd');
CREATE TABLE ckr (name citext PRIMARY KEY, grp integer, v integer);
INSERT INTO ckr SELECT 'n' || i, i % 3, i * 10 FROM generate_series(1, 30) i;
SELECT keanon.watch('ckr', 'v', '{grp}', 3, 20, mode => 'release');
SELECT keanon.release('ckr');
INSERT INTO ckr SELECT 'm' || i, i % 3, 400 + i * 7 FROM generate_series(1, 20) i;
-- 'N1' is n1 to citext: its new group, with its value unchanged, relabels
-- its released row, so nothing is withheld or retained
UPDATE ckr SET grp = 9 WHERE name = 'N1';
SELECT keanon.release('ckr');
SELECT rows_published, rows_withheld, rows_retained FROM keanon.releases('ckr') WHERE release_no = 2;
SELECT keanon.check('ckr');
DROP TABLE ck, ckd, ckr;
DROP EXTENSION citext;

-- A watch number given again, to a later watch, starts its partition ids
-- past those its earlier watch handed out: a keanon_pid saved from the
-- earlier view never names a partition of the later one (its bounds are
-- refused, not answered from another table).  Only keanon reads the table
-- that keeps them.
CREATE TABLE n1 (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO n1 SELECT i, i % 3, i * 10 FROM generate_series(1, 60) i;
SELECT keanon.watch('n1', 'v', '{g}', 3, 20);
SELECT watch_no AS n1_no FROM keanon.watches WHERE relid = 'n1'::regclass \gset
CREATE TEMP TABLE saved AS SELECT keanon_pid FROM n1_anon;
SELECT keanon.unwatch('n1');
CREATE TABLE n2 (id integer PRIMARY KEY, g integer, v integer);
INSERT INTO n2 SELECT i, i % 3, i * 7 FROM generate_series(1, 60) i;
SELECT keanon.watch('n2', 'v', '{g}', 3, 20);
SELECT watch_no = :n1_no AS same_number FROM keanon.watches WHERE relid = 'n2'::regclass;
SELECT (SELECT min(keanon_pid) FROM n2_anon) > (SELECT max(keanon_pid) FROM saved) AS past_the_saved;
SELECT count(*) AS saved_pids_naming_a_partition FROM saved s
WHERE EXISTS (SELECT 1 FROM n2_keanon_parts p WHERE p.keanon_pid = s.keanon_pid);
SELECT keanon.sum_bounds(keanon_pid) FROM saved;
SELECT keanon.unwatch('n2');
SELECT keanon.watch('n2', 'v', '{g}', 3, 20);
SELECT watch_no = :n1_no AS same_number_again FROM keanon.watches WHERE relid = 'n2'::regclass;
SELECT (SELECT min(keanon_pid) FROM n2_anon) > (SELECT max(keanon_pid) FROM saved) AS still_past;
CREATE ROLE keanon_lc_reader;
SET ROLE keanon_lc_reader;
SELECT * FROM keanon.spent_pids;
RESET ROLE;
SELECT keanon.check('n2');
DROP TABLE n1, n2, saved;
DROP ROLE keanon_lc_reader;

-- ----------------------------------------------------------------
-- A primary key with INCLUDE columns is refused: an included column may
-- be NULL, and a writer's NULL there left a row linked by no key (never
-- published by a deferred watch, added again by every release)
-- ----------------------------------------------------------------
CREATE TABLE inc (id integer, x integer, age integer, salary integer, PRIMARY KEY (id) INCLUDE (x));
INSERT INTO inc SELECT i, i, i % 5, i * 10 FROM generate_series(1, 20) i;
SELECT keanon.watch('inc', 'salary', '{age}', 3, 0) IS NOT NULL AS watched;
SELECT count(*) AS watches FROM keanon.watches WHERE relid = 'inc'::regclass;
DROP TABLE inc;
