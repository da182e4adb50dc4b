
# A watched table across crashes (immediate shutdowns) during a bulk COPY of
# 500,000 rows.
#
# 1. The COPY is still reading rows (its progress is between a tenth and
#    nine tenths of the file) when the server crashes.
# 2. The COPY has read every row and its statement trigger is maintaining
#    the publication; the backend is frozen there (SIGSTOP) so that it cannot
#    commit, then the server crashes.
# 3. The COPY has completed, with its maintenance, in a transaction still
#    open at the crash.
# 4. A smaller COPY commits, then the server crashes: WAL replay must bring
#    back the rows, the publication and the keanon index's pages.
#
# After each crash the table holds what committed, keanon.check holds (the
# keanon index notices the aborted transaction and rebuilds itself), the
# published view and the partitions are those of the last commit, and the
# watch takes further changes.
#
# The waits are server-side loops over pg_stat_progress_copy and
# pg_stat_activity; nothing sleeps.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('node');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
wal_level = replica
autovacuum = off
});
$node->start;

my $timeout = $PostgreSQL::Test::Utils::timeout_default;

# The file the COPY reads: age, zip, salary (one row in 40 without one)
my $rows = 500000;
my $file = $node->basedir . '/people.tsv';
{
	open(my $fh, '>', $file) or die "cannot write $file: $!";
	for my $i (1 .. $rows)
	{
		my $salary = $i % 40 == 0 ? '\N' : (($i * 104729) % 4999 + 1) * 50;
		printf $fh "%d\t%d\t%s\n", 18 + ($i * 37) % 63,
		  10000 + ($i * 7919) % 90000, $salary;
	}
	close($fh) or die "cannot write $file: $!";
}
my $copy = "COPY people (age, zip, salary) FROM '$file'";

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION keanon;

CREATE TABLE people (id bigserial PRIMARY KEY, age integer NOT NULL,
	zip text NOT NULL, salary bigint);
INSERT INTO people (age, zip, salary)
SELECT 18 + (i * 37) % 63, (10000 + (i * 7919) % 90000)::text,
	   CASE WHEN i % 50 = 0 THEN NULL ELSE ((i * 7907) % 1991 + 10) * 100 END
FROM generate_series(1, 20000) i;
SELECT keanon.watch('people', 'salary', '{age,zip}', 3, 100);

-- Return the pid of the backend running a COPY into people once it has
-- processed at least lo and less than hi rows (without waiting, NULL when
-- none has now)
CREATE FUNCTION wait_for_copy(lo bigint, hi bigint, wait boolean DEFAULT true)
RETURNS integer
LANGUAGE plpgsql AS \$\$
DECLARE
	found integer;
	deadline timestamptz := clock_timestamp() + interval '$timeout s';
BEGIN
	LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT p.pid INTO found
		FROM pg_stat_progress_copy p JOIN pg_stat_activity a USING (pid)
		WHERE p.relid = 'people'::regclass AND p.command = 'COPY FROM'
			AND a.state = 'active' AND a.query LIKE 'COPY people%'
			AND p.tuples_processed >= lo AND p.tuples_processed < hi;
		IF found IS NOT NULL OR NOT wait THEN
			RETURN found;
		END IF;
		IF clock_timestamp() > deadline THEN
			RAISE EXCEPTION 'no COPY with % to % rows processed seen', lo, hi;
		END IF;
	END LOOP;
END
\$\$;
});

is($node->safe_psql('postgres', "SELECT keanon.check('people')"),
	't', 'check before the COPYs');

# What the crash must leave: the rows, the view and the partitions
sub state
{
	return join(
		"\n---\n",
		$node->safe_psql('postgres',
			'SELECT count(*), count(salary), sum(salary) FROM people'),
		$node->safe_psql('postgres',
			'SELECT * FROM people_anon ORDER BY keanon_pid, age, zip, salary'),
		$node->safe_psql('postgres',
			"SELECT * FROM keanon.partitions('people')"));
}

sub check_watch
{
	my ($label) = @_;
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "SELECT keanon.check('people')");
	is($stdout, 't', "$label: check") or diag($stderr);
	return;
}

# End a background session whose server crashed under it
sub end_session
{
	my ($session) = @_;
	eval { $session->quit; };
	return;
}

my $before = state();
my $count_before = $node->safe_psql('postgres', 'SELECT count(*) FROM people');
is($count_before, '20000', 'the table holds its first rows');
$node->safe_psql('postgres', 'CHECKPOINT');

# The session that watches the COPY runs its query once before the COPY
# starts, so that afterwards it has nothing to look up
sub start_watcher
{
	my $watcher = $node->background_psql('postgres');
	$watcher->query_safe('SELECT wait_for_copy(0, 0, false) IS NULL');
	return $watcher;
}

# Everything committed before the crash, nothing else
sub after_crash
{
	my ($label, $expected) = @_;
	check_watch($label);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM people'),
		$count_before, "$label: the table holds the rows committed before");
	is(state(), $expected,
		"$label: the view and the partitions are those committed before");
	check_watch("$label, again");
	return;
}

# ----------------------------------------------------------------
# 1. A crash while the COPY reads rows
# ----------------------------------------------------------------
{
	my $watcher = start_watcher();
	my $worker = $node->background_psql('postgres');
	$worker->query_until(qr/started/, "\\echo started\n$copy;\n");
	my $pid =
	  $watcher->query_safe("SELECT wait_for_copy($rows / 10, $rows * 9 / 10)");
	ok($pid > 0, "1: COPY seen reading rows in backend $pid");
	$node->stop('immediate');
	end_session($worker);
	end_session($watcher);
	$node->start;
	after_crash('1: crash while the COPY reads rows', $before);
}

# ----------------------------------------------------------------
# 2. A crash while the COPY's trigger maintains the publication
# ----------------------------------------------------------------
{
	# whether a backend runs the COPY, has read every row and holds the
	# keanon lock
	my $frozen = q{SELECT a.state, p.tuples_processed, EXISTS (
	SELECT FROM pg_locks l
	WHERE l.pid = a.pid AND l.locktype = 'object'
		AND l.classid = 'pg_class'::regclass AND l.objid = $idx
		AND l.objsubid = x'4b45'::int AND l.mode = 'ExclusiveLock'
		AND l.granted)
FROM pg_stat_activity a JOIN pg_stat_progress_copy p USING (pid)
WHERE a.pid = $pid};
	my $idx = $node->safe_psql('postgres',
		"SELECT 'people_keanon_idx'::regclass::oid");
	$frozen =~ s/\$idx/$idx/;

	my $watcher = start_watcher();
	$watcher->query_safe($frozen =~ s/\$pid/0/r);
	my $worker = $node->background_psql('postgres');
	$worker->query_until(qr/started/, "\\echo started\n$copy;\n");
	my $pid = $watcher->query_safe("SELECT wait_for_copy($rows, $rows + 1)");
	# looked at before the freeze: frozen anywhere, the backend may hold a
	# lightweight lock (its fast-path lock slots, a lock table partition)
	# that pg_locks would wait on for ever, past any statement timeout
	like(
		$watcher->query_safe($frozen =~ s/\$pid/$pid/r),
		qr/^active\|$rows\|t$/,
		'2: the COPY has read every row and holds the keanon lock');
	ok(kill('STOP', $pid), "2: COPY frozen in its maintenance (backend $pid)");
	$node->stop('immediate');
	end_session($worker);
	end_session($watcher);
	$node->start;
	after_crash('2: crash during the maintenance', $before);
}

# ----------------------------------------------------------------
# 3. A crash with the COPY complete in an open transaction
# ----------------------------------------------------------------
{
	my $session = $node->background_psql('postgres');
	is( $session->query_safe(
			"BEGIN;\n$copy;\nSELECT count(*), keanon.check('people') FROM people;"
		),
		($count_before + $rows) . '|t',
		'3: the COPY completed in an open transaction, and check holds in it');
	$node->stop('immediate');
	end_session($session);
	$node->start;
	after_crash('3: crash with the COPY uncommitted', $before);
}

# ----------------------------------------------------------------
# 4. A committed COPY, then a crash: WAL replay
# ----------------------------------------------------------------
my $part = $node->basedir . '/people_part.tsv';
{
	open(my $in, '<', $file) or die "cannot read $file: $!";
	open(my $out, '>', $part) or die "cannot write $part: $!";
	while (my $line = <$in>)
	{
		last if $. > 50000;
		print $out $line;
	}
	close($in);
	close($out) or die "cannot write $part: $!";
}
$node->safe_psql('postgres',
	"COPY people (age, zip, salary) FROM '$part'");
$count_before += 50000;
check_watch('4: committed COPY');
my $committed = state();
isnt($committed, $before, '4: the committed COPY changed the publication');
$node->stop('immediate');
$node->start;
after_crash('4: crash after a committed COPY', $committed);

# ----------------------------------------------------------------
# The watch goes on
# ----------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
INSERT INTO people (age, zip, salary) VALUES
	(30, '12345', 123450), (31, '12346', 123450), (32, '12347', 50),
	(33, '12348', NULL);
UPDATE people SET salary = salary + 50 WHERE id % 1000 = 7;
DELETE FROM people WHERE id % 1000 = 11;
});
check_watch('changes after the crashes');
is( $node->safe_psql(
		'postgres',
		"SELECT (SELECT count(salary) FROM people) = (SELECT count(*) FROM people_anon) "
		  . "AND (SELECT count(salary) FROM people) = "
		  . "(SELECT sum(n) FROM keanon.partitions('people'))"),
	't',
	'every row with a salary is published');
check_watch('at the end');

$node->stop;

done_testing();
