
# A watch with generalized quasi-identifiers across crashes, and through a
# streaming standby and a dump and restore: its groups and members live in
# ordinary tables with their GiST and btree indexes, so WAL brings back
# exactly what committed.
#
# 1. Rows committed, then an immediate shutdown: after recovery the groups
#    are those of the last commit and keanon.check recomputes them from
#    the true values.
# 2. A transaction that moved groups is open at the crash: it leaves no
#    trace.
# 3. A standby built from a base backup replays the same groups.
# (each step also for a release-mode watch and its last release)
# 4. pg_dump and restore into a new database: the watch, its groups and
#    the generalized view come back and take further writes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('primary');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION keanon;
CREATE EXTENSION cube;
CREATE TABLE kinds (value text, parent text);
INSERT INTO kinds VALUES ('*', NULL), ('a', '*'), ('b', '*'), ('a1', 'a'), ('a2', 'a'), ('b1', 'b');
CREATE TABLE people (id integer PRIMARY KEY, age integer NOT NULL, kind text NOT NULL, salary integer);
INSERT INTO people SELECT i, 18 + (i * 37) % 63, (ARRAY['a1', 'a2', 'b1'])[1 + i % 3], 1000 + (i * 7907) % 90000
FROM generate_series(1, 3000) i;
SELECT keanon.watch('people', 'salary', '{age,kind}', 3, 0, generalize => 4,
	hierarchies => '{"kind": "kinds"}');
-- the same rows in release mode, released once
CREATE TABLE rpeople AS SELECT * FROM people;
ALTER TABLE rpeople ADD PRIMARY KEY (id);
SELECT keanon.watch('rpeople', 'salary', '{age,kind}', 3, 0, mode => 'release', generalize => 3,
	hierarchies => '{"kind": "kinds"}');
SELECT keanon.release('rpeople');
});
# the last release as a reader keeps it
my $release_sql = q{SELECT md5(string_agg(format('%s %s %s %s', age, kind, salary, keanon_pid), ',' ORDER BY age, kind, salary, keanon_pid))
FROM rpeople_anon};

# the groups as the owner sees them: a fingerprint of every group's tuple
my $groups_sql = q{SELECT md5(string_agg(format('%s %s %s', group_id, size, generalized), ',' ORDER BY group_id))
FROM keanon.qi_groups('people')};

# 1. committed changes, then a crash
$node->safe_psql(
	'postgres', q{
INSERT INTO people SELECT 5000 + i, 20 + i % 50, 'a2', 50000 + i FROM generate_series(1, 200) i;
DELETE FROM people WHERE id % 7 = 0;
UPDATE people SET age = age + 3, kind = 'b1' WHERE id % 11 = 0;
});
$node->safe_psql(
	'postgres', q{
INSERT INTO rpeople SELECT 5000 + i, 20 + i % 50, 'a2', 50000 + i FROM generate_series(1, 200) i;
DELETE FROM rpeople WHERE id % 7 = 0;
UPDATE rpeople SET age = age + 3, kind = 'b1' WHERE id % 11 = 0;
SELECT keanon.release('rpeople');
});
my $before = $node->safe_psql('postgres', $groups_sql);
my $release_before = $node->safe_psql('postgres', $release_sql);
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', $groups_sql), $before, 'the groups of the last commit come back');
is($node->safe_psql('postgres', q{SELECT keanon.check('people')}), 't', 'check holds after the crash');
is($node->safe_psql('postgres', $release_sql), $release_before, 'the last release comes back');
is($node->safe_psql('postgres', q{SELECT keanon.check('rpeople')}), 't', 'the release checks after the crash');

# 2. a transaction open at the crash leaves no trace
my $bg = $node->background_psql('postgres');
$bg->query_safe(q{BEGIN});
$bg->query_safe(q{DELETE FROM people WHERE id < 1500});
$bg->query_safe(q{INSERT INTO people SELECT 9000 + i, 70, 'a1', 1 + i FROM generate_series(1, 100) i});
$bg->query_safe(q{INSERT INTO rpeople SELECT 9000 + i, 70, 'a1', 1 + i FROM generate_series(1, 100) i});
$bg->query_safe(q{SELECT keanon.release('rpeople')});
$node->stop('immediate');
eval { $bg->quit; };
$node->start;
is($node->safe_psql('postgres', $groups_sql), $before, 'an open transaction moved no group');
is($node->safe_psql('postgres', q{SELECT keanon.check('people')}), 't', 'check holds after the second crash');
is($node->safe_psql('postgres', $release_sql), $release_before, 'a release open at the crash left no trace');
is($node->safe_psql('postgres', q{SELECT count(*) FROM keanon.releases('rpeople')}), '2', 'and no record');

# 3. a standby replays the groups
$node->backup('b1');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'b1', has_streaming => 1);
$standby->start;
$node->safe_psql('postgres', q{INSERT INTO people SELECT 12000 + i, 30 + i % 20, 'b1', 70000 + i FROM generate_series(1, 50) i});
$node->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT count(*) FROM people_anon}),
	$node->safe_psql('postgres', q{SELECT count(*) FROM people_anon}), 'the standby publishes the same rows');
is($standby->safe_psql('postgres', $groups_sql), $node->safe_psql('postgres', $groups_sql),
	'the standby has the same groups');
is($standby->safe_psql('postgres', q{SELECT keanon.check('people')}), 't', 'check holds on the standby');
$standby->stop;

# 4. dump and restore
my $dump = $node->basedir . '/gen.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ], 'pg_restore');
is($node->safe_psql('restored', $groups_sql), $node->safe_psql('postgres', $groups_sql),
	'the restored database has the same groups');
$node->safe_psql('restored', q{INSERT INTO people VALUES (99999, 44, 'a1', 4444); DELETE FROM people WHERE id < 100});
is($node->safe_psql('restored', q{SELECT keanon.check('people')}), 't', 'the restored watch takes writes and checks');
is($node->safe_psql('restored', q{SELECT min(c) >= 4 FROM (SELECT count(*) c FROM people_anon GROUP BY age, kind) s}),
	't', 'every published combination is shared by 4 rows');
is($node->safe_psql('restored', $release_sql), $node->safe_psql('postgres', $release_sql),
	'the restored database shows the same release');
$node->safe_psql('restored', q{INSERT INTO rpeople VALUES (99999, 44, 'a1', 4444); DELETE FROM rpeople WHERE id < 100;
SELECT keanon.release('rpeople')});
is($node->safe_psql('restored', q{SELECT keanon.check('rpeople')}), 't', 'the restored release watch releases and checks');

$node->stop;
done_testing();
