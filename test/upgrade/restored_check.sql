-- After dump_source.sql's database, dumped from PostgreSQL 15, was
-- restored into PostgreSQL 17: every view shows what it showed, every
-- watch checks, takes writes, releases and flushes, and checks again
\set ON_ERROR_STOP on
SET client_min_messages = warning;
DO $$
DECLARE
	bad bigint;
BEGIN
	SELECT count(*) INTO bad FROM seen s CROSS JOIN LATERAL (SELECT count(*) AS n, sum(v.salary) AS s FROM (
		SELECT salary FROM t_live_anon WHERE s.tab = 't_live'
		UNION ALL SELECT salary FROM t_deferred_anon WHERE s.tab = 't_deferred'
		UNION ALL SELECT salary FROM t_release_anon WHERE s.tab = 't_release'
		UNION ALL SELECT salary FROM t_gen_anon WHERE s.tab = 't_gen'
		UNION ALL SELECT salary FROM t_gen_release_anon WHERE s.tab = 't_gen_release') v) now
	WHERE s.n IS DISTINCT FROM now.n OR s.s IS DISTINCT FROM now.s;
	IF bad > 0 THEN
		RAISE EXCEPTION '% views show other rows after the restore', bad;
	END IF;
	IF NOT (keanon.check('t_live') AND keanon.check('t_deferred') AND keanon.check('t_release')
			AND keanon.check('t_gen') AND keanon.check('t_gen_release')) THEN
		RAISE EXCEPTION 'a restored watch does not check';
	END IF;
END
$$;
INSERT INTO t_live VALUES (2001, 31, 'a2', 46000);
DELETE FROM t_live WHERE id < 20;
INSERT INTO t_deferred VALUES (2001, 31, 'a2', 46000);
SELECT keanon.flush('t_deferred');
INSERT INTO t_release SELECT i, 25 + i % 30, 'b1', 3000 + i FROM generate_series(2001, 2010) i;
SELECT keanon.release('t_release');
INSERT INTO t_gen VALUES (2001, 44, 'b1', 47000);
INSERT INTO t_gen_release SELECT i, 25 + i % 30, 'a1', 3000 + i FROM generate_series(2001, 2010) i;
SELECT keanon.release('t_gen_release');
DO $$
BEGIN
	IF NOT (keanon.check('t_live') AND keanon.check('t_deferred') AND keanon.check('t_release')
			AND keanon.check('t_gen') AND keanon.check('t_gen_release')) THEN
		RAISE EXCEPTION 'a restored watch does not check after writes';
	END IF;
	IF (SELECT min(c) FROM (SELECT count(*) c FROM t_gen_anon GROUP BY age, kind) s) < 4
	   OR (SELECT min(c) FROM (SELECT count(*) c FROM t_gen_release_anon GROUP BY age, kind) s) < 3 THEN
		RAISE EXCEPTION 'a restored generalized view is not k-anonymous';
	END IF;
END
$$;
SELECT 'restored into ' || current_setting('server_version_num') || ': every watch checks' AS result;
