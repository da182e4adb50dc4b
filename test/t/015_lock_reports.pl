
# PostgreSQL reports a wait on keanon's writers' lock, in a deadlock or a
# lock timeout, as one on "object N of class 1259".  keanon adds a context
# line that names the lock, its keanon index and the rows table it is on
# ('<watched table>_keanon_rows').
#
# 1. A lock timeout while another writer of the watch holds the lock.
# 2. The deadlock docs/behaviour.md describes: a transaction locks a row of
#    the watched table FOR UPDATE, another writes the table (taking the
#    writers' lock) and then wants that row, and the first writes the
#    table.  The first runs the deadlock check (the second's deadlock
#    timeout is long), so its error carries the context.
# 3. The fix docs/behaviour.md gives: taking the writers' lock first with a
#    write of no rows makes the same pair wait instead of deadlocking.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('locks');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION keanon;
CREATE TABLE pay (id integer PRIMARY KEY, dept integer NOT NULL, salary integer);
INSERT INTO pay SELECT i, i % 5, i * 100 FROM generate_series(1, 200) i;
SELECT keanon.watch('pay', 'salary', '{dept}', 3, 200);
});
my $idx = $node->safe_psql('postgres', "SELECT 'pay_keanon_idx'::regclass::oid");
my $named = qr/CONTEXT:  waiting for the writers' lock of keanon index "pay_keanon_idx" on table "pay_keanon_rows" \(object $idx of class 1259\)/;

# ----------------------------------------------------------------
# 1. A lock timeout
# ----------------------------------------------------------------
{
	my $holder = $node->background_psql('postgres');
	$holder->query_safe('BEGIN');
	$holder->query_safe('INSERT INTO pay VALUES (1001, 1, 55555)');
	my ($rc, $out, $err) = $node->psql('postgres',
		"SET lock_timeout = '200ms'; INSERT INTO pay VALUES (1002, 2, 66666)");
	isnt($rc, 0, '1: the second writer times out');
	like($err, qr/canceling statement due to lock timeout/, '1: a lock timeout');
	like($err, $named, '1: its context names the writers\' lock, the index and the table');
	$holder->query_safe('ROLLBACK');
	$holder->quit;
}

# ----------------------------------------------------------------
# 2. A deadlock: a row lock taken before the writers' lock
# ----------------------------------------------------------------
{
	my $a = $node->background_psql('postgres', on_error_stop => 0);
	my $b = $node->background_psql('postgres', on_error_stop => 0);
	$a->query_safe("SET deadlock_timeout = '100ms'");
	$b->query_safe("SET deadlock_timeout = '60s'");
	$a->query_safe('BEGIN');
	$a->query_safe('SELECT id FROM pay WHERE id = 1 FOR UPDATE');
	$b->query_safe('BEGIN');
	$b->query_safe('INSERT INTO pay VALUES (1003, 3, 77777)');
	# b now waits for a's row lock
	$b->query_until(qr/waiting/, "\\echo waiting\nUPDATE pay SET dept = 4 WHERE id = 1;\n");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE pay%'")
	  or die 'b does not wait';
	# a wants the writers' lock b holds: a deadlock, which a detects
	my ($out, $err);
	$out = $a->query('INSERT INTO pay VALUES (1004, 4, 88888)');
	$err = $a->{stderr};
	like($err, qr/deadlock detected/, '2: a deadlock is reported');
	like($err, $named, '2: its context names the writers\' lock, the index and the table');
	$a->query('ROLLBACK');
	# b goes on once a is gone
	$b->query_safe('COMMIT');
	$a->quit;
	$b->quit;
	is($node->safe_psql('postgres', 'SELECT keanon.check(\'pay\')'), 't', '2: the watch is still the optimum');
	is($node->safe_psql('postgres', 'SELECT dept FROM pay WHERE id = 1'), '4', '2: the survivor\'s update is kept');
}

# ----------------------------------------------------------------
# 3. The writers' lock first: a wait, no deadlock
# ----------------------------------------------------------------
{
	my $a = $node->background_psql('postgres', on_error_stop => 0);
	my $b = $node->background_psql('postgres');
	$a->query_safe("SET deadlock_timeout = '100ms'");
	$a->query_safe('BEGIN');
	$a->query_safe('DELETE FROM pay WHERE false');
	$a->query_safe('SELECT id FROM pay WHERE id = 2 FOR UPDATE');
	$b->query_safe("SET deadlock_timeout = '100ms'");
	$b->query_safe('BEGIN');
	$b->query_until(qr/waiting/, "\\echo waiting\nINSERT INTO pay VALUES (1005, 0, 12345);\n");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO pay%'")
	  or die 'b does not wait';
	my $out = $a->query('INSERT INTO pay VALUES (1006, 1, 23456)');
	is($a->{stderr}, '', '3: no error for the writer that took the writers\' lock first');
	$a->query_safe('COMMIT');
	$b->query_safe('UPDATE pay SET dept = 3 WHERE id = 2');
	$b->query_safe('COMMIT');
	$a->quit;
	$b->quit;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pay WHERE id IN (1005, 1006)'), '2',
		'3: both rows are in');
	is($node->safe_psql('postgres', 'SELECT keanon.check(\'pay\')'), 't', '3: the watch is the optimum');
}

$node->stop;
done_testing();
