-- Default privileges reach no internal table.  An owner who grants roles
-- every new table of a schema (ALTER DEFAULT PRIVILEGES ... GRANT ... ON
-- TABLES), as one does so that they may read new views, gives them SELECT
-- on the new view of a watch, nothing more (the plain view is updatable:
-- a write through it would reach the rows table), and nothing on the
-- tables that hold true values: its rows, partitions, release and pending
-- tables, and a generalized watch's hierarchy, groups and members, in
-- every mode, whoever among the owning role's members makes the watch.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
CREATE EXTENSION IF NOT EXISTS cube;
\set SHOW_CONTEXT never

CREATE ROLE keanon_dp_owner;
CREATE ROLE keanon_dp_member IN ROLE keanon_dp_owner;
CREATE ROLE keanon_dp_reader;
CREATE SCHEMA dp AUTHORIZATION keanon_dp_owner;
GRANT USAGE ON SCHEMA dp TO keanon_dp_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE keanon_dp_owner IN SCHEMA dp
	GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO keanon_dp_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE keanon_dp_member IN SCHEMA dp
	GRANT SELECT ON TABLES TO PUBLIC;

SET ROLE keanon_dp_owner;
CREATE TABLE dp.pay (id integer PRIMARY KEY, age integer NOT NULL, s integer);
INSERT INTO dp.pay SELECT i, 20 + i % 40, (i * 37) % 1000 FROM generate_series(1, 200) i;
CREATE TABLE dp.pay_deferred AS SELECT * FROM dp.pay;
ALTER TABLE dp.pay_deferred ADD PRIMARY KEY (id);
CREATE TABLE dp.pay_release AS SELECT * FROM dp.pay;
ALTER TABLE dp.pay_release ADD PRIMARY KEY (id);
CREATE TABLE dp.pay_gen AS SELECT * FROM dp.pay;
ALTER TABLE dp.pay_gen ADD PRIMARY KEY (id);
-- the watched tables are the owner's to share: none granted here
REVOKE ALL ON dp.pay, dp.pay_deferred, dp.pay_release, dp.pay_gen FROM keanon_dp_reader;
SELECT keanon.watch('dp.pay', 's', '{age}', 5, 50) IS NOT NULL AS live;
SELECT keanon.watch('dp.pay_deferred', 's', '{age}', 5, 50, mode => 'deferred') IS NOT NULL AS deferred;
SELECT keanon.watch('dp.pay_release', 's', '{age}', 5, 50, mode => 'release') IS NOT NULL AS release;
RESET ROLE;
-- a member of the owning role makes the generalized watch
SET ROLE keanon_dp_member;
SELECT keanon.watch('dp.pay_gen', 's', '{age}', 5, 50, generalize => 5) IS NOT NULL AS generalized;
RESET ROLE;

-- who may do what: the owner alone on every internal table, the reader
-- (or PUBLIC) on the views the defaults granted
SELECT c.relname, c.relkind,
	   coalesce((SELECT string_agg(CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
								   || ':' || a.privilege_type, ', '
								   ORDER BY a.grantee::regrole::text, a.privilege_type)
				 FROM aclexplode(c.relacl) a WHERE a.grantee <> c.relowner), '') AS others
FROM pg_class c
WHERE c.relnamespace = 'dp'::regnamespace AND c.relkind IN ('r', 'v')
ORDER BY c.relname;
SET ROLE keanon_dp_reader;
SELECT count(*) > 0 AS reads_the_view FROM dp.pay_anon;
UPDATE dp.pay_anon SET s = -1 WHERE age = 21;
DELETE FROM dp.pay_release_anon WHERE age = 22;
INSERT INTO dp.pay_deferred_anon (age, s) VALUES (30, 1);
SELECT id, s FROM dp.pay_keanon_rows LIMIT 1;
SELECT * FROM dp.pay_keanon_parts LIMIT 1;
SELECT * FROM dp.pay_deferred_keanon_pending LIMIT 1;
SELECT * FROM dp.pay_release_keanon_release LIMIT 1;
SELECT * FROM dp.pay_gen_keanon_members LIMIT 1;
SELECT * FROM dp.pay_gen_keanon_groups LIMIT 1;
RESET ROLE;
SET ROLE keanon_dp_owner;
SELECT keanon.check('dp.pay') AND keanon.check('dp.pay_deferred') AND keanon.check('dp.pay_release')
	AND keanon.check('dp.pay_gen') AS every_watch_checks;
RESET ROLE;

DROP SCHEMA dp CASCADE;
DROP OWNED BY keanon_dp_owner, keanon_dp_member, keanon_dp_reader;
DROP ROLE keanon_dp_reader;
DROP ROLE keanon_dp_member;
DROP ROLE keanon_dp_owner;
