-- Two sensitive columns of one table.  A table is watched once, for one
-- sensitive column (a second keanon.watch is refused); the second column is
-- published by a companion table holding the key, the quasi-identifiers
-- and that column, kept equal to the table by a trigger of the owner's and
-- watched on its own (docs/behaviour.md, "More than one sensitive
-- column").  Each view then publishes its column as a watch of its own
-- does: every check holds, each view's values are its column's values,
-- and a writer of the table, with no privilege on the companion, neither
-- writes it directly nor stops the trigger from keeping it equal.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
\set SHOW_CONTEXT never

CREATE TABLE patients (id integer PRIMARY KEY, age integer NOT NULL, zip text NOT NULL,
	salary integer, medical integer);
INSERT INTO patients
SELECT i, 20 + i % 50, 'z' || (i % 7), 1000 * (1 + (i * 37) % 97), 10 * (1 + (i * 53) % 89)
FROM generate_series(1, 400) i;
SELECT keanon.watch('patients', 'salary', '{age,zip}', 4, 5000) IS NOT NULL AS watched;
-- one watch a table
SELECT keanon.watch('patients', 'medical', '{age,zip}', 4, 300);

-- the companion: key, quasi-identifiers, the second column
CREATE TABLE patients_medical (id integer PRIMARY KEY, age integer NOT NULL, zip text NOT NULL,
	medical integer);
INSERT INTO patients_medical SELECT id, age, zip, medical FROM patients;
-- kept equal by the owner's trigger, whoever writes the table: it runs as
-- the owner, with its search_path pinned and every name qualified
CREATE FUNCTION public.patients_medical_sync() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO public.patients_medical VALUES (NEW.id, NEW.age, NEW.zip, NEW.medical);
	ELSIF TG_OP = 'UPDATE' THEN
		UPDATE public.patients_medical
		SET id = NEW.id, age = NEW.age, zip = NEW.zip, medical = NEW.medical
		WHERE id OPERATOR(pg_catalog.=) OLD.id;
	ELSIF TG_OP = 'DELETE' THEN
		DELETE FROM public.patients_medical WHERE id OPERATOR(pg_catalog.=) OLD.id;
	ELSE
		TRUNCATE public.patients_medical;
	END IF;
	RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION public.patients_medical_sync() FROM PUBLIC;
CREATE TRIGGER patients_medical_sync AFTER INSERT OR UPDATE OR DELETE ON patients
FOR EACH ROW EXECUTE FUNCTION public.patients_medical_sync();
CREATE TRIGGER patients_medical_truncate AFTER TRUNCATE ON patients
FOR EACH STATEMENT EXECUTE FUNCTION public.patients_medical_sync();
SELECT keanon.watch('patients_medical', 'medical', '{age,zip}', 4, 300) IS NOT NULL AS watched;

-- each view publishes its own column's values, the other column nowhere
CREATE FUNCTION both_published() RETURNS TABLE (salary_values boolean, medical_values boolean,
	companion_equal boolean, checks boolean)
LANGUAGE sql AS $$
	SELECT (SELECT array_agg(salary ORDER BY salary) FROM patients WHERE salary IS NOT NULL)
		   IS NOT DISTINCT FROM (SELECT array_agg(salary ORDER BY salary) FROM patients_anon),
		   (SELECT array_agg(medical ORDER BY medical) FROM patients WHERE medical IS NOT NULL)
		   IS NOT DISTINCT FROM (SELECT array_agg(medical ORDER BY medical) FROM patients_medical_anon),
		   NOT EXISTS (SELECT id, age, zip, medical FROM patients
					   EXCEPT SELECT id, age, zip, medical FROM patients_medical)
		   AND (SELECT count(*) FROM patients) = (SELECT count(*) FROM patients_medical),
		   keanon.check('patients') AND keanon.check('patients_medical')
$$;
SELECT * FROM both_published();
SELECT attname FROM pg_attribute WHERE attrelid = 'patients_anon'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname FROM pg_attribute WHERE attrelid = 'patients_medical_anon'::regclass AND attnum > 0
ORDER BY attnum;

-- writes of every kind reach both publications
INSERT INTO patients SELECT 400 + i, 30 + i % 20, 'z' || (i % 5), 500 * i, 7 * i
FROM generate_series(1, 60) i;
UPDATE patients SET medical = medical + 100 WHERE id % 9 = 0;
UPDATE patients SET salary = NULL WHERE id % 31 = 0;
UPDATE patients SET id = id + 1000, zip = 'moved' WHERE id % 23 = 0;
DELETE FROM patients WHERE id % 11 = 0;
SELECT * FROM both_published();

-- a writer of the table, granted nothing on the companion
CREATE ROLE keanon_two_writer;
GRANT SELECT, INSERT, UPDATE, DELETE ON patients TO keanon_two_writer;
SET ROLE keanon_two_writer;
INSERT INTO patients VALUES (5000, 44, 'z1', 77000, 880);
UPDATE patients SET medical = 9 WHERE id = 5000;
DELETE FROM patients WHERE id = 1;
INSERT INTO patients_medical VALUES (6000, 44, 'z1', 1);
UPDATE patients_medical SET medical = 1 WHERE id = 5000;
ALTER TABLE patients DISABLE TRIGGER patients_medical_sync;
-- a temporary table of the writer's named like the companion takes
-- nothing: the trigger names the companion with its schema
CREATE TEMP TABLE patients_medical (id integer, age integer, zip text, medical integer);
INSERT INTO patients VALUES (5001, 45, 'z2', 78000, 890);
SELECT count(*) AS taken_by_the_shadow FROM pg_temp.patients_medical;
DROP TABLE pg_temp.patients_medical;
RESET ROLE;
SELECT id, medical FROM patients_medical WHERE id IN (1, 5000, 5001, 6000) ORDER BY id;
SELECT * FROM both_published();

-- TRUNCATE reaches the companion by its statement trigger
TRUNCATE patients;
SELECT (SELECT count(*) FROM patients_anon) AS salary_rows,
	(SELECT count(*) FROM patients_medical_anon) AS medical_rows;
SELECT * FROM both_published();

DROP TABLE patients_medical;
DROP TABLE patients;
DROP FUNCTION public.patients_medical_sync();
DROP FUNCTION both_published();
DROP ROLE keanon_two_writer;
