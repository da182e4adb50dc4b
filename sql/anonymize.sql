--
-- keanon.anonymize: full-domain generalization by PrivacyFrost2's search
-- and by the optimal lattice search.  The optimum is checked against a
-- brute force over every lattice node written here in SQL; k, l and t of
-- every result table are recomputed from the table itself; and the result
-- table's rows are exactly the input's rows generalized to the levels
-- chosen.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
\set SHOW_CONTEXT never
SET client_min_messages = notice;

CREATE TABLE an_work_h (value text, parent text);
INSERT INTO an_work_h VALUES ('*', NULL), ('private', '*'), ('public', '*'),
	('shop', 'private'), ('factory', 'private'), ('office', 'private'),
	('school', 'public'), ('hospital', 'public');
CREATE TABLE an_people (id integer PRIMARY KEY, age integer NOT NULL, work text NOT NULL,
	disease text NOT NULL);
INSERT INTO an_people
SELECT i, 20 + (i * 37) % 45, (ARRAY['shop', 'factory', 'office', 'school', 'hospital'])[1 + (i * 7) % 5],
	(ARRAY['flu', 'cold', 'asthma', 'diabetes'])[1 + (i * 13) % 4]
FROM generate_series(1, 60) i;

-- the ancestor of a work value l levels up (the root when fewer)
CREATE FUNCTION an_anc(v text, l integer) RETURNS text LANGUAGE sql STABLE AS $$
	WITH RECURSIVE up(v, d) AS (SELECT v, 0 UNION ALL
		SELECT h.parent, up.d + 1 FROM up JOIN an_work_h h ON h.value = up.v
		WHERE h.parent IS NOT NULL AND up.d < l)
	SELECT v FROM up ORDER BY d DESC LIMIT 1
$$;
-- the automatic hierarchy of an integer column, as documented: level 0
-- the value, level j intervals of width top / 2^(H - j) from the least
-- value, top the least power of two above the range, widths from 2 up
CREATE FUNCTION an_age(age integer, l integer) RETURNS int4range LANGUAGE sql STABLE AS $$
	WITH m AS (SELECT min(age) AS lo, max(age) - min(age) AS r FROM an_people),
	t AS (SELECT lo, (SELECT min(p) FROM (SELECT 2 ^ g AS p FROM generate_series(0, 40) g) x WHERE p >= r + 1)::bigint AS top FROM m),
	h AS (SELECT lo, top, least(10, (SELECT max(j) FROM generate_series(1, 40) j WHERE top / 2 ^ (j - 1) >= 2)) AS above FROM t)
	SELECT CASE WHEN l = 0 THEN int4range(age, age, '[]')
		ELSE int4range((lo + floor((age - lo) / (top / 2 ^ (above - l))) * (top / 2 ^ (above - l)))::int,
					   (lo + (floor((age - lo) / (top / 2 ^ (above - l))) + 1) * (top / 2 ^ (above - l)))::int) END
	FROM h
$$;
SELECT max(l) AS age_levels FROM generate_series(0, 12) l WHERE an_age(20, l) IS NOT NULL
	AND (l = 0 OR upper(an_age(20, l)) - lower(an_age(20, l)) <= 64);

-- the brute force: every (age level, work level); the best basic score
-- (distinct generalized values of each column, summed) among the nodes
-- whose every group has k rows and l distinct diseases
CREATE FUNCTION an_brute(k integer, l integer) RETURNS TABLE (best_score bigint, qualifying bigint)
LANGUAGE sql STABLE AS $$
	WITH nodes AS (SELECT a, w FROM generate_series(0, 6) a, generate_series(0, 2) w),
	gen AS (SELECT n.a, n.w, an_age(p.age, n.a) AS ga, an_anc(p.work, n.w) AS gw, p.disease
			FROM nodes n, an_people p),
	grp AS (SELECT a, w, ga, gw, count(*) AS c, count(DISTINCT disease) AS d FROM gen GROUP BY 1, 2, 3, 4),
	ok AS (SELECT a, w FROM grp GROUP BY a, w HAVING min(c) >= k AND min(d) >= coalesce(l, 1)),
	score AS (SELECT g.a, g.w, count(DISTINCT g.ga) + count(DISTINCT g.gw) AS s
			  FROM gen g JOIN ok USING (a, w) GROUP BY 1, 2)
	SELECT max(s), count(*) FROM score
$$;

-- independent measures of a result table
CREATE FUNCTION an_measures(tab regclass, OUT smallest bigint, OUT least_l bigint, OUT largest_emd numeric,
	OUT score bigint, OUT rows bigint)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format($q$
		WITH g AS (SELECT age, work, count(*) c, count(DISTINCT disease) d FROM %1$s GROUP BY 1, 2),
		tot AS (SELECT disease, count(*)::numeric / (SELECT count(*) FROM %1$s) q FROM %1$s GROUP BY 1),
		dist AS (SELECT x.age, x.work, t.disease, coalesce(count(y.disease), 0)::numeric / max(g.c) AS p, t.q
				 FROM (SELECT DISTINCT age, work FROM %1$s) x CROSS JOIN tot t
				 JOIN g ON g.age = x.age AND g.work = x.work
				 LEFT JOIN %1$s y ON y.age = x.age AND y.work = x.work AND y.disease = t.disease
				 GROUP BY 1, 2, 3, t.q),
		emd AS (SELECT age, work, sum(abs(p - q)) / 2 AS e FROM dist GROUP BY 1, 2)
		SELECT (SELECT min(c) FROM g), (SELECT min(d) FROM g), (SELECT round(max(e), 6) FROM emd),
			(SELECT count(DISTINCT age) + count(DISTINCT work) FROM %1$s), (SELECT count(*) FROM %1$s)$q$, tab)
	INTO smallest, least_l, largest_emd, score, rows;
END;
$$;

-- PrivacyFrost2, then the optimum, k = 4
CREATE TEMP TABLE an_r AS
SELECT * FROM keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 4);
SELECT target_table, levels, score, smallest_group, suppressed, rows_written FROM an_r;
SELECT * FROM an_measures('an_people_generalized');
SELECT keanon.k_anonymity('an_people_generalized', '{age,work}') >= 4 AS k_anonymous;
-- the measures reported are those recomputed from the table
SELECT r.smallest_group = m.smallest AS smallest_ok, r.least_l = m.least_l AS least_l_ok,
	round(r.largest_emd::numeric, 6) = m.largest_emd AS emd_ok, r.score = m.score AS score_ok
FROM an_r r, an_measures('an_people_generalized') m;
-- the rows, generalized back to the levels chosen, are exactly the input's
SELECT count(*) AS differing FROM (
	(SELECT an_age(age, (levels->>'age')::int), an_anc(work, (levels->>'work')::int), disease FROM an_people, an_r
	 EXCEPT ALL SELECT age, work, disease FROM an_people_generalized)
	UNION ALL
	(SELECT age, work, disease FROM an_people_generalized
	 EXCEPT ALL SELECT an_age(age, (levels->>'age')::int), an_anc(work, (levels->>'work')::int), disease FROM an_people, an_r)) d;

CREATE TABLE an_frost AS SELECT * FROM an_people_generalized;
DROP TABLE an_people_generalized;

SELECT r.score = b.best_score AS optimum_matches_brute_force, r.candidates_checked <= 21 AS checked_at_most_the_lattice,
	(SELECT score FROM an_measures('an_frost')) <= r.score AS frost_not_above_optimum
FROM keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 4, method => 'optimal',
					  target => 'an_optimal') r, an_brute(4, NULL) b;
SELECT * FROM an_measures('an_optimal');
-- with distinct 3-diversity of the disease
SELECT r.score = b.best_score AS optimum_matches_brute_force
FROM keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2, l => 3,
					  method => 'optimal', target => 'an_optimal_l') r, an_brute(2, 3) b;
SELECT smallest >= 2 AS k_ok, least_l >= 3 AS l_ok FROM an_measures('an_optimal_l');
-- t-closeness with PrivacyFrost2: every group's EMD within t, recomputed
SELECT largest_emd <= 0.2 AS emd_within_t
FROM keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2, t => 0.2,
					  target => 'an_close') r;
SELECT largest_emd <= 0.2 AS recomputed_emd_within_t FROM an_measures('an_close');
-- the other scorings and priorities
SELECT smallest_group >= 3 AS eta_ok FROM keanon.anonymize('an_people', '{age,work}', 'disease',
	'{"work": "an_work_h"}', 3, scoring => 'eta', target => 'an_eta');
SELECT smallest_group >= 3 AS log_ok FROM keanon.anonymize('an_people', '{age,work}', 'disease',
	'{"work": "an_work_h"}', 3, scoring => 'log', priorities => '{"age": 2}', target => 'an_log');
SELECT keanon.k_anonymity('an_eta', '{age,work}') >= 3 AND keanon.k_anonymity('an_log', '{age,work}') >= 3 AS both_k_anonymous;

-- a date quasi-identifier and a numeric sensitive value whose equal values
-- are written differently (1 and 1.00): the codes follow the type's
-- equality, as SQL counts distinct values
CREATE TABLE an_pay (born date NOT NULL, pay numeric NOT NULL);
INSERT INTO an_pay SELECT DATE '1990-01-01' + (i * 37) % 400,
	CASE WHEN i % 2 = 0 THEN (i % 5)::numeric ELSE round((i % 5)::numeric, 2) END
FROM generate_series(1, 40) i;
CREATE TEMP TABLE an_pay_r AS SELECT * FROM keanon.anonymize('an_pay', '{born}', 'pay', NULL, 4, l => 5);
SELECT r.least_l = (SELECT min(d) FROM (SELECT count(DISTINCT pay) d FROM an_pay_generalized GROUP BY born) g)
		AS least_l_as_sql_counts,
	r.least_l >= 5 AS l_ok, keanon.k_anonymity('an_pay_generalized', '{born}') >= 4 AS k_ok,
	(SELECT count(*) FROM an_pay_generalized) = 40 AS every_row,
	NOT EXISTS (SELECT 1 FROM an_pay p WHERE (SELECT count(*) FROM an_pay_generalized g WHERE g.born @> p.born) = 0)
		AS every_date_published
FROM an_pay_r r;
DROP TABLE an_pay, an_pay_generalized, an_pay_r;

-- pre-sampling: rows of small groups two levels below the top are left
-- out before the search, and counted
SELECT rows_written + presampled_out = 60 AS all_counted, smallest_group >= 4 AS k_ok
FROM keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 4, presample => 3,
					  target => 'an_pre');
SELECT (SELECT count(*) FROM an_pre) = (SELECT rows_written FROM keanon.anonymize('an_people', '{age,work}',
	'disease', '{"work": "an_work_h"}', 4, presample => 3, target => 'an_pre2')) AS written_as_said;
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 4, presample => 0);

-- suppression only when allowed, and counted
INSERT INTO an_people VALUES (1000, 99, 'hospital', 'flu');
SELECT levels, smallest_group, suppressed, rows_written FROM keanon.anonymize('an_people', '{age,work}',
	'disease', '{"work": "an_work_h"}', 61, target => 'an_none');
SELECT suppressed, rows_written FROM keanon.anonymize('an_people', '{age,work}', 'disease',
	'{"work": "an_work_h"}', 60, max_suppressed => 1, target => 'an_supp');
SELECT count(*) AS written FROM an_supp;

-- bad input: an error, nothing written
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 62);
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2, l => 5);
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', NULL, 2);
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2, scoring => 'best');
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2, method => 'flash');
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2, t => 2);
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2, c => 2);
SELECT keanon.anonymize('an_people', '{age,disease}', 'disease', '{"work": "an_work_h"}', 2);
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "no_such"}', 2);
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2, target => 'an_optimal');
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2,
	priorities => '{"work": -1}');
INSERT INTO an_people VALUES (1001, 30, 'farm', 'flu');
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2);
DELETE FROM an_people WHERE id = 1001;
ALTER TABLE an_people ALTER disease DROP NOT NULL;
INSERT INTO an_people VALUES (1002, 30, 'shop', NULL);
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2);
DELETE FROM an_people WHERE id = 1002;
SELECT count(*) AS tables_left FROM pg_class WHERE relname = 'an_people_generalized';

-- as the caller: a role that may not read the table gets nothing
CREATE ROLE keanon_an_role;
SET ROLE keanon_an_role;
SELECT keanon.anonymize('an_people', '{age,work}', 'disease', '{"work": "an_work_h"}', 2);
RESET ROLE;
DROP ROLE keanon_an_role;

-- the core called directly writes only into a table of the caller in the
-- anonymized table's schema, and only the types keanon publishes
CREATE TABLE an_target (age int4range, disease text);
-- a sensitive column or quasi-identifier that is not a column of the table
SELECT keanon.anonymize_core('an_people', '{age}', 'no_such', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_target', 'optimal', 0, true, false, '{pg_catalog.int4range}', NULL);
SELECT keanon.anonymize_core('an_people', '{ctid}', 'disease', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_target', 'optimal', 0, true, false, '{pg_catalog.int4range}', NULL);
SELECT keanon.anonymize_core('an_people', '{age}', 'disease', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'pg_catalog.pg_class', 'optimal', 0, true, false, '{pg_catalog.int4range}', NULL);
SELECT keanon.anonymize_core('an_people', '{age}', 'disease', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_target', 'optimal', 0, true, false, '{"pg_catalog.int4range); DROP TABLE an_people; --"}', NULL);
SELECT count(*) AS still_there FROM an_people;
-- rows go to the table access method directly, so the target must be the
-- bare table keanon.anonymize makes: a trigger, an index, a check or a
-- column of another type is refused, and nothing is written
CREATE FUNCTION an_spy() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE NOTICE 'trigger saw %', NEW.disease; RETURN NEW; END $$;
CREATE TRIGGER an_spy BEFORE INSERT ON an_target FOR EACH ROW EXECUTE FUNCTION an_spy();
SELECT keanon.anonymize_core('an_people', '{age}', 'disease', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_target', 'optimal', 0, true, false, '{pg_catalog.int4range}', NULL);
DROP TRIGGER an_spy ON an_target;
CREATE INDEX ON an_target (disease);
SELECT keanon.anonymize_core('an_people', '{age}', 'disease', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_target', 'optimal', 0, true, false, '{pg_catalog.int4range}', NULL);
DROP INDEX an_target_disease_idx;
ALTER TABLE an_target ADD CHECK (disease <> 'flu');
SELECT keanon.anonymize_core('an_people', '{age}', 'disease', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_target', 'optimal', 0, true, false, '{pg_catalog.int4range}', NULL);
CREATE TABLE an_target2 (age int4range, disease varchar(3));
SELECT keanon.anonymize_core('an_people', '{age}', 'disease', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_target2', 'optimal', 0, true, false, '{pg_catalog.int4range}', NULL);
SELECT (SELECT count(*) FROM an_target) + (SELECT count(*) FROM an_target2) AS rows_written;
-- the bare table with a dropped column takes the rows, each exactly a row
-- of the input generalized to the level chosen
CREATE TABLE an_target3 (junk integer, age int4range, disease text);
ALTER TABLE an_target3 DROP COLUMN junk;
SELECT ((keanon.anonymize_core('an_people', '{age}', 'disease', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_target3', 'optimal', 0, true, false, '{pg_catalog.int4range}', NULL)).levels)[1] AS age_level \gset
SELECT (SELECT count(*) FROM an_target3) = (SELECT count(*) FROM an_people) AS every_row,
	NOT EXISTS (SELECT age, disease FROM an_target3 EXCEPT ALL SELECT an_age(age, :age_level), disease FROM an_people)
	AS rows_are_the_inputs_generalized;
DROP TABLE an_target, an_target2, an_target3;
DROP FUNCTION an_spy();

-- PostgreSQL Anonymizer's helpers
SELECT keanon.generalize_int4range(42, 10), keanon.generalize_int4range(-3, 10),
	keanon.generalize_int8range(1234567890123, 1000), keanon.generalize_numrange(4.2, 5),
	keanon.generalize_daterange('2024-05-17', 'month'), keanon.generalize_tsrange('2024-05-17 10:11', 'year');
SELECT keanon.k_anonymity('an_optimal', '{age}');

-- Hierarchies and values keanon.anonymize cannot take are errors, never a
-- crash or an allocation sized by garbage, for any caller: a NULL value, a
-- parent not among the values or a value listed twice (read by the C code
-- itself, though keanon.check_hierarchy checked them: a view may change
-- between the two reads, and anonymize_core is callable directly); NaN or
-- infinite values of a quantitative quasi-identifier; a value holding the
-- byte \x01 reads as any other
CREATE TABLE an_m(a text, s int); INSERT INTO an_m VALUES ('x',1),('y',2);
CREATE TABLE an_h(value text, parent text); INSERT INTO an_h VALUES ('root',NULL),('x','root'),('y','root');
CREATE VIEW an_hv AS SELECT value, parent FROM an_h
  UNION ALL SELECT NULL::text, 'root'::text WHERE to_regclass('public.an_m_generalized') IS NOT NULL;
SELECT * FROM keanon.anonymize('an_m','{a}','s','{"a":"an_hv"}',2);
INSERT INTO an_h VALUES (NULL, 'root');
CREATE TABLE an_m_out(a text, s int);
SELECT * FROM keanon.anonymize_core('an_m','{a}','s',ARRAY['an_h'::regclass::oid],2,NULL,NULL,NULL,'basic',NULL,'public.an_m_out','privacyfrost2',0,true,false,'{pg_catalog.text}',NULL);
DELETE FROM an_h WHERE value IS NULL;
INSERT INTO an_h VALUES ('z', 'nowhere');
SELECT * FROM keanon.anonymize_core('an_m','{a}','s',ARRAY['an_h'::regclass::oid],2,NULL,NULL,NULL,'basic',NULL,'public.an_m_out','privacyfrost2',0,true,false,'{pg_catalog.text}',NULL);
DELETE FROM an_h WHERE value = 'z';
INSERT INTO an_h VALUES ('x', 'root');
SELECT * FROM keanon.anonymize_core('an_m','{a}','s',ARRAY['an_h'::regclass::oid],2,NULL,NULL,NULL,'basic',NULL,'public.an_m_out','privacyfrost2',0,true,false,'{pg_catalog.text}',NULL);
CREATE TABLE an_f(a float8, s int);
INSERT INTO an_f VALUES (0,1),(1e15,2),('NaN',3),(5,4),(1e15,5),('NaN',6),(0,7),(5,8);
SELECT levels FROM keanon.anonymize('an_f','{a}','s',NULL,2);
UPDATE an_f SET a = 'Infinity' WHERE a = 'NaN';
SELECT levels FROM keanon.anonymize('an_f','{a}','s',NULL,2);
CREATE TABLE an_m2(a text, s int); INSERT INTO an_m2 VALUES ('c',1),('d',2),('c',3),('d',4);
CREATE TABLE an_h2(value text, parent text);
INSERT INTO an_h2 VALUES ('root',NULL),(E'x\x01y','root'),('c',E'x\x01y'),('d',E'x\x01y');
SELECT levels FROM keanon.anonymize('an_m2','{a}','s','{"a":"an_h2"}',2);
DROP VIEW an_hv;
DROP TABLE an_m, an_h, an_m_out, an_f, an_m2, an_h2, an_m2_generalized;

-- Published intervals hold their rows' exact values: a leaf is the value as
-- its type writes it (numeric 0.1, not the double nearest it), and an
-- interval computed in doubles is widened by a rounding step where the
-- values pass a double's precision (bigint past 2^53, numeric of many
-- digits)
CREATE TABLE an_exact (x numeric, b bigint, s integer);
INSERT INTO an_exact SELECT 0.1 * i + 0.000000000000000000001 * (i % 2), 9007199254740993 + 2 * i, i
FROM generate_series(1, 8) i;
SELECT levels FROM keanon.anonymize('an_exact', '{x,b}', 's', NULL, 1, target => 'an_exact_leaves');
SELECT levels FROM keanon.anonymize('an_exact', '{x,b}', 's', NULL, 3, target => 'an_exact_wide');
SELECT count(*) AS rows, bool_and(g.x @> e.x AND g.b @> e.b) AS every_value_in_its_interval
FROM an_exact e JOIN an_exact_leaves g ON g.s = e.s;
SELECT count(*) AS rows, bool_and(g.x @> e.x AND g.b @> e.b) AS every_value_in_its_interval
FROM an_exact e JOIN an_exact_wide g ON g.s = e.s;
DROP TABLE an_exact, an_exact_leaves, an_exact_wide;

-- Attacks on the search, by a role with no privilege but its own tables;
-- each was once a crash, a read past an array or a backend no cancel
-- stopped. anonymize_core is called directly too, as it may be.
CREATE ROLE an_mallory;
GRANT CREATE ON SCHEMA public TO an_mallory;
SET ROLE an_mallory;
-- doubling intervals of which most hold no value (squares mod 1000): the
-- search counts only those that do, and each published tuple holds its rows
CREATE TABLE an_gap(a int, c int, s int);
INSERT INTO an_gap SELECT i % 7, (i * i) % 1000, i % 4 FROM generate_series(1, 120) i;
SELECT levels, smallest_group >= 5 AS k_holds, largest_emd <= 0.4 AS t_holds, suppressed <= 4 AS suppression_holds
FROM keanon.anonymize('an_gap', '{a,c}', 's', NULL, k => 5, t => 0.4, max_suppressed => 4, method => 'optimal');
SELECT count(*) > 0 AS published, bool_and(n = m) AS each_tuple_holds_its_rows FROM (
	SELECT g.a, g.c, g.s, count(*) AS n,
		(SELECT count(*) FROM an_gap e WHERE e.s = g.s AND g.a @> e.a AND g.c @> e.c) AS m
	FROM an_gap_generalized g GROUP BY 1, 2, 3) x;
-- the ordered EMD reported (numeric sensitive values, measured class by
-- class from the values present) is the one recomputed over every value
CREATE TABLE an_emd(a int, s int);
INSERT INTO an_emd SELECT i % 10, (i * i) % 37 FROM generate_series(1, 200) i;
CREATE TEMP TABLE an_emd_r AS SELECT * FROM keanon.anonymize('an_emd', '{a}', 's', NULL, k => 3);
WITH vals AS (SELECT s, count(*)::numeric / (SELECT count(*) FROM an_emd) q, row_number() OVER (ORDER BY s) AS rn
			  FROM an_emd GROUP BY s),
	cls AS (SELECT a, count(*) AS size FROM an_emd_generalized GROUP BY a),
	grid AS (SELECT c.a, v.rn, v.q,
				 (SELECT count(*) FROM an_emd_generalized o WHERE o.a = c.a AND o.s = v.s)::numeric / c.size AS p
			 FROM cls c CROSS JOIN vals v),
	cum AS (SELECT a, rn, sum(p - q) OVER (PARTITION BY a ORDER BY rn) AS r FROM grid),
	emd AS (SELECT a, sum(abs(r)) / ((SELECT count(*) FROM vals) - 1) AS e FROM cum GROUP BY a)
SELECT r.suppressed, round(r.largest_emd::numeric, 6) = (SELECT round(max(e), 6) FROM emd) AS emd_ok,
	r.least_l = (SELECT min(d) FROM (SELECT count(DISTINCT s) AS d FROM an_emd_generalized GROUP BY a) x) AS least_l_ok
FROM an_emd_r r;
-- sensitive values that differ only past a double's precision (bigint past
-- 2^53) are distinct values still: measured, not refused as out of order
CREATE TABLE an_big(a int, s bigint);
INSERT INTO an_big SELECT i % 5, 9007199254740992 + i FROM generate_series(1, 40) i;
SELECT levels, least_l, smallest_group FROM keanon.anonymize('an_big', '{a}', 's', NULL, 2, t => 0.5);
-- NULL elements of the arrays, and a column of no hierarchy that is no number
CREATE TABLE an_tx(q text, s int);
INSERT INTO an_tx VALUES ('10', 1), ('8', 2), ('10', 3), ('8', 4);
CREATE TABLE an_tx_out(q numrange, s int);
SELECT * FROM keanon.anonymize_core('an_tx', '{NULL}', 's', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_tx_out', 'privacyfrost2', 0, true, false, '{pg_catalog.numrange}', NULL);
SELECT * FROM keanon.anonymize_core('an_tx', '{s}', 'q', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_tx_out', 'privacyfrost2', 0, true, false, '{NULL}', NULL);
SELECT * FROM keanon.anonymize_core('an_tx', '{q}', 's', '{0}', 2, NULL, NULL, NULL, 'basic', NULL,
	'public.an_tx_out', 'privacyfrost2', 0, true, false, '{pg_catalog.numrange}', NULL);
-- a hierarchy that is one long chain (deeper than the 64 levels searched):
-- its depths in one pass, not one walk to the root per node
CREATE TABLE an_chain_h(value text, parent text);
INSERT INTO an_chain_h SELECT 'n' || i, CASE WHEN i > 0 THEN 'n' || (i - 1) END FROM generate_series(0, 3000) i;
CREATE TABLE an_chain(q text, s int);
INSERT INTO an_chain SELECT 'n3000', i FROM generate_series(1, 4) i;
SELECT levels->'q' AS level, rows_written FROM keanon.anonymize('an_chain', '{q}', 's', '{"q": "an_chain_h"}', 2);
-- a lattice of four million nodes: the search stops at a cancel (here the
-- statement's timeout) instead of running on
CREATE TABLE an_lat(c0 smallint, c1 smallint, c2 smallint, c3 smallint, c4 smallint, c5 smallint, c6 smallint, c7 smallint, c8 smallint, c9 smallint, c10 smallint, c11 smallint, c12 smallint, c13 smallint, c14 smallint, c15 smallint, c16 smallint, c17 smallint, c18 smallint, c19 smallint, c20 smallint, c21 smallint, s int);
INSERT INTO an_lat SELECT ((i * 7 + 0 * i * i) % 7 % 2)::smallint, ((i * 9 + 1 * i * i) % 7 % 2)::smallint, ((i * 11 + 2 * i * i) % 7 % 2)::smallint, ((i * 13 + 3 * i * i) % 7 % 2)::smallint, ((i * 15 + 4 * i * i) % 7 % 2)::smallint, ((i * 17 + 5 * i * i) % 7 % 2)::smallint, ((i * 19 + 6 * i * i) % 7 % 2)::smallint, ((i * 21 + 7 * i * i) % 7 % 2)::smallint, ((i * 23 + 8 * i * i) % 7 % 2)::smallint, ((i * 25 + 9 * i * i) % 7 % 2)::smallint, ((i * 27 + 10 * i * i) % 7 % 2)::smallint, ((i * 29 + 11 * i * i) % 7 % 2)::smallint, ((i * 31 + 12 * i * i) % 7 % 2)::smallint, ((i * 33 + 13 * i * i) % 7 % 2)::smallint, ((i * 35 + 14 * i * i) % 7 % 2)::smallint, ((i * 37 + 15 * i * i) % 7 % 2)::smallint, ((i * 39 + 16 * i * i) % 7 % 2)::smallint, ((i * 41 + 17 * i * i) % 7 % 2)::smallint, ((i * 43 + 18 * i * i) % 7 % 2)::smallint, ((i * 45 + 19 * i * i) % 7 % 2)::smallint, ((i * 47 + 20 * i * i) % 7 % 2)::smallint, ((i * 49 + 21 * i * i) % 7 % 2)::smallint, i FROM generate_series(1, 300) i;
SET statement_timeout = '300ms';
SELECT levels FROM keanon.anonymize('an_lat', '{c0,c1,c2,c3,c4,c5,c6,c7,c8,c9,c10,c11,c12,c13,c14,c15,c16,c17,c18,c19,c20,c21}', 's', NULL, k => 2, t => 0, max_suppressed => 1, method => 'optimal');
RESET statement_timeout;
-- a table whose groups times distinct sensitive values outgrow
-- keanon.anonymize_memory: an error, not the machine's memory; only a
-- superuser moves the limit
CREATE TABLE an_wide(a int, s int);
INSERT INTO an_wide SELECT i, i FROM generate_series(1, 3000) i;
SET keanon.anonymize_memory = '100MB';
RESET ROLE;
SET keanon.anonymize_memory = '1MB';
SET ROLE an_mallory;
\set VERBOSITY terse
SELECT levels FROM keanon.anonymize('an_wide', '{a}', 's', NULL, k => 2, l => 2);
\set VERBOSITY default
RESET ROLE;
RESET keanon.anonymize_memory;
SELECT levels, groups FROM keanon.anonymize('an_wide', '{a}', 's', NULL, k => 2, l => 2);
DROP TABLE an_gap, an_gap_generalized, an_emd, an_emd_generalized, an_emd_r, an_tx, an_tx_out, an_chain_h, an_chain,
	an_chain_generalized, an_lat, an_wide, an_wide_generalized, an_big, an_big_generalized;
REVOKE CREATE ON SCHEMA public FROM an_mallory;
DROP ROLE an_mallory;

-- Automatic hierarchies at the ends of their types: a bigint spanning its
-- whole range (its top interval had two cells, so k = 4 of 4 rows found no
-- generalization) and dates near the last one (an interval's end was
-- printed past it, and the published range failed): intervals beyond a
-- type's values are unbounded there
CREATE TABLE ends (id integer, dt date, b bigint, s integer);
INSERT INTO ends VALUES (1, '4713-11-24 BC', -9223372036854775808, 1),
	(2, '5874897-12-31', 9223372036854775807, 2), (3, '2000-01-01', 0, 3), (4, '2000-01-02', 1, 4);
SELECT levels, groups FROM keanon.anonymize('ends', '{b}', 's', NULL, k => 4);
SELECT b, count(*) FROM ends_generalized GROUP BY b;
SELECT bool_and(g.b @> e.b) AS every_value_held FROM ends e JOIN ends_generalized g USING (s);
DROP TABLE ends_generalized;
SELECT levels, groups FROM keanon.anonymize('ends', '{dt}', 's', NULL, k => 2);
SELECT bool_and(g.dt @> e.dt) AS every_value_held, count(DISTINCT g.dt) AS published_ranges
FROM ends e JOIN ends_generalized g USING (s);
DROP TABLE ends, ends_generalized;

-- The caller's own code runs while the table is read (a view's function, a
-- hierarchy view's, a type's comparison): it may change, in this session,
-- the target checked before the read, or a column of the table read.  A
-- target retyped under the writes handed an integer to a text column as a
-- pointer (the server crashed, and a bytea target showed server memory):
-- the target is checked again, open, before the first row is written, and
-- the rows read must have the types the work was set up for.
CREATE ROLE an_eve;
GRANT CREATE ON SCHEMA public TO an_eve;
SET ROLE an_eve;
CREATE TABLE an_ev (a integer, s integer);
INSERT INTO an_ev SELECT i, i FROM generate_series(1, 20) i;
CREATE FUNCTION an_retype_target() RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF (SELECT atttypid FROM pg_attribute WHERE attrelid = 'public.an_ev_v_generalized'::regclass
		AND attname = 's') = 'pg_catalog.int4'::regtype THEN
		ALTER TABLE public.an_ev_v_generalized ALTER COLUMN s TYPE text;
	END IF;
	RETURN 0;
END $$;
CREATE VIEW an_ev_v AS SELECT a, s + an_retype_target() AS s FROM an_ev;
SELECT levels FROM keanon.anonymize('an_ev_v', '{a}', 's', NULL, k => 2);
SELECT count(*) AS generalized_tables FROM pg_class WHERE relname = 'an_ev_v_generalized';
-- a hierarchy view whose function retypes the sensitive column once the
-- work has begun (the target made), before the rows are read
CREATE TABLE an_ev_h0 (value text, parent text);
INSERT INTO an_ev_h0 VALUES ('*', NULL), ('x', '*'), ('y', '*');
CREATE TABLE an_ev2 (c text, s integer);
INSERT INTO an_ev2 SELECT CASE WHEN i % 2 = 0 THEN 'x' ELSE 'y' END, i FROM generate_series(1, 20) i;
CREATE FUNCTION an_retype_input() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF pg_catalog.to_regclass('public.an_ev2_generalized') IS NOT NULL
		AND (SELECT atttypid FROM pg_attribute WHERE attrelid = 'public.an_ev2'::regclass
			 AND attname = 's') = 'pg_catalog.int4'::regtype THEN
		ALTER TABLE public.an_ev2 ALTER COLUMN s TYPE bigint;
	END IF;
	RETURN true;
END $$;
CREATE VIEW an_ev_h AS SELECT value, parent FROM an_ev_h0 WHERE an_retype_input();
SELECT levels FROM keanon.anonymize('an_ev2', '{c}', 's', '{"c": "an_ev_h"}', k => 2);
SELECT count(*) AS generalized_tables FROM pg_class WHERE relname = 'an_ev2_generalized';
RESET ROLE;
DROP VIEW an_ev_v, an_ev_h;
DROP TABLE an_ev, an_ev2, an_ev_h0;
DROP FUNCTION an_retype_target(), an_retype_input();
REVOKE CREATE ON SCHEMA public FROM an_eve;
DROP ROLE an_eve;
