
# An unlogged watched table across a crash: PostgreSQL empties unlogged
# tables at recovery, and a watch of one keeps its internal tables and its
# keanon index unlogged too (the index has an init fork), so recovery
# empties all of them together.  Afterwards the view is empty, keanon.check
# holds, and the same keys can be inserted again and are published.  A
# logged table watched beside it keeps everything.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('node');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION keanon;
CREATE UNLOGGED TABLE ul (id integer PRIMARY KEY, qi integer, s integer);
CREATE TABLE lg (id integer PRIMARY KEY, qi integer, s integer);
INSERT INTO ul SELECT i, i % 5, (i * 37) % 1000 FROM generate_series(1, 200) i;
INSERT INTO lg SELECT i, i % 5, (i * 37) % 1000 FROM generate_series(1, 200) i;
SELECT keanon.watch('ul', 's', '{qi}', 4, 20);
SELECT keanon.watch('lg', 's', '{qi}', 4, 20);
INSERT INTO ul SELECT i, i % 5, (i * 41) % 1000 FROM generate_series(201, 260) i;
INSERT INTO lg SELECT i, i % 5, (i * 41) % 1000 FROM generate_series(201, 260) i;
CHECKPOINT;
INSERT INTO ul VALUES (261, 1, 5);
INSERT INTO lg VALUES (261, 1, 5);
});

is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(c.relname || ':' || c.relpersistence::text, ',' ORDER BY c.relname)
		  FROM pg_class c WHERE c.relname LIKE 'ul\_keanon%'}),
	'ul_keanon_idx:u,ul_keanon_parts:u,ul_keanon_parts_hi_idx:u,ul_keanon_parts_pkey:u,'
	  . 'ul_keanon_rows:u,ul_keanon_rows_keanon_pid_keanon_pub_idx:u,'
	  . 'ul_keanon_rows_keanon_pid_keanon_slot_idx:u,ul_keanon_rows_pkey:u',
	'the internal tables and index of an unlogged table are unlogged');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ul_anon}),
	'261', 'all rows published before the crash');

$node->stop('immediate');
$node->start;

is($node->safe_psql('postgres', q{SELECT count(*) FROM ul}),
	'0', 'recovery emptied the unlogged table');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ul_anon}),
	'0', 'and its publication');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ul_keanon_parts}),
	'0', 'and its partitions');
is($node->safe_psql('postgres', q{SELECT keanon.check('ul')}),
	't', 'check holds for the emptied table');
is($node->safe_psql('postgres', q{SELECT count(*) FROM lg_anon}),
	'261', 'the logged table kept its publication');
is($node->safe_psql('postgres', q{SELECT keanon.check('lg')}),
	't', 'check holds for the logged table');

# the same keys again, one at a time and in bulk
$node->safe_psql(
	'postgres', q{
INSERT INTO ul VALUES (1, 1, 10), (2, 2, 20), (3, 3, 30), (4, 4, 40), (5, 0, 50);
INSERT INTO ul VALUES (6, 1, 60);
INSERT INTO ul SELECT i, i % 5, (i * 37) % 1000 FROM generate_series(7, 100) i;
});
is($node->safe_psql('postgres', q{SELECT count(*) FROM ul_anon}),
	'100', 'rows inserted after recovery are published');
is($node->safe_psql('postgres', q{SELECT keanon.check('ul')}),
	't', 'check holds after inserting again');

$node->stop;
done_testing();
