
# Watched tables through pg_dump -Fc and pg_restore.
#
# A database with two watched tables, one with a bigint sensitive column in
# the public schema, one with a numeric(10,2) sensitive column in another
# schema (published under a name of its own, and readable by a role granted
# the view alone), each changed after it was watched, is dumped and
# restored into new databases, serially, with two jobs, and serially in an
# order that makes the triggers before the primary keys.  In each restored
# database keanon.check holds for both tables, the published views hold the
# same rows (the permutation is dumped with them), keanon.partitions gives
# the same partitions, and the watches keep working: further inserts,
# updates and deletes are maintained.

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
CREATE ROLE keanon_reader;

CREATE TABLE people (id bigserial PRIMARY KEY, age integer NOT NULL,
	zip text NOT NULL, salary bigint);
INSERT INTO people (age, zip, salary)
SELECT 18 + (i * 37) % 63, (10000 + (i * 7919) % 90000)::text,
	   CASE WHEN i % 50 = 0 THEN NULL ELSE ((i * 104729) % 1991 + 10) * 100 END
FROM generate_series(1, 4000) i;
SELECT keanon.watch('people', 'salary', '{age,zip}', 3, 100);

CREATE SCHEMA shop;
CREATE TABLE shop.orders (region text, order_no integer, customer_age smallint,
	amount numeric(10,2), PRIMARY KEY (region, order_no));
INSERT INTO shop.orders
SELECT (ARRAY['north', 'south', 'east', 'west'])[1 + i % 4], i, 20 + (i * 13) % 55,
	   round(((i * 7919) % 3000) * 0.37 + (i % 7) * 0.01, 2)
FROM generate_series(1, 3000) i;
SELECT keanon.watch('shop.orders', 'amount', '{region,customer_age}', 4, 12.5,
	publish_as => 'orders_published');
GRANT USAGE ON SCHEMA shop TO keanon_reader;
GRANT SELECT ON shop.orders_published TO keanon_reader;

-- changes after the watches began, and one rolled back
INSERT INTO people (age, zip, salary)
SELECT 20 + i % 40, (20000 + i)::text, 150000 + (i % 50) * 100
FROM generate_series(1, 300) i;
UPDATE people SET salary = salary + 100 WHERE id % 17 = 3;
UPDATE people SET age = age + 1 WHERE id % 19 = 4;
DELETE FROM people WHERE id % 23 = 5;
UPDATE shop.orders SET amount = amount + 0.05 WHERE order_no % 11 = 0;
DELETE FROM shop.orders WHERE order_no % 13 = 1;
INSERT INTO shop.orders
SELECT 'south', 10000 + i, 30 + i % 20, 999.99 - i * 0.5 FROM generate_series(1, 100) i;
BEGIN;
DELETE FROM people WHERE id % 3 = 0;
INSERT INTO shop.orders VALUES ('north', 99999, 40, 0.01);
ROLLBACK;
});

my %tables = (
	people => {
		view => 'people_anon',
		order => 'keanon_pid, age, zip, salary',
		sensitive => 'salary'
	},
	'shop.orders' => {
		view => 'shop.orders_published',
		order => 'keanon_pid, region, customer_age, amount',
		sensitive => 'amount'
	});

# Run a query; on an error say so and return what it printed (the test
# goes on, to report everything that differs)
sub query
{
	my ($db, $sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql($db, $sql);
	diag("in $db: $sql\n$stderr") if $ret != 0;
	return $stdout;
}

sub check_watch
{
	my ($db, $table, $label) = @_;
	is(query($db, "SELECT keanon.check('$table')"),
		't', "$label: check($table) in $db");
	return;
}

sub view_rows
{
	my ($db, $table) = @_;
	my $t = $tables{$table};
	return query($db, "SELECT * FROM $t->{view} ORDER BY $t->{order}");
}

sub partitions
{
	my ($db, $table) = @_;
	return query($db,
		"SELECT n, distinct_values, min_value, max_value, error "
		  . "FROM keanon.partitions('$table')");
}

sub partition_ids
{
	my ($db, $table) = @_;
	return query($db,
		"SELECT pid FROM keanon.partitions('$table')");
}

# The published rows and partitions against the table's rows
sub complete
{
	my ($db, $table, $label) = @_;
	my $t = $tables{$table};
	is( query(
			$db,
			"SELECT (SELECT count($t->{sensitive}) FROM $table) = "
			  . "(SELECT count(*) FROM $t->{view}) AND "
			  . "(SELECT count($t->{sensitive}) FROM $table) = "
			  . "(SELECT sum(n) FROM keanon.partitions('$table'))"),
		't',
		"$label: every row of $table in $db is published");
	return;
}

my %original;
foreach my $table (sort keys %tables)
{
	check_watch('orig', $table, 'original');
	complete('orig', $table, 'original');
	$original{$table} = {
		view => view_rows('orig', $table),
		partitions => partitions('orig', $table),
		pids => partition_ids('orig', $table)
	};
	isnt($original{$table}{partitions},
		'', "original: $table has partitions");
}

my $dump = $node->basedir . '/orig.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', 'orig' ],
	'pg_dump -Fc of a database with watched tables');

# A parallel restore runs the post-data entries in no fixed order: a
# table's triggers may come before its primary key.  A serial restore of a
# list with the post-data entries (indexes, constraints, triggers) reversed
# makes that order certain.
my ($list_out) = run_command([ 'pg_restore', '-l', $dump ]);
my @entries = split /\n/, $list_out;
my @post = grep { $entries[$_] =~ /^\d+; \d+ \d+ (?:INDEX|CONSTRAINT|TRIGGER) / }
  0 .. $#entries;
@entries[@post] = reverse @entries[@post];
my $list = $node->basedir . '/reversed.list';
open my $fh, '>', $list or die "could not write $list: $!";
print $fh join("\n", @entries), "\n";
close $fh;
my $reordered = join("\n", @entries);
cmp_ok(index($reordered, 'TRIGGER shop orders keanon_insert'),
	'<', index($reordered, 'CONSTRAINT shop orders orders_pkey'),
	'the reversed list restores the triggers of shop.orders before its primary key');

foreach my $case (
	[ 'restored', [] ],
	[ 'restored_parallel', [ '-j', '2' ] ],
	[ 'restored_reversed', [ '-L', $list ] ])
{
	my ($db, $options) = @$case;

	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->command_ok([ 'pg_restore', @$options, '-d', $db, $dump ],
		"pg_restore into $db");

	foreach my $table (sort keys %tables)
	{
		check_watch($db, $table, 'after restore');
		complete($db, $table, 'after restore');
		is(view_rows($db, $table), $original{$table}{view},
			"$db: the view of $table publishes the same rows");
		is(partitions($db, $table), $original{$table}{partitions},
			"$db: $table has the same partitions");
		is(partition_ids($db, $table), $original{$table}{pids},
			"$db: $table has the same partition ids");
	}

	# what keanon's triggers and objects look like
	is( query(
			$db, q{
SELECT string_agg(tgname || ':' || tgenabled::text, ',' ORDER BY tgname)
FROM pg_trigger WHERE tgrelid = 'shop.orders'::regclass AND NOT tgisinternal}),
		$node->safe_psql(
			'orig', q{
SELECT string_agg(tgname || ':' || tgenabled::text, ',' ORDER BY tgname)
FROM pg_trigger WHERE tgrelid = 'shop.orders'::regclass AND NOT tgisinternal}),
		"$db: the triggers of shop.orders are restored, enabled alike");
	is( query(
			$db, q{
SET ROLE keanon_reader;
SELECT count(*) > 0 FROM shop.orders_published;}),
		't',
		"$db: the role granted the view reads it");

	# the watches go on in the restored database
	query(
		$db, q{
INSERT INTO people (age, zip, salary)
SELECT 30 + i % 30, (30000 + i)::text, 500 + i * 300 FROM generate_series(1, 50) i;
UPDATE people SET salary = salary - 100 WHERE id % 29 = 7;
DELETE FROM people WHERE id % 31 = 2;
INSERT INTO shop.orders
SELECT 'east', 20000 + i, 25 + i % 30, round(i * 3.33, 2) FROM generate_series(1, 60) i;
UPDATE shop.orders SET customer_age = customer_age + 1 WHERE order_no % 37 = 0;
DELETE FROM shop.orders WHERE order_no % 41 = 3;
});
	foreach my $table (sort keys %tables)
	{
		check_watch($db, $table, 'changed after restore');
		complete($db, $table, 'changed after restore');
		isnt(view_rows($db, $table), $original{$table}{view},
			"$db: the view of $table follows the changes");
	}

	# a rolled-back change, and a truncate, in the restored database
	query(
		$db, q{
BEGIN;
DELETE FROM people WHERE id % 2 = 0;
ROLLBACK;
TRUNCATE shop.orders;
INSERT INTO shop.orders
SELECT 'west', i, 40, i * 20.25 FROM generate_series(1, 12) i;
});
	foreach my $table (sort keys %tables)
	{
		check_watch($db, $table, 'rollback and truncate after restore');
		complete($db, $table, 'rollback and truncate after restore');
	}
	is(query($db, 'SELECT count(*) FROM shop.orders_published'),
		'12', "$db: the view of shop.orders publishes the rows after TRUNCATE");
}

# A restore whose list leaves out a watched table's primary key (as one
# stopped between its data and post-data sections would): drops elsewhere,
# and of another watched table, go on; the key made later, the watch works
my @keyless = grep { !/CONSTRAINT shop orders orders_pkey / } split /\n/, $list_out;
my $keyless_list = $node->basedir . '/keyless.list';
open $fh, '>', $keyless_list or die "could not write $keyless_list: $!";
print $fh join("\n", @keyless), "\n";
close $fh;
$node->safe_psql('postgres', 'CREATE DATABASE restored_keyless');
$node->command_ok([ 'pg_restore', '-L', $keyless_list, '-d', 'restored_keyless', $dump ],
	'pg_restore into restored_keyless, without the key of shop.orders');
is( query(
		'restored_keyless', q{
CREATE TABLE unrelated (a integer PRIMARY KEY);
DROP TABLE unrelated;
DROP TABLE people;
SELECT count(*) FROM keanon.watches;}),
	'1',
	'restored_keyless: other drops, and of another watched table, go on');
is( query(
		'restored_keyless',
		'ALTER TABLE shop.orders ADD PRIMARY KEY (region, order_no); '
		  . "INSERT INTO shop.orders VALUES ('north', 77777, 33, 5.55); "
		  . "SELECT keanon.check('shop.orders')"),
	't',
	'restored_keyless: with its key made, the watch of shop.orders works');

# last: every watch of every database
foreach my $db (qw(orig restored restored_parallel restored_reversed))
{
	foreach my $table (sort keys %tables)
	{
		check_watch($db, $table, 'at the end');
	}
}

$node->stop;

done_testing();
