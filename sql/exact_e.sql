-- e is held exactly in the sensitive column's own arithmetic: a partition is
-- valid iff max - min >= e, for the e given, never for a rounded one.  Every
-- range below is checked against e in numeric arithmetic, from the
-- published partitions and from the published values themselves.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
\set SHOW_CONTEXT never

-- Integers, e = 1000000.5: a range of 1000000 is too small, so the four
-- values form one partition
CREATE TABLE er (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO er VALUES (1, 1, 0), (2, 2, 1000000), (3, 3, 2000000), (4, 4, 3000000);
SELECT keanon.watch('er', 's', '{qi}', 2, 1000000.5);
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 1000000.5 AS range_ok
FROM keanon.partitions('er');
SELECT keanon_pid IS NOT NULL AS published, max(s) - min(s) >= 1000000.5 AS range_ok
FROM er_anon GROUP BY keanon_pid ORDER BY min(s);
SELECT reloptions FROM pg_class WHERE relname = 'er_keanon_idx';
SELECT keanon.check('er');
-- rows arriving later are held to the same e
INSERT INTO er VALUES (5, 5, 4000001), (6, 6, 5000001);
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 1000000.5 AS range_ok
FROM keanon.partitions('er');
SELECT keanon.check('er');
UPDATE er SET s = 5000002 WHERE id = 6;
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 1000000.5 AS range_ok
FROM keanon.partitions('er');
SELECT keanon.check('er');

-- The same values with e = 1000000 exactly: two partitions
CREATE TABLE er2 (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO er2 VALUES (1, 1, 0), (2, 2, 1000000), (3, 3, 2000000), (4, 4, 3000000);
SELECT keanon.watch('er2', 's', '{qi}', 2, 1000000);
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 1000000 AS range_ok
FROM keanon.partitions('er2');
SELECT keanon.check('er2');

-- bigint beyond 2^53: e = 9007199254740993 is not 9007199254740992
CREATE TABLE big (id integer PRIMARY KEY, qi integer, b bigint);
INSERT INTO big VALUES (1, 1, 0), (2, 2, 9007199254740992);
SELECT keanon.watch('big', 'b', '{qi}', 2, 9007199254740993);
SELECT count(*) AS partitions FROM keanon.partitions('big');
SELECT count(*) AS published FROM big_anon;
SELECT keanon.check('big');
INSERT INTO big VALUES (3, 3, 9007199254740993);
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 9007199254740993 AS range_ok
FROM keanon.partitions('big');
SELECT count(*) AS published FROM big_anon;
SELECT keanon.check('big');
DELETE FROM big WHERE id = 3;
SELECT count(*) AS partitions FROM keanon.partitions('big');
SELECT keanon.check('big');

-- numeric(10,2), e = 0.005: a range of one cent is enough
CREATE TABLE cents (id integer PRIMARY KEY, qi integer, c numeric(10,2));
INSERT INTO cents SELECT i, i, i * 0.01 FROM generate_series(0, 5) i;
SELECT keanon.watch('cents', 'c', '{qi}', 2, 0.005);
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 0.005 AS range_ok
FROM keanon.partitions('cents');
SELECT keanon.check('cents');

-- numeric(10,2), e = 0.025: three cents are needed, two are not enough
CREATE TABLE cents2 (id integer PRIMARY KEY, qi integer, c numeric(10,2));
INSERT INTO cents2 SELECT i, i, i * 0.02 FROM generate_series(0, 5) i;
SELECT keanon.watch('cents2', 'c', '{qi}', 2, 0.025);
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 0.025 AS range_ok
FROM keanon.partitions('cents2');
SELECT keanon_pid IS NOT NULL AS published, max(c) - min(c) >= 0.025 AS range_ok
FROM cents2_anon GROUP BY keanon_pid ORDER BY min(c);
SELECT keanon.check('cents2');

-- numeric(10,2), e with more decimal places than the column
CREATE TABLE cents3 (id integer PRIMARY KEY, qi integer, c numeric(10,2));
INSERT INTO cents3 SELECT i, i, i * 0.01 FROM generate_series(0, 3) i;
SELECT keanon.watch('cents3', 'c', '{qi}', 2, 0.0100000000000000000000000000001);
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 0.0100000000000000000000000000001 AS range_ok
FROM keanon.partitions('cents3');
SELECT keanon.check('cents3');

-- double precision, e = 10000000000000001, which rounds to 1e16 as a
-- double: a range of 1e16 is too small (the values are exact in decimal)
CREATE TABLE dbl (id integer PRIMARY KEY, qi integer, d double precision);
INSERT INTO dbl VALUES (1, 1, 0), (2, 2, 1e16), (3, 3, 2e16), (4, 4, 3e16);
SELECT keanon.watch('dbl', 'd', '{qi}', 2, 10000000000000001);
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 10000000000000001 AS range_ok
FROM keanon.partitions('dbl');
SELECT keanon_pid IS NOT NULL AS published,
	   max(d)::numeric - min(d)::numeric >= 10000000000000001 AS range_ok
FROM dbl_anon GROUP BY keanon_pid ORDER BY min(d);
SELECT keanon.check('dbl');

-- real, e = 0.5000000000000000001, which rounds to 0.5 as a double
CREATE TABLE rl (id integer PRIMARY KEY, qi integer, r real);
INSERT INTO rl VALUES (1, 1, 0), (2, 2, 0.5), (3, 3, 1), (4, 4, 1.5);
SELECT keanon.watch('rl', 'r', '{qi}', 2, 0.5000000000000000001);
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 0.5000000000000000001 AS range_ok
FROM keanon.partitions('rl');
SELECT keanon.check('rl');
-- a range of exactly 0.5 never qualifies, whatever arrives
INSERT INTO rl VALUES (5, 5, 2), (6, 6, 2.5), (7, 7, 3.5);
SELECT n, distinct_values, min_value, max_value,
	   max_value - min_value >= 0.5000000000000000001 AS range_ok
FROM keanon.partitions('rl');
SELECT keanon.check('rl');

-- real, e = 0.1: 0.1 as a real is a little more than 0.1, so it qualifies
CREATE TABLE rl2 (id integer PRIMARY KEY, qi integer, r real);
INSERT INTO rl2 VALUES (1, 1, 0), (2, 2, 0.1), (3, 3, 0.25), (4, 4, 0.5);
SELECT keanon.watch('rl2', 'r', '{qi}', 2, 0.1);
SELECT n, distinct_values FROM keanon.partitions('rl2');
SELECT keanon.check('rl2');

-- A direct CREATE INDEX with a fractional e: integers, e = 2.5 needs 3
CREATE TABLE direct (id serial PRIMARY KEY, v integer, d numeric(8,1), x numeric);
INSERT INTO direct (v, d, x)
SELECT i, i * 0.5, i * 0.125 FROM generate_series(0, 9) i;
CREATE INDEX direct_v ON direct USING keanon (v) WITH (k = 2, e = 2.5);
SELECT *, max_value - min_value >= 2.5 AS range_ok FROM keanon.index_partitions('direct_v');
SELECT keanon.index_check('direct_v');
-- as a string, with an exponent
CREATE INDEX direct_v2 ON direct USING keanon (v) WITH (k = 2, e = '25e-1');
SELECT *, max_value - min_value >= 2.5 AS range_ok FROM keanon.index_partitions('direct_v2');
SELECT keanon.index_check('direct_v2');
-- numeric(8,1), e = 1.01: a range of 1.0 is not enough
CREATE INDEX direct_d ON direct USING keanon (d) WITH (k = 2, e = '1.01');
SELECT *, max_value - min_value >= 1.01 AS range_ok FROM keanon.index_partitions('direct_d');
SELECT keanon.index_check('direct_d');
-- unconstrained numeric: the index keeps at least 10 places, so e = 0.2501 is held exactly
CREATE INDEX direct_x ON direct USING keanon (x) WITH (k = 2, e = 0.2501);
SELECT *, max_value - min_value >= 0.2501 AS range_ok FROM keanon.index_partitions('direct_x');
SELECT keanon.index_check('direct_x');
-- the index keeps the exact e through changes and rebuilds
INSERT INTO direct (v, d, x) VALUES (10, 5.0, 1.25);
REINDEX INDEX direct_v;
REINDEX INDEX direct_x;
SELECT *, max_value - min_value >= 2.5 AS range_ok FROM keanon.index_partitions('direct_v');
SELECT keanon.index_check('direct_v');
SELECT *, max_value - min_value >= 0.2501 AS range_ok FROM keanon.index_partitions('direct_x');
SELECT keanon.index_check('direct_x');

-- Bad values of e: each a clear error, leaving nothing behind
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = '-1');
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = -0.5);
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = 'NaN');
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = 'Infinity');
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = '-inf');
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = 'abc');
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = '');
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = '1.5.2');
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = '1e');
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = '1e100000');
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = 1e40);
CREATE INDEX bad ON direct USING keanon (v) WITH (k = 2, e = 1267650600228229401496703205376);
CREATE INDEX bad ON direct USING keanon (d) WITH (k = 2, e = 126765060022822940149670320537.6);
CREATE INDEX bad ON direct USING keanon (x) WITH (k = 2, e = 1e28);
CREATE TABLE fl (id serial PRIMARY KEY, f real, g double precision);
INSERT INTO fl (f, g) VALUES (1, 1), (2, 2), (3, 3);
CREATE INDEX bad ON fl USING keanon (g) WITH (k = 2, e = 1e309);
CREATE INDEX bad ON fl USING keanon (f) WITH (k = 2, e = 1e309);
SELECT count(*) FROM pg_class WHERE relname = 'bad';
ALTER INDEX direct_v SET (e = 'abc');
ALTER INDEX direct_v SET (e = '-2');
SELECT reloptions FROM pg_class WHERE relname = 'direct_v';
-- the largest values that are accepted
CREATE INDEX big_v ON direct USING keanon (v) WITH (k = 2, e = 1267650600228229401496703205375);
SELECT count(*) AS partitions FROM keanon.index_partitions('big_v');
CREATE INDEX big_g ON fl USING keanon (g) WITH (k = 2,
	e = 179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368);
SELECT count(*) AS partitions FROM keanon.index_partitions('big_g');
-- e below the least double: any positive range qualifies
CREATE INDEX tiny_g ON fl USING keanon (g) WITH (k = 2, e = 1e-400);
SELECT * FROM keanon.index_partitions('tiny_g');
SELECT keanon.index_check('tiny_g');
DROP INDEX big_v, big_g, tiny_g;

-- keanon.watch refuses a bad e itself
CREATE TABLE wbad (id integer PRIMARY KEY, qi integer, s integer);
SELECT keanon.watch('wbad', 's', '{qi}', 2, 1e40);
SELECT count(*) FROM keanon.watches WHERE relid = 'wbad'::regclass;

SELECT keanon.unwatch(t) FROM unnest(ARRAY['er', 'er2', 'big', 'cents', 'cents2',
	'cents3', 'dbl', 'rl', 'rl2']::regclass[]) t;
DROP TABLE er, er2, big, cents, cents2, cents3, dbl, rl, rl2, direct, fl, wbad;

-- double precision values and bounds come out as exactly the doubles they
-- are (shortest decimal that reads back the same), not cut to 15 digits:
-- a bound cut short could fall inside the value it bounds
CREATE TABLE fx (id integer PRIMARY KEY, qi integer, v double precision);
INSERT INTO fx VALUES (1, 1, 0.1::float8 + 0.2::float8), (2, 1, 1.0000000000000002),
	(3, 2, 123456789.12345679), (4, 2, 2.0000000000000004), (5, 3, 1.5e-20),
	(6, 3, 0.30000000000000004 * 3);
SELECT keanon.watch('fx', 'v', '{qi}', 2, 0);
SELECT bool_and(p.min_value::float8 = (SELECT min(v) FROM fx WHERE v >= p.min_value::float8 - 1e-9 AND v <= p.max_value::float8))
	   AS min_exact,
	   bool_and(EXISTS (SELECT 1 FROM fx WHERE v = p.min_value::float8)) AS min_is_a_value,
	   bool_and(EXISTS (SELECT 1 FROM fx WHERE v = p.max_value::float8)) AS max_is_a_value
FROM keanon.partitions('fx') p;
SELECT min_value, max_value FROM keanon.partitions('fx') ORDER BY min_value;
SELECT keanon.sum_bounds(keanon_pid) @> (SELECT sum((v::text)::numeric) FROM fx) AS sum_inside
FROM fx_anon;
SELECT keanon.check('fx');
DROP TABLE fx;
