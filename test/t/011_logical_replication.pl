
# Watches on a logical replication subscriber.
#
# The publisher publishes a plain table (FOR TABLE, not keanon's internal
# tables); the subscriber watches its copy of it in live, deferred and
# release mode.  The apply worker fires row triggers alone, never
# statement triggers: each watch must still follow every replicated
# INSERT, UPDATE, DELETE and TRUNCATE, which keanon.check verifies against
# the subscriber's table after each step, and the live view must publish
# exactly the replicated rows with non-null salaries.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
$pub->start;
my $sub = PostgreSQL::Test::Cluster->new('subscriber');
$sub->init;
$sub->append_conf('postgresql.conf', "keanon.worker = off\n");
$sub->start;

my $schema = q{
CREATE TABLE live_t (id int PRIMARY KEY, zip text, salary numeric);
CREATE TABLE def_t (id int PRIMARY KEY, zip text, salary numeric);
CREATE TABLE rel_t (id int PRIMARY KEY, zip text, salary numeric);};
$pub->safe_psql('postgres', $schema);
$pub->safe_psql('postgres',
	'CREATE PUBLICATION p FOR TABLE live_t, def_t, rel_t');
$sub->safe_psql('postgres', "CREATE EXTENSION keanon; $schema");
$sub->safe_psql(
	'postgres', q{
SELECT keanon.watch('live_t', 'salary', '{zip}', 3, 1000);
SELECT keanon.watch('def_t', 'salary', '{zip}', 3, 1000, mode => 'deferred');
SELECT keanon.watch('rel_t', 'salary', '{zip}', 3, 1000, mode => 'release');});
my $connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION s CONNECTION '$connstr' PUBLICATION p");
$sub->wait_for_subscription_sync($pub, 's');

# Each watch holds on the subscriber, as of what it replicated
sub checked
{
	my ($what) = @_;
	$pub->wait_for_catchup('s');
	$sub->safe_psql('postgres', "SELECT keanon.flush('def_t')");
	for my $t (qw(live_t def_t rel_t))
	{
		my ($ret, $out, $err) =
		  $sub->psql('postgres', "SELECT keanon.check('$t')");
		is($out, 't', "$what: keanon.check('$t') holds on the subscriber")
		  or diag($err);
	}
	is( $sub->safe_psql('postgres', 'SELECT count(*) FROM live_t_anon'),
		$sub->safe_psql('postgres',
			'SELECT count(*) FROM live_t WHERE salary IS NOT NULL'),
		"$what: the live view publishes every replicated row");
}

my $rows = join(', ',
	map { sprintf("(%d, '%05d', %s)", $_, 10000 + $_ % 7, $_ % 10 == 0 ? 'NULL' : 30000 + ($_ * 7919) % 50000) }
	  1 .. 30);
$pub->safe_psql('postgres', join('', map { "INSERT INTO $_ VALUES $rows;" } qw(live_t def_t rel_t)));
checked('inserts');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM live_t_anon'),
	'27', 'inserts: 27 rows with a salary are published');

$pub->safe_psql('postgres',
	join('', map { "UPDATE $_ SET salary = salary + 500 WHERE id % 3 = 0; UPDATE $_ SET zip = 'z' WHERE id = 4; UPDATE $_ SET id = 100 WHERE id = 5;" } qw(live_t def_t rel_t)));
checked('updates');

$pub->safe_psql('postgres',
	join('', map { "DELETE FROM $_ WHERE id % 4 = 0;" } qw(live_t def_t rel_t)));
checked('deletes');

$sub->safe_psql('postgres', "SELECT keanon.release('rel_t')");
checked('a release');

$pub->safe_psql('postgres', 'TRUNCATE live_t, def_t, rel_t');
checked('truncate');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM live_t_anon'),
	'0', 'truncate: nothing is published');

# an ordinary session with session_replication_role = replica is
# maintained once, by the statement triggers
$sub->safe_psql('postgres',
	"SET session_replication_role = replica; INSERT INTO live_t VALUES (500, 'x', 1), (501, 'x', 2000), (502, 'x', 4000);");
checked('a replica-role session');

$sub->stop;
$pub->stop;
done_testing();
