-- keanon demo: run by scripts/demo.sh with psql -e in a throwaway cluster

\echo
\echo '=== keanon: a table kept (k,e)-anonymized inside PostgreSQL ==='
\echo
CREATE EXTENSION keanon;

\echo
\echo '=== 1. The salary table of the research report (Table 3.1) ==='
\echo
CREATE TABLE people (
	id serial PRIMARY KEY,
	postal_code text,
	age integer,
	sex text,
	salary integer
);
INSERT INTO people (postal_code, age, sex, salary) VALUES
	('50200', 35, 'Male', 14000),
	('50210', 36, 'Male', 15000),
	('50230', 40, 'Male', 16000),
	('50300', 41, 'Female', 25000),
	('50310', 43, 'Female', 35000),
	('50330', 47, 'Male', 30000),
	('50300', 53, 'Male', 40000),
	('50310', 54, 'Female', 35000),
	('50330', 58, 'Male', 45000);
SELECT * FROM people ORDER BY id;

\echo
\echo '=== 2. Watch it: k = 3 distinct salaries spanning at least e = 2000 ==='
\echo 'keanon computes the optimal partitioning, publishes the view people_anon'
\echo 'with the salaries permuted at random within each partition, and keeps'
\echo 'both current from now on.'
\echo
SELECT keanon.watch('people', 'salary', '{postal_code,age,sex}', 3, 2000);
SELECT * FROM keanon.partitions('people');
SELECT postal_code, age, sex, salary, keanon_pid FROM people_anon ORDER BY keanon_pid, age;

\echo
\echo '=== 3. An analyst queries the published view and gets tight bounds ==='
\echo 'The true SUM for ages 40-48 is 106000; keanon answers [104000,106000].'
\echo
SELECT keanon.sum_bounds(keanon_pid) AS salary_sum, count(*) AS people
FROM people_anon WHERE age BETWEEN 40 AND 48;
SELECT keanon.min_bounds(keanon_pid) AS min_salary,
	   keanon.max_bounds(keanon_pid) AS max_salary,
	   keanon.avg_bounds(keanon_pid) AS avg_salary
FROM people_anon WHERE sex = 'Female';
SELECT keanon.count_bounds(keanon_pid, 20000, 32000) AS earning_20000_to_32000
FROM people_anon WHERE age BETWEEN 40 AND 48;

\echo
\echo '=== 4. New rows arrive one at a time; the optimum follows ==='
\echo
INSERT INTO people (postal_code, age, sex, salary) VALUES ('50400', 30, 'Female', 67000);
SELECT * FROM keanon.partitions('people');
INSERT INTO people (postal_code, age, sex, salary) VALUES ('50410', 33, 'Male', 15500);
SELECT * FROM keanon.partitions('people');
UPDATE people SET salary = 31000 WHERE age = 47;
DELETE FROM people WHERE age = 36;
SELECT * FROM keanon.partitions('people');
SELECT keanon.sum_bounds(keanon_pid) AS salary_sum, count(*) AS people
FROM people_anon WHERE age BETWEEN 40 AND 48;

\echo
\echo '=== 5. Everything is checked against a from-scratch recomputation ==='
\echo
SELECT keanon.check('people');

\echo
\echo '=== 6. Bad parameters get a clear error and change nothing ==='
\echo
\set ON_ERROR_STOP 0
SELECT keanon.watch('people', 'salary', '{age}', 1, 2000);
\set ON_ERROR_STOP 1

\echo
\echo '=== done ==='
