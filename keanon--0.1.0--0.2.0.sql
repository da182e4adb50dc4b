/* keanon--0.1.0--0.2.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION keanon UPDATE TO '0.2.0'" to load this file. \quit

-- 0.2.0: generalized quasi-identifiers in release mode (each release
-- groups the rows it adds; the release table holds each row's group), and
-- keanon.check_groups split in two; keanon.spent_pids keeps the partition
-- ids of a dropped watch spent.  Existing watches keep their objects:
-- a live or deferred generalized watch is unchanged, and a release-mode
-- watch could not be generalized before.  Every function below is as
-- keanon--0.2.0.sql makes it.  The view of a live or deferred watch
-- that is not generalized now returns its rows by partition and slot,
-- never in their physical order, which told what a change rewrote: such
-- views are replaced below.

-- keanon.key_equality named the operator alone: for a domain key, another
-- operator of its schema named alike for the domain was chosen
DROP FUNCTION keanon.key_equality(regclass, name);
-- Column col of relations a and b equal by its type's default equality,
-- both sides cast to the operator's own input types (an operator of its
-- schema named alike, for a domain of the column's type, is no match)
CREATE FUNCTION keanon.key_equal(tab regclass, col name, a text, b text)
RETURNS text
LANGUAGE C STABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'keanon_key_equal';
COMMENT ON FUNCTION keanon.key_equal(regclass, name, text, text) IS
'the SQL of column col of relations a and b equal: (a.col)::T OPERATOR(schema.op) (b.col)::T, op the default btree (else hash) equality of the column''s type, T its input types, so that no operator named alike for a domain is chosen';

-- a new signature
DROP FUNCTION keanon.watch_check_generalized(regclass, name[], integer, jsonb, text, text);
CREATE FUNCTION keanon.watch_check_generalized(tab regclass, quasi_identifiers name[],
	generalize integer, hierarchies jsonb, qi_method text, mode text, k integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on
AS $watch_check_generalized$
DECLARE
	q name;
	typ regtype;
	h text;
	hrel regclass;
	has_null boolean;
BEGIN
	IF generalize IS NULL THEN
		IF hierarchies IS NOT NULL THEN
			RAISE EXCEPTION 'hierarchies need generalize => k' USING ERRCODE = 'invalid_parameter_value';
		END IF;
		RETURN;
	END IF;
	IF generalize < 2 OR generalize > 100000 THEN
		RAISE EXCEPTION 'generalize must be between 2 and 100000' USING ERRCODE = 'invalid_parameter_value',
			DETAIL = format('generalize = %s was given.', generalize);
	END IF;
	IF qi_method IS NULL OR qi_method NOT IN ('i3m', 'sbtree') THEN
		RAISE EXCEPTION 'unknown qi_method "%"', qi_method USING ERRCODE = 'invalid_parameter_value',
			HINT = 'Use qi_method => ''i3m'' or qi_method => ''sbtree''.';
	END IF;
	IF mode = 'release' AND generalize > k THEN
		RAISE EXCEPTION 'in release mode generalize cannot exceed k' USING ERRCODE = 'invalid_parameter_value',
			DETAIL = format('generalize = %s, k = %s: a release groups only the rows that join in it, and those are none or at least k.',
							generalize, k),
			HINT = 'Use generalize => k or less, or mode => ''live''.';
	END IF;
	IF cardinality(quasi_identifiers) > 64 THEN
		RAISE EXCEPTION 'at most 64 quasi-identifiers can be generalized' USING ERRCODE = 'program_limit_exceeded';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'cube') THEN
		RAISE EXCEPTION 'generalization needs the extension cube' USING ERRCODE = 'object_not_in_prerequisite_state',
			DETAIL = 'The groups are found through a GiST index over their boxes.',
			HINT = 'CREATE EXTENSION cube;';
	END IF;
	IF hierarchies IS NOT NULL AND jsonb_typeof(hierarchies) <> 'object' THEN
		RAISE EXCEPTION 'hierarchies must be a JSON object from column names to tables'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	FOR h IN SELECT key FROM jsonb_object_keys(coalesce(hierarchies, '{}')) key LOOP
		IF NOT h = ANY (quasi_identifiers) THEN
			RAISE EXCEPTION 'hierarchy given for "%", which is not a quasi-identifier', h
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
	END LOOP;
	FOREACH q IN ARRAY quasi_identifiers LOOP
		typ := (SELECT a.atttypid::regtype FROM pg_attribute a
				WHERE a.attrelid = tab AND a.attname = q AND a.attnum > 0 AND NOT a.attisdropped);
		IF hierarchies ? q THEN
			IF jsonb_typeof(hierarchies -> q) <> 'string' THEN
				RAISE EXCEPTION 'the hierarchy of "%" must be named by a string', q
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
			hrel := keanon.hierarchy_table(tab, hierarchies ->> q);
			IF hrel IS NULL THEN
				RAISE EXCEPTION 'hierarchy "%" of column "%" does not exist', hierarchies ->> q, q
					USING ERRCODE = 'undefined_table';
			END IF;
			PERFORM keanon.check_hierarchy(tab, q, hrel);
		ELSIF keanon.qi_range_type(typ) IS NULL THEN
			RAISE EXCEPTION 'quasi-identifier "%" of type % needs a hierarchy', q, typ
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Name a (value, parent) table for it in hierarchies, or generalize a numeric, date or timestamp column.';
		END IF;
		EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE %I IS NULL)', tab, q) INTO has_null;
		IF has_null THEN
			RAISE EXCEPTION 'generalized quasi-identifier "%" of table % has NULL values', q, tab
				USING ERRCODE = 'not_null_violation',
					  HINT = 'Every row needs a value of each generalized quasi-identifier.';
		END IF;
	END LOOP;
END;
$watch_check_generalized$;
COMMENT ON FUNCTION keanon.watch_check_generalized(regclass, name[], integer, jsonb, text, text, integer) IS
'part of keanon.watch: refuse, with nothing made, a generalization that cannot be: k out of range, an unknown method, release mode, no cube extension, a quasi-identifier neither numeric nor given a hierarchy, a hierarchy that is not one tree of unique values, a stored value that is not a leaf';


-- a new signature
DROP FUNCTION keanon.watch_generalized(regclass, name, name[], name[], integer, jsonb, text, text);
CREATE FUNCTION keanon.watch_generalized(tab regclass, sensitive name, quasi_identifiers name[],
	keys name[], generalize integer, hierarchies jsonb, rows_name text, view_name text, release_name text,
	OUT hier_name text, OUT groups_name text, OUT members_name text, OUT ranges float8[],
	OUT origins float8[])
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on
SET extra_float_digits = 1
AS $watch_generalized$
DECLARE
	nsp name := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				 WHERE c.oid = tab);
	cube_nsp name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
					  WHERE e.extname = 'cube');
	base text := left(rows_name, length(rows_name) - length('_keanon_rows'));
	persistence text := CASE (SELECT relpersistence FROM pg_class WHERE oid = tab)
		WHEN 'u' THEN 'UNLOGGED ' ELSE '' END;
	owner_name name := (SELECT r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
						WHERE c.oid = tab);
	q name;
	i integer := 0;
	typ regtype;
	hrel regclass;
	span float8;
	least_value float8;
	pubcols text := '';
	keycols text;
	keyeq text;
	viewcols text;
	obj text;
BEGIN
	hier_name := base || '_keanon_hier';
	groups_name := base || '_keanon_groups';
	members_name := base || '_keanon_members';
	FOREACH obj IN ARRAY ARRAY[hier_name, groups_name, members_name] LOOP
		IF to_regclass(format('%I.%I', nsp, obj)) IS NOT NULL THEN
			RAISE EXCEPTION 'relation "%" already exists in schema "%"', obj, nsp USING ERRCODE = 'duplicate_table';
		END IF;
	END LOOP;

	-- each hierarchy copied, numbered in depth-first order: a node's
	-- leaves are the interval leaf_lo .. leaf_hi
	EXECUTE format('CREATE %sTABLE %I.%I (dim integer NOT NULL, node integer NOT NULL, value text NOT NULL, '
				   'parent integer, height integer NOT NULL, leaf_lo integer NOT NULL, leaf_hi integer NOT NULL, '
				   'PRIMARY KEY (dim, node), UNIQUE (dim, value))', persistence, nsp, hier_name);
	EXECUTE format('COMMENT ON TABLE %I.%I IS %L', nsp, hier_name,
				   format('keanon: the generalization hierarchies of %s, numbered depth first', tab));
	ranges := '{}';
	origins := '{}';
	FOREACH q IN ARRAY quasi_identifiers LOOP
		i := i + 1;
		typ := (SELECT a.atttypid::regtype FROM pg_attribute a
				WHERE a.attrelid = tab AND a.attname = q AND a.attnum > 0 AND NOT a.attisdropped);
		IF hierarchies ? q THEN
			hrel := keanon.hierarchy_table(tab, hierarchies ->> q);
			EXECUTE format($h$
				WITH RECURSIVE t AS (
					SELECT value::text AS v, ARRAY[value::text] AS path FROM %1$s WHERE parent IS NULL
					UNION ALL
					SELECT h.value::text, t.path || h.value::text FROM %1$s h JOIN t ON h.parent::text = t.v),
				n AS (SELECT v, path, (row_number() OVER (ORDER BY path))::integer - 1 AS node,
							 NOT EXISTS (SELECT 1 FROM %1$s c WHERE c.parent::text = t.v) AS leaf
					  FROM t),
				l AS (SELECT n.*, (count(*) FILTER (WHERE leaf) OVER (ORDER BY path))::integer - 1 AS leafno FROM n),
				a AS (SELECT l.path[1:d] AS anc, min(l.leafno) AS lo, max(l.leafno) AS hi,
							 max(cardinality(l.path)) AS deepest
					  FROM l, generate_series(1, cardinality(l.path)) d WHERE l.leaf GROUP BY 1),
				lv AS (SELECT h.value::text AS v, %5$s AS kept FROM %1$s h
					   WHERE NOT EXISTS (SELECT 1 FROM %1$s c WHERE c.parent::text = h.value::text))
				INSERT INTO %2$I.%3$I (dim, node, value, parent, height, leaf_lo, leaf_hi)
				SELECT %4$s, l.node, CASE WHEN l.leaf THEN lv.kept ELSE l.v END, p.node,
					   a.deepest - cardinality(l.path), a.lo, a.hi
				FROM l JOIN a ON a.anc = l.path LEFT JOIN lv ON lv.v = l.v
				LEFT JOIN l p ON p.path = l.path[1:cardinality(l.path) - 1] AND cardinality(l.path) > 1$h$,
				hrel, nsp, hier_name, i, keanon.leaf_sql(tab, q, hrel, 'h.value'));
			ranges := ranges || NULL::float8;
			origins := origins || 0::float8;
		ELSE
			EXECUTE format('SELECT max(%1$s) - min(%1$s), min(%1$s) FROM %2$s',
						   keanon.qi_coordinate(typ, format('%I', q)), tab) INTO span, least_value;
			ranges := ranges || CASE WHEN span IS NULL OR span <= 0 OR span = 'Infinity' THEN 1 ELSE span END;
			origins := origins || CASE WHEN least_value IS NULL OR least_value IN ('Infinity', '-Infinity')
				THEN 0 ELSE least_value END;
		END IF;
		pubcols := pubcols || format(', %I %s', q, coalesce(CASE WHEN hierarchies ? q THEN NULL
			ELSE keanon.qi_range_type(typ) END, 'text'));
	END LOOP;

	-- the groups: size, box and sum of coordinates, place in the GiST
	-- index (the box, or the centre for the similar-B-tree), and the
	-- published generalized tuple
	EXECUTE format('CREATE %sTABLE %I.%I (keanon_group bigint PRIMARY KEY, keanon_n bigint NOT NULL, '
				   'keanon_lo float8[] NOT NULL, keanon_hi float8[] NOT NULL, keanon_sum float8[] NOT NULL, '
				   'keanon_place %I.cube NOT NULL, keanon_key bigint NOT NULL%s) WITH (fillfactor = 70)',
				   persistence, nsp, groups_name, cube_nsp, pubcols);
	EXECUTE format('CREATE INDEX ON %I.%I USING gist (keanon_place)', nsp, groups_name);
	EXECUTE format('CREATE INDEX ON %I.%I (keanon_key)', nsp, groups_name);
	EXECUTE format('COMMENT ON TABLE %I.%I IS %L', nsp, groups_name,
				   format('keanon: the k-anonymous groups of %s with their generalized quasi-identifiers', tab));
	SELECT string_agg(format('g.%I', c), ', ' ORDER BY o) INTO viewcols
	FROM unnest(quasi_identifiers) WITH ORDINALITY u(c, o);
	EXECUTE format('DROP VIEW %I.%I', nsp, view_name);
	IF release_name IS NOT NULL THEN
		-- release mode: each released row keeps the group it was released
		-- in, made at its release from the rows that joined with it
		members_name := NULL;
		EXECUTE format('ALTER TABLE %I.%I ADD COLUMN keanon_group bigint', nsp, release_name);
		EXECUTE format('CREATE INDEX ON %I.%I (keanon_group)', nsp, release_name);
		EXECUTE format('CREATE VIEW %I.%I WITH (security_barrier) AS '
					   'SELECT %s, r.keanon_pub AS %I, r.keanon_pid FROM %I.%I r '
					   'JOIN %I.%I g ON g.keanon_group OPERATOR(pg_catalog.=) r.keanon_group '
					   'WHERE g.keanon_n OPERATOR(pg_catalog.>=) %s '
					   'ORDER BY %s, r.keanon_pid, r.keanon_pub',
					   nsp, view_name, viewcols, sensitive, nsp, release_name, nsp, groups_name, generalize,
					   viewcols);
	ELSE
		SELECT string_agg(format('%I %s', c, (SELECT format_type(a.atttypid, a.atttypmod)
			FROM pg_attribute a WHERE a.attrelid = tab AND a.attname = c)), ', ' ORDER BY o)
		INTO keycols FROM unnest(keys) WITH ORDINALITY u(c, o);
		EXECUTE format('CREATE %sTABLE %I.%I (%s, keanon_group bigint NOT NULL, keanon_x float8[] NOT NULL, '
					   'PRIMARY KEY (%s))', persistence, nsp, members_name, keycols,
					   (SELECT string_agg(format('%I', c), ', ' ORDER BY o) FROM unnest(keys) WITH ORDINALITY u(c, o)));
		EXECUTE format('CREATE INDEX ON %I.%I (keanon_group)', nsp, members_name);
		EXECUTE format('COMMENT ON TABLE %I.%I IS %L', nsp, members_name,
					   format('keanon: the group of each row of %s and its coordinates; private, never grant it', tab));
		-- the view: each row's group's tuple, its published value and
		-- partition, in an order of published values alone (the tuple
		-- first: groups of one tuple are not told apart by their numbers)
		SELECT string_agg(keanon.key_equal(tab, c, 'r', 'm'), ' AND ' ORDER BY o)
		INTO keyeq FROM unnest(keys) WITH ORDINALITY u(c, o);
		EXECUTE format('CREATE VIEW %I.%I WITH (security_barrier) AS '
					   'SELECT %s, r.keanon_pub AS %I, r.keanon_pid FROM %I.%I r JOIN %I.%I m ON %s '
					   'JOIN %I.%I g ON g.keanon_group OPERATOR(pg_catalog.=) m.keanon_group '
					   'WHERE r.keanon_pid IS NOT NULL AND g.keanon_n OPERATOR(pg_catalog.>=) %s '
					   'ORDER BY %s, r.keanon_pid, r.keanon_pub',
					   nsp, view_name, viewcols, sensitive, nsp, rows_name, nsp, members_name, keyeq,
					   nsp, groups_name, generalize, viewcols);
	END IF;
	EXECUTE format('COMMENT ON VIEW %I.%I IS %L', nsp, view_name,
				   format('keanon: %s with its quasi-identifiers generalized into groups of at least %s rows and %I permuted within each partition keanon_pid',
						  tab, generalize, sensitive));
	IF current_user <> owner_name THEN
		EXECUTE format('ALTER TABLE %I.%I OWNER TO %I', nsp, hier_name, owner_name);
		EXECUTE format('ALTER TABLE %I.%I OWNER TO %I', nsp, groups_name, owner_name);
		IF members_name IS NOT NULL THEN
			EXECUTE format('ALTER TABLE %I.%I OWNER TO %I', nsp, members_name, owner_name);
		END IF;
		EXECUTE format('ALTER VIEW %I.%I OWNER TO %I', nsp, view_name, owner_name);
	END IF;
	PERFORM keanon.private_table(format('%I.%I', nsp, view_name)::regclass, readable => true);
	PERFORM keanon.private_table(format('%I.%I', nsp, hier_name)::regclass);
	PERFORM keanon.private_table(format('%I.%I', nsp, groups_name)::regclass);
	IF members_name IS NOT NULL THEN
		PERFORM keanon.private_table(format('%I.%I', nsp, members_name)::regclass);
	END IF;
END;
$watch_generalized$;
COMMENT ON FUNCTION keanon.watch_generalized(regclass, name, name[], name[], integer, jsonb, text, text, text) IS
'part of keanon.watch with generalize: make the hierarchy, groups and members tables (in release mode, release_name given, a group column of the release table instead of members) and the generalized view in place of the plain one; returns their names and the numeric quasi-identifiers'' spans and least values';


-- a new signature
DROP FUNCTION keanon.generalization_of(regclass);
CREATE FUNCTION keanon.generalization_of_body(tab regclass,
	OUT generalize integer, OUT quasi_identifiers name[], OUT key_columns name[],
	OUT ranges float8[], OUT hier regclass, OUT groups regclass, OUT members regclass,
	OUT rows_table regclass, OUT release_table regclass)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on
AS $generalization_of$
BEGIN
	IF NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = tab), 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', tab USING ERRCODE = 'insufficient_privilege';
	END IF;
	SELECT w.generalize, w.quasi_identifiers, w.key_columns, w.qi_ranges, w.qi_hierarchy, w.qi_groups,
		   w.qi_members, w.rows_table, w.release_table
	INTO generalize, quasi_identifiers, key_columns, ranges, hier, groups, members, rows_table, release_table
	FROM keanon.watches w WHERE w.relid = tab;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'table % is not watched', tab USING ERRCODE = 'undefined_object';
	END IF;
	IF generalize IS NULL THEN
		RAISE EXCEPTION 'the watch of % does not generalize its quasi-identifiers', tab
			USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Watch it with generalize => k.';
	END IF;
END;
$generalization_of$;
REVOKE ALL ON FUNCTION keanon.generalization_of_body(regclass) FROM PUBLIC;
COMMENT ON FUNCTION keanon.generalization_of_body(regclass) IS
'the work of keanon.generalization_of, called by it alone (it raises the errors again without PL/pgSQL''s context)';
CREATE FUNCTION keanon.generalization_of(tab regclass,
	OUT generalize integer, OUT quasi_identifiers name[], OUT key_columns name[],
	OUT ranges float8[], OUT hier regclass, OUT groups regclass, OUT members regclass,
	OUT rows_table regclass, OUT release_table regclass)
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'keanon_entry';
COMMENT ON FUNCTION keanon.generalization_of(regclass) IS
'the table''s owner: the generalization of a watch as keanon.watches records it (members NULL in release mode, where the release table holds each row''s group); an error when the table is not watched with generalize';


CREATE FUNCTION keanon.watch_build(
	tab regclass,
	sensitive name,
	quasi_identifiers name[],
	keys name[],
	k integer,
	e numeric,
	publish_as name,
	mode text,
	release_every interval,
	generalize integer,
	hierarchies jsonb,
	qi_method text)
RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on
AS $watch_build$
DECLARE
	nsp name;
	cols name[];
	q name;
	nm record;
	gen record;
	keylist text;
BEGIN
	nsp := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.oid = tab);
	-- no writer may slip in between reading the rows and the triggers
	EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tab);
	nm := keanon.watch_names(tab, publish_as);
	PERFORM keanon.watch_objects(tab, sensitive, quasi_identifiers, keys, k, e, mode,
								 nm.rows_name, nm.parts_name, nm.idx_name, nm.release_name,
								 nm.pending_name, nm.view_name);
	IF generalize IS NOT NULL THEN
		gen := keanon.watch_generalized(tab, sensitive, quasi_identifiers, keys, generalize, hierarchies,
										nm.rows_name, nm.view_name,
										CASE WHEN mode = 'release' THEN nm.release_name END);
	END IF;
	PERFORM keanon.register_watch(tab, sensitive, quasi_identifiers, keys, k, e, mode,
		format('%I.%I', nsp, nm.view_name)::regclass,
		format('%I.%I', nsp, nm.rows_name)::regclass,
		format('%I.%I', nsp, nm.parts_name)::regclass,
		CASE WHEN mode = 'release' THEN format('%I.%I', nsp, nm.release_name)::regclass END,
		CASE WHEN mode = 'deferred' THEN format('%I.%I', nsp, nm.pending_name)::regclass END);
	IF generalize IS NOT NULL THEN
		PERFORM keanon.register_generalization(tab, generalize, qi_method, gen.ranges,
			format('%I.%I', nsp, gen.hier_name)::regclass,
			format('%I.%I', nsp, gen.groups_name)::regclass,
			CASE WHEN gen.members_name IS NOT NULL THEN format('%I.%I', nsp, gen.members_name)::regclass END,
			gen.origins);
	END IF;

	-- the rows, written once and placed, then the rows table's indexes
	IF keanon.fill(tab) >= 100000 THEN
		RAISE NOTICE 'keanon: wrote the rows of %; building their indexes and triggers', tab;
	END IF;
	SELECT string_agg(format('%I', c), ', ' ORDER BY o) INTO keylist FROM unnest(keys) WITH ORDINALITY u(c, o);
	EXECUTE format('ALTER TABLE %I.%I ADD PRIMARY KEY (%s)', nsp, nm.rows_name, keylist);
	EXECUTE format('CREATE INDEX ON %I.%I (keanon_pid, keanon_slot)', nsp, nm.rows_name);
	-- the rows showing a value, for a row leaving a large partition: only
	-- slots from 32 up, so that a small partition's rows, found through the
	-- (keanon_pid, keanon_slot) index, cost no entry here when they move
	EXECUTE format('CREATE INDEX ON %I.%I (keanon_pid, keanon_pub) WHERE keanon_slot >= 32',
				   nsp, nm.rows_name);

	-- the watched columns: the key, then the quasi-identifiers and the value
	cols := keys;
	FOREACH q IN ARRAY quasi_identifiers || sensitive LOOP
		IF NOT q = ANY (cols) THEN
			cols := cols || q;
		END IF;
	END LOOP;
	PERFORM keanon.watch_triggers(tab, mode, cols);
	IF release_every IS NOT NULL THEN
		PERFORM keanon.schedule_releases(tab, release_every);
	END IF;
	RETURN format('%I.%I', nsp, nm.view_name)::regclass;
END;
$watch_build$;
REVOKE ALL ON FUNCTION keanon.watch_build(regclass, name, name[], name[], integer, numeric, name, text, interval, integer, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION keanon.watch_build(regclass, name, name[], name[], integer, numeric, name, text, interval, integer, jsonb, text) IS
'part of keanon.watch, called by it alone once the table and the arguments passed its checks: make the watch''s objects, register it, publish the rows and install the triggers; returns the view';

CREATE OR REPLACE FUNCTION keanon.watch(
	tab regclass,
	sensitive name,
	quasi_identifiers name[],
	k integer,
	e numeric,
	publish_as name DEFAULT NULL,
	mode text DEFAULT 'live',
	release_every interval DEFAULT NULL,
	generalize integer DEFAULT NULL,
	hierarchies jsonb DEFAULT NULL,
	qi_method text DEFAULT 'i3m')
RETURNS regclass
AS 'MODULE_PATHNAME', 'keanon_watch'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on;
COMMENT ON FUNCTION keanon.watch(regclass, name, name[], integer, numeric, name, text, interval, integer, jsonb, text) IS
'start keeping a table (k,e)-anonymized: creates the published view (default <table>_anon) with the quasi-identifiers, the sensitive column permuted within partitions and keanon_pid; returns the view; a release-mode watch given release_every is released by the background worker on that schedule; with generalize => k the quasi-identifiers are published generalized (numbers as ranges, categories as ancestors in hierarchies => {column: table of (value, parent)}) in groups of at least k rows kept current by qi_method i3m or sbtree';
-- keanon.watch checks its arguments in C now
DROP FUNCTION keanon.watch_check(regclass, name, name[], integer, numeric, name, text, interval);


CREATE FUNCTION keanon.qi_groups_body(tab regclass,
	OUT group_id bigint, OUT size bigint, OUT generalized jsonb, OUT il float8, OUT total_il float8)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on
AS $qi_groups$
DECLARE
	g record;
BEGIN
	g := keanon.generalization_of(tab);
	RETURN QUERY EXECUTE format($q$
		WITH dims AS (SELECT d::integer AS d, $1[d] IS NULL AS cat FROM generate_subscripts($1, 1) d),
		box AS (%1$s),
		span AS (SELECT d, max(hi) - min(lo) AS span FROM box GROUP BY d),
		cost AS (SELECT b.gid, sum(CASE WHEN x.cat THEN
					coalesce((SELECT h.height FROM %2$s h WHERE h.dim = b.d AND h.leaf_lo <= b.lo
							  AND h.leaf_hi >= b.hi ORDER BY h.height LIMIT 1)::float8
							 / nullif((SELECT h.height FROM %2$s h WHERE h.dim = b.d AND h.parent IS NULL), 0), 0)
					ELSE coalesce((b.hi - b.lo) / nullif(s.span, 0), 0) END) AS per_row
				 FROM box b JOIN dims x USING (d) JOIN span s USING (d) GROUP BY b.gid),
		out AS (SELECT g.keanon_group AS group_id, g.keanon_n AS size,
					   to_jsonb(g.*) - ARRAY['keanon_group', 'keanon_n', 'keanon_lo', 'keanon_hi', 'keanon_sum',
											 'keanon_place', 'keanon_key'] AS generalized,
					   c.per_row * g.keanon_n AS il
				FROM %3$s g JOIN cost c ON c.gid = g.keanon_group)
		SELECT o.group_id, o.size, o.generalized, o.il, sum(o.il) OVER () FROM out o ORDER BY o.group_id$q$,
		CASE WHEN g.members IS NULL
			-- release mode: the box each group was made with, which never changes
			THEN format('SELECT y.keanon_group AS gid, x.d, y.keanon_lo[x.d] AS lo, y.keanon_hi[x.d] AS hi '
						'FROM %s y, dims x', g.groups)
			ELSE format('SELECT m.keanon_group AS gid, x.d, min(m.keanon_x[x.d]) AS lo, max(m.keanon_x[x.d]) AS hi '
						'FROM %s m, dims x GROUP BY 1, 2', g.members) END,
		g.hier, g.groups) USING g.ranges;
END;
$qi_groups$;
REVOKE ALL ON FUNCTION keanon.qi_groups_body(regclass) FROM PUBLIC;
COMMENT ON FUNCTION keanon.qi_groups_body(regclass) IS
'the work of keanon.qi_groups, called by it alone (it raises the errors again without PL/pgSQL''s context)';
CREATE OR REPLACE FUNCTION keanon.qi_groups(tab regclass,
	OUT group_id bigint, OUT size bigint, OUT generalized jsonb, OUT il float8, OUT total_il float8)
RETURNS SETOF record
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'keanon_entry';
COMMENT ON FUNCTION keanon.qi_groups(regclass) IS
'the table''s owner: each group of a generalized watch: its id, size, generalized tuple and information loss IL = size * (sum over numeric quasi-identifiers of the group''s span / the publication''s span + sum over categorical ones of the height of the published node / the hierarchy''s height) (I3M, Definition 4), and the total IL over all groups';


CREATE FUNCTION keanon.qi_members_body(tab regclass, OUT key jsonb, OUT group_id bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on
AS $qi_members$
DECLARE
	g record;
BEGIN
	g := keanon.generalization_of(tab);
	RETURN QUERY EXECUTE format('SELECT jsonb_build_object(%s), m.keanon_group FROM %s m ORDER BY 2, 1',
		(SELECT string_agg(format('%L, m.%I', c, c), ', ' ORDER BY o) FROM unnest(g.key_columns) WITH ORDINALITY u(c, o)),
		coalesce(g.members, g.release_table));
END;
$qi_members$;
REVOKE ALL ON FUNCTION keanon.qi_members_body(regclass) FROM PUBLIC;
COMMENT ON FUNCTION keanon.qi_members_body(regclass) IS
'the work of keanon.qi_members, called by it alone (it raises the errors again without PL/pgSQL''s context)';
CREATE OR REPLACE FUNCTION keanon.qi_members(tab regclass, OUT key jsonb, OUT group_id bigint)
RETURNS SETOF record
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'keanon_entry';
COMMENT ON FUNCTION keanon.qi_members(regclass) IS
'the table''s owner, for audits: the key of each published row of a generalized watch and its group (in release mode, of each row of the last release: a row retained beside its new version appears twice)';


CREATE OR REPLACE FUNCTION keanon.check_groups(tab regclass)
RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on
SET extra_float_digits = 1
AS $check_groups$
DECLARE
	g record;
	keyeq text;
	bad bigint;
	ngroups bigint;
	q name;
	i integer := 0;
	typ regtype;
	src text;
BEGIN
	g := keanon.generalization_of(tab);
	IF g.members IS NULL THEN
		-- release mode: each row of the last release names its group
		src := format('%s r CROSS JOIN LATERAL (SELECT r.keanon_group) m', g.release_table);
	ELSE
		SELECT string_agg(keanon.key_equal(tab, c, 'm', 'r'), ' AND ' ORDER BY o)
		INTO keyeq FROM unnest(g.key_columns) WITH ORDINALITY u(c, o);
		src := format('%s m JOIN %s r ON %s', g.members, g.rows_table, keyeq);
		PERFORM keanon.check_members(tab, g.members, g.rows_table, g.quasi_identifiers, g.ranges, g.hier, keyeq);
	END IF;
	-- 3. sizes: counted, at least k and below 2k, but for a lone group
	EXECUTE format('SELECT count(*) FROM %s', g.groups) INTO ngroups;
	EXECUTE format('SELECT count(*) FROM %1$s x LEFT JOIN (SELECT m.keanon_group, count(*) AS c FROM %2$s '
				   'GROUP BY 1) s USING (keanon_group) WHERE x.keanon_n IS DISTINCT FROM coalesce(s.c, 0) '
				   'OR x.keanon_n >= 2 * %3$s OR x.keanon_n < 1 OR (x.keanon_n < %3$s AND %4$s > 1)',
				   g.groups, src, g.generalize, ngroups) INTO bad;
	IF bad > 0 THEN
		RAISE EXCEPTION 'keanon.check: % groups of % are not of % to % rows', bad, tab, g.generalize, 2 * g.generalize - 1
			USING ERRCODE = 'data_corrupted';
	END IF;
	EXECUTE format('SELECT count(*) FROM %s WHERE NOT EXISTS (SELECT 1 FROM %s x WHERE x.keanon_group = m.keanon_group)',
				   src, g.groups) INTO bad;
	IF bad > 0 THEN
		RAISE EXCEPTION 'keanon.check: % rows of % belong to no group', bad, tab USING ERRCODE = 'data_corrupted';
	END IF;
	-- 4. each group publishes the least general tuple of its members' true values
	FOREACH q IN ARRAY g.quasi_identifiers LOOP
		i := i + 1;
		typ := (SELECT a.atttypid::regtype FROM pg_attribute a WHERE a.attrelid = tab AND a.attname = q);
		IF g.ranges[i] IS NULL THEN
			EXECUTE format($c$SELECT count(*) FROM %1$s x JOIN (SELECT m.keanon_group, min(h.leaf_lo) lo, max(h.leaf_lo) hi
						   FROM %2$s JOIN %3$s h ON h.dim = %4$s AND h.height = 0 AND h.value = keanon.leaf_text(r.%5$I)
						   GROUP BY 1) s USING (keanon_group)
						   WHERE x.%5$I IS DISTINCT FROM (SELECT a.value FROM %3$s a WHERE a.dim = %4$s
							 AND a.leaf_lo <= s.lo AND a.leaf_hi >= s.hi ORDER BY a.height LIMIT 1)$c$,
						   g.groups, src, g.hier, i, q) INTO bad;
		ELSE
			EXECUTE format($c$SELECT count(*) FROM %1$s x JOIN (SELECT m.keanon_group, min(r.%3$I) lo, max(r.%3$I) hi
						   FROM %2$s GROUP BY 1) s USING (keanon_group)
						   WHERE x.%3$I IS DISTINCT FROM %4$s
							  OR x.keanon_lo[%5$s] IS DISTINCT FROM %6$s OR x.keanon_hi[%5$s] IS DISTINCT FROM %7$s$c$,
						   g.groups, src, q, keanon.qi_range(typ, 's.lo', 's.hi'),
						   i, keanon.qi_coordinate(typ, 's.lo'), keanon.qi_coordinate(typ, 's.hi')) INTO bad;
		END IF;
		IF bad > 0 THEN
			RAISE EXCEPTION 'keanon.check: % groups of % publish a value of % other than the least general one', bad, tab, q
				USING ERRCODE = 'data_corrupted';
		END IF;
	END LOOP;
	RETURN true;
END;
$check_groups$;
COMMENT ON FUNCTION keanon.check_groups(regclass) IS
'part of keanon.check for a generalized watch: every published row is a member of one group, with the coordinates of its true values (in release mode every row of the last release names its group); every group holds k to 2k - 1 rows (a lone group fewer) and publishes the least general tuple of its members'' true values (the range from least to greatest, the lowest common ancestor in the hierarchy); an error naming the difference otherwise';


-- new
CREATE FUNCTION keanon.check_members(tab regclass, members regclass, rows_table regclass,
	quasi_identifiers name[], ranges float8[], hier regclass, keyeq text)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on
SET extra_float_digits = 1
AS $check_members$
DECLARE
	coords text := '';
	bad bigint;
	q name;
	i integer := 0;
	typ regtype;
BEGIN
	-- 1. one member per published row, none else
	EXECUTE format('SELECT (SELECT count(*) FROM %1$s m WHERE NOT EXISTS (SELECT 1 FROM %2$s r WHERE %3$s)) '
				   '+ (SELECT count(*) FROM %2$s r WHERE NOT EXISTS (SELECT 1 FROM %1$s m WHERE %3$s))',
				   members, rows_table, keyeq) INTO bad;
	IF bad > 0 THEN
		RAISE EXCEPTION 'keanon.check: % rows of % are not members of exactly the published rows', bad, tab
			USING ERRCODE = 'data_corrupted';
	END IF;
	-- 2. each member's coordinates are its true values'
	FOREACH q IN ARRAY quasi_identifiers LOOP
		i := i + 1;
		typ := (SELECT a.atttypid::regtype FROM pg_attribute a WHERE a.attrelid = tab AND a.attname = q);
		IF ranges[i] IS NULL THEN
			coords := coords || format(' OR m.keanon_x[%s] IS DISTINCT FROM (SELECT h.leaf_lo::float8 FROM %s h '
									   'WHERE h.dim = %s AND h.height = 0 AND h.value = keanon.leaf_text(r.%I))', i, hier, i, q);
		ELSE
			coords := coords || format(' OR m.keanon_x[%s] IS DISTINCT FROM %s', i,
									   keanon.qi_coordinate(typ, format('r.%I', q)));
		END IF;
	END LOOP;
	EXECUTE format('SELECT count(*) FROM %s m JOIN %s r ON %s WHERE cardinality(m.keanon_x) <> %s %s',
				   members, rows_table, keyeq, cardinality(quasi_identifiers), coords) INTO bad;
	IF bad > 0 THEN
		RAISE EXCEPTION 'keanon.check: % members of % have coordinates other than their true values''', bad, tab
			USING ERRCODE = 'data_corrupted';
	END IF;
END;
$check_members$;
COMMENT ON FUNCTION keanon.check_members(regclass, regclass, regclass, name[], float8[], regclass, text) IS
'part of keanon.check_groups in live and deferred mode: one member per published row and none else, each with the coordinates of its true values; an error naming the difference otherwise';

-- The partition ids each watch number has handed out, kept when its watch
-- goes, so that a number given to a later watch starts past them
CREATE TABLE keanon.spent_pids (
	watch_no integer PRIMARY KEY,
	next_pid bigint NOT NULL
);
COMMENT ON TABLE keanon.spent_pids IS
'the last partition id each watch number handed out, kept when its watch is dropped, so that a later watch of the same number starts past it and a keanon_pid saved from the earlier watch never names one of its partitions';
SELECT pg_catalog.pg_extension_config_dump('keanon.spent_pids', '');
REVOKE ALL ON keanon.spent_pids FROM PUBLIC;

-- Take from a new internal table every privilege of another role, and from
-- a new view every one but SELECT: the schema's default privileges (ALTER
-- DEFAULT PRIVILEGES ... GRANT ... ON TABLES) would give readers of the
-- view the tables of true values too, and writers a view through which
-- they could write the rows table
CREATE FUNCTION keanon.private_table_body(obj regclass, readable boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $private_table$
DECLARE
	g record;
BEGIN
	FOR g IN SELECT DISTINCT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
								  ELSE quote_ident(r.rolname) END AS grantee, a.privilege_type
			 FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
			 LEFT JOIN pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee
			 WHERE c.oid OPERATOR(pg_catalog.=) obj AND a.grantee OPERATOR(pg_catalog.<>) c.relowner
			   AND NOT (readable AND a.privilege_type OPERATOR(pg_catalog.=) 'SELECT') LOOP
		EXECUTE format('REVOKE %s ON TABLE %s FROM %s CASCADE', g.privilege_type, obj, g.grantee);
	END LOOP;
END;
$private_table$;
REVOKE ALL ON FUNCTION keanon.private_table_body(regclass, boolean) FROM PUBLIC;
COMMENT ON FUNCTION keanon.private_table_body(regclass, boolean) IS
'the work of keanon.private_table, called by it alone (it raises the errors again without PL/pgSQL''s context)';
CREATE FUNCTION keanon.private_table(obj regclass, readable boolean DEFAULT false)
RETURNS void
LANGUAGE C VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'keanon_entry';
COMMENT ON FUNCTION keanon.private_table(regclass, boolean) IS
'part of keanon.watch: take from a new internal table every privilege granted to a role other than its owner (by the schema''s default privileges), so that the owner alone reads what it holds; with readable (a published view), every privilege but SELECT, so that no role writes through it';

-- the view orders its rows by partition and slot
CREATE OR REPLACE FUNCTION keanon.watch_objects(tab regclass, sensitive name, quasi_identifiers name[],
	keys name[], k integer, e numeric, mode text, rows_name text, parts_name text, idx_name text,
	release_name text, pending_name text, view_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on
AS $watch_objects$
DECLARE
	nsp name := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				 WHERE c.oid = tab);
	s_type text := (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
					WHERE a.attrelid = tab AND a.attname = sensitive);
	cols name[];
	q name;
	collist text;
	qilist text;
	persistence text;
	owner_name name;
BEGIN
	-- an unlogged table's internal tables are unlogged too: a crash empties all
	persistence := CASE (SELECT relpersistence FROM pg_class WHERE oid = tab)
		WHEN 'u' THEN 'UNLOGGED ' ELSE '' END;
	owner_name := (SELECT r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE c.oid = tab);

	-- the internal rows: link, quasi-identifiers, true and published values
	cols := keys;
	FOREACH q IN ARRAY quasi_identifiers || sensitive LOOP
		IF NOT q = ANY (cols) THEN
			cols := cols || q;
		END IF;
	END LOOP;
	SELECT string_agg(format('%I %s', c, (SELECT format_type(a.atttypid, a.atttypmod)
		FROM pg_attribute a WHERE a.attrelid = tab AND a.attname = c)), ', ' ORDER BY o)
	INTO collist FROM unnest(cols) WITH ORDINALITY u(c, o);
	-- its indexes but keanon's are built once it is filled; room on each
	-- page lets a change of a published value alone be a HOT update
	EXECUTE format('CREATE %sTABLE %I.%I (%s, keanon_pub %s, keanon_pid bigint, keanon_slot integer, '
				   'keanon_arrival bigint NOT NULL) WITH (fillfactor = 80)',
				   persistence, nsp, rows_name, collist, s_type);
	EXECUTE format('COMMENT ON TABLE %I.%I IS %L', nsp, rows_name,
				   format('keanon: rows of %s with true and published %I values; private, never grant it', tab, sensitive));
	EXECUTE format('CREATE %sTABLE %I.%I (keanon_pid bigint PRIMARY KEY, lo %s NOT NULL, '
				   'lo_last_only boolean NOT NULL, hi %s NOT NULL, hi_split boolean NOT NULL, '
				   'n bigint NOT NULL, vals %s[] NOT NULL, cnts bigint[] NOT NULL, lo_slot integer)',
				   persistence, nsp, parts_name, s_type, s_type, s_type);
	EXECUTE format('CREATE INDEX ON %I.%I (hi)', nsp, parts_name);
	EXECUTE format('COMMENT ON TABLE %I.%I IS %L', nsp, parts_name,
				   format('keanon: partitions of %s with their values and counts', tab));

	EXECUTE format('CREATE INDEX %I ON %I.%I USING keanon (%I) WITH (k = %s, e = %L)',
				   idx_name, nsp, rows_name, sensitive, k, e::text);

	SELECT string_agg(format('%I', c), ', ' ORDER BY o) INTO qilist
	FROM unnest(quasi_identifiers) WITH ORDINALITY u(c, o);
	IF mode = 'release' THEN
		-- the last release, kept apart from the rows that keep changing: each
		-- row's key, quasi-identifiers and true value as released, its
		-- published value and partition, and the release it joined in
		EXECUTE format('CREATE %sTABLE %I.%I AS SELECT %s, keanon_pub, keanon_pid, '
					   '0::bigint AS keanon_since FROM %I.%I WITH NO DATA', persistence, nsp, release_name,
					   (SELECT string_agg(format('%I', c), ', ' ORDER BY o) FROM unnest(cols) WITH ORDINALITY u(c, o)),
					   nsp, rows_name);
		EXECUTE format('COMMENT ON TABLE %I.%I IS %L', nsp, release_name,
					   format('keanon: the last release of %s with true and published %I values; private, never grant it', tab, sensitive));
		EXECUTE format('CREATE VIEW %I.%I WITH (security_barrier) AS '
					   'SELECT %s, keanon_pub AS %I, keanon_pid FROM %I.%I',
					   nsp, view_name, qilist, sensitive, nsp, release_name);
	ELSE
		-- in an order of partitions and slots alone (a random order within
		-- each partition), never of the rows' physical places, which tell
		-- what a change rewrote; the slots' order is no index's, so that
		-- no plan reads a partition's rows one by one in it (the buffers a
		-- LIMIT or a cursor read told apart rows on pages of their own)
		EXECUTE format('CREATE VIEW %I.%I WITH (security_barrier) AS '
					   'SELECT %s, keanon_pub AS %I, keanon_pid FROM %I.%I WHERE keanon_pid IS NOT NULL '
					   'ORDER BY keanon_pid, keanon_slot OPERATOR(pg_catalog.+) 0',
					   nsp, view_name, qilist, sensitive, nsp, rows_name);
	END IF;
	EXECUTE format('COMMENT ON VIEW %I.%I IS %L', nsp, view_name,
				   format('keanon: %s (k = %s, e = %s) with %I permuted within each partition keanon_pid', tab, k, e, sensitive));

	IF mode = 'deferred' THEN
		-- the keys of rows changed and not yet applied; written by keanon's
		-- row trigger as whoever writes the table, read by keanon.flush
		EXECUTE format('CREATE %sTABLE %I.%I (%s, keanon_at timestamptz NOT NULL) USING heap',
					   persistence, nsp, pending_name,
					   (SELECT string_agg(format('%I %s', c, (SELECT format_type(a.atttypid, a.atttypmod)
							FROM pg_attribute a WHERE a.attrelid = tab AND a.attname = c)), ', ' ORDER BY o)
						FROM unnest(keys) WITH ORDINALITY u(c, o)));
		EXECUTE format('COMMENT ON TABLE %I.%I IS %L', nsp, pending_name,
					   format('keanon: keys of the rows of %s changed and not yet published; private, never grant it', tab));
	END IF;

	-- a member of the owning role makes the objects; the owner holds them
	IF current_user <> owner_name THEN
		EXECUTE format('ALTER TABLE %I.%I OWNER TO %I', nsp, rows_name, owner_name);
		EXECUTE format('ALTER TABLE %I.%I OWNER TO %I', nsp, parts_name, owner_name);
		EXECUTE format('ALTER VIEW %I.%I OWNER TO %I', nsp, view_name, owner_name);
		IF mode = 'release' THEN
			EXECUTE format('ALTER TABLE %I.%I OWNER TO %I', nsp, release_name, owner_name);
		END IF;
		IF mode = 'deferred' THEN
			EXECUTE format('ALTER TABLE %I.%I OWNER TO %I', nsp, pending_name, owner_name);
		END IF;
	END IF;
	-- the internal tables are the owner's alone, whatever the schema grants,
	-- and the view is for reading
	PERFORM keanon.private_table(format('%I.%I', nsp, view_name)::regclass, readable => true);
	PERFORM keanon.private_table(format('%I.%I', nsp, rows_name)::regclass);
	PERFORM keanon.private_table(format('%I.%I', nsp, parts_name)::regclass);
	IF mode = 'release' THEN
		PERFORM keanon.private_table(format('%I.%I', nsp, release_name)::regclass);
	END IF;
	IF mode = 'deferred' THEN
		PERFORM keanon.private_table(format('%I.%I', nsp, pending_name)::regclass);
	END IF;
END;
$watch_objects$;
COMMENT ON FUNCTION keanon.watch_objects(regclass, name, name[], name[], integer, numeric, text, text, text, text, text, text, text) IS
'part of keanon.watch: make a new watch''s rows and partitions tables, keanon index, view, release table or pending list, owned by the table''s owner';

DO $views$
DECLARE
	w record;
BEGIN
	FOR w IN SELECT wt.relid, wt.view, wt.rows_table, wt.sensitive, wt.quasi_identifiers, c.reloptions
			 FROM keanon.watches wt JOIN pg_catalog.pg_class c ON c.oid = wt.view
			 WHERE wt.mode IN ('live', 'deferred') AND wt.generalize IS NULL
	LOOP
		BEGIN
			-- the view is the owner's, not the extension's: an update may
			-- replace only its own objects, so it holds the view for the
			-- moment; the owner's options on it are kept
			EXECUTE format('ALTER EXTENSION keanon ADD VIEW %s', w.view);
			EXECUTE format('CREATE OR REPLACE VIEW %s WITH (%s) AS '
						   'SELECT %s, keanon_pub AS %I, keanon_pid FROM %s WHERE keanon_pid IS NOT NULL '
						   'ORDER BY keanon_pid, keanon_slot OPERATOR(pg_catalog.+) 0',
						   w.view,
						   pg_catalog.array_to_string(pg_catalog.array_append(
							   (SELECT pg_catalog.array_agg(o) FROM pg_catalog.unnest(w.reloptions) o
								WHERE o NOT LIKE 'security\_barrier=%'), 'security_barrier=true'), ', '),
						   (SELECT string_agg(format('%I', c), ', ' ORDER BY o)
							FROM unnest(w.quasi_identifiers) WITH ORDINALITY u(c, o)),
						   w.sensitive, w.rows_table);
			EXECUTE format('ALTER EXTENSION keanon DROP VIEW %s', w.view);
		EXCEPTION WHEN OTHERS THEN
			-- a view its owner redefined is the owner's to redefine
			RAISE WARNING 'keanon: the view % of %''s watch was left as it is: %', w.view, w.relid, SQLERRM
				USING HINT = 'Give it ORDER BY keanon_pid, keanon_slot + 0, so that no plan returns its rows in their physical order, nor reads them one by one in their slots'' order.';
		END;
	END LOOP;
END;
$views$;

-- A watch made before 0.2.0 may hold internal tables, or a view, that the
-- schema's default privileges granted to other roles: say which
DO $grants$
DECLARE
	t record;
BEGIN
	FOR t IN SELECT c.oid::pg_catalog.regclass AS rel, w.relid, c.oid OPERATOR(pg_catalog.=) w.view AS is_view
			 FROM keanon.watches w
			 JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) ANY (ARRAY[w.rows_table, w.parts_table,
				 w.release_table, w.pending_table, w.qi_hierarchy, w.qi_groups, w.qi_members, w.view]::pg_catalog.oid[])
			 WHERE EXISTS (SELECT 1 FROM pg_catalog.aclexplode(c.relacl) a
						   WHERE a.grantee OPERATOR(pg_catalog.<>) c.relowner
							 AND (c.oid OPERATOR(pg_catalog.<>) w.view
								  OR a.privilege_type OPERATOR(pg_catalog.<>) 'SELECT'))
			 ORDER BY 1
	LOOP
		IF t.is_view THEN
			RAISE WARNING 'keanon: the view % of %''s watch grants more than SELECT to roles other than its owner', t.rel, t.relid
				USING HINT = format('Writes through it would reach the rows table: SELECT keanon.private_table(%L, readable => true) leaves SELECT alone.',
									t.rel::text);
		ELSE
			RAISE WARNING 'keanon: % of %''s watch grants privileges to roles other than its owner', t.rel, t.relid
				USING HINT = format('It holds true values: unless the grants were meant, SELECT keanon.private_table(%L) takes them all.',
									t.rel::text);
		END IF;
	END LOOP;
END;
$grants$;

-- the entry points whose work is PL/pgSQL raise its errors without its context:
-- each keeps its oid, grants and dependent objects, its work a new function
CREATE FUNCTION keanon.unwatch_body(tab regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET row_security = on
AS $unwatch$
BEGIN
	IF NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = tab), 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', tab USING ERRCODE = 'insufficient_privilege';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM keanon.watches WHERE relid = tab) THEN
		RAISE EXCEPTION 'table % is not watched', tab USING ERRCODE = 'undefined_object';
	END IF;
	PERFORM keanon.end_watch(tab);
END;
$unwatch$;
REVOKE ALL ON FUNCTION keanon.unwatch_body(regclass) FROM PUBLIC;
COMMENT ON FUNCTION keanon.unwatch_body(regclass) IS
'the work of keanon.unwatch, called by it alone (it raises the errors again without PL/pgSQL''s context)';
CREATE OR REPLACE FUNCTION keanon.unwatch(tab regclass)
RETURNS void
LANGUAGE C VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'keanon_entry';
COMMENT ON FUNCTION keanon.unwatch(regclass) IS
'stop watching a table: drops its published view, triggers and keanon''s internal tables';

CREATE FUNCTION keanon.anonymize_body(
	tab regclass,
	quasi_identifiers name[],
	sensitive name,
	hierarchies jsonb,
	k integer,
	l integer DEFAULT NULL,
	c numeric DEFAULT NULL,
	t numeric DEFAULT NULL,
	scoring text DEFAULT 'basic',
	priorities jsonb DEFAULT NULL,
	target name DEFAULT NULL,
	method text DEFAULT 'privacyfrost2',
	max_suppressed integer DEFAULT 0,
	extension boolean DEFAULT true,
	partial boolean DEFAULT false,
	presample integer DEFAULT NULL,
	OUT target_table regclass, OUT levels jsonb, OUT score float8, OUT smallest_group integer,
	OUT least_l integer, OUT least_recursive_l integer, OUT largest_emd float8,
	OUT suppressed integer, OUT groups integer, OUT candidates_checked bigint,
	OUT rollups bigint, OUT refined_groups integer, OUT rows_written bigint, OUT search_ms float8,
	OUT presampled_out integer)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $anonymize$
DECLARE
	nsp name;
	rel name;
	q name;
	typ regtype;
	hrel regclass;
	hiers oid[] := '{}';
	outs text[] := '{}';
	prios float8[] := '{}';
	cols text := '';
	has_null boolean;
	n bigint;
	r record;
BEGIN
	IF tab IS NULL OR quasi_identifiers IS NULL OR sensitive IS NULL OR k IS NULL THEN
		RAISE EXCEPTION 'keanon.anonymize needs a table, quasi-identifiers, a sensitive column and k'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	SELECT n2.nspname, c2.relname INTO nsp, rel FROM pg_class c2 JOIN pg_namespace n2 ON n2.oid = c2.relnamespace
	WHERE c2.oid = tab;
	IF NOT has_table_privilege(tab, 'SELECT') THEN
		RAISE EXCEPTION 'permission denied for table %', tab USING ERRCODE = 'insufficient_privilege';
	END IF;
	IF cardinality(quasi_identifiers) IS DISTINCT FROM (SELECT count(DISTINCT x) FROM unnest(quasi_identifiers) x)
	   OR cardinality(quasi_identifiers) NOT BETWEEN 1 AND 32 THEN
		RAISE EXCEPTION 'between 1 and 32 distinct quasi-identifiers are needed' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF sensitive = ANY (quasi_identifiers) THEN
		RAISE EXCEPTION 'the sensitive column "%" cannot also be a quasi-identifier', sensitive
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF k < 1 THEN
		RAISE EXCEPTION 'k must be at least 1' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF l IS NOT NULL AND l < 1 OR c IS NOT NULL AND (l IS NULL OR c <= 0) THEN
		RAISE EXCEPTION 'l must be at least 1, and c (recursive (c,l)-diversity) positive and given with l'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF t IS NOT NULL AND (t < 0 OR t > 1) THEN
		RAISE EXCEPTION 't must be between 0 and 1' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF scoring IS NULL OR scoring NOT IN ('basic', 'eta', 'log') THEN
		RAISE EXCEPTION 'unknown scoring "%"', scoring USING ERRCODE = 'invalid_parameter_value',
			HINT = 'Use scoring => ''basic'', ''eta'' or ''log''.';
	END IF;
	IF method IS NULL OR method NOT IN ('privacyfrost2', 'optimal') THEN
		RAISE EXCEPTION 'unknown method "%"', method USING ERRCODE = 'invalid_parameter_value',
			HINT = 'Use method => ''privacyfrost2'' or ''optimal''.';
	END IF;
	IF presample IS NOT NULL AND presample < 1 THEN
		RAISE EXCEPTION 'presample must be at least 1' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF max_suppressed IS NULL OR max_suppressed < 0 THEN
		RAISE EXCEPTION 'max_suppressed must be at least 0' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF hierarchies IS NOT NULL AND jsonb_typeof(hierarchies) <> 'object'
	   OR priorities IS NOT NULL AND jsonb_typeof(priorities) <> 'object' THEN
		RAISE EXCEPTION 'hierarchies and priorities must be JSON objects keyed by quasi-identifier'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	FOR q IN SELECT x FROM jsonb_object_keys(coalesce(hierarchies, '{}') || coalesce(priorities, '{}')) x LOOP
		IF NOT q = ANY (quasi_identifiers) THEN
			RAISE EXCEPTION '"%" is not a quasi-identifier', q USING ERRCODE = 'invalid_parameter_value';
		END IF;
	END LOOP;
	FOREACH q IN ARRAY quasi_identifiers || sensitive LOOP
		typ := (SELECT a.atttypid::regtype FROM pg_attribute a
				WHERE a.attrelid = tab AND a.attname = q AND a.attnum > 0 AND NOT a.attisdropped);
		IF typ IS NULL THEN
			RAISE EXCEPTION 'column "%" of table % does not exist', q, tab USING ERRCODE = 'undefined_column';
		END IF;
		CONTINUE WHEN q = sensitive;
		IF hierarchies ? q THEN
			hrel := keanon.hierarchy_table(tab, hierarchies ->> q);
			IF hrel IS NULL THEN
				RAISE EXCEPTION 'hierarchy "%" of column "%" does not exist', hierarchies ->> q, q
					USING ERRCODE = 'undefined_table';
			END IF;
			PERFORM keanon.check_hierarchy(tab, q, hrel, false);
			hiers := hiers || hrel::oid;
			outs := outs || 'pg_catalog.text'::text;
		ELSIF typ IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype, 'numeric'::regtype,
					  'real'::regtype, 'double precision'::regtype, 'date'::regtype) THEN
			hiers := hiers || 0::oid;
			outs := outs || keanon.qi_range_type(typ);
		ELSE
			RAISE EXCEPTION 'quasi-identifier "%" of type % needs a hierarchy', q, typ
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		IF priorities ? q AND (jsonb_typeof(priorities -> q) <> 'number' OR (priorities ->> q)::float8 <= 0) THEN
			RAISE EXCEPTION 'the priority of "%" must be a positive number', q USING ERRCODE = 'invalid_parameter_value';
		END IF;
		prios := prios || coalesce((priorities ->> q)::float8, 1);
		cols := cols || format('%I %s, ', q, outs[cardinality(outs)]);
	END LOOP;
	target := coalesce(target, left(rel, 51) || '_generalized');
	IF to_regclass(format('%I.%I', nsp, target)) IS NOT NULL THEN
		RAISE EXCEPTION 'relation "%" already exists in schema "%"', target, nsp USING ERRCODE = 'duplicate_table',
			HINT = 'Name another with target => ''...''.';
	END IF;
	EXECUTE format('CREATE TABLE %I.%I (%s%I %s)', nsp, target, cols, sensitive,
				   (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
					WHERE a.attrelid = tab AND a.attname = sensitive));
	EXECUTE format('COMMENT ON TABLE %I.%I IS %L', nsp, target,
				   format('keanon: %s anonymized by full-domain generalization (k = %s)', tab, k));
	target_table := format('%I.%I', nsp, target)::regclass;
	r := keanon.anonymize_core(tab, quasi_identifiers, sensitive, hiers, k, l, c::float8, t::float8, scoring,
							   prios, target_table::text, method, max_suppressed, extension, partial, outs,
							   presample);
	SELECT jsonb_object_agg(qi, lv) INTO levels FROM unnest(quasi_identifiers, r.levels) u(qi, lv);
	score := r.score;
	smallest_group := r.smallest_group;
	least_l := r.least_l;
	least_recursive_l := r.least_recursive_l;
	largest_emd := r.largest_emd;
	suppressed := r.suppressed;
	groups := r.groups;
	candidates_checked := r.candidates_checked;
	rollups := r.rollups;
	refined_groups := r.refined_groups;
	rows_written := r.rows_written;
	search_ms := r.search_ms;
	presampled_out := r.presampled_out;
END;
$anonymize$;
REVOKE ALL ON FUNCTION keanon.anonymize_body(regclass, name[], name, jsonb, integer, integer, numeric, numeric, text, jsonb, name, text, integer, boolean, boolean, integer) FROM PUBLIC;
COMMENT ON FUNCTION keanon.anonymize_body(regclass, name[], name, jsonb, integer, integer, numeric, numeric, text, jsonb, name, text, integer, boolean, boolean, integer) IS
'the work of keanon.anonymize, called by it alone (it raises the errors again without PL/pgSQL''s context)';
CREATE OR REPLACE FUNCTION keanon.anonymize(
	tab regclass,
	quasi_identifiers name[],
	sensitive name,
	hierarchies jsonb,
	k integer,
	l integer DEFAULT NULL,
	c numeric DEFAULT NULL,
	t numeric DEFAULT NULL,
	scoring text DEFAULT 'basic',
	priorities jsonb DEFAULT NULL,
	target name DEFAULT NULL,
	method text DEFAULT 'privacyfrost2',
	max_suppressed integer DEFAULT 0,
	extension boolean DEFAULT true,
	partial boolean DEFAULT false,
	presample integer DEFAULT NULL,
	OUT target_table regclass, OUT levels jsonb, OUT score float8, OUT smallest_group integer,
	OUT least_l integer, OUT least_recursive_l integer, OUT largest_emd float8,
	OUT suppressed integer, OUT groups integer, OUT candidates_checked bigint,
	OUT rollups bigint, OUT refined_groups integer, OUT rows_written bigint, OUT search_ms float8,
	OUT presampled_out integer)
LANGUAGE C VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'keanon_entry';
COMMENT ON FUNCTION keanon.anonymize(regclass, name[], name, jsonb, integer, integer, numeric, numeric, text, jsonb, name, text, integer, boolean, boolean, integer) IS
'write a one-off anonymous copy of a table (target, default <table>_generalized, owned by the caller): each quasi-identifier generalized to one level of its hierarchy (hierarchies: {column: table of (value, parent)}; a numeric column without one: intervals of doubling width) so that every group has k rows, l distinct sensitive values (or recursive (c,l)-diversity when c is given) and an EMD to the whole table of at most t, chosen by PrivacyFrost2''s scoring search (scoring basic, eta or log; priorities {column: weight}) or, with method => ''optimal'', the best score over the whole lattice; rows of groups that fail are suppressed only up to max_suppressed; presample => k'' leaves out, before the search, the rows of groups of fewer than k'' rows two levels below each hierarchy''s top (PrivacyFrost2''s pre-sampling); returns the levels, score, measures and the search''s cost';

CREATE FUNCTION keanon.k_anonymity_body(tab regclass, quasi_identifiers name[])
RETURNS bigint
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $k_anonymity$
DECLARE
	k bigint;
BEGIN
	IF quasi_identifiers IS NULL OR cardinality(quasi_identifiers) = 0 THEN
		RAISE EXCEPTION 'at least one quasi-identifier is needed' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	EXECUTE format('SELECT min(c) FROM (SELECT count(*) AS c FROM %s GROUP BY %s) g', tab,
				   (SELECT string_agg(format('%I', x), ', ' ORDER BY o) FROM unnest(quasi_identifiers) WITH ORDINALITY u(x, o)))
	INTO k;
	RETURN k;
END;
$k_anonymity$;
REVOKE ALL ON FUNCTION keanon.k_anonymity_body(regclass, name[]) FROM PUBLIC;
COMMENT ON FUNCTION keanon.k_anonymity_body(regclass, name[]) IS
'the work of keanon.k_anonymity, called by it alone (it raises the errors again without PL/pgSQL''s context)';
CREATE OR REPLACE FUNCTION keanon.k_anonymity(tab regclass, quasi_identifiers name[])
RETURNS bigint
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'keanon_entry';
COMMENT ON FUNCTION keanon.k_anonymity(regclass, name[]) IS
'the size of the smallest group of rows sharing their quasi-identifiers: the k for which the table is k-anonymous (NULL for an empty table); as the caller';

-- generalized numeric quasi-identifiers: coordinates without the cast's
-- error, published ranges that hold every value (the type's largest
-- included, real and double precision rounded outward)
CREATE OR REPLACE FUNCTION keanon.qi_coordinate(typ regtype, col text)
RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'keanon_qi_coordinate';
COMMENT ON FUNCTION keanon.qi_coordinate(regtype, text) IS
'part of generalization: the SQL expression of a numeric quasi-identifier''s coordinate (a date: days from 2000-01-01; a timestamp: seconds of its epoch; a number: its double, a numeric past a double''s range infinite and below it zero, without the cast''s error)';

-- The published range of a numeric quasi-identifier from lo to hi
CREATE FUNCTION keanon.qi_range(typ regtype, lo text, hi text)
RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'keanon_qi_range';
COMMENT ON FUNCTION keanon.qi_range(regtype, text, text) IS
'part of generalization: the SQL expression of the range a group publishes for values lo to hi (expressions of the column''s type), both included: a discrete range holding the type''s largest value has no upper bound; real and double precision bounds are rounded outward at 17 significant digits from their exact values; NULL for a type not published as a range';

CREATE FUNCTION keanon.numeric_coordinate(numeric)
RETURNS float8
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'keanon_numeric_coordinate';
COMMENT ON FUNCTION keanon.numeric_coordinate(numeric) IS
'part of generalization: a numeric quasi-identifier''s coordinate, the nearest double (infinite past a double''s range, zero below it, never the cast''s error, which would quote the value)';

CREATE FUNCTION keanon.float8_outward(x float8, up boolean)
RETURNS numeric
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'keanon_float8_outward';
COMMENT ON FUNCTION keanon.float8_outward(float8, boolean) IS
'part of generalization: x rounded at 17 significant digits from its exact binary value, down (up false) or up: a bound of a published range that holds x';

-- The update's own statements on a watch's internal tables run as the
-- table's owner, sandboxed: the tables, their triggers and indexes, and
-- the casts and checks of the watched columns' types are the owner's, and
-- run as the superuser who updates they would make the owner one.  This
-- function is the update's alone: it is dropped at the script's end.
CREATE FUNCTION keanon.update_as_owner(tab regclass, stmt text)
RETURNS bigint
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'keanon_update_as_owner';
REVOKE ALL ON FUNCTION keanon.update_as_owner(regclass, text) FROM PUBLIC;

-- the groups of earlier generalized watches publish their real and double
-- precision ranges again, outward (numeric casts had kept 6 or 15 digits)
DO $republish_float_ranges$
DECLARE
	w record;
	q name;
	typ regtype;
	keyeq text;
	src text;
BEGIN
	-- the relations' names printed qualified, for the owner's search path
	PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
	FOR w IN SELECT x.relid, x.quasi_identifiers, x.key_columns, x.qi_groups, x.qi_members, x.rows_table, x.release_table
			 FROM keanon.watches x WHERE x.qi_groups IS NOT NULL LOOP
		IF w.qi_members IS NULL THEN
			src := format('%s r CROSS JOIN LATERAL (SELECT r.keanon_group) m', w.release_table);
		ELSE
			SELECT string_agg(keanon.key_equal(w.relid, c, 'm', 'r'), ' AND ' ORDER BY o)
			INTO keyeq FROM unnest(w.key_columns) WITH ORDINALITY u(c, o);
			src := format('%s m JOIN %s r ON %s', w.qi_members, w.rows_table, keyeq);
		END IF;
		FOREACH q IN ARRAY w.quasi_identifiers LOOP
			typ := (SELECT a.atttypid::regtype FROM pg_attribute a WHERE a.attrelid = w.relid AND a.attname = q);
			CONTINUE WHEN typ NOT IN ('real'::regtype, 'double precision'::regtype);
			PERFORM keanon.update_as_owner(w.relid,
				format('UPDATE %1$s g SET %2$I = s.r FROM (SELECT m.keanon_group, %4$s AS r FROM %3$s GROUP BY 1) s '
					   'WHERE g.keanon_group OPERATOR(pg_catalog.=) s.keanon_group',
					   w.qi_groups, q, src,
					   keanon.qi_range(typ, format('pg_catalog.min(r.%I)', q), format('pg_catalog.max(r.%I)', q))));
		END LOOP;
	END LOOP;
END;
$republish_float_ranges$;

-- A generalized quasi-identifier is compared with its hierarchy's leaves as
-- text: printed alike in every session (floating-point values exact, dates
-- and times in ISO style, in UTC), and a watch keeps its leaves so printed
-- A categorical quasi-identifier's value as text, as its hierarchy's
-- leaves are kept: under fixed settings, alike in every session
CREATE FUNCTION keanon.leaf_text(anyelement)
RETURNS text
LANGUAGE C STABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'keanon_leaf_text';
COMMENT ON FUNCTION keanon.leaf_text(anyelement) IS
'part of generalization: a categorical quasi-identifier''s value as its hierarchy''s leaves are kept and writers'' values are matched with them, its ::text cast with DateStyle ISO, IntervalStyle postgres, TimeZone UTC and floating-point values exact, whatever the session''s settings (a string as it is)';

-- The SQL of a leaf's kept text from expr, the value column of hierarchy
-- hrel of column q of tab: its value, or its text read as a value of the
-- column under the session's settings
CREATE FUNCTION keanon.leaf_sql(tab regclass, q name, hrel regclass, expr text)
RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN (SELECT CASE WHEN t.typcategory = 'S' THEN format('(%s)::text', expr)
	WHEN v.atttypid = a.atttypid THEN format('keanon.leaf_text(%s)', expr)
	ELSE format('keanon.leaf_text((%s)::text::%s)', expr, format_type(a.atttypid, a.atttypmod)) END
	FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
	LEFT JOIN pg_attribute v ON v.attrelid = hrel AND v.attname = 'value' AND v.attnum > 0 AND NOT v.attisdropped
	WHERE a.attrelid = tab AND a.attname = q AND a.attnum > 0 AND NOT a.attisdropped);
COMMENT ON FUNCTION keanon.leaf_sql(regclass, name, regclass, text) IS
'part of generalization: the SQL expression of the text kept for a leaf of column q''s hierarchy hrel from expr, its value column: the text itself for a string column, else keanon.leaf_text of the value, read as a value of the column''s type from its text in the watching session where the hierarchy''s values are of another type';

CREATE OR REPLACE FUNCTION keanon.check_hierarchy(tab regclass, q name, hrel regclass, stored_values boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 1
AS $check_hierarchy$
DECLARE
	nroots bigint;
	nnodes bigint;
	nreached bigint;
	bad text;
	leaf text;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = hrel AND a.attname = 'value' AND NOT a.attisdropped)
	   OR NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = hrel AND a.attname = 'parent' AND NOT a.attisdropped) THEN
		RAISE EXCEPTION 'hierarchy % of column "%" needs columns value and parent', hrel, q
			USING ERRCODE = 'undefined_column';
	END IF;
	IF NOT has_table_privilege(hrel, 'SELECT') THEN
		RAISE EXCEPTION 'permission denied for hierarchy %', hrel USING ERRCODE = 'insufficient_privilege';
	END IF;
	EXECUTE format('SELECT count(*) FILTER (WHERE parent IS NULL), count(*), '
				   '(SELECT count(*) FROM (SELECT value::text FROM %s WHERE value IS NOT NULL GROUP BY 1 HAVING count(*) > 1) d) '
				   'FROM %s', hrel, hrel)
		INTO nroots, nnodes, nreached;
	IF nreached > 0 THEN
		RAISE EXCEPTION 'hierarchy % of column "%" lists a value twice', hrel, q
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF nroots <> 1 THEN
		RAISE EXCEPTION 'hierarchy % of column "%" must have exactly one root', hrel, q
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('It has %s values whose parent is NULL.', nroots);
	END IF;
	EXECUTE format('WITH RECURSIVE t AS (SELECT value::text AS v FROM %s WHERE parent IS NULL '
				   'UNION SELECT h.value::text FROM %s h JOIN t ON h.parent::text = t.v) '
				   'SELECT count(*) FROM t', hrel, hrel) INTO nreached;
	IF nreached <> nnodes THEN
		RAISE EXCEPTION 'hierarchy % of column "%" is not one tree', hrel, q
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('%s of its %s values cannot be reached from its root: a cycle, a missing parent or a NULL value.',
								  nnodes - nreached, nnodes);
	END IF;
	IF NOT stored_values THEN
		RETURN;					-- the caller checks each value as it reads it
	END IF;
	-- a watch keeps each leaf's text as keanon.leaf_text prints its value:
	-- every leaf must be a value of the column, and no two nodes one text
	-- at any depth: a domain's base type, an array's element, a range's
	-- subtype, a composite's fields
	IF EXISTS (WITH RECURSIVE p(typ) AS (
				   SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = tab AND a.attname = q
				   UNION
				   SELECT c.sub FROM p JOIN pg_type t ON t.oid = p.typ
				   CROSS JOIN LATERAL (SELECT t.typbasetype WHERE t.typtype = 'd'
									   UNION ALL SELECT t.typelem WHERE t.typelem <> 0
									   UNION ALL SELECT r.rngsubtype FROM pg_range r
										   WHERE t.oid IN (r.rngtypid, r.rngmultitypid)
									   UNION ALL SELECT b.atttypid FROM pg_attribute b
										   WHERE b.attrelid = t.typrelid AND b.attnum > 0
											 AND NOT b.attisdropped) c(sub))
			   SELECT 1 FROM p JOIN pg_type t ON t.oid = p.typ
			   WHERE t.oid = 'money'::regtype OR (t.typnamespace = 'pg_catalog'::regnamespace
					 AND t.typname IN ('regclass', 'regproc', 'regprocedure', 'regoper', 'regoperator', 'regtype',
									   'regconfig', 'regdictionary', 'regnamespace', 'regrole', 'regcollation'))) THEN
		RAISE EXCEPTION 'column "%" cannot be generalized by a hierarchy', q
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'The text of its values depends on session settings (lc_monetary, search_path).';
	END IF;
	leaf := keanon.leaf_sql(tab, q, hrel, 'h.value');
	BEGIN
		EXECUTE format('SELECT count(*) - count(DISTINCT x) FROM (SELECT %2$s AS x FROM %1$s h WHERE NOT EXISTS '
					   '(SELECT 1 FROM %1$s c WHERE c.parent::text = h.value::text) UNION ALL SELECT h.value::text '
					   'FROM %1$s h WHERE EXISTS (SELECT 1 FROM %1$s c WHERE c.parent::text = h.value::text)) n',
					   hrel, leaf) INTO nreached;
	EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
		RAISE EXCEPTION 'a leaf of hierarchy % is not a value of column "%"', hrel, q
			USING ERRCODE = 'invalid_parameter_value', DETAIL = SQLERRM,
				  HINT = 'Each leaf of a hierarchy is matched with a value the column holds.';
	END;
	IF nreached > 0 THEN
		RAISE EXCEPTION 'hierarchy % of column "%" lists a value twice', hrel, q
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'Two of its leaves are one value of the column, or a leaf is written like another node.';
	END IF;
	EXECUTE format('SELECT x::text FROM (SELECT DISTINCT %I AS x FROM %s) t '
				   'WHERE x IS NOT NULL AND NOT EXISTS (SELECT 1 FROM %s h WHERE %s = keanon.leaf_text(t.x) '
				   'AND NOT EXISTS (SELECT 1 FROM %s c WHERE c.parent::text = h.value::text)) LIMIT 1',
				   q, tab, hrel, leaf, hrel) INTO bad;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'a value of column "%" is not a leaf of hierarchy %', q, hrel
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Every stored value must be a leaf of its column''s hierarchy.';
	END IF;
END;
$check_hierarchy$;
COMMENT ON FUNCTION keanon.check_hierarchy(regclass, name, regclass, boolean) IS
'part of keanon.watch and keanon.anonymize: refuse a hierarchy of column q that lacks columns value and parent, that the caller may not read, that lists a value twice, has other than one root or values its root does not reach, or (stored_values) that lacks a stored value as a leaf';

-- A 0.1.0 watch kept the leaves of a hierarchy as its session printed
-- them: those of a column that is not a string are kept as
-- keanon.leaf_text prints them from here on, read under the settings of
-- the session that updates, and its groups that publish such a leaf
-- publish its new text.  The rows placed at each leaf tell what the leaf
-- was: read so, a leaf must be its rows' value, or the update stops,
-- asking for the settings the watch was made with.
DO $leaves$
DECLARE
	w record;
	q name;
	i integer;
	leaf text;
	keyeq text;
	n bigint;
	bad bigint;
	hint text := 'Set DateStyle, IntervalStyle and TimeZone as they were when the table was watched and update again, '
		'or call keanon.unwatch on the table, update, and watch it again.';
BEGIN
	-- the relations' names printed qualified, for the owner's search path
	PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
	FOR w IN SELECT x.relid, x.quasi_identifiers, x.qi_ranges, x.qi_hierarchy, x.qi_groups, x.qi_members,
					x.rows_table, x.key_columns
			 FROM keanon.watches x WHERE x.qi_hierarchy IS NOT NULL AND x.qi_groups IS NOT NULL LOOP
		i := 0;
		FOREACH q IN ARRAY w.quasi_identifiers LOOP
			i := i + 1;
			CONTINUE WHEN w.qi_ranges[i] IS NOT NULL OR EXISTS (SELECT 1 FROM pg_attribute a
				JOIN pg_type t ON t.oid = a.atttypid WHERE a.attrelid = w.relid AND a.attname = q
				AND t.typcategory = 'S');
			leaf := keanon.leaf_sql(w.relid, q, w.qi_hierarchy, 'h.value');
			CONTINUE WHEN leaf IS NULL;
			bad := 0;
			BEGIN
				IF w.qi_members IS NOT NULL THEN
					SELECT string_agg(keanon.key_equal(w.relid, c, 'm', 'r'),
									  ' AND ' ORDER BY o)
					INTO keyeq FROM unnest(w.key_columns) WITH ORDINALITY u(c, o);
					bad := keanon.update_as_owner(w.relid,
						format('SELECT count(*) FROM %1$s m JOIN %2$s r ON %3$s JOIN %4$s h ON h.dim = %5$s '
							   'AND h.height = 0 AND h.leaf_lo = m.keanon_x[%5$s] '
							   'WHERE %6$s IS DISTINCT FROM keanon.leaf_text(r.%7$I)',
							   w.qi_members, w.rows_table, keyeq, w.qi_hierarchy, i, leaf, q));
				END IF;
				n := keanon.update_as_owner(w.relid,
					format('SELECT count(*) - count(DISTINCT x) FROM (SELECT CASE WHEN h.height = 0 THEN %3$s '
						   'ELSE h.value END AS x FROM %1$s h WHERE h.dim = %2$s) s',
						   w.qi_hierarchy, i, leaf));
			EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
				RAISE EXCEPTION 'the hierarchy of column "%" of % cannot be read under DateStyle %, TimeZone %', q,
					w.relid::regclass, current_setting('DateStyle'), current_setting('TimeZone')
					USING ERRCODE = 'object_not_in_prerequisite_state', DETAIL = SQLERRM, HINT = hint;
			END;
			IF n > 0 THEN
				RAISE EXCEPTION 'the hierarchy of column "%" of % cannot be read under DateStyle %, TimeZone %', q,
					w.relid::regclass, current_setting('DateStyle'), current_setting('TimeZone')
					USING ERRCODE = 'object_not_in_prerequisite_state',
						  DETAIL = 'So read, two of its leaves are one value, or a leaf is written like another node.',
						  HINT = hint;
			END IF;
			IF bad > 0 THEN
				RAISE EXCEPTION 'the hierarchy of column "%" of % cannot be read under DateStyle %, TimeZone %', q,
					w.relid::regclass, current_setting('DateStyle'), current_setting('TimeZone')
					USING ERRCODE = 'object_not_in_prerequisite_state',
						  DETAIL = format('So read, %s of its rows would be at a leaf of another value.', bad),
						  HINT = hint;
			END IF;
			PERFORM keanon.update_as_owner(w.relid,
				format('UPDATE %1$s g SET %2$I = m.new FROM (SELECT h.value AS old, %3$s AS new FROM %4$s h '
					   'WHERE h.dim = %5$s AND h.height = 0) m WHERE g.%2$I = m.old AND m.new <> m.old',
					   w.qi_groups, q, leaf, w.qi_hierarchy, i));
			n := keanon.update_as_owner(w.relid,
				format('UPDATE %1$s h SET value = %2$s WHERE h.dim = %3$s AND h.height = 0 AND h.value <> %2$s',
					   w.qi_hierarchy, leaf, i));
			IF n > 0 THEN
				RAISE NOTICE 'the hierarchy of column "%" of % now keeps % of its leaves as keanon.leaf_text prints them',
					q, w.relid::regclass, n
					USING DETAIL = format('They were read with DateStyle %s, IntervalStyle %s, TimeZone %s.',
										  current_setting('DateStyle'), current_setting('IntervalStyle'),
										  current_setting('TimeZone'));
			END IF;
		END LOOP;
	END LOOP;
END;
$leaves$;

-- release mode relabels a row whose quasi-identifiers alone changed
COMMENT ON TABLE keanon.releases IS
'one row per release of a release-mode watch: when, how many rows and partitions, the sum-error paid for safety next to the unconstrained optimum, the rows withheld (arrivals no partition could yet add safely) and retained (released rows since deleted or whose value changed, kept as they were; a row whose quasi-identifiers alone changed shows them in place), and the partitions'' value ranges (which the next release must keep whole); written by keanon alone';

-- the arrival counter at each release (release mode relabels by it)
ALTER TABLE keanon.releases ADD COLUMN next_arrival bigint;
COMMENT ON COLUMN keanon.releases.next_arrival IS
'the watch''s arrival counter when the release was made: a row numbered below it was in the table, with its key and value, then (a later release shows such a row''s new quasi-identifiers in place of the version it released, never a row inserted since under a released key)';

-- A generalized view lists its rows by their groups' published tuples
-- first (by the groups' numbers, which follow the order the groups were
-- made in, a reader told apart two groups of one tuple); a 0.1.0 database
-- holds generalized views of live and deferred watches alone
DO $gen_views$
DECLARE
	w record;
BEGIN
	FOR w IN SELECT wt.relid, wt.view, wt.rows_table, wt.qi_members, wt.qi_groups, wt.sensitive,
				 wt.quasi_identifiers, wt.key_columns, wt.generalize, c.reloptions
			 FROM keanon.watches wt JOIN pg_catalog.pg_class c ON c.oid = wt.view
			 WHERE wt.mode IN ('live', 'deferred') AND wt.generalize IS NOT NULL AND wt.qi_members IS NOT NULL
	LOOP
		BEGIN
			EXECUTE format('ALTER EXTENSION keanon ADD VIEW %s', w.view);
			EXECUTE format('CREATE OR REPLACE VIEW %s WITH (%s) AS '
						   'SELECT %s, r.keanon_pub AS %I, r.keanon_pid FROM %s r JOIN %s m ON %s '
						   'JOIN %s g ON g.keanon_group OPERATOR(pg_catalog.=) m.keanon_group '
						   'WHERE r.keanon_pid IS NOT NULL AND g.keanon_n OPERATOR(pg_catalog.>=) %s '
						   'ORDER BY %s, r.keanon_pid, r.keanon_pub',
						   w.view,
						   pg_catalog.array_to_string(pg_catalog.array_append(
							   (SELECT pg_catalog.array_agg(o) FROM pg_catalog.unnest(w.reloptions) o
								WHERE o NOT LIKE 'security\_barrier=%'), 'security_barrier=true'), ', '),
						   (SELECT string_agg(format('g.%I', c), ', ' ORDER BY o)
							FROM unnest(w.quasi_identifiers) WITH ORDINALITY u(c, o)),
						   w.sensitive, w.rows_table, w.qi_members,
						   (SELECT string_agg(keanon.key_equal(w.relid, c, 'r', 'm'),
											  ' AND ' ORDER BY o)
							FROM unnest(w.key_columns) WITH ORDINALITY u(c, o)),
						   w.qi_groups, w.generalize,
						   (SELECT string_agg(format('g.%I', c), ', ' ORDER BY o)
							FROM unnest(w.quasi_identifiers) WITH ORDINALITY u(c, o)));
			EXECUTE format('ALTER EXTENSION keanon DROP VIEW %s', w.view);
		EXCEPTION WHEN OTHERS THEN
			RAISE WARNING 'keanon: the view % of %''s watch was left as it is: %', w.view, w.relid, SQLERRM
				USING HINT = 'Order it by the groups'' published quasi-identifiers, then keanon_pid and the published value.';
		END;
	END LOOP;
END;
$gen_views$;

-- Watches of tables whose primary key has INCLUDE columns, which
-- keanon.watch now refuses (an included column may be NULL): said, and
-- left as they are
DO $include_keys$
DECLARE
	w record;
BEGIN
	FOR w IN SELECT wt.relid FROM keanon.watches wt
			 JOIN pg_catalog.pg_index i ON i.indrelid OPERATOR(pg_catalog.=) wt.relid AND i.indisprimary
			 WHERE i.indnkeyatts OPERATOR(pg_catalog.<>) i.indnatts
	LOOP
		RAISE WARNING 'keanon: the primary key of watched table % has INCLUDE columns, which keanon.watch now refuses', w.relid
			USING DETAIL = 'A row whose included column is NULL is linked by no key: a deferred watch never publishes it, and each release adds it again.',
				  HINT = 'Give the table a primary key without INCLUDE columns, then unwatch it and watch it again.';
	END LOOP;
END;
$include_keys$;

-- Watches keyed by a column of a nondeterministic collation, which
-- keanon.watch now refuses (a key equal under it, written otherwise, left
-- two versions of a row published): said, and left as they are
DO $collation_keys$
DECLARE
	w record;
BEGIN
	FOR w IN SELECT DISTINCT wt.relid FROM keanon.watches wt
			 JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) wt.relid
				AND a.attname OPERATOR(pg_catalog.=) ANY (wt.key_columns)
			 JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) a.atttypid
			 JOIN pg_catalog.pg_collation c ON c.oid OPERATOR(pg_catalog.=) ANY (ARRAY[a.attcollation, t.typcollation])
			 WHERE NOT c.collisdeterministic
	LOOP
		RAISE WARNING 'keanon: the primary key of watched table % has a column of a nondeterministic collation, which keanon.watch now refuses', w.relid
			USING DETAIL = 'An UPDATE that writes a key equal under the collation but spelled otherwise leaves the row published twice.',
				  HINT = 'Give the key column a deterministic collation, then unwatch the table and watch it again.';
	END LOOP;
END;
$collation_keys$;

-- A parallel restore may make a watched table's triggers before its
-- primary key: keanon.on_alter lets a table without one through, and
-- keanon.on_drop refuses the drop of a watched table's primary key instead
CREATE OR REPLACE FUNCTION keanon.on_alter()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET row_security = on
SET jit = off
AS $on_alter$
DECLARE
	w record;
	col name;
	have text;
	want text;
	keys name[];
	cols name[];
	attrs int2vector;
	newname name;
	owner_name name;
	obj regclass;
	changed oid[];
	table_changed boolean;
BEGIN
	IF to_regclass('keanon.watches') IS NULL
	   OR current_setting('keanon.following_ddl', true) = 'on' THEN
		RETURN;					-- a change of keanon's own, made below
	END IF;
	PERFORM set_config('keanon.following_ddl', 'on', true);
	-- the relations changed, and the tables of the indexes made
	changed := ARRAY(SELECT d.objid FROM pg_event_trigger_ddl_commands() d
					 WHERE d.classid = 'pg_class'::regclass
					 UNION
					 SELECT i.indrelid FROM pg_event_trigger_ddl_commands() d
					 JOIN pg_index i ON i.indexrelid = d.objid
					 WHERE d.classid = 'pg_class'::regclass);
	-- a fast exit, before keanon.watches is even locked, when no relation
	-- changed is a watched table (one with a trigger of keanon's, or one
	-- that objects of the extension depend on), an internal object (it
	-- depends on the extension, or after a restore bears a keanon_ name) or
	-- an inheritance relative of a watched table
	IF NOT EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_proc f ON f.oid = t.tgfoid
				   JOIN pg_namespace n ON n.oid = f.pronamespace
				   WHERE t.tgrelid = ANY (changed) AND n.nspname = 'keanon')
	   AND NOT EXISTS (SELECT 1 FROM pg_depend d JOIN pg_depend x ON x.classid = d.classid
						   AND x.objid = d.objid AND x.refclassid = 'pg_extension'::regclass
					   JOIN pg_extension e ON e.oid = x.refobjid AND e.extname = 'keanon'
					   WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = ANY (changed))
	   AND NOT EXISTS (SELECT 1 FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
					   WHERE d.classid = 'pg_class'::regclass AND d.objid = ANY (changed)
						 AND d.refclassid = 'pg_extension'::regclass AND e.extname = 'keanon')
	   AND NOT EXISTS (SELECT 1 FROM pg_class c
					   WHERE c.oid = ANY (changed) AND c.relname LIKE '%\_keanon\_%')
	   AND NOT EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_trigger t
						   ON t.tgrelid IN (i.inhrelid, i.inhparent)
					   JOIN pg_proc f ON f.oid = t.tgfoid
					   JOIN pg_namespace n ON n.oid = f.pronamespace AND n.nspname = 'keanon'
					   WHERE i.inhrelid = ANY (changed) OR i.inhparent = ANY (changed)) THEN
		PERFORM set_config('keanon.following_ddl', 'off', true);
		RETURN;
	END IF;
	FOR w IN SELECT x.*, (x.relid::oid = ANY (changed)
						  OR EXISTS (SELECT 1 FROM pg_inherits i
									 WHERE i.inhrelid = x.relid OR i.inhparent = x.relid)) AS table_changed
			 FROM keanon.watches x
			 WHERE ARRAY[x.relid, x.rows_table, x.parts_table, x.release_table, x.pending_table]::oid[]
				   && changed
				OR EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = x.relid OR i.inhparent = x.relid) LOOP
		-- the watched table itself changed (not an internal table alone)
		table_changed := w.table_changed;
		-- a watched column renamed: found by its number, renamed along
		SELECT t.tgattr INTO attrs FROM pg_trigger t
		WHERE t.tgrelid = w.relid AND t.tgname = 'keanon_columns';
		IF table_changed AND FOUND THEN
			cols := w.key_columns;
			FOREACH col IN ARRAY w.quasi_identifiers || w.sensitive LOOP
				IF NOT col = ANY (cols) THEN
					cols := cols || col;
				END IF;
			END LOOP;
			FOR i IN 1 .. cardinality(cols) LOOP
				SELECT a.attname INTO newname FROM pg_attribute a
				WHERE a.attrelid = w.relid AND a.attnum = attrs[i - 1] AND NOT a.attisdropped;
				IF newname IS NOT NULL AND newname <> cols[i] THEN
					IF newname LIKE 'keanon\_%' THEN
						RAISE EXCEPTION 'column "%" of table % is watched and cannot take a name reserved for keanon', cols[i], w.relid
							USING ERRCODE = 'reserved_name';
					END IF;
					EXECUTE format('ALTER TABLE %s RENAME COLUMN %I TO %I', w.rows_table, cols[i], newname);
					IF w.pending_table IS NOT NULL AND cols[i] = ANY (w.key_columns) THEN
						EXECUTE format('ALTER TABLE %s RENAME COLUMN %I TO %I', w.pending_table, cols[i], newname);
					END IF;
					IF cols[i] = w.sensitive OR cols[i] = ANY (w.quasi_identifiers) THEN
						EXECUTE format('ALTER VIEW %s RENAME COLUMN %I TO %I', w.view, cols[i], newname);
					END IF;
					IF w.release_table IS NOT NULL THEN
						EXECUTE format('ALTER TABLE %s RENAME COLUMN %I TO %I', w.release_table, cols[i], newname);
					END IF;
					-- a generalized watch: the groups publish the quasi-identifiers
					-- under their names, the members carry the key
					IF w.qi_groups IS NOT NULL AND cols[i] = ANY (w.quasi_identifiers) THEN
						EXECUTE format('ALTER TABLE %s RENAME COLUMN %I TO %I', w.qi_groups, cols[i], newname);
					END IF;
					IF w.qi_members IS NOT NULL AND cols[i] = ANY (w.key_columns) THEN
						EXECUTE format('ALTER TABLE %s RENAME COLUMN %I TO %I', w.qi_members, cols[i], newname);
					END IF;
					PERFORM keanon.rename_watched_column(w.relid, cols[i], newname);
				END IF;
			END LOOP;
			SELECT x.* INTO w FROM keanon.watches x WHERE x.relid = w.relid;
		END IF;
		FOREACH col IN ARRAY CASE WHEN table_changed THEN w.key_columns || w.quasi_identifiers || w.sensitive ELSE '{}'::name[] END LOOP
			SELECT format_type(a.atttypid, a.atttypmod) INTO have FROM pg_attribute a
			WHERE a.attrelid = w.relid AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
			SELECT format_type(a.atttypid, a.atttypmod) INTO want FROM pg_attribute a
			WHERE a.attrelid = w.rows_table AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
			IF have IS DISTINCT FROM want THEN
				RAISE EXCEPTION 'column "%" of table % is watched and cannot be dropped or changed in type', col, w.relid
					USING ERRCODE = 'object_in_use',
						  HINT = format('Call keanon.unwatch(%L) first, then watch the table again.', w.relid::text);
			END IF;
		END LOOP;
		SELECT array_agg(a.attname ORDER BY array_position(i.indkey::int2[], a.attnum)) INTO keys
		FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = w.relid AND i.indisprimary;
		-- (no primary key at all is a restore that has yet to make it, in a
		-- parallel restore even after the triggers: a dropped one is
		-- refused by keanon.on_drop)
		IF table_changed AND keys IS DISTINCT FROM w.key_columns AND keys IS NOT NULL
		   OR table_changed AND EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = w.relid AND contype = 'p' AND condeferrable) THEN
			RAISE EXCEPTION 'the primary key of table % is watched and cannot change', w.relid
				USING ERRCODE = 'object_in_use',
					  HINT = format('Call keanon.unwatch(%L) first, then watch the table again.', w.relid::text);
		END IF;
		IF EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = w.relid OR i.inhparent = w.relid) THEN
			RAISE EXCEPTION 'watched table % cannot take part in inheritance or partitioning', w.relid
				USING ERRCODE = 'object_in_use',
					  DETAIL = 'Rows written through a parent would bypass the watch.',
					  HINT = format('Call keanon.unwatch(%L) first.', w.relid::text);
		END IF;
		-- a new owner of the table takes its watch's objects along
		SELECT r.rolname INTO owner_name FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
		WHERE c.oid = w.relid;
		IF (SELECT relowner FROM pg_class WHERE oid = w.relid) IS DISTINCT FROM
		   (SELECT relowner FROM pg_class WHERE oid = w.rows_table) THEN
			FOREACH obj IN ARRAY ARRAY[w.rows_table, w.parts_table, w.release_table, w.pending_table]::regclass[] LOOP
				IF obj IS NOT NULL THEN
					EXECUTE format('ALTER TABLE %s OWNER TO %I', obj, owner_name);
				END IF;
			END LOOP;
			EXECUTE format('ALTER VIEW %s OWNER TO %I', w.view, owner_name);
		END IF;
		IF table_changed AND (SELECT relpersistence FROM pg_class WHERE oid = w.relid) IS DISTINCT FROM
		   (SELECT relpersistence FROM pg_class WHERE oid = w.rows_table) THEN
			RAISE EXCEPTION 'watched table % cannot change between logged and unlogged', w.relid
				USING ERRCODE = 'object_in_use',
					  DETAIL = 'Its internal tables must share its persistence, so that a crash empties all of them together.',
					  HINT = format('Call keanon.unwatch(%L) first, then watch the table again.', w.relid::text);
		END IF;
		-- the internal tables as keanon writes them: a retyped, added or
		-- dropped column is refused (an index or a setting is the owner's),
		-- once the watch is whole (a restore makes its keanon index after
		-- the tables' constraints)
		IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
				   JOIN pg_am a ON a.oid = c.relam
				   WHERE i.indrelid = w.rows_table AND a.amname = 'keanon' AND i.indisvalid) THEN
			PERFORM keanon.check_layout(w.relid);
		END IF;
	END LOOP;
	PERFORM set_config('keanon.following_ddl', 'off', true);
END;
$on_alter$;
COMMENT ON FUNCTION keanon.on_alter() IS
'event trigger: follow a watched column''s rename (into the rows table, the view, the release table and keanon.watches), and refuse a change to a watched table that its watch cannot follow (a watched column dropped or retyped, the primary key changed, inheritance or partitioning, logged to unlogged or back) or a change to an internal table''s columns';

CREATE OR REPLACE FUNCTION keanon.on_drop()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET row_security = on
SET jit = off
AS $on_drop$
DECLARE
	w record;
	obj record;
BEGIN
	IF to_regclass('keanon.watches') IS NULL THEN
		RETURN;					-- the extension itself is being dropped
	END IF;
	FOR obj IN SELECT * FROM pg_event_trigger_dropped_objects()
			   WHERE object_type IN ('table', 'view') AND NOT is_temporary LOOP
		-- a watched table: its internal objects depend on it and went with
		-- it, but for a restored database, whose dependencies a dump does
		-- not keep
		FOR w IN SELECT * FROM keanon.forget_watch(obj.objid) LOOP
			PERFORM keanon.drop_internal(w.view, w.rows_table, w.parts_table, w.release_table, w.pending_table);
		END LOOP;
		-- an internal object of a table still watched: the watch ends
		FOR w IN SELECT x.relid FROM keanon.watches x
				 WHERE obj.objid IN (x.view::oid, x.rows_table::oid, x.parts_table::oid,
									 coalesce(x.release_table::oid, 0), coalesce(x.pending_table::oid, 0),
									 coalesce(x.qi_hierarchy::oid, 0), coalesce(x.qi_groups::oid, 0),
									 coalesce(x.qi_members::oid, 0))
				   AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = x.relid) LOOP
			RAISE NOTICE 'the watch of % ended: its internal object % was dropped',
				w.relid, obj.object_identity;
			PERFORM keanon.end_watch(w.relid);
		END LOOP;
	END LOOP;
	-- the primary key of a watched table that lives on: refused (a
	-- constraint of the table itself dropped, and no key left; a restore
	-- that has yet to make the key is no reason to refuse other drops)
	FOR w IN SELECT x.relid FROM keanon.watches x
			 JOIN pg_class c ON c.oid = x.relid
			 JOIN pg_namespace n ON n.oid = c.relnamespace
			 WHERE NOT EXISTS (SELECT 1 FROM pg_index i
							   WHERE i.indrelid = x.relid AND i.indisprimary)
			   AND EXISTS (SELECT 1 FROM pg_event_trigger_dropped_objects() d
						   WHERE d.object_type = 'table constraint'
							 AND d.address_names[1] = n.nspname AND d.address_names[2] = c.relname) LOOP
		RAISE EXCEPTION 'the primary key of table % is watched and cannot change', w.relid
			USING ERRCODE = 'object_in_use',
				  HINT = format('Call keanon.unwatch(%L) first, then watch the table again.', w.relid::text);
	END LOOP;
	-- the keanon index of a watch that lives on: the watch ends too
	FOR w IN SELECT x.relid FROM keanon.watches x
			 WHERE EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = x.relid)
			   AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = x.rows_table)
			   AND NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
							   JOIN pg_am a ON a.oid = c.relam
							   WHERE i.indrelid = x.rows_table AND a.amname = 'keanon'
								 AND i.indisvalid AND i.indislive)
			   AND EXISTS (SELECT 1 FROM pg_event_trigger_dropped_objects() d
						   WHERE d.object_type = 'index') LOOP
		RAISE NOTICE 'the watch of % ended: its keanon index was dropped', w.relid;
		PERFORM keanon.end_watch(w.relid);
	END LOOP;
END;
$on_drop$;
COMMENT ON FUNCTION keanon.on_drop() IS
'event trigger: when a watched table is dropped, drop its published view and keanon''s internal tables; when an internal object of a watch is dropped, end the watch; refuse to drop a watched table''s primary key';

-- the update's own helper goes with it
DROP FUNCTION keanon.update_as_owner(regclass, text);
