-- keanon demo: scripts/demo.sh runs it in a throwaway server with psql -e,
-- which echoes every query before its result.  It runs as the superuser
-- postgres, who may also read the watched table itself: every bound is
-- shown next to the true value, which an analyst would not see.

\set SHOW_CONTEXT never
\pset footer off

\echo
\echo '=== 1. Create the extension and the salary table of the research report (Table 3.1) ==='
CREATE EXTENSION keanon;
CREATE TABLE people (id serial PRIMARY KEY, postal_code text, age integer, sex text, salary integer);
INSERT INTO people (postal_code, age, sex, salary) VALUES
	('50200', 35, 'Male', 14000), ('50210', 36, 'Male', 15000), ('50230', 40, 'Male', 16000),
	('50300', 41, 'Female', 25000), ('50310', 43, 'Female', 35000), ('50330', 47, 'Male', 30000),
	('50300', 53, 'Male', 40000), ('50310', 54, 'Female', 35000), ('50330', 58, 'Male', 45000);
SELECT * FROM people ORDER BY id;

\echo '=== 2. Watch it: partitions of k = 3 distinct salaries spanning at least e = 2000 ==='
\echo 'keanon finds the partitioning of least error (the sum of max_value - min_value),'
\echo 'creates the view people_anon, where the salaries of each partition are shuffled'
\echo 'at random among its rows, and keeps both current from now on.  keanon_pid names'
\echo 'a row''s partition; it is all that the bound aggregates below need.'
\echo
SELECT keanon.watch('people', 'salary', '{postal_code,age,sex}', k => 3, e => 2000);
SELECT * FROM keanon.partitions('people');
SELECT postal_code, age, sex, salary, keanon_pid FROM people_anon ORDER BY keanon_pid, age;

\echo '=== 3. Query the published view: each answer is a range holding the true value ==='
\echo 'An analyst runs only the first half of each query, on people_anon; the second'
\echo 'half reads the table itself to show the true value.  [104000,106000] includes'
\echo 'both ends.  Two helpers make the output plain: round_out rounds AVG bounds'
\echo 'outward to 2 decimals (low end down, high end up), and count_in_words reads'
\echo 'COUNT bounds, an int8range printed half-open: [2,3) means exactly 2.'
\echo
CREATE FUNCTION round_out(r numrange) RETURNS numrange LANGUAGE sql IMMUTABLE
RETURN numrange(round(floor(lower(r) * 100) / 100, 2),
	round(ceiling(upper(r) * 100) / 100, 2), '[]');
CREATE FUNCTION count_in_words(r int8range) RETURNS text LANGUAGE sql IMMUTABLE
RETURN CASE WHEN upper(r) - lower(r) = 1 THEN 'exactly ' || lower(r)
	ELSE 'between ' || lower(r) || ' and ' || (upper(r) - 1) END;
SELECT 'bounds from people_anon' AS answer,
	keanon.sum_bounds(keanon_pid)::text AS sum_salary,
	count_in_words(keanon.count_bounds(keanon_pid, 20000, 32000)) AS earning_20000_to_32000
FROM people_anon WHERE age BETWEEN 40 AND 48
UNION ALL
SELECT 'true value in people', sum(salary)::text,
	count(*) FILTER (WHERE salary BETWEEN 20000 AND 32000)::text
FROM people WHERE age BETWEEN 40 AND 48;
SELECT 'bounds from people_anon' AS answer,
	keanon.min_bounds(keanon_pid)::text AS min_salary,
	keanon.max_bounds(keanon_pid)::text AS max_salary,
	round_out(keanon.avg_bounds(keanon_pid))::text AS avg_salary
FROM people_anon WHERE sex = 'Female'
UNION ALL
SELECT 'true value in people', min(salary)::text, max(salary)::text, round(avg(salary), 2)::text
FROM people WHERE sex = 'Female';

\echo '=== 4. Change the table: the partitioning follows every INSERT, UPDATE and DELETE ==='
INSERT INTO people (postal_code, age, sex, salary) VALUES ('50400', 30, 'Female', 67000);
SELECT * FROM keanon.partitions('people');
\echo 'With 67000 the least error puts both 35000s in the middle partition and'
\echo '40000, 45000 and 67000 in the top one.'
\echo
UPDATE people SET salary = 31000 WHERE age = 47;
DELETE FROM people WHERE age = 36;
SELECT * FROM keanon.partitions('people');
\echo '30000 became 31000, and 15000 left: the lowest partition would hold 2 distinct'
\echo 'salaries, fewer than k = 3, so the rows now form two partitions.  The query of'
\echo 'section 3 follows them, with wider bounds, as the partitions are wider:'
\echo
SELECT 'bounds from people_anon' AS answer, keanon.sum_bounds(keanon_pid)::text AS sum_salary
FROM people_anon WHERE age BETWEEN 40 AND 48
UNION ALL
SELECT 'true value in people', sum(salary)::text FROM people WHERE age BETWEEN 40 AND 48;

\echo '=== 5. keanon.check compares it all with a recomputation from scratch (t: they agree) ==='
SELECT keanon.check('people');

\echo '=== 6. A busy table: deferred mode, where writers only note what they change ==='
CREATE TABLE orders (id serial PRIMARY KEY, region text, amount integer);
INSERT INTO orders (region, amount) SELECT 'r' || i % 4, 100 * i FROM generate_series(1, 12) i;
SELECT keanon.watch('orders', 'amount', '{region}', k => 3, e => 200, mode => 'deferred');
BEGIN;
INSERT INTO orders (region, amount) SELECT 'r' || i % 4, 150 * i FROM generate_series(1, 6) i;
SELECT mode, pending, published FROM keanon.status('orders');
COMMIT;
\echo 'The six new rows wait in a pending list, unpublished; writers of a deferred'
\echo 'table never wait for each other.  Once they commit, keanon''s background worker'
\echo 'applies them within a fraction of a second; keanon.flush applies them at once:'
\echo
SELECT keanon.flush('orders') IS NOT NULL AS flushed;
SELECT mode, pending, published FROM keanon.status('orders');
SELECT keanon.check('orders');

\echo '=== 7. Generalized quasi-identifiers: every published age range and sex shared by 3 rows ==='
CREATE EXTENSION cube;
CREATE TABLE sex_h (value text, parent text);
INSERT INTO sex_h VALUES ('*', NULL), ('Male', '*'), ('Female', '*');
CREATE TABLE staff AS SELECT * FROM people;
ALTER TABLE staff ADD PRIMARY KEY (id);
SELECT keanon.watch('staff', 'salary', '{age,sex}', k => 3, e => 2000,
                    generalize => 3, hierarchies => '{"sex": "sex_h"}');
SELECT age, sex, salary, keanon_pid FROM staff_anon;
\echo 'An analyst asks about ages 30 to 45: rows whose published range lies inside'
\echo 'are certainly selected, rows whose range only overlaps it perhaps; the'
\echo 'interval holds the true sum whichever they are:'
\echo
SELECT keanon.sum_bounds(keanon_pid, age <@ int4range(30, 45, '[]')) AS sum_bounds
FROM staff_anon WHERE age && int4range(30, 45, '[]');
SELECT 'true value in staff', sum(salary)::text FROM staff WHERE age BETWEEN 30 AND 45;
SELECT keanon.check('staff');

\echo '=== 8. A bad parameter is refused with a clear error ==='
\set ON_ERROR_STOP 0
SELECT keanon.watch('people', 'salary', '{age}', k => 1, e => 2000);
\set ON_ERROR_STOP 1
