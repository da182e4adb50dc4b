-- keanon.privacy_report: the k, e, entropy l-diversity and t-closeness a
-- publication achieves, per partition and overall.
-- (quietly: the extension exists already when the whole suite runs, not
-- when this test runs alone)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
SET client_min_messages = notice;

-- An oracle in plain SQL over the published view alone (the values of each
-- partition are what the view shows): entropy, exp(entropy) and the earth
-- mover's distance to the whole view, by the definitions, compared with the
-- report to 12 decimal places.  Returns the number of rows that differ.
CREATE FUNCTION privacy_oracle(tab regclass, view regclass, col name)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	bad bigint;
BEGIN
	EXECUTE format($q$
		WITH v AS (SELECT keanon_pid AS pid, %I::numeric AS x FROM %s),
		pc AS (SELECT pid, x, count(*)::numeric AS c FROM v GROUP BY pid, x),
		pn AS (SELECT pid, sum(c) AS n, count(*) AS d, max(x) - min(x) AS r FROM pc GROUP BY pid),
		gq AS (SELECT x, sum(count(*)) OVER (ORDER BY x) / (SELECT count(*) FROM v) AS cq
			   FROM v GROUP BY x),
		m AS (SELECT count(*) AS m FROM gq),
		h AS (SELECT pid, -sum(c / n * ln(c / n)) AS h FROM pc JOIN pn USING (pid) GROUP BY pid),
		t AS (SELECT pn.pid,
				CASE WHEN m.m = 1 THEN 0 ELSE sum(abs(
					(SELECT coalesce(sum(pc.c), 0) FROM pc WHERE pc.pid = pn.pid AND pc.x <= gq.x) / pn.n
					- gq.cq)) / (m.m - 1) END AS t
			  FROM pn CROSS JOIN gq CROSS JOIN m GROUP BY pn.pid, pn.n, m.m),
		o AS (SELECT pn.pid, pn.n, pn.d, pn.r, h.h, exp(h.h) AS l, t.t
			  FROM pn JOIN h USING (pid) JOIN t USING (pid)),
		o_all AS (SELECT NULL::bigint AS pid, sum(n) AS n, min(d) AS d, min(r) AS r,
					  min(h) AS h, min(l) AS l, max(t) AS t FROM o)
		SELECT count(*) FROM keanon.privacy_report($1) r
		FULL JOIN (SELECT * FROM o UNION ALL SELECT * FROM o_all) q
			ON coalesce(r.pid, -1) = coalesce(q.pid, -1)
		WHERE r.pid IS DISTINCT FROM q.pid OR r.n <> q.n OR r.distinct_values <> q.d
		   OR r.value_range <> q.r
		   OR round(r.entropy, 12) <> round(q.h, 12)
		   OR round(r.effective_l, 12) <> round(q.l, 12)
		   OR round(r.t_closeness, 12) <> round(q.t, 12)$q$, col, view)
	INTO bad USING tab;
	RETURN bad;
END;
$$;

-- The research's salary table (report Table 3.1), k = 3, e = 2000
CREATE TABLE privacy_people (id serial PRIMARY KEY, postal_code text, age integer,
	sex text, salary bigint);
INSERT INTO privacy_people (postal_code, age, sex, salary) VALUES
	('50200', 35, 'Male', 14000), ('50210', 36, 'Male', 15000),
	('50230', 40, 'Male', 16000), ('50300', 41, 'Female', 25000),
	('50310', 43, 'Female', 35000), ('50330', 47, 'Male', 30000),
	('50300', 53, 'Male', 40000), ('50310', 54, 'Female', 35000),
	('50330', 58, 'Male', 45000);
SELECT keanon.watch('privacy_people', 'salary', '{postal_code,age,sex}', 3, 2000);
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('privacy_people');

-- By hand.  Partitions P1 = {14000, 15000, 16000}, P2 = {25000, 30000,
-- 35000}, P3 = {35000, 40000, 45000}, every value once in its partition:
--   entropy = -3 (1/3) ln(1/3) = ln 3 = 1.09861228866810969139...,
--   rounded to 16 places 1.0986122886681097; effective_l = exp(ln 3) = 3;
--   value_range 16000 - 14000 = 2000, 35000 - 25000 = 10000,
--   45000 - 35000 = 10000.
-- The publication Q: N = 9 rows, m = 8 distinct values
--   v:     14000 15000 16000 25000 30000 35000 40000 45000
--   count:   1     1     1     1     1     2     1     1
--   cum Q:  1/9   2/9   3/9   4/9   5/9   7/9   8/9   9/9
-- t_closeness = (1/7) sum over the 8 values of |cum P - cum Q|:
--   P1 cum: 3/9 6/9 9/9 9/9 9/9 9/9 9/9 9/9
--      |diff| (ninths): 2 4 6 5 4 2 1 0 = 24/9; 24/9 / 7 = 8/21
--      = 0.380952380952380952..., rounded 0.3809523809523810, shown
--      without its trailing zero as 0.380952380952381
--   P2 cum: 0 0 0 3/9 6/9 9/9 9/9 9/9
--      |diff| (ninths): 1 2 3 1 1 2 1 0 = 11/9; 11/9 / 7 = 11/63
--      = 0.174603174603174603..., rounded 0.1746031746031746
--   P3 cum: 0 0 0 0 0 3/9 6/9 9/9
--      |diff| (ninths): 1 2 3 4 5 4 2 0 = 21/9; 21/9 / 7 = 1/3
--      = 0.3333333333333333
-- Overall: n 9, k = min 3, e = min 2000, entropy min ln 3, l min 3,
-- t = max 8/21.
SELECT ord AS part, pid IS NULL AS overall, n, distinct_values, value_range,
	   entropy, effective_l, t_closeness
FROM keanon.privacy_report('privacy_people')
	WITH ORDINALITY AS r(pid, n, distinct_values, value_range, entropy, effective_l, t_closeness, smallest_group, information_loss, ord)
ORDER BY ord;
-- the report's rows are the published partitions, in keanon.partitions'
-- order (by least value), then the overall row
SELECT count(*) AS rows,
	   bool_and(p.pid IS NOT DISTINCT FROM r.pid AND (p.pid IS NULL) = (r.ord = 4)) AS same_order,
	   bool_and(r.pid IS NULL OR (r.n = p.n AND r.distinct_values = p.distinct_values
							   AND r.value_range = p.error)) AS same_summary
FROM keanon.privacy_report('privacy_people')
	WITH ORDINALITY AS r(pid, n, distinct_values, value_range, entropy, effective_l, t_closeness, smallest_group, information_loss, ord)
LEFT JOIN keanon.partitions('privacy_people') WITH ORDINALITY AS p(pid, n, distinct_values, min_value, max_value, error, ord)
	USING (ord);
SELECT privacy_oracle('privacy_people', 'privacy_people_anon', 'salary') AS differing;

-- Duplicates: entropy below ln(distinct values).  k = 2, e = 0 over
-- 10.0 x3, 20.0, 100.0 x2, 200.0: the optimum (error 10 + 100 = 110) is
-- P1 = {10.0 x3, 20.0}, P2 = {100.0 x2, 200.0}.
CREATE TABLE privacy_scores (id integer PRIMARY KEY, grp text, score numeric(6,1));
INSERT INTO privacy_scores VALUES
	(1, 'a', 10.0), (2, 'b', 10.0), (3, 'c', 10.0), (4, 'd', 20.0),
	(5, 'e', 100.0), (6, 'f', 100.0), (7, 'g', 200.0);
SELECT keanon.watch('privacy_scores', 'score', '{grp}', 2, 0);
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('privacy_scores');
-- By hand.
--   P1, n 4, counts 3 and 1: entropy = -(3/4 ln 3/4 + 1/4 ln 1/4)
--      = ln 4 - (3/4) ln 3 = 0.56233514461880835028... < ln 2,
--      rounded 0.5623351446188084; effective_l = 4 / 3^(3/4)
--      = 1.75476535060332328109..., rounded 1.7547653506033233
--   P2, n 3, counts 2 and 1: entropy = ln 3 - (2/3) ln 2
--      = 0.63651416829481281845... < ln 2, rounded 0.6365141682948128;
--      effective_l = 3 / 2^(2/3) = 1.88988157484230974715...,
--      rounded 1.8898815748423097
--   Q: N = 7, m = 4: values 10.0 20.0 100.0 200.0, cum Q 3/7 4/7 6/7 7/7
--   P1 cum: 3/4 1 1 1; |diff| (28ths): 9 12 4 0 = 25/28;
--      t = 25/28 / 3 = 25/84 = 0.297619047619047619..., rounded 0.2976190476190476
--   P2 cum: 0 0 2/3 1; |diff| (21sts): 9 12 4 0 = 25/21;
--      t = 25/21 / 3 = 25/63 = 0.396825396825396825..., rounded 0.3968253968253968
-- Overall: n 7, k 2, e 10.0, entropy 0.5623351446188084 and l
-- 1.7547653506033233 (both P1's), t 25/63.
SELECT ord AS part, pid IS NULL AS overall, n, distinct_values, value_range,
	   entropy, effective_l, t_closeness,
	   entropy < ln(distinct_values) AS below_ln_distinct
FROM keanon.privacy_report('privacy_scores')
	WITH ORDINALITY AS r(pid, n, distinct_values, value_range, entropy, effective_l, t_closeness, smallest_group, information_loss, ord)
ORDER BY ord;
SELECT privacy_oracle('privacy_scores', 'privacy_scores_anon', 'score') AS differing;

-- After changes the report follows the publication
INSERT INTO privacy_people (postal_code, age, sex, salary) VALUES
	('50400', 30, 'Female', 67000), ('50410', 33, 'Male', 15500),
	('50420', 61, 'Female', 35000), ('50430', 62, 'Male', 15000);
SELECT n, distinct_values, min_value, max_value, error FROM keanon.partitions('privacy_people');
SELECT privacy_oracle('privacy_people', 'privacy_people_anon', 'salary') AS differing;
UPDATE privacy_scores SET score = 20.0 WHERE id = 1;
SELECT privacy_oracle('privacy_scores', 'privacy_scores_anon', 'score') AS differing;

-- Nothing published (fewer than k distinct values): the overall row alone
CREATE TABLE privacy_flat (id integer PRIMARY KEY, grp text, v integer);
INSERT INTO privacy_flat VALUES (1, 'a', 5), (2, 'b', 5), (3, 'c', NULL);
SELECT keanon.watch('privacy_flat', 'v', '{grp}', 2, 0);
SELECT * FROM keanon.privacy_report('privacy_flat');

-- Not a watched table
CREATE TABLE privacy_plain (id integer PRIMARY KEY, v integer);
SELECT * FROM keanon.privacy_report('privacy_plain');
\set VERBOSITY sqlstate
SELECT * FROM keanon.privacy_report('privacy_plain');
SELECT * FROM keanon.privacy_report('privacy_people_anon');
\set VERBOSITY default

-- An analyst granted the view alone may read the report; a role without
-- the grant may not, nor read the internal tables
CREATE ROLE keanon_privacy_analyst;
CREATE ROLE keanon_privacy_outsider;
GRANT SELECT ON privacy_scores_anon TO keanon_privacy_analyst;
SET ROLE keanon_privacy_analyst;
-- By hand, privacy_scores after the UPDATE: 10.0 x2, 20.0 x2, 100.0 x2,
-- 200.0; P1 = {10.0 x2, 20.0 x2}, P2 = {100.0 x2, 200.0} as before.
--   P1: entropy ln 2 = 0.69314718055994530941..., rounded
--      0.6931471805599453; effective_l exp(ln 2) = 2
--   Q: N = 7, m = 4, cum Q 2/7 4/7 6/7 7/7
--   P1 cum: 1/2 1 1 1; |diff| (14ths): 3 6 2 0 = 11/14;
--      t = 11/14 / 3 = 11/42 = 0.261904761904761904..., rounded 0.2619047619047619
--   P2 cum: 0 0 2/3 1; |diff| (21sts): 6 12 4 0 = 22/21;
--      t = 22/21 / 3 = 22/63 = 0.349206349206349206..., rounded 0.3492063492063492
--   P2's entropy and effective_l are unchanged (counts 2 and 1).
-- Overall: n 7, k 2, e 10.0, entropy and l P2's (below ln 2 and 2), t 22/63.
SELECT ord AS part, pid IS NULL AS overall, n, distinct_values, value_range,
	   entropy, effective_l, t_closeness
FROM keanon.privacy_report('privacy_scores')
	WITH ORDINALITY AS r(pid, n, distinct_values, value_range, entropy, effective_l, t_closeness, smallest_group, information_loss, ord)
ORDER BY ord;
SELECT count(*) FROM keanon.privacy_report('privacy_people');
SELECT count(*) FROM privacy_scores_keanon_parts;
RESET ROLE;
SET ROLE keanon_privacy_outsider;
SELECT count(*) FROM keanon.privacy_report('privacy_scores');
SELECT count(*) FROM privacy_scores_anon;
RESET ROLE;

SELECT keanon.check('privacy_people');
SELECT keanon.check('privacy_scores');
SELECT keanon.check('privacy_flat');

DROP OWNED BY keanon_privacy_analyst;
DROP ROLE keanon_privacy_analyst;
DROP ROLE keanon_privacy_outsider;
DROP TABLE privacy_people, privacy_scores, privacy_flat, privacy_plain;
DROP FUNCTION privacy_oracle;
