-- The keanon index access method: builds, options, types, checks, repair.
CREATE EXTENSION IF NOT EXISTS keanon;
SET client_min_messages = warning;

-- An index agrees with its table when it holds the partitions the engine
-- computes from scratch over the table's values (keanon.optimal_partitions)
-- An optimum: the rows and the sum-error of the oracle's, every partition
-- with k distinct values over a range of at least e, and the index's own
-- check passed (its partition ends lay out an optimal partitioning of its
-- runs).  Which optimum: changes keep the boundaries they can, so after
-- changes it need not be the one optimal_partitions gives.
CREATE FUNCTION index_agrees(idx regclass, vals bigint[], k integer, e bigint)
RETURNS boolean LANGUAGE sql AS $$
	SELECT (SELECT ARRAY[coalesce(sum(n), 0), coalesce(sum(error), 0),
						 count(*) FILTER (WHERE distinct_values < k OR error < e)]
			FROM keanon.index_partitions(idx)) =
		   (SELECT ARRAY[coalesce(sum(n), 0), coalesce(sum(error), 0), 0]
			FROM keanon.optimal_partitions(vals, k, e))
		AND keanon.index_check(idx)
$$;
-- The metapage as it stands (superuser only), without the repair that
-- opening the index does
CREATE FUNCTION index_metapage(index regclass, OUT layout_version integer,
	OUT value_type regtype, OUT scale integer, OUT k integer, OUT e numeric,
	OUT nrows bigint, OUT needs_rebuild boolean, OUT flux xid[])
AS '$libdir/keanon', 'keanon_index_metapage' LANGUAGE C STRICT;

-- The research's worked example (report Tables 3.5/3.6), k = 3, e = 2
CREATE TABLE t35 (id serial PRIMARY KEY, v integer);
INSERT INTO t35 (v) VALUES (54), (55), (56), (65), (70), (75), (75), (80), (85);
CREATE INDEX t35_ke ON t35 USING keanon (v) WITH (k = 3, e = 2);
SELECT * FROM keanon.index_partitions('t35_ke');
SELECT keanon.index_check('t35_ke');

-- Table 3.7: inserting 67 lowers the sum-error from 22 to 17
INSERT INTO t35 (v) VALUES (67);
REINDEX INDEX t35_ke;
SELECT * FROM keanon.index_partitions('t35_ke');
SELECT sum(error) AS sum_error FROM keanon.index_partitions('t35_ke');
SELECT keanon.index_check('t35_ke');

-- Table 3.8: inserting 55 instead leaves it at 22
DELETE FROM t35 WHERE v = 67;
INSERT INTO t35 (v) VALUES (55);
REINDEX INDEX t35_ke;
SELECT * FROM keanon.index_partitions('t35_ke');
SELECT keanon.index_check('t35_ke');

-- A stale index is reported, REINDEX mends it
INSERT INTO t35 (v) VALUES (90), (91);
SELECT keanon.index_check('t35_ke');
REINDEX INDEX t35_ke;
SELECT keanon.index_check('t35_ke');

-- The salary example of report Table 3.1, k = 3, e = 2000
CREATE TABLE salaries (id serial PRIMARY KEY, salary bigint);
INSERT INTO salaries (salary) VALUES (14000), (15000), (16000), (25000),
	(35000), (30000), (40000), (35000), (45000);
CREATE INDEX salaries_ke ON salaries USING keanon (salary) WITH (k = 3, e = 2000);
SELECT * FROM keanon.index_partitions('salaries_ke');
SELECT keanon.index_check('salaries_ke');

-- Too few distinct values: no valid partitioning, nothing published
CREATE TABLE few (id serial PRIMARY KEY, v smallint);
INSERT INTO few (v) VALUES (5), (5), (5), (7), (7);
CREATE INDEX few_ke ON few USING keanon (v) WITH (k = 3);
SELECT count(*) FROM keanon.index_partitions('few_ke');
SELECT keanon.index_check('few_ke');

-- Empty table, NULLs skipped
CREATE TABLE empty_t (id serial PRIMARY KEY, v integer);
CREATE INDEX empty_ke ON empty_t USING keanon (v) WITH (k = 2);
SELECT count(*) FROM keanon.index_partitions('empty_ke');
SELECT keanon.index_check('empty_ke');
INSERT INTO empty_t (v) VALUES (NULL), (1), (NULL), (2), (3);
REINDEX INDEX empty_ke;
SELECT * FROM keanon.index_partitions('empty_ke');
SELECT keanon.index_check('empty_ke');

-- Every supported type
CREATE TABLE types (id serial PRIMARY KEY, a smallint, b integer, c bigint,
	d numeric(8,2), e numeric, f real, g double precision);
INSERT INTO types (a, b, c, d, e, f, g)
SELECT i % 7, i % 11, (i % 13) * 1000000000000, (i % 9) * 1.25,
	   (i % 10) / 4.0, (i % 8) * 0.5, (i % 12) * 0.25
FROM generate_series(1, 200) i;
CREATE INDEX types_a ON types USING keanon (a) WITH (k = 2, e = 1);
CREATE INDEX types_b ON types USING keanon (b) WITH (k = 3, e = 2);
CREATE INDEX types_c ON types USING keanon (c) WITH (k = 4, e = 3000000000000);
CREATE INDEX types_d ON types USING keanon (d) WITH (k = 3, e = 2.5);
CREATE INDEX types_e ON types USING keanon (e) WITH (k = 2, e = 0.5);
CREATE INDEX types_f ON types USING keanon (f) WITH (k = 2, e = 1);
CREATE INDEX types_g ON types USING keanon (g) WITH (k = 3, e = 0.5);
SELECT * FROM keanon.index_partitions('types_a');
SELECT * FROM keanon.index_partitions('types_b');
SELECT * FROM keanon.index_partitions('types_c');
SELECT * FROM keanon.index_partitions('types_d');
SELECT * FROM keanon.index_partitions('types_e');
SELECT * FROM keanon.index_partitions('types_f');
SELECT * FROM keanon.index_partitions('types_g');
SELECT i, keanon.index_check(i)
FROM unnest(ARRAY['types_a', 'types_b', 'types_c', 'types_d', 'types_e',
				  'types_f', 'types_g']::regclass[]) i;

-- Options and bad input: each error leaves nothing behind
CREATE INDEX bad ON types USING keanon (b);
CREATE INDEX bad ON types USING keanon (b) WITH (k = 1);
CREATE INDEX bad ON types USING keanon (b) WITH (k = 3, e = -1);
CREATE INDEX bad ON types USING keanon (b) WITH (k = 3, scale = 99);
CREATE INDEX bad ON types USING keanon (b) WITH (k = 3, colour = 1);
CREATE INDEX bad ON types USING keanon (a, b) WITH (k = 3);
CREATE INDEX bad ON types USING keanon ((b + 1)) WITH (k = 3);
CREATE INDEX bad ON types USING keanon (b) WITH (k = 3) WHERE b > 1;
CREATE INDEX bad ON types USING keanon (b) INCLUDE (a) WITH (k = 3);
CREATE INDEX bad ON types USING keanon (d) WITH (k = 3, e = 1e29);
CREATE INDEX bad ON types USING keanon ((id::text)) WITH (k = 3);
CREATE UNIQUE INDEX bad ON types USING keanon (b) WITH (k = 3);
CREATE TABLE floats (id serial PRIMARY KEY, x double precision);
INSERT INTO floats (x) VALUES (1), ('NaN');
CREATE INDEX bad ON floats USING keanon (x) WITH (k = 2);
UPDATE floats SET x = 'Infinity' WHERE x = 'NaN';
CREATE INDEX bad ON floats USING keanon (x) WITH (k = 2);
-- an unconstrained numeric's NaN and infinities too, before their scale is asked
CREATE TABLE nonfinite (x numeric);
INSERT INTO nonfinite VALUES (1), (2), ('NaN');
CREATE INDEX bad ON nonfinite USING keanon (x) WITH (k = 2);
UPDATE nonfinite SET x = '-Infinity' WHERE x = 'NaN';
CREATE INDEX bad ON nonfinite USING keanon (x) WITH (k = 2);
DROP TABLE nonfinite;
-- nor does a table with a keanon index take a row the index could never
-- hold, though the index is kept by a watch's triggers alone
UPDATE floats SET x = 2 WHERE x = 'Infinity';
CREATE INDEX finite ON floats USING keanon (x) WITH (k = 2);
INSERT INTO floats (x) VALUES ('NaN');
UPDATE floats SET x = '-Infinity' WHERE x = 2;
INSERT INTO floats (x) VALUES (NULL), (3);
UPDATE floats SET x = 4 WHERE x = 3;
SELECT count(*), count(x), min(x), max(x) FROM floats;
REINDEX INDEX finite;
SELECT keanon.index_check('finite');
DROP INDEX finite;
CREATE TABLE decimals (id serial PRIMARY KEY, x numeric);
INSERT INTO decimals (x) VALUES (1.5), (2.25);
CREATE INDEX bad ON decimals USING keanon (x) WITH (k = 2, scale = 1);
SELECT count(*) FROM pg_class WHERE relname = 'bad';
SELECT keanon.index_partitions('types');
SELECT keanon.index_check('t35');

-- The planner never uses a keanon index
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM t35 WHERE v = 75;
RESET enable_seqscan;

-- VACUUM and amvalidate
VACUUM ANALYZE t35;
SELECT keanon.index_check('t35_ke');
SELECT opcname, amvalidate(c.oid)
FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
WHERE a.amname = 'keanon' ORDER BY opcname;
CREATE OPERATOR CLASS broken_ops FOR TYPE integer USING keanon AS
	FUNCTION 1 btint4cmp(integer, integer),
	FUNCTION 2 int4um(integer);
CREATE OPERATOR CLASS broken_text_ops FOR TYPE text USING keanon AS
	FUNCTION 1 bttextcmp(text, text);
SET client_min_messages = info;
SELECT opcname, amvalidate(oid) FROM pg_opclass
WHERE opcname IN ('broken_ops', 'broken_text_ops') ORDER BY opcname;
SET client_min_messages = warning;
DROP OPERATOR CLASS broken_text_ops USING keanon;
DROP OPERATOR CLASS broken_ops USING keanon;

-- Changes through the entry point keanon's triggers use, in a transaction
BEGIN;
INSERT INTO t35 (v) VALUES (67);
SELECT keanon.index_apply('t35_ke', '{67}', '{1}') > 0 AS recomputed;
SELECT index_agrees('t35_ke', ARRAY(SELECT v FROM t35)::bigint[], 3, 2);
SELECT keanon.index_check('t35_ke');
ROLLBACK;
-- the aborted change is found and the state rebuilt from the table
SELECT keanon.index_check('t35_ke');
SELECT * FROM keanon.index_partitions('t35_ke');

BEGIN;
INSERT INTO t35 (v) VALUES (60);
SELECT FROM keanon.index_apply('t35_ke', '{60}', '{1}');
SELECT index_agrees('t35_ke', ARRAY(SELECT v FROM t35)::bigint[], 3, 2);
SAVEPOINT s1;
INSERT INTO t35 (v) VALUES (61), (62);
SELECT FROM keanon.index_apply('t35_ke', '{61,62}', '{1,1}');
SELECT index_agrees('t35_ke', ARRAY(SELECT v FROM t35)::bigint[], 3, 2);
ROLLBACK TO SAVEPOINT s1;
SELECT keanon.index_check('t35_ke');
COMMIT;
SELECT keanon.index_check('t35_ke');
SELECT * FROM keanon.index_partitions('t35_ke');

-- every subtransaction of a transaction writes as the transaction: an
-- exception block per row, 1,100 of them (more than the metapage could
-- list), every seventh undone, each undone one put back from its pages'
-- images at the next open; a savepoint rolled back and the transaction
-- committed with no write since is put back at COMMIT; past work_mem the
-- images are dropped, and the COMMIT marks the index for a rebuild
CREATE TABLE sx (id serial PRIMARY KEY, v integer);
INSERT INTO sx (v) SELECT i FROM generate_series(1, 20) i;
CREATE INDEX sx_ke ON sx USING keanon (v) WITH (k = 3, e = 2);
DO $$
BEGIN
	FOR i IN 1 .. 1100 LOOP
		BEGIN
			-- the index first: a repair at its open reads the table without this row
			PERFORM keanon.index_apply('sx_ke', ARRAY[100 + i]::numeric[], '{1}');
			INSERT INTO sx (v) VALUES (100 + i);
			IF i % 7 = 0 THEN
				RAISE EXCEPTION 'undone';
			END IF;
		EXCEPTION WHEN raise_exception THEN
			NULL;
		END;
	END LOOP;
END;
$$;
SELECT count(*) AS rows_kept FROM sx;
SELECT keanon.index_check('sx_ke');
SELECT index_agrees('sx_ke', ARRAY(SELECT v FROM sx)::bigint[], 3, 2);
SELECT needs_rebuild, cardinality(flux) AS flux FROM index_metapage('sx_ke');
BEGIN;
SAVEPOINT s;
INSERT INTO sx (v) VALUES (5000);
SELECT FROM keanon.index_apply('sx_ke', '{5000}', '{1}');
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT needs_rebuild AS marked FROM index_metapage('sx_ke');
SELECT keanon.index_check('sx_ke');
SELECT index_agrees('sx_ke', ARRAY(SELECT v FROM sx)::bigint[], 3, 2);
INSERT INTO sx (v) SELECT 10 * i FROM generate_series(1000, 60000) i;
REINDEX INDEX sx_ke;
SET work_mem = '64kB';
BEGIN;
SAVEPOINT s;
SELECT FROM keanon.index_apply('sx_ke', ARRAY(SELECT (10 * i + 5)::numeric FROM generate_series(1000, 60000, 10) i),
	array_fill(1::bigint, ARRAY[5901]));
INSERT INTO sx (v) SELECT 10 * i + 5 FROM generate_series(1000, 60000, 10) i;
ROLLBACK TO SAVEPOINT s;
COMMIT;
RESET work_mem;
SELECT needs_rebuild AS marked FROM index_metapage('sx_ke');
SELECT keanon.index_check('sx_ke');
SELECT needs_rebuild AS marked FROM index_metapage('sx_ke');
DROP TABLE sx;

-- removing a value the index does not hold is refused and changes nothing
SELECT keanon.index_apply('t35_ke', '{1000}', '{-1}');
SELECT keanon.index_apply('t35_ke', '{1.5}', '{1}');
SELECT keanon.index_apply('t35_ke', '{1,2}', '{1}');
SELECT keanon.index_check('t35_ke');

-- only superusers may change an index directly; reading needs SELECT on the table
CREATE ROLE keanon_plain_role;
SET ROLE keanon_plain_role;
SELECT count(*) FROM keanon.index_partitions('t35_ke');
SELECT keanon.index_check('t35_ke');
RESET ROLE;
GRANT SELECT ON t35 TO keanon_plain_role;
SET ROLE keanon_plain_role;
SELECT count(*) FROM keanon.index_partitions('t35_ke');
SELECT keanon.index_apply('t35_ke', '{60}', '{1}');
RESET ROLE;
DROP OWNED BY keanon_plain_role;
DROP ROLE keanon_plain_role;

-- An unlogged table gets an empty index after a crash; here, after build
CREATE UNLOGGED TABLE ul (id serial PRIMARY KEY, v integer);
INSERT INTO ul (v) SELECT i FROM generate_series(1, 20) i;
CREATE INDEX ul_ke ON ul USING keanon (v) WITH (k = 4, e = 3);
SELECT * FROM keanon.index_partitions('ul_ke');
SELECT keanon.index_check('ul_ke');

-- VACUUM settles the metapage's list of unconfirmed transactions, so that
-- no 32-bit id outlives the commit log: a committed writer is forgotten,
-- an aborted one becomes the rebuild mark
CREATE TABLE fl (id serial PRIMARY KEY, v integer);
INSERT INTO fl (v) SELECT i FROM generate_series(1, 10) i;
CREATE INDEX fl_ke ON fl USING keanon (v) WITH (k = 2, e = 1);
SELECT layout_version, value_type, k, e, nrows, needs_rebuild, cardinality(flux) AS flux
FROM index_metapage('fl_ke');
BEGIN;
INSERT INTO fl (v) VALUES (11);
SELECT FROM keanon.index_apply('fl_ke', '{11}', '{1}');
ROLLBACK;
SELECT needs_rebuild, cardinality(flux) AS flux FROM index_metapage('fl_ke');
VACUUM fl;
SELECT needs_rebuild, cardinality(flux) AS flux FROM index_metapage('fl_ke');
-- the next user rebuilds, and its own entry goes at the next VACUUM
SELECT keanon.index_check('fl_ke');
SELECT index_agrees('fl_ke', ARRAY(SELECT v FROM fl)::bigint[], 2, 1);
SELECT needs_rebuild, cardinality(flux) AS flux FROM index_metapage('fl_ke');
VACUUM fl;
SELECT needs_rebuild, cardinality(flux) AS flux FROM index_metapage('fl_ke');
BEGIN;
INSERT INTO fl (v) VALUES (11);
SELECT FROM keanon.index_apply('fl_ke', '{11}', '{1}');
COMMIT;
SELECT needs_rebuild, cardinality(flux) AS flux FROM index_metapage('fl_ke');
VACUUM fl;
SELECT needs_rebuild, cardinality(flux) AS flux FROM index_metapage('fl_ke');
SELECT keanon.index_check('fl_ke');
SELECT index_agrees('fl_ke', ARRAY(SELECT v FROM fl)::bigint[], 2, 1);
-- the same for a watch, whose index is on its rows table
CREATE TABLE flw (id integer PRIMARY KEY, q integer, v integer);
INSERT INTO flw SELECT i, i % 3, i * 10 FROM generate_series(1, 12) i;
SELECT keanon.watch('flw', 'v', '{q}', 3, 0);
BEGIN;
INSERT INTO flw VALUES (13, 1, 55), (14, 2, 65);
ROLLBACK;
SELECT needs_rebuild, cardinality(flux) AS flux FROM index_metapage('flw_keanon_idx');
VACUUM flw_keanon_rows;
SELECT needs_rebuild, cardinality(flux) AS flux FROM index_metapage('flw_keanon_idx');
INSERT INTO flw VALUES (13, 1, 55);
VACUUM flw_keanon_rows;
SELECT needs_rebuild, cardinality(flux) AS flux FROM index_metapage('flw_keanon_idx');
SELECT index_agrees('flw_keanon_idx', ARRAY(SELECT v FROM flw)::bigint[], 3, 0);
SELECT keanon.check('flw');
-- superusers only
CREATE ROLE keanon_plain_role;
SET ROLE keanon_plain_role;
SELECT flux FROM index_metapage('fl_ke');
RESET ROLE;
DROP ROLE keanon_plain_role;
SELECT index_metapage('fl');

-- An unconstrained numeric column just works: its index keeps at least 10
-- decimal places (34 significant digits in all), shows values with the
-- decimals they need, and raises its scale for finer values
CREATE TABLE un (id integer PRIMARY KEY, q integer, v numeric);
INSERT INTO un VALUES (1, 1, 1.5), (2, 2, 2.25), (3, 3, 10), (4, 1, 3), (5, 2, 4.75), (6, 3, 6);
SELECT keanon.watch('un', 'v', '{q}', 2, 0.5);
INSERT INTO un VALUES (7, 1, 3.125), (8, 3, 7.0625);
SELECT keanon.check('un');
SELECT scale, e FROM index_metapage('un_keanon_idx');
-- the partitions, against the engine's optimum over the values in 1/10^4 steps
SELECT (SELECT array_agg(ARRAY[n, distinct_values, min_value * 10000, max_value * 10000, error * 10000]
						 ORDER BY min_value) FROM keanon.partitions('un')) =
	   (SELECT array_agg(ARRAY[n, distinct_values, min_value, max_value, error] ORDER BY pid)
		FROM keanon.optimal_partitions(ARRAY(SELECT (v * 10000)::bigint FROM un), 2, 5000))
	   AS matches_optimum;
SELECT n, min_value, max_value, error FROM keanon.partitions('un');
-- bounds against the exact ones from each partition's true values
CREATE FUNCTION un_oracle(pred text) RETURNS numrange LANGUAGE plpgsql AS $$
DECLARE
	r numrange;
BEGIN
	EXECUTE format($q$
		WITH parts AS (SELECT keanon_pid, array_agg(v ORDER BY v) AS vals, count(*) AS n
					   FROM un_keanon_rows GROUP BY 1),
			 hits AS (SELECT keanon_pid, count(*) AS h FROM un_keanon_rows WHERE %s GROUP BY 1)
		SELECT numrange(sum((SELECT sum(x) FROM unnest(vals[1:h]) x)),
						sum((SELECT sum(x) FROM unnest(vals[n - h + 1:n]) x)), '[]')
		FROM hits JOIN parts USING (keanon_pid)$q$, pred) INTO r;
	RETURN r;
END;
$$;
SELECT q, keanon.sum_bounds(keanon_pid), keanon.sum_bounds(keanon_pid) = un_oracle('q = ' || q) AS exact
FROM un_anon GROUP BY q ORDER BY q;
SELECT keanon.sum_bounds(keanon_pid) = un_oracle('true') AS exact,
	   keanon.sum_bounds(keanon_pid) = numrange(sum(v), sum(v), '[]') AS closed_on_truth
FROM un_anon;
-- finer than 10 places: maintenance raises the scale by itself
INSERT INTO un VALUES (9, 1, 3.12345678901);
SELECT scale FROM index_metapage('un_keanon_idx');
SELECT keanon.check('un');
SELECT keanon.sum_bounds(keanon_pid) = un_oracle('q = 1') AS exact FROM un_anon WHERE q = 1;
DROP FUNCTION un_oracle;

-- A watch's fill reads the table without SQL and sets the scale from the
-- finest value it reads; so do INSERTs and UPDATEs, from their transition
-- tables
CREATE TABLE un2 (id integer PRIMARY KEY, q integer, v numeric);
INSERT INTO un2 VALUES (1, 1, 1.5), (2, 2, 2.000000000001), (3, 3, 10), (4, 1, 3.5), (5, 2, NULL),
	(6, 3, 4.75);
SELECT keanon.watch('un2', 'v', '{q}', 2, 0.5);
SELECT scale, nrows FROM index_metapage('un2_keanon_idx');
INSERT INTO un2 VALUES (7, 1, 5.0000000000001), (8, 2, 6), (9, 3, NULL);
SELECT scale, nrows FROM index_metapage('un2_keanon_idx');
-- UPDATEs: the scale rises from the new rows before the old ones (at the
-- old scale in the rows table) are converted
INSERT INTO un2 VALUES (10, 1, 7.00000000000001);
UPDATE un2 SET v = 3.000000000000001 WHERE id = 4;
SELECT scale, nrows FROM index_metapage('un2_keanon_idx');
UPDATE un2 SET v = v + 0.0000000000000001 WHERE id IN (1, 3, 9);
SELECT scale, nrows FROM index_metapage('un2_keanon_idx');
SELECT keanon.check('un2'),
	   (SELECT array_agg(v ORDER BY v) FROM un2_anon) = (SELECT array_agg(v ORDER BY v) FROM un2 WHERE v IS NOT NULL)
	   AS same_values;
DROP TABLE un2;

-- The scale rises in place when a change brings finer values (index_apply
-- does, before converting any), rewritten from the index's own state
CREATE TABLE gr (id serial PRIMARY KEY, v numeric);
CREATE INDEX gr_ke ON gr USING keanon (v) WITH (k = 2, e = 0.5);
SELECT scale, e, nrows FROM index_metapage('gr_ke');
INSERT INTO gr (v) VALUES (1.5), (2.25), (10), (4);
SELECT FROM keanon.index_apply('gr_ke', '{1.5,2.25,10,4}', '{1,1,1,1}');
INSERT INTO gr (v) VALUES (3.123456789012), (-7.5);
SELECT FROM keanon.index_apply('gr_ke', '{3.123456789012,-7.5}', '{1,1}');
SELECT scale, e, nrows, needs_rebuild FROM index_metapage('gr_ke');
SELECT keanon.index_check('gr_ke');
SELECT (SELECT array_agg(ARRAY[n, distinct_values, min_value * 1e12, max_value * 1e12, error * 1e12]
						 ORDER BY pid) FROM keanon.index_partitions('gr_ke')) =
	   (SELECT array_agg(ARRAY[n, distinct_values, min_value, max_value, error] ORDER BY pid)
		FROM keanon.optimal_partitions(ARRAY(SELECT (v * 1e12)::bigint FROM gr), 2, 500000000000))
	   AS matches_optimum;
SELECT * FROM keanon.index_partitions('gr_ke');
-- in a transaction that rolls back, the rise stays and the state is repaired
BEGIN;
INSERT INTO gr (v) VALUES (0.0000000000001);
SELECT FROM keanon.index_apply('gr_ke', '{0.0000000000001}', '{1}');
ROLLBACK;
SELECT scale FROM index_metapage('gr_ke');
SELECT keanon.index_check('gr_ke');
-- beyond 30 places, or past 34 significant digits: clear errors, nothing changed
SELECT keanon.index_apply('gr_ke', '{1e-31}', '{1}');
INSERT INTO gr (v) VALUES (1e20);
SELECT FROM keanon.index_apply('gr_ke', '{1e20}', '{1}');
SELECT keanon.index_apply('gr_ke', '{1e-14}', '{1}');
SELECT keanon.index_apply('gr_ke', '{1e21}', '{1}');
SELECT scale FROM index_metapage('gr_ke');
SELECT keanon.index_check('gr_ke');

DROP TABLE t35, salaries, few, empty_t, types, floats, decimals, ul, fl, flw, un, gr;
DROP FUNCTION index_agrees, index_metapage;
