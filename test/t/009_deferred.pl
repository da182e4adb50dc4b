
# A deferred watch across crashes, on a streaming standby, and through
# pg_dump and pg_restore with changes still pending.
#
# 1. Committed changes wait in the pending list and a transaction is open
#    when the server crashes: after recovery the committed changes are
#    still pending (nothing lost), the open transaction's are gone (nothing
#    uncommitted published), and a flush publishes exactly the table.
# 2. The background worker is applying a batch of 300,000 rows (it holds
#    the watch's lock; it is frozen there with SIGSTOP so that it cannot
#    commit) when the server crashes: after recovery the publication is the
#    one before the batch and the batch is still pending; the worker,
#    started again, applies it once.
# 3. The standby replays the flushes: it publishes what the primary
#    publishes, keanon.check holds there, with changes pending too, and it
#    refuses to flush.
# 4. pg_dump and pg_restore with changes pending: the restored database has
#    the same publication and the same pending changes, and its flush
#    publishes the table.
#
# The waits are server-side loops; nothing sleeps.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('primary');
$node->init(allows_streaming => 1);
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
keanon.worker = off
keanon.flush_naptime = 50ms
});
$node->start;
my $timeout = $PostgreSQL::Test::Utils::timeout_default;

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION keanon;
CREATE TABLE people (id bigserial PRIMARY KEY, age integer NOT NULL,
	zip text NOT NULL, salary bigint);
INSERT INTO people (age, zip, salary)
SELECT 18 + (i * 37) % 63, (10000 + (i * 7919) % 90000)::text,
	   CASE WHEN i % 50 = 0 THEN NULL ELSE ((i * 7907) % 1991 + 10) * 100 END
FROM generate_series(1, 20000) i;
SELECT keanon.watch('people', 'salary', '{age,zip}', 3, 100, mode => 'deferred');

-- Wait until cond (a boolean query) holds; false after the timeout
CREATE FUNCTION wait_until(cond text) RETURNS boolean
LANGUAGE plpgsql AS \$\$
DECLARE
	ok boolean;
	deadline timestamptz := clock_timestamp() + interval '$timeout s';
BEGIN
	LOOP
		PERFORM pg_stat_clear_snapshot();
		EXECUTE cond INTO ok;
		IF ok OR clock_timestamp() > deadline THEN
			RETURN coalesce(ok, false);
		END IF;
		PERFORM pg_sleep(0.01);
	END LOOP;
END;
\$\$;
});

# a slot keeps the WAL the standby has not replayed across the crashes
$node->safe_psql('postgres',
	"SELECT pg_create_physical_replication_slot('standby', true)");
$node->backup('bkp');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'bkp', has_streaming => 1);
$standby->append_conf('postgresql.conf', "primary_slot_name = 'standby'");
$standby->start;

# What a reader sees: the published rows (as a multiset) and the partitions
sub published
{
	my ($n, $db) = @_;
	return $n->safe_psql($db // 'postgres', q{
SELECT count(*), sum(salary), string_agg(x, ',' ORDER BY x) FROM (
	SELECT age || ':' || zip || ':' || salary AS x, salary FROM people_anon) v;
SELECT n, distinct_values, min_value, max_value FROM keanon.partitions('people');});
}

# The rows waiting in the pending list, read directly (no flush, no worker)
sub pending
{
	my ($n, $db) = @_;
	return $n->safe_psql($db // 'postgres',
		'SELECT count(DISTINCT id) FROM people_keanon_pending');
}

sub check_watch
{
	my ($n, $label, $db) = @_;
	is($n->safe_psql($db // 'postgres', "SELECT keanon.check('people')"),
		't', "$label: keanon.check on the " . $n->name);
	return;
}

# Every row of the table with a salary is published, and no other
sub complete
{
	my ($n, $label, $db) = @_;
	is( $n->safe_psql(
			$db // 'postgres', q{
SELECT (SELECT count(salary) FROM people) = (SELECT count(*) FROM people_anon)
   AND (SELECT sum(salary) FROM people) = (SELECT sum(salary) FROM people_anon)
   AND (SELECT count(salary) FROM people) = (SELECT sum(n) FROM keanon.partitions('people'))}),
		't',
		"$label: every row of the table is published once");
	return;
}

sub end_session
{
	my ($session) = @_;
	eval { $session->quit; };
	return;
}

check_watch($node, 'watched');
complete($node, 'watched');

# ----------------------------------------------------------------
# 1. A crash with committed changes pending and a transaction open
# ----------------------------------------------------------------
{
	$node->safe_psql(
		'postgres', q{
INSERT INTO people (age, zip, salary)
SELECT 20 + i % 40, (20000 + i)::text, 300 + i * 7 FROM generate_series(1, 5000) i;
UPDATE people SET salary = salary + 1 WHERE id % 97 = 0;
DELETE FROM people WHERE id % 89 = 0;});
	my $before = published($node);
	my $pending_before = pending($node);
	ok($pending_before > 5000, "1: $pending_before rows pending before the crash");
	my $open = $node->background_psql('postgres');
	$open->query_safe(q{
BEGIN;
INSERT INTO people (age, zip, salary)
SELECT 30, 'open', 999999 FROM generate_series(1, 1000);
SELECT keanon.flush('people');});
	$node->stop('immediate');
	end_session($open);
	$node->start;
	is(pending($node), $pending_before,
		'1: the committed changes are still pending after the crash');
	is(published($node), $before,
		'1: the publication is the one before the crash');
	is( $node->safe_psql('postgres',
			q{SELECT count(*) FROM people_keanon_rows WHERE zip = 'open'}),
		'0', '1: nothing of the open transaction is published');
	ok($node->safe_psql('postgres', "SELECT keanon.flush('people')") > 5000,
		'1: a flush applies the pending changes');
	is(pending($node), '0', '1: nothing is left pending');
	check_watch($node, '1');
	complete($node, '1');
}

# ----------------------------------------------------------------
# 2. A crash while the worker applies a batch
# ----------------------------------------------------------------
{
	$node->safe_psql(
		'postgres', q{
INSERT INTO people (age, zip, salary)
SELECT 18 + i % 60, (40000 + i)::text, 100 + (i::bigint * 7919) % 200000
FROM generate_series(1, 300000) i;});
	my $before = published($node);
	is(pending($node), '300000', '2: a batch of 300000 rows is pending');
	my $idx =
	  $node->safe_psql('postgres', "SELECT 'people_keanon_idx'::regclass::oid");
	# the worker, once it holds the keanon lock of the watch's index
	my $in_batch = qq{SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l USING (pid)
WHERE a.backend_type = 'keanon worker' AND l.locktype = 'object'
	AND l.classid = 'pg_class'::regclass AND l.objid = $idx
	AND l.objsubid = x'4b45'::int AND l.mode = 'ExclusiveLock' AND l.granted};
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET keanon.worker = on; SELECT pg_reload_conf();");
	# a status call (as a writer's statement would) starts the worker
	$node->safe_psql('postgres',
		"SELECT pg_sleep(0.2); SELECT mode FROM keanon.status('people')");
	ok( $node->safe_psql('postgres',
			"SELECT wait_until(\$q\$SELECT EXISTS ($in_batch)\$q\$)") eq 't',
		'2: the worker holds the watch while it applies the batch');
	my $pid = $node->safe_psql('postgres', $in_batch);
	# frozen anywhere, it may hold a lightweight lock (a lock table
	# partition, a buffer) that any query would wait on for ever: the
	# server is crashed at once, and what follows shows the batch was not
	# committed
	ok(kill('STOP', $pid), "2: the worker is frozen in its batch (pid $pid)");
	$node->stop('immediate');
	$node->start;
	is(published($node), $before,
		'2: after the crash the publication is the one before the batch');
	is(pending($node), '300000', '2: and the batch is pending again');
	# the worker starts again and applies it, once
	$node->safe_psql('postgres', "SELECT mode FROM keanon.status('people')");
	is( $node->safe_psql('postgres',
			q{SELECT wait_until('SELECT count(*) = 0 FROM people_keanon_pending')}),
		't',
		'2: the worker applied the batch after the restart');
	check_watch($node, '2');
	complete($node, '2');
	$node->safe_psql('postgres',
		"ALTER SYSTEM RESET keanon.worker; SELECT pg_reload_conf();");
}

# ----------------------------------------------------------------
# 3. The standby
# ----------------------------------------------------------------
{
	$node->wait_for_catchup($standby);
	is(published($standby), published($node),
		'3: the standby publishes what the primary publishes');
	check_watch($standby, '3');
	# changes pending on the primary reach the standby pending
	$node->safe_psql(
		'postgres', q{
INSERT INTO people (age, zip, salary)
SELECT 25, (90000 + i)::text, 4242 + i FROM generate_series(1, 100) i;
DELETE FROM people WHERE id % 1009 = 0;});
	my $on_primary = published($node);
	$node->wait_for_catchup($standby);
	is(pending($standby), pending($node),
		'3: the standby holds the same pending changes');
	is(published($standby), $on_primary,
		'3: and the same publication, without them');
	check_watch($standby, '3, with changes pending');
	my ($ret, $stdout, $stderr) =
	  $standby->psql('postgres', "SELECT keanon.flush('people')");
	like($stderr, qr/cannot flush a watch during recovery/,
		'3: the standby refuses to flush');
}

# ----------------------------------------------------------------
# 4. pg_dump and pg_restore with changes pending
# ----------------------------------------------------------------
{
	my $published = published($node);
	my $pending = pending($node);
	ok($pending > 0, "4: $pending rows pending at the dump");
	my $dump = $node->basedir . '/pending.dump';
	$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', 'postgres' ],
		'4: pg_dump -Fc with changes pending');
	$node->safe_psql('postgres', 'CREATE DATABASE restored');
	$node->command_ok([ 'pg_restore', '-d', 'restored', $dump ],
		'4: pg_restore');
	is(published($node, 'restored'), $published,
		'4: the restored database publishes what was published');
	is(pending($node, 'restored'), $pending,
		'4: and holds the same pending changes');
	is( $node->safe_psql('restored', q{
SELECT mode || ':' || pending FROM keanon.status('people')}),
		"deferred:$pending",
		'4: the restored watch is deferred, with its changes pending');
	$node->safe_psql('restored', "SELECT keanon.flush('people')");
	check_watch($node, '4, restored', 'restored');
	complete($node, '4, restored', 'restored');
	# the restored watch goes on taking writes
	$node->safe_psql(
		'restored', q{
INSERT INTO people (age, zip, salary) VALUES (40, 'after', 123456);
UPDATE people SET salary = salary + 3 WHERE id % 113 = 0;
SELECT keanon.flush('people');});
	check_watch($node, '4, restored and written', 'restored');
	complete($node, '4, restored and written', 'restored');
	# the original, flushed, publishes the same partitions
	$node->safe_psql('postgres', "SELECT keanon.flush('people')");
	check_watch($node, '4, original flushed');
}

$standby->stop;
$node->stop;
done_testing();
