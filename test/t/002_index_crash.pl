
# keanon indexes across crashes (immediate shutdowns).
#
# (a) A large change made through keanon.index_apply in a transaction that
#     never commits, a large committed change, and the repair of an aborted
#     change, each cut short by a crash: after restart the index must match
#     its table and hold what a fresh REINDEX computes.
# (b) CREATE INDEX and REINDEX of a 1M-row table, crashed mid-build: the
#     new index is gone, the old one intact; and the repair of its index
#     after an aborted change, crashed while rewriting the pages.
# (c) An unlogged table: after a crash the table and its keanon indexes are
#     empty, and both can be filled again.
#
# Where a crash must hit a backend mid-way, the test waits (a server-side
# loop over pg_stat_progress_create_index, pg_buffercache or pg_locks, no
# sleeps) until the backend is at that point, freezes it with SIGSTOP so it
# gets no further, and then stops the server in immediate mode; the
# postmaster kills the frozen backend after its grace period.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('node');
$node->init;
# WAL as a production server writes it; no autovacuum taking locks mid-test
$node->append_conf(
	'postgresql.conf', q{
wal_level = replica
autovacuum = off
});
$node->start;

my $timeout = $PostgreSQL::Test::Utils::timeout_default;

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION keanon;

-- Return the pid of the backend running cmd (CREATE INDEX or REINDEX) once
-- it is in a phase LIKE phase_like with at least lo and less than hi of the
-- table's blocks scanned
CREATE FUNCTION wait_for_build(cmd text, phase_like text, lo float8, hi float8)
RETURNS int LANGUAGE plpgsql AS \$\$
DECLARE
	found int;
	deadline timestamptz := clock_timestamp() + interval '$timeout s';
BEGIN
	LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT pid INTO found FROM pg_stat_progress_create_index
		WHERE command = cmd AND phase LIKE phase_like AND blocks_total > 0
			AND blocks_done >= lo * blocks_total
			AND blocks_done < hi * blocks_total;
		IF found IS NOT NULL THEN
			RETURN found;
		END IF;
		IF clock_timestamp() > deadline THEN
			RAISE EXCEPTION 'no % in phase % seen', cmd, phase_like;
		END IF;
	END LOOP;
END
\$\$;

-- Return the pid of the backend repairing an index, once the repair writes
-- node pages: the first dirty buffer of the index other than its metapage
-- (the caller makes every buffer clean first, with CHECKPOINT)
CREATE EXTENSION pg_buffercache;
CREATE FUNCTION wait_for_repair_writing(idx regclass)
RETURNS int LANGUAGE plpgsql AS \$\$
DECLARE
	found int;
	deadline timestamptz := clock_timestamp() + interval '$timeout s';
BEGIN
	LOOP
		IF EXISTS (
			SELECT FROM pg_buffercache b
			WHERE b.relfilenode = pg_relation_filenode(idx)
				AND b.reldatabase = (SELECT oid FROM pg_database
									 WHERE datname = current_database())
				AND b.relforknumber = 0 AND b.relblocknumber > 0 AND b.isdirty)
		THEN
			SELECT l.pid INTO found FROM pg_locks l
			WHERE l.locktype = 'object' AND l.classid = 'pg_class'::regclass
				AND l.objid = idx AND l.objsubid = x'4b45'::int
				AND l.mode = 'ExclusiveLock' AND l.granted;
			IF found IS NULL THEN
				RAISE EXCEPTION 'the repair of % ended before it was seen', idx;
			END IF;
			RETURN found;
		END IF;
		IF clock_timestamp() > deadline THEN
			RAISE EXCEPTION 'no repair of % seen', idx;
		END IF;
	END LOOP;
END
\$\$;

-- Return the pid of the backend holding the keanon lock of an index in
-- exclusive mode (changing or repairing it) while running a query LIKE
-- query_like
CREATE FUNCTION wait_for_keanon_writer(idx regclass, query_like text)
RETURNS int LANGUAGE plpgsql AS \$\$
DECLARE
	found int;
	deadline timestamptz := clock_timestamp() + interval '$timeout s';
BEGIN
	LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT l.pid INTO found
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'object' AND l.classid = 'pg_class'::regclass
			AND l.objid = idx AND l.objsubid = x'4b45'::int
			AND l.mode = 'ExclusiveLock' AND l.granted
			AND a.state = 'active' AND a.query LIKE query_like;
		IF found IS NOT NULL THEN
			RETURN found;
		END IF;
		IF clock_timestamp() > deadline THEN
			RAISE EXCEPTION 'no writer of % seen', idx;
		END IF;
	END LOOP;
END
\$\$;
});

sub partitions
{
	my ($index) = @_;
	return $node->safe_psql('postgres',
		"SELECT * FROM keanon.index_partitions('$index')");
}

sub check_index
{
	my ($index, $label) = @_;
	is($node->safe_psql('postgres', "SELECT keanon.index_check('$index')"),
		't', "$label: $index matches its table");
	return;
}

# End a background session whose server crashed under it: psql may have
# exited already, when its query's connection went away
sub end_session
{
	my ($session) = @_;
	eval { $session->quit; };
	return;
}

# Crash the server while a backend runs $args{command}: a second session
# waits with $args{wait} until that backend is at the point wanted and
# returns its pid; the backend is frozen there, and if $args{frozen} is
# given, that query (with $pid replaced) must then show the backend still at
# that point.  The second session runs its queries once before the command
# starts, so that afterwards it reads nothing a frozen backend might lock.
sub crash_during
{
	my (%args) = @_;
	my $label = $args{label};
	my $watcher = $node->background_psql('postgres');

	$watcher->query_safe($args{frozen} =~ s/\$pid/0/gr) if $args{frozen};

	my $worker = $node->background_psql('postgres');
	$worker->query_until(qr/started/, "\\echo started\n$args{command}\n");
	my $pid = $watcher->query_safe($args{wait});
	ok(kill('STOP', $pid), "$label: backend $pid frozen");
	if ($args{frozen})
	{
		# a reader stuck on a frozen writer's half-updated status gives up
		$watcher->query_safe("SET statement_timeout = '60s'");
		like($watcher->query_safe($args{frozen} =~ s/\$pid/$pid/gr),
			$args{frozen_like}, "$label: the backend was frozen mid-way");
	}

	$node->stop('immediate');
	end_session($worker);
	end_session($watcher);
	$node->start;
	return;
}

# Partitions now, after REINDEX, and index_check after both
sub same_as_reindex
{
	my ($index, $label) = @_;
	check_index($index, $label);
	my $have = partitions($index);
	$node->safe_psql('postgres', "REINDEX INDEX $index");
	is(partitions($index), $have,
		"$label: $index holds the partitions of a fresh REINDEX");
	check_index($index, "$label, after REINDEX");
	return $have;
}

# ----------------------------------------------------------------
# (a) large changes cut short
# ----------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
CREATE TABLE big (id bigserial PRIMARY KEY, v bigint);
INSERT INTO big (v) SELECT (i * 7919) % 60000 FROM generate_series(1, 200000) i;
CREATE INDEX big_ke ON big USING keanon (v) WITH (k = 5, e = 40);
CHECKPOINT;
});
my $big_before = partitions('big_ke');
isnt($big_before, '', 'big_ke has partitions');

my $big_insert = q{
WITH ins AS (
	INSERT INTO big (v)
	SELECT (i::bigint * 104729) % 90000 FROM generate_series(1, 100000) i
	RETURNING v)
SELECT keanon.index_apply('big_ke', array_agg(v::numeric), array_agg(1::bigint)) >= 0
FROM ins;
};

# 1. A transaction whose change to the index is complete, open at the crash
my $session = $node->background_psql('postgres');
is($session->query_safe("BEGIN;\n$big_insert"),
	't', 'uncommitted: 100000 values applied in an open transaction');
$node->stop('immediate');
end_session($session);
$node->start;

is($node->safe_psql('postgres', 'SELECT count(*) FROM big'),
	'200000', 'uncommitted: the rows inserted before the crash are gone');
check_index('big_ke', 'uncommitted');
is(partitions('big_ke'), $big_before,
	'uncommitted: the partitions are those before the transaction');
same_as_reindex('big_ke', 'uncommitted');

# 2. The same change committed, then a crash: WAL replay must rebuild the
#    pages written since the checkpoint
$node->safe_psql('postgres', "CHECKPOINT;\nBEGIN;\n$big_insert\nCOMMIT;");
my $big_committed = partitions('big_ke');
isnt($big_committed, $big_before, 'committed: the partitions changed');
$node->stop('immediate');
$node->start;

is($node->safe_psql('postgres', 'SELECT count(*) FROM big'),
	'300000', 'committed: the rows survive the crash');
check_index('big_ke', 'committed');
is(partitions('big_ke'), $big_committed,
	'committed: the partitions survive the crash');
same_as_reindex('big_ke', 'committed');

# 3. An aborted change, and a crash as soon as a reader has taken the index
#    over to repair it (the repair rewrites the pages in place from the
#    table; the crash usually hits it while it still reads the table)
$node->safe_psql('postgres',
	"BEGIN;\n" . ($big_insert =~ s/104729/15485863/r) . "ROLLBACK;");
crash_during(
	label => 'repair cut short',
	command => "SELECT count(*) FROM keanon.index_partitions('big_ke');",
	wait =>
	  "SELECT wait_for_keanon_writer('big_ke', '%index_partitions%')");

check_index('big_ke', 'repair cut short');
is(partitions('big_ke'), $big_committed,
	'repair cut short: the partitions are the committed ones');
same_as_reindex('big_ke', 'repair cut short');

# ----------------------------------------------------------------
# (b) builds of a 1M-row table cut short
# ----------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
CREATE TABLE huge (id int, v numeric(12,2));
INSERT INTO huge
SELECT i, ((i::bigint * 7919) % 400000) / 100.0 FROM generate_series(1, 1000000) i;
CREATE INDEX huge_ke ON huge USING keanon (v) WITH (k = 5, e = 0.5);
});
my $huge_before = partitions('huge_ke');
isnt($huge_before, '', 'huge_ke has partitions');
my $relfilenode_query =
  "SELECT relfilenode FROM pg_class WHERE relname = 'huge_ke'";
my $huge_relfilenode = $node->safe_psql('postgres', $relfilenode_query);

# 1. CREATE INDEX, crashed while scanning the table
crash_during(
	label => 'CREATE INDEX',
	command =>
	  'CREATE INDEX huge_ke2 ON huge USING keanon (v) WITH (k = 9, e = 2);',
	wait =>
	  "SELECT wait_for_build('CREATE INDEX', 'building index%', 0.2, 0.8)",
	frozen => 'SELECT phase, blocks_done < blocks_total '
	  . 'FROM pg_stat_progress_create_index WHERE pid = $pid',
	frozen_like => qr/^building index.*\|t$/);

is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM pg_class WHERE relname = 'huge_ke2'"),
	'0',
	'the index whose build crashed does not exist');
check_index('huge_ke', 'CREATE INDEX crashed');
is(partitions('huge_ke'), $huge_before,
	'CREATE INDEX crashed: the other index is intact');

# 2. REINDEX, crashed while writing the new pages (written without WAL)
crash_during(
	label => 'REINDEX',
	command => 'REINDEX INDEX huge_ke;',
	wait => "SELECT wait_for_build('REINDEX', "
	  . "'building index: computing partitions and writing pages', 0, 2)",
	frozen =>
	  'SELECT phase FROM pg_stat_progress_create_index WHERE pid = $pid',
	frozen_like =>
	  qr/^building index: computing partitions and writing pages$/);

is($node->safe_psql('postgres', $relfilenode_query),
	$huge_relfilenode, 'REINDEX crashed: the old index is still in use');
check_index('huge_ke', 'REINDEX crashed');
is(partitions('huge_ke'), $huge_before,
	'REINDEX crashed: the old index holds the same partitions');

# 3. A rolled-back change to huge_ke, and a crash while a reader's repair
#    rewrites the index's pages in place, without WAL
$node->safe_psql(
	'postgres', q{
BEGIN;
WITH ins AS (
	INSERT INTO huge SELECT i, i / 4.0 FROM generate_series(1, 5000) i RETURNING v)
SELECT keanon.index_apply('huge_ke', array_agg(v), array_agg(1::bigint)) FROM ins;
ROLLBACK;
CHECKPOINT;
});
crash_during(
	label => 'repair while writing',
	command => "SELECT count(*) FROM keanon.index_partitions('huge_ke');",
	wait => "SELECT wait_for_repair_writing('huge_ke')",
	frozen => "SELECT state, query LIKE '%index_partitions%' "
	  . 'FROM pg_stat_activity WHERE pid = $pid',
	frozen_like => qr/^active\|t$/);

check_index('huge_ke', 'repair crashed while writing');
is(partitions('huge_ke'), $huge_before,
	'repair crashed while writing: the partitions are the committed ones');

# ----------------------------------------------------------------
# (c) an unlogged table
# ----------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
CREATE UNLOGGED TABLE ul (id serial PRIMARY KEY, v integer, d numeric(8,2));
INSERT INTO ul (v, d)
SELECT (i * 37) % 500, ((i * 11) % 300) * 0.25 FROM generate_series(1, 3000) i;
CREATE INDEX ul_v ON ul USING keanon (v) WITH (k = 4, e = 30);
CREATE INDEX ul_d ON ul USING keanon (d) WITH (k = 3, e = 5);
BEGIN;
WITH ins AS (
	INSERT INTO ul (v, d) SELECT i % 700, (i % 90) * 0.5
	FROM generate_series(1, 1000) i RETURNING v, d),
app AS (
	SELECT keanon.index_apply('ul_v', array_agg(v::numeric), array_agg(1::bigint))
	FROM ins)
SELECT keanon.index_apply('ul_d', array_agg(d), array_agg(1::bigint)) FROM ins, app;
COMMIT;
});
foreach my $index (qw(ul_v ul_d))
{
	isnt(partitions($index), '', "unlogged: $index has partitions");
	check_index($index, 'unlogged, before the crash');
}

$node->stop('immediate');
$node->start;

is($node->safe_psql('postgres', 'SELECT count(*) FROM ul'),
	'0', 'unlogged: the table is empty after the crash');
foreach my $index (qw(ul_v ul_d))
{
	is( $node->safe_psql(
			'postgres',
			"SELECT count(*) FROM keanon.index_partitions('$index')"),
		'0',
		"unlogged: $index has no partitions after the crash");
	check_index($index, 'unlogged, after the crash');
}

# the empty indexes take changes again, and REINDEX
$node->safe_psql(
	'postgres', q{
BEGIN;
WITH ins AS (
	INSERT INTO ul (v, d) SELECT (i * 13) % 400, ((i * 7) % 200) * 0.75
	FROM generate_series(1, 2000) i RETURNING v, d),
app AS (
	SELECT keanon.index_apply('ul_v', array_agg(v::numeric), array_agg(1::bigint))
	FROM ins)
SELECT keanon.index_apply('ul_d', array_agg(d), array_agg(1::bigint)) FROM ins, app;
COMMIT;
});
foreach my $index (qw(ul_v ul_d))
{
	isnt(partitions($index), '',
		"unlogged: $index has partitions again after inserts");
	check_index($index, 'unlogged, after inserts');
}
$node->safe_psql('postgres',
	'INSERT INTO ul (v, d) SELECT i, i * 0.5 FROM generate_series(1000, 1100) i');
$node->safe_psql('postgres', 'REINDEX TABLE ul');
foreach my $index (qw(ul_v ul_d))
{
	check_index($index, 'unlogged, after REINDEX');
}

# every keanon index of the node, last
foreach my $index (qw(big_ke huge_ke ul_v ul_d))
{
	check_index($index, 'at the end');
}

$node->stop;

done_testing();
