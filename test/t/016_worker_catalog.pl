
# The background worker reads keanon's catalog as the bootstrap superuser.
# A superuser drops keanon (DROP SCHEMA keanon CASCADE) while a worker
# runs; a role that may only create schemas renames its own schema to
# keanon, with a view named watches that calls its function.  The worker
# must take that for no keanon at all (the tables must be the extension's
# own) and exit, never run the function as a superuser.  A release
# schedule of a huge interval must not end the worker either, and a
# schedule comes due by the calendar.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('node');
$node->init;
$node->start;

sub workers
{
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'keanon worker'");
}

sub wait_for
{
	my ($sql, $want) = @_;
	for (my $i = 0; $i < 200; $i++)
	{
		return 1 if $node->safe_psql('postgres', $sql) eq $want;
		usleep(100_000);
	}
	return 0;
}

# a huge release interval: the worker's due test once overflowed and ended
# the worker at every start, leaving the deferred watch beside it pending
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION keanon;
CREATE TABLE r (id int PRIMARY KEY, qi int, s int);
INSERT INTO r SELECT i, i % 10, i * 7 % 100 FROM generate_series(1, 40) i;
SELECT keanon.watch('r', 's', '{qi}', 3, 10, mode => 'release');
SELECT keanon.release('r');
SELECT keanon.schedule_releases('r', '1000000 years');
CREATE TABLE d (id int PRIMARY KEY, qi int, s int);
INSERT INTO d SELECT i, i % 10, i * 7 % 100 FROM generate_series(1, 40) i;
SELECT keanon.watch('d', 's', '{qi}', 3, 10, mode => 'deferred');
INSERT INTO d VALUES (41, 1, 50);});
ok(wait_for("SELECT pending FROM keanon.status('d')", '0'),
	'a schedule of a million years leaves the worker applying the deferred watch');
is(workers(), '1', 'the worker runs');

# a schedule comes due by the calendar: a year after the last release,
# not 360 days (as a comparison of intervals would have it)
sub releases
{
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM keanon.releases WHERE relid = 'r'::regclass");
}
$node->safe_psql(
	'postgres', q{
SELECT keanon.schedule_releases('r', '1 year');
UPDATE keanon.releases SET released_at = now() - interval '361 days' WHERE relid = 'r'::regclass;});
usleep(2_000_000);
is(releases(), '1', 'a yearly schedule is not due 361 days after the last release');
$node->safe_psql('postgres',
	"UPDATE keanon.releases SET released_at = now() - interval '367 days' WHERE relid = 'r'::regclass");
ok(wait_for("SELECT count(*) FROM keanon.releases WHERE relid = 'r'::regclass", '2'),
	'it is due a calendar year after');
is($node->safe_psql('postgres', "SELECT keanon.check('r')"), 't', 'the scheduled release checks');

$node->safe_psql(
	'postgres', q{
CREATE ROLE mallory LOGIN;
GRANT CREATE ON DATABASE postgres TO mallory;
SET ROLE mallory;
CREATE SCHEMA evil;
CREATE SCHEMA mal;
CREATE TABLE mal.ran (who text, super boolean);
CREATE FUNCTION evil.pwn() RETURNS int LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO mal.ran SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
	RETURN 1;
END $f$;
CREATE VIEW evil.watches AS SELECT 0::oid AS relid, 'deferred'::text AS mode,
	NULL::interval AS release_every, evil.pwn() AS watch_no;
CREATE TABLE evil.releases (relid oid, released_at timestamptz);
GRANT USAGE ON SCHEMA mal TO PUBLIC;
GRANT INSERT ON mal.ran TO PUBLIC;
RESET ROLE;});

# keanon goes with its schema; the look-alike takes the name at once
$node->safe_psql('postgres', 'DROP SCHEMA keanon CASCADE');
$node->safe_psql('postgres', 'SET ROLE mallory; ALTER SCHEMA evil RENAME TO keanon');
ok(wait_for("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'keanon worker'", '0'),
	'the worker exits: the look-alike catalog is not keanon');
is($node->safe_psql('postgres', 'SELECT count(*) FROM mal.ran'),
	'0', 'the look-alike was never read');
is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'"),
	'f', 'mallory is no superuser');

$node->stop;
done_testing();
