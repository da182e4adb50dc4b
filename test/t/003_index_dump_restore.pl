
# keanon indexes through pg_dump -Fc and pg_restore.
#
# A database with keanon indexes of several types and options, in two
# schemas, one on an unlogged table, one left waiting for a repair after a
# rolled-back change, is dumped and restored into a new database, serially
# and with parallel jobs.  Each restored index must match its table and hold
# the partitions of the original, and take changes afterwards.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('node');
$node->init;
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE orig');
$node->safe_psql(
	'orig', q{
CREATE EXTENSION keanon;
CREATE SCHEMA app;

CREATE TABLE app.salaries (id bigserial PRIMARY KEY, salary bigint, bonus integer);
INSERT INTO app.salaries (salary, bonus)
SELECT CASE WHEN i % 101 = 0 THEN NULL ELSE 20000 + ((i * 7919) % 800) * 125 END,
	   (i * 13) % 2000
FROM generate_series(1, 20000) i;
CREATE INDEX salaries_k3 ON app.salaries USING keanon (salary) WITH (k = 3, e = 2000);
CREATE INDEX salaries_k10 ON app.salaries USING keanon (salary) WITH (k = 10, e = 15000);
CREATE INDEX bonus_ke ON app.salaries USING keanon (bonus) WITH (k = 4, e = 50);

CREATE TABLE public.prices (id serial PRIMARY KEY, exact numeric(10,2), free numeric,
	approx double precision, small real);
INSERT INTO public.prices (exact, free, approx, small)
SELECT round(((i * 37) % 900) * 1.13, 2), ((i * 17) % 500) / 8.0,
	   ((i * 53) % 700) * 0.125, ((i * 3) % 300) * 0.5
FROM generate_series(1, 5000) i;
CREATE INDEX prices_exact ON public.prices USING keanon (exact) WITH (k = 4, e = 25.5);
CREATE INDEX prices_free ON public.prices USING keanon (free) WITH (k = 3, e = 1.5, scale = 3);
CREATE INDEX prices_approx ON public.prices USING keanon (approx) WITH (k = 5, e = 3);
CREATE INDEX prices_small ON public.prices USING keanon (small) WITH (k = 6, e = 10);

CREATE UNLOGGED TABLE app.visits (id serial PRIMARY KEY, age smallint);
INSERT INTO app.visits (age) SELECT (i * 7) % 90 FROM generate_series(1, 3000) i;
CREATE INDEX visits_age ON app.visits USING keanon (age) WITH (k = 5, e = 4);

-- changes after the builds, committed
BEGIN;
WITH ins AS (
	INSERT INTO app.salaries (salary, bonus)
	SELECT 30000 + (i % 300) * 100, NULL FROM generate_series(1, 1000) i
	RETURNING salary)
SELECT keanon.index_apply('app.salaries_k3', array_agg(salary::numeric), array_agg(1::bigint)),
	   keanon.index_apply('app.salaries_k10', array_agg(salary::numeric), array_agg(1::bigint))
FROM ins;
COMMIT;

-- a change rolled back, left for the next reader of prices_exact to repair
BEGIN;
WITH del AS (DELETE FROM public.prices WHERE id % 3 = 0 RETURNING exact)
SELECT keanon.index_apply('prices_exact', array_agg(exact), array_agg(-1::bigint))
FROM del;
ROLLBACK;
});

my @indexes = qw(app.salaries_k3 app.salaries_k10 app.bonus_ke
  prices_exact prices_free prices_approx prices_small app.visits_age);

sub partitions
{
	my ($db, $index) = @_;
	return $node->safe_psql($db,
		"SELECT * FROM keanon.index_partitions('$index')");
}

sub check_index
{
	my ($db, $index, $label) = @_;
	is($node->safe_psql($db, "SELECT keanon.index_check('$index')"),
		't', "$label: $index matches its table in $db");
	return;
}

# Dump first: the dump must not depend on the repair of prices_exact
my $dump = $node->basedir . '/orig.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', 'orig' ],
	'pg_dump -Fc of a database with keanon indexes');

my %original;
foreach my $index (@indexes)
{
	check_index('orig', $index, 'original');
	$original{$index} = partitions('orig', $index);
	isnt($original{$index}, '', "original: $index has partitions");
}

# Serially, and with two jobs (indexes built in parallel)
foreach my $case ([ 'restored', [] ], [ 'restored_parallel', [ '-j', '2' ] ])
{
	my ($db, $options) = @$case;

	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->command_ok([ 'pg_restore', @$options, '-d', $db, $dump ],
		"pg_restore into $db");

	foreach my $index (@indexes)
	{
		check_index($db, $index, 'restored');
		is(partitions($db, $index), $original{$index},
			"$db: $index holds the partitions of the original");
	}

	# the restored indexes take changes, and REINDEX gives the same state
	$node->safe_psql(
		$db, q{
BEGIN;
WITH upd AS (
	UPDATE public.prices p SET exact = p.exact + 1.01
	FROM (SELECT id, exact FROM public.prices WHERE id % 7 = 0 FOR UPDATE) o
	WHERE p.id = o.id
	RETURNING o.exact AS before, p.exact AS after)
SELECT keanon.index_apply('prices_exact', array_agg(c.val), array_agg(c.delta))
FROM upd, LATERAL (VALUES (before, -1::bigint), (after, 1::bigint)) c(val, delta);
WITH del AS (DELETE FROM app.visits WHERE id % 4 = 1 RETURNING age)
SELECT keanon.index_apply('app.visits_age', array_agg(age::numeric), array_agg(-1::bigint))
FROM del;
COMMIT;
});
	foreach my $index (qw(prices_exact app.visits_age))
	{
		check_index($db, $index, 'changed after restore');
		my $changed = partitions($db, $index);
		isnt($changed, $original{$index},
			"$db: $index changed with its table");
		$node->safe_psql($db, "REINDEX INDEX $index");
		is(partitions($db, $index), $changed,
			"$db: $index holds what REINDEX computes");
	}
}

# last: every index of every database matches its table
foreach my $db (qw(orig restored restored_parallel))
{
	foreach my $index (@indexes)
	{
		check_index($db, $index, 'at the end');
	}
}

$node->stop;

done_testing();
