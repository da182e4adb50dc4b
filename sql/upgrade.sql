--
-- ALTER EXTENSION keanon UPDATE: a database made with 0.1.0, watching
-- tables in every mode, is updated to 0.2.0; every watch keeps working and
-- checking, the new version's features work, and the updated extension's
-- functions (with who may execute them), comments and members are exactly those of a fresh 0.2.0.
-- Each version lives in a database of its own.
--
SET client_min_messages = warning;
\set SHOW_CONTEXT never
\set here :DBNAME
CREATE DATABASE keanon_upgrade_old;
CREATE DATABASE keanon_upgrade_new;

-- the catalog of the extension as one fingerprint per kind of object
\set fingerprint 'SELECT (SELECT md5(string_agg(pg_get_functiondef(p.oid) || coalesce(obj_description(p.oid, ''pg_proc''), '''') || pg_catalog.has_function_privilege(''public'', p.oid, ''EXECUTE'')::text, E''\\n'' ORDER BY p.oid::regprocedure::text)) FROM pg_proc p WHERE p.pronamespace = ''keanon''::regnamespace AND p.prokind IN (''f'', ''p'')) AS functions, (SELECT md5(string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), E''\\n'' ORDER BY pg_describe_object(d.classid, d.objid, d.objsubid))) FROM pg_depend d WHERE d.refclassid = ''pg_extension''::regclass AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = ''keanon'') AND d.deptype = ''e'') AS members, (SELECT md5(string_agg(format(''%s %s %s'', a.attrelid::regclass, a.attname, format_type(a.atttypid, a.atttypmod)), E''\\n'' ORDER BY a.attrelid::regclass::text, a.attnum)) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relnamespace = ''keanon''::regnamespace AND a.attnum > 0 AND NOT a.attisdropped) AS columns'

\c keanon_upgrade_new
SET client_min_messages = warning;
CREATE EXTENSION cube;
CREATE EXTENSION keanon;
SELECT extversion FROM pg_extension WHERE extname = 'keanon';
:fingerprint \gset fresh_

\c keanon_upgrade_old
SET client_min_messages = warning;
CREATE EXTENSION cube;
CREATE EXTENSION keanon VERSION '0.1.0';
SELECT extversion FROM pg_extension WHERE extname = 'keanon';
CREATE TABLE kinds (value text, parent text);
INSERT INTO kinds VALUES ('*', NULL), ('a', '*'), ('b', '*'), ('a1', 'a'), ('a2', 'a'), ('b1', 'b');
-- one table per mode, the same rows
CREATE TABLE t_live (id integer PRIMARY KEY, age integer NOT NULL, kind text NOT NULL, salary integer);
INSERT INTO t_live SELECT i, 20 + (i * 37) % 45, (ARRAY['a1', 'a2', 'b1'])[1 + i % 3], 1000 * (1 + (i * 7) % 60)
FROM generate_series(1, 60) i;
CREATE TABLE t_deferred AS SELECT * FROM t_live;
CREATE TABLE t_release AS SELECT * FROM t_live;
CREATE TABLE t_gen AS SELECT * FROM t_live;
CREATE TABLE t_gen_deferred AS SELECT * FROM t_live;
ALTER TABLE t_deferred ADD PRIMARY KEY (id);
ALTER TABLE t_release ADD PRIMARY KEY (id);
ALTER TABLE t_gen ADD PRIMARY KEY (id);
ALTER TABLE t_gen_deferred ADD PRIMARY KEY (id);
SELECT keanon.watch('t_live', 'salary', '{age,kind}', 3, 2000);
SELECT keanon.watch('t_deferred', 'salary', '{age,kind}', 3, 2000, mode => 'deferred');
SELECT keanon.watch('t_release', 'salary', '{age,kind}', 3, 2000, mode => 'release');
SELECT keanon.watch('t_gen', 'salary', '{age,kind}', 3, 2000, generalize => 3, hierarchies => '{"kind": "kinds"}');
SELECT keanon.watch('t_gen_deferred', 'salary', '{age,kind}', 3, 2000, mode => 'deferred', generalize => 4,
	hierarchies => '{"kind": "kinds"}');
-- a generalized double precision quasi-identifier, its ranges published
-- through 0.1.0's numeric cast (15 digits): the update publishes them again
CREATE TABLE t_gen_float (id integer PRIMARY KEY, x float8 NOT NULL, salary integer);
INSERT INTO t_gen_float SELECT i, 0.30000000000000004 + (i % 4), 1000 * (1 + (i * 7) % 60) FROM generate_series(1, 40) i;
SELECT keanon.watch('t_gen_float', 'salary', '{x}', 3, 2000, generalize => 3);
-- a categorical date quasi-identifier, its hierarchy written and watched
-- day first: 0.1.0 kept the leaves as that session printed them, and the
-- update (under the same settings) keeps them in ISO style
SET DateStyle = 'SQL, DMY';
CREATE TABLE days (value text, parent text);
INSERT INTO days VALUES ('any', NULL), ('December', 'any'), ('January', 'any'), ('01/12/2020', 'December'),
	('02/12/2020', 'December'), ('11/01/2020', 'January'), ('12/01/2020', 'January');
CREATE TABLE t_gen_day (id integer PRIMARY KEY, day date NOT NULL, salary integer);
INSERT INTO t_gen_day SELECT i, (ARRAY[date '2020-12-01', date '2020-12-02', date '2020-01-11', date '2020-01-12'])[1 + i % 4],
	1000 * (1 + (i * 7) % 60) FROM generate_series(1, 48) i;
SELECT keanon.watch('t_gen_day', 'salary', '{day}', 3, 2000, generalize => 3, hierarchies => '{"day": "days"}');
-- what 0.1.0 refused
CREATE TABLE t_refused AS SELECT * FROM t_live;
ALTER TABLE t_refused ADD PRIMARY KEY (id);
SELECT keanon.watch('t_refused', 'salary', '{age,kind}', 3, 2000, mode => 'release', generalize => 3,
	hierarchies => '{"kind": "kinds"}');

-- writes under 0.1.0
CREATE FUNCTION write_all(first integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['t_live', 't_deferred', 't_release', 't_gen', 't_gen_deferred'] LOOP
		EXECUTE format('INSERT INTO %I SELECT i, 20 + (i * 31) %% 45, (ARRAY[''a1'', ''a2'', ''b1''])[1 + i %% 3],
						1000 * (1 + (i * 11) %% 60) FROM generate_series($1, $1 + 14) i', t) USING first;
		EXECUTE format('DELETE FROM %I WHERE id %% 9 = 0', t);
		EXECUTE format('UPDATE %I SET age = age + 1, salary = salary + 500 WHERE id %% 7 = 0', t);
	END LOOP;
END;
$$;
SELECT write_all(100);
SELECT keanon.release('t_release');
SELECT keanon.flush('t_deferred') IS NOT NULL AS flushed, keanon.flush('t_gen_deferred') IS NOT NULL AS flushed;

-- an owner's option on a view is kept by the update; a view its owner
-- redefined is left as it is, with a warning
ALTER VIEW t_deferred_anon SET (security_invoker = true);
CREATE TABLE t_redefined AS SELECT * FROM t_live;
ALTER TABLE t_redefined ADD PRIMARY KEY (id);
SELECT keanon.watch('t_redefined', 'salary', '{age,kind}', 3, 2000);
CREATE OR REPLACE VIEW t_redefined_anon WITH (security_barrier) AS
	SELECT age, kind, keanon_pub AS salary, keanon_pid, 1 AS extra FROM t_redefined_keanon_rows
	WHERE keanon_pid IS NOT NULL;

-- a user's views over keanon's functions, and a site's grant on one of
-- them, outlive the update (each function keeps its oid)
CREATE ROLE keanon_upgrade_user;
CREATE VIEW t_k AS SELECT keanon.k_anonymity('t_live', '{age,kind}') AS k;
CREATE VIEW t_groups AS SELECT count(*) AS groups FROM keanon.qi_groups('t_gen');
GRANT SELECT ON t_k, t_live TO keanon_upgrade_user;
REVOKE EXECUTE ON FUNCTION keanon.anonymize(regclass, name[], name, jsonb, integer, integer, numeric, numeric, text,
	jsonb, name, text, integer, boolean, boolean, integer) FROM PUBLIC;
-- an internal table granted to another role (as a schema's default
-- privileges did): the update names it
GRANT SELECT ON t_deferred_keanon_parts TO PUBLIC;
-- an owner who is no superuser: the update rewrites its watch's groups
-- and reads its enum's leaves, and the trigger on its groups table and
-- its enum's cast to text run then, as that owner (run as the one who
-- updates, they would make the owner a superuser)
CREATE ROLE keanon_upgrade_owner;
GRANT CREATE ON SCHEMA public TO keanon_upgrade_owner;
SET ROLE keanon_upgrade_owner;
CREATE TABLE owner_log (who name, super text);
CREATE FUNCTION owner_escalate() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.owner_log VALUES (current_user, (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user)::text);
	BEGIN
		ALTER ROLE keanon_upgrade_owner SUPERUSER;
	EXCEPTION WHEN OTHERS THEN
		NULL;
	END;
END;
$$;
CREATE FUNCTION owner_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM public.owner_escalate();
	RETURN NULL;
END;
$$;
CREATE TYPE owner_mood AS ENUM ('calm', 'glad');
CREATE FUNCTION owner_mood_text(owner_mood) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM public.owner_escalate();
	RETURN format('%s', $1);
END;
$$;
CREATE CAST (owner_mood AS text) WITH FUNCTION owner_mood_text(owner_mood);
CREATE TABLE moods (value text, parent text);
INSERT INTO moods VALUES ('any', NULL), ('calm', 'any'), ('glad', 'any');
CREATE TABLE t_owned (id integer PRIMARY KEY, x float8 NOT NULL, mood owner_mood NOT NULL, salary integer);
INSERT INTO t_owned SELECT i, 0.30000000000000004 + (i % 4), (ARRAY['calm', 'glad']::owner_mood[])[1 + i % 2],
	1000 * (1 + (i * 7) % 60) FROM generate_series(1, 40) i;
SELECT keanon.watch('t_owned', 'salary', '{x,mood}', 3, 2000, generalize => 3, hierarchies => '{"mood": "moods"}');
CREATE TRIGGER owner_trigger AFTER UPDATE ON t_owned_keanon_groups
	FOR EACH STATEMENT EXECUTE FUNCTION owner_trigger();
RESET ROLE;
TRUNCATE owner_log;
-- this session holds the date watch's hierarchy as 0.1.0 kept it
INSERT INTO t_gen_day VALUES (90, '01/12/2020', 6900);
-- the update reads the date leaves under its session's DateStyle: read
-- month first, the rows at each leaf are another day, and it stops
SET DateStyle = 'ISO, MDY';
SET TimeZone = 'UTC';
ALTER EXTENSION keanon UPDATE TO '0.2.0';
SET DateStyle = 'SQL, DMY';
ALTER EXTENSION keanon UPDATE TO '0.2.0';
RESET TimeZone;
SELECT count(*) > 0 AS owner_code_ran, bool_and(who = 'keanon_upgrade_owner' AND super = 'false') AS as_the_owner,
	(SELECT rolsuper FROM pg_roles WHERE rolname = 'keanon_upgrade_owner') AS owner_superuser
FROM owner_log;
SELECT keanon.check('t_owned');
SET ROLE keanon_upgrade_user;
SELECT k FROM t_k;
RESET ROLE;
SELECT groups > 0 AS groups_listed FROM t_groups;
SELECT has_function_privilege('keanon_upgrade_user', 'keanon.anonymize(regclass, name[], name, jsonb, integer, integer,
	numeric, numeric, text, jsonb, name, text, integer, boolean, boolean, integer)', 'EXECUTE') AS user_may_anonymize;
GRANT EXECUTE ON FUNCTION keanon.anonymize(regclass, name[], name, jsonb, integer, integer, numeric, numeric, text,
	jsonb, name, text, integer, boolean, boolean, integer) TO PUBLIC;
DROP VIEW t_k, t_groups;
REVOKE SELECT ON t_live FROM keanon_upgrade_user;
DROP ROLE keanon_upgrade_user;
SELECT keanon.private_table('t_deferred_keanon_parts');
SELECT count(*) AS granted_to_others FROM pg_class c, aclexplode(c.relacl) a
WHERE c.oid = 't_deferred_keanon_parts'::regclass AND a.grantee <> c.relowner;
SELECT extversion FROM pg_extension WHERE extname = 'keanon';
SELECT array_agg(value ORDER BY leaf_lo) AS day_leaves, (SELECT bool_and(day NOT LIKE '%/%')
	FROM t_gen_day_keanon_groups) AS groups_publish_them
FROM t_gen_day_keanon_hier WHERE height = 0;
RESET DateStyle;
-- a writer who puts the month first: 1 December is found as 1 December
SET DateStyle = 'SQL, MDY';
INSERT INTO t_gen_day VALUES (101, '2020-12-01', 7000), (102, '2020-12-01', 7100), (103, '2020-12-01', 7200);
RESET DateStyle;
SELECT m.id, h.value AS leaf FROM t_gen_day_keanon_members m
JOIN t_gen_day_keanon_hier h ON h.dim = 1 AND h.height = 0 AND h.leaf_lo = m.keanon_x[1]
WHERE m.id > 100 ORDER BY m.id;
SELECT keanon.check('t_gen_day');

-- the same watches go on: writes, a release, flushes, and every check
SELECT write_all(200);
SELECT keanon.release('t_release');
SELECT keanon.flush('t_deferred') IS NOT NULL AS flushed, keanon.flush('t_gen_deferred') IS NOT NULL AS flushed;
SELECT pending FROM keanon.status('t_deferred');
SELECT pending FROM keanon.status('t_gen_deferred');
SELECT keanon.check('t_live') AND keanon.check('t_deferred') AND keanon.check('t_release')
	AND keanon.check('t_gen') AND keanon.check('t_gen_deferred') AND keanon.check('t_gen_float') AS every_watch_checks;
SELECT count(*) AS rows, bool_and(lower(g.x)::float8 <= t.x AND upper(g.x)::float8 >= t.x) AS ranges_hold_values
FROM t_gen_float t JOIN keanon.qi_members('t_gen_float') m ON (m.key->>'id')::integer = t.id
JOIN t_gen_float_keanon_groups g ON g.keanon_group = m.group_id;
SELECT (SELECT min(c) FROM (SELECT count(*) c FROM t_gen_anon GROUP BY age, kind) s) >= 3 AS live_k,
	(SELECT min(c) FROM (SELECT count(*) c FROM t_gen_deferred_anon GROUP BY age, kind) s) >= 4 AS deferred_k,
	(SELECT count(*) FROM keanon.qi_groups('t_gen')) > 0 AS groups_listed;
-- the plain views (live and deferred) now return their rows by partition
-- and slot, as a fresh watch's do; the others are as they were; each view
-- still goes with the extension (a normal dependency) and is not a member
SELECT v::text, pg_get_viewdef(v) ~ 'ORDER BY ([a-z_]+\.)?keanon_pid, \(([a-z_]+\.)?keanon_slot \+ 0\)' AS by_slot,
	(SELECT string_agg(d.deptype::text, ',' ORDER BY d.deptype) FROM pg_depend d
	 WHERE d.classid = 'pg_class'::regclass AND d.objid = v
		AND d.refclassid = 'pg_extension'::regclass) AS on_extension
FROM unnest(ARRAY['t_live_anon', 't_deferred_anon', 't_release_anon', 't_gen_anon', 't_redefined_anon']::regclass[]) v;
SELECT c.reloptions FROM pg_class c WHERE c.oid = 't_deferred_anon'::regclass;
SELECT keanon.unwatch('t_redefined');
DROP TABLE t_redefined;
-- what 0.2.0 adds: a generalized watch in release mode
CREATE TABLE t_gen_release AS SELECT * FROM t_live;
ALTER TABLE t_gen_release ADD PRIMARY KEY (id);
SELECT keanon.watch('t_gen_release', 'salary', '{age,kind}', 3, 2000, mode => 'release', generalize => 3,
	hierarchies => '{"kind": "kinds"}');
SELECT keanon.release('t_gen_release');
SELECT keanon.check('t_gen_release');
-- the updated extension is the fresh one
:fingerprint \gset updated_
SELECT :'updated_functions' = :'fresh_functions' AS same_functions,
	:'updated_members' = :'fresh_members' AS same_members,
	:'updated_columns' = :'fresh_columns' AS same_columns;
-- unwatching still removes everything
SELECT keanon.unwatch(x) FROM unnest(ARRAY['t_live', 't_deferred', 't_release', 't_gen', 't_gen_deferred',
	't_gen_release', 't_gen_float', 't_gen_day']::regclass[]) x;
SELECT count(*) AS left_over FROM pg_class WHERE relname LIKE 't\_%keanon%' AND relname NOT LIKE 't\_owned\_%';
SET ROLE keanon_upgrade_owner;
SELECT keanon.unwatch('t_owned');
RESET ROLE;
DROP OWNED BY keanon_upgrade_owner CASCADE;
REVOKE CREATE ON SCHEMA public FROM keanon_upgrade_owner;
DROP ROLE keanon_upgrade_owner;

\c :here
SET client_min_messages = warning;
DROP DATABASE keanon_upgrade_old WITH (FORCE);
DROP DATABASE keanon_upgrade_new WITH (FORCE);
