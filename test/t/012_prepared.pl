
# A deferred watch written by a prepared transaction: the notes wait for
# COMMIT PREPARED, which may come after the worker would have gone idle
# (10 s) and in another session.  The worker starts at PREPARE, stays
# while a prepared transaction of the database exists, and publishes the
# rows once they commit; a rolled-back prepared transaction publishes
# nothing.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('node');
$node->init;
$node->append_conf('postgresql.conf', "max_prepared_transactions = 5\n");
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION keanon;
CREATE TABLE d (id int PRIMARY KEY, grp int, v int);
INSERT INTO d SELECT i, i % 3, i * 10 FROM generate_series(1, 30) i;
SELECT keanon.watch('d', 'v', '{grp}', 3, 20, mode => 'deferred');});

sub published
{
	return $node->safe_psql('postgres', 'SELECT count(*) FROM d_anon');
}
is(published(), '30', 'the watch publishes the table');

$node->safe_psql(
	'postgres', q{
BEGIN;
INSERT INTO d SELECT i, i % 3, i * 10 FROM generate_series(31, 40) i;
PREPARE TRANSACTION 'p1';
BEGIN;
INSERT INTO d SELECT i, i % 3, i * 10 FROM generate_series(41, 45) i;
PREPARE TRANSACTION 'p2';});
# longer than the worker's idle exit
sleep(12);
$node->safe_psql('postgres', "ROLLBACK PREPARED 'p2'; COMMIT PREPARED 'p1';");
ok( $node->poll_query_until('postgres', 'SELECT count(*) = 40 FROM d_anon'),
	'the rows of the committed prepared transaction are published by the worker');
is($node->safe_psql('postgres', "SELECT keanon.check('d')"), 't', 'keanon.check holds');
is(published(), '40', 'nothing of the rolled-back prepared transaction is published');

# A live or release watch's writer holds the table's writers' lock to its
# end: prepared, it would hold it until COMMIT PREPARED and every other
# writer would wait.  PREPARE is refused, and the next writer goes on.
$node->safe_psql(
	'postgres', q{
CREATE TABLE l (id int PRIMARY KEY, grp int, v int);
INSERT INTO l SELECT i, i % 3, i * 10 FROM generate_series(1, 30) i;
SELECT keanon.watch('l', 'v', '{grp}', 3, 20);});
my ($ret, $out, $err) = $node->psql(
	'postgres', q{
BEGIN;
INSERT INTO l VALUES (31, 1, 310);
PREPARE TRANSACTION 'p3';});
like($err, qr/cannot PREPARE a transaction that holds the writers' lock of a table keanon watches/,
	'PREPARE of a live watch\'s writer is refused');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'),
	'0', 'nothing is left prepared');
$node->safe_psql('postgres',
	"SET lock_timeout = '5s'; INSERT INTO l VALUES (32, 2, 320);");
is($node->safe_psql('postgres', "SELECT count(*) FROM l_anon"), '31', 'the next writer goes on');
is($node->safe_psql('postgres', "SELECT keanon.check('l')"), 't', 'keanon.check holds');

$node->stop;
done_testing();
