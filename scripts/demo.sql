-- keanon demo: run by scripts/demo.sh with psql -e in a throwaway cluster

\echo
\echo '=== keanon: optimal (k,e)-partitioning inside PostgreSQL ==='
\echo
CREATE EXTENSION keanon;

\echo
\echo '=== 1. The salary table of the report (Table 3.1) ==='
\echo
CREATE TABLE salaries (
	postal_code text,
	age integer,
	sex text,
	salary integer
);
INSERT INTO salaries VALUES
	('50200', 35, 'Male', 14000),
	('50210', 36, 'Male', 15000),
	('50230', 40, 'Male', 16000),
	('50300', 41, 'Female', 25000),
	('50310', 43, 'Female', 35000),
	('50330', 47, 'Male', 30000),
	('50300', 53, 'Male', 40000),
	('50310', 54, 'Female', 35000),
	('50330', 58, 'Male', 45000);
SELECT * FROM salaries;

\echo
\echo '=== 2. Its optimal (3, 2000)-partitioning ==='
\echo 'Every partition holds at least 3 distinct salaries spanning at least 2000;'
\echo 'the total error (sum of max - min) is the least possible.  A bigint[]'
\echo 'argument selects the exact variant of the function.'
\echo
SELECT * FROM keanon.optimal_partitions(
	(SELECT array_agg(salary)::bigint[] FROM salaries), 3, 2000);

SELECT sum(error) AS sum_error FROM keanon.optimal_partitions(
	(SELECT array_agg(salary)::bigint[] FROM salaries), 3, 2000);

\echo
\echo '=== 3. Two more salaries arrive: 67000 and 15500 ==='
\echo
INSERT INTO salaries VALUES
	('50200', 29, 'Female', 67000),
	('50210', 38, 'Male', 15500);

\echo
\echo '=== 4. The optimal partitioning again ==='
\echo '15500 joins the first partition, the two 35000 salaries now share one,'
\echo 'and 67000 closes the last.'
\echo
SELECT * FROM keanon.optimal_partitions(
	(SELECT array_agg(salary)::bigint[] FROM salaries), 3, 2000);

SELECT sum(error) AS sum_error FROM keanon.optimal_partitions(
	(SELECT array_agg(salary)::bigint[] FROM salaries), 3, 2000);

\echo
\echo '=== 5. With k = 12 no valid partitioning exists: nothing is published ==='
\echo
SELECT * FROM keanon.optimal_partitions(
	(SELECT array_agg(salary)::bigint[] FROM salaries), 12, 2000);

\echo
\echo '=== 6. Bad parameters get a clear error ==='
\echo
\set ON_ERROR_STOP 0
SELECT * FROM keanon.optimal_partitions(
	(SELECT array_agg(salary)::bigint[] FROM salaries), 1, 2000);
\set ON_ERROR_STOP 1

\echo
\echo '=== done ==='
