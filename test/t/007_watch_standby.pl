
# Watched tables on a streaming standby.
#
# Rounds of changes to two watched tables on the primary: committed
# inserts, updates (of the sensitive value, of a quasi-identifier, of the
# key) and deletes; a transaction rolled back; savepoints; a transaction
# failing with an error; TRUNCATE; COPY; a large batch; republish.  After
# each round keanon.check runs on the primary (which repairs a keanon index
# left by an aborted change), the standby replays up to the primary's WAL
# position, and there the published views, keanon.partitions and the bound
# aggregates must be those of the primary, and keanon.check must hold too.
#
# Before the primary repairs an index left by a rolled-back change, the
# standby still reads the published view, the partitions and the bounds
# (ordinary tables), which are those of the primary; keanon.check there
# refuses to read the index until the repair has been replayed.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;

$primary->safe_psql(
	'postgres', q{
CREATE EXTENSION keanon;

CREATE TABLE people (id bigserial PRIMARY KEY, age integer NOT NULL,
	zip text NOT NULL, salary bigint);
INSERT INTO people (age, zip, salary)
SELECT 18 + (i * 37) % 63, (10000 + (i * 7919) % 90000)::text,
	   CASE WHEN i % 50 = 0 THEN NULL ELSE ((i * 104729) % 1991 + 10) * 100 END
FROM generate_series(1, 3000) i;
SELECT keanon.watch('people', 'salary', '{age,zip}', 3, 100);

CREATE TABLE orders (order_no integer PRIMARY KEY, region text NOT NULL,
	amount numeric(10,2));
INSERT INTO orders
SELECT i, (ARRAY['north', 'south', 'east', 'west'])[1 + i % 4],
	   round(((i * 7919) % 2000) * 0.37 + (i % 7) * 0.01, 2)
FROM generate_series(1, 1500) i;
SELECT keanon.watch('orders', 'amount', '{region}', 4, 12.5);
});

my %tables = (
	people => {
		view => 'people_anon',
		order => 'keanon_pid, age, zip, salary',
		group => 'age / 10'
	},
	orders => {
		view => 'orders_anon',
		order => 'keanon_pid, region, amount',
		group => 'region'
	});

$primary->backup('bkp');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bkp', has_streaming => 1);
$standby->start;

# Run SQL as a test: a failure is reported and the rounds after it still
# run.  Returns the output.
sub query_ok
{
	my ($node, $sql, $label) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql);
	is($ret, 0, $label) or diag("$sql\n$stderr");
	return $stdout;
}

# What a reader sees of a watched table: the published rows, the partitions
# and the bounds of its groups
sub published
{
	my ($node, $table, $label) = @_;
	my $t = $tables{$table};
	my $name = $node->name;
	return join(
		"\n---\n",
		query_ok(
			$node,
			"SELECT * FROM $t->{view} ORDER BY $t->{order}",
			"$label: the view of $table reads on the $name"),
		query_ok(
			$node,
			"SELECT * FROM keanon.partitions('$table')",
			"$label: the partitions of $table read on the $name"),
		query_ok(
			$node, qq{
SELECT $t->{group}, count(*), keanon.sum_bounds(keanon_pid),
	   keanon.min_bounds(keanon_pid), keanon.max_bounds(keanon_pid)
FROM $t->{view} GROUP BY 1 ORDER BY 1},
			"$label: the bounds over $table read on the $name"));
}

sub check_on
{
	my ($node, $table, $label) = @_;
	is( query_ok(
			$node,
			"SELECT keanon.check('$table')",
			"$label: check($table) runs on the " . $node->name),
		't',
		"$label: check($table) on the " . $node->name);
	return;
}

# Check on the primary, let the standby replay, compare, check there
sub check_round
{
	my ($label) = @_;
	my %on_primary;

	foreach my $table (sort keys %tables)
	{
		check_on($primary, $table, $label);
		$on_primary{$table} = published($primary, $table, $label);
		is( query_ok(
				$primary,
				"SELECT (SELECT count(*) FROM $tables{$table}{view}) = "
				  . "coalesce((SELECT sum(n) FROM keanon.partitions('$table')), 0)",
				"$label: counts of $table on the primary"),
			't',
			"$label: every published row of $table is in a partition");
	}
	$primary->wait_for_catchup($standby);
	foreach my $table (sort keys %tables)
	{
		is(published($standby, $table, $label),
			$on_primary{$table},
			"$label: the standby publishes $table as the primary does");
		check_on($standby, $table, $label);
	}
	return;
}

check_round('after the base backup');

# ----------------------------------------------------------------
# Committed changes of every kind, in one transaction
# ----------------------------------------------------------------
query_ok(
	$primary, q{
BEGIN;
INSERT INTO people (age, zip, salary)
SELECT 20 + i % 40, (20000 + i)::text, 150000 + (i % 50) * 100
FROM generate_series(1, 300) i;
UPDATE people SET salary = salary + 100 WHERE id % 17 = 3;
UPDATE people SET age = age + 1, zip = zip || 'x' WHERE id % 19 = 4;
UPDATE people SET id = id + 100000 WHERE id % 23 = 6;
DELETE FROM people WHERE id % 29 = 5;
UPDATE orders SET amount = amount + 0.05 WHERE order_no % 11 = 0;
DELETE FROM orders WHERE order_no % 13 = 1;
INSERT INTO orders SELECT 10000 + i, 'south', 999.99 - i * 0.5
FROM generate_series(1, 100) i;
COMMIT;
},
	'commit: the changes run');
check_round('commit');

# ----------------------------------------------------------------
# A rolled-back transaction; the standby reads the publication before the
# primary repairs the keanon indexes
# ----------------------------------------------------------------
my %before_rollback;
foreach my $table (sort keys %tables)
{
	$before_rollback{$table} = published($primary, $table, 'before rollback');
}
query_ok(
	$primary, q{
BEGIN;
INSERT INTO people (age, zip, salary)
SELECT 30, (40000 + i)::text, i * 7 FROM generate_series(1, 500) i;
DELETE FROM people WHERE id % 3 = 0;
UPDATE orders SET amount = amount * 2 WHERE order_no % 5 = 2;
ROLLBACK;
},
	'rollback: the changes run');
# an abort record is inserted without waiting for its flush: wait for the
# standby to replay up to the insert position, past it
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
foreach my $table (sort keys %tables)
{
	is(published($standby, $table, 'rollback, before the repair'),
		$before_rollback{$table},
		"rollback, before the repair: the standby publishes $table as before");

	# only the primary can rebuild the keanon index: check waits for that
	my ($ret, $stdout, $stderr) =
	  $standby->psql('postgres', "SELECT keanon.check('$table')");
	isnt($ret, 0,
		"rollback, before the repair: check($table) fails on the standby");
	like(
		$stderr,
		qr/keanon index "${table}_keanon_idx" is waiting to be repaired on the primary/,
		"rollback, before the repair: check($table) on the standby names the repair"
	);
}
check_round('rollback');

# ----------------------------------------------------------------
# Savepoints: one rolled back, one released, the whole committed
# ----------------------------------------------------------------
query_ok(
	$primary, q{
BEGIN;
INSERT INTO people (age, zip, salary)
SELECT 25 + i % 30, (50000 + i)::text, 1000 + i * 100 FROM generate_series(1, 200) i;
SAVEPOINT a;
UPDATE people SET salary = salary + 1 WHERE id % 7 = 1;
DELETE FROM orders WHERE order_no % 3 = 0;
ROLLBACK TO SAVEPOINT a;
DELETE FROM people WHERE id % 31 = 8;
SAVEPOINT b;
INSERT INTO orders SELECT 20000 + i, 'east', round(i * 3.33, 2)
FROM generate_series(1, 80) i;
RELEASE SAVEPOINT b;
UPDATE orders SET region = 'west' WHERE order_no % 17 = 2;
COMMIT;
},
	'savepoints: the changes run');
check_round('savepoints');

# ----------------------------------------------------------------
# A transaction failing with an error after its changes
# ----------------------------------------------------------------
{
	my ($ret, $stdout, $stderr) = $primary->psql(
		'postgres', q{
BEGIN;
INSERT INTO people (age, zip, salary) VALUES (40, '99999', 424200);
UPDATE orders SET amount = amount + 1 WHERE order_no % 9 = 1;
SELECT 1 / 0;
COMMIT;
});
	like($stderr, qr/division by zero/, 'error: the transaction failed');
}
check_round('error');

# ----------------------------------------------------------------
# TRUNCATE: alone (nothing is published), then with rows in the same
# transaction; COPY
# ----------------------------------------------------------------
query_ok($primary, 'TRUNCATE orders;', 'truncate: the table is emptied');
is(query_ok($primary, 'SELECT count(*) FROM orders_anon', 'truncate: count'),
	'0', 'truncate: nothing is published');
check_round('truncate');

query_ok(
	$primary, q{
BEGIN;
INSERT INTO orders SELECT i, 'north', i * 10.25 FROM generate_series(1, 20) i;
TRUNCATE orders;
INSERT INTO orders SELECT i, 'south', 5 + i * 2.5 FROM generate_series(1, 30) i;
COPY orders (order_no, region, amount) FROM stdin;
101	east	17.50
102	east	17.50
103	west	\N
104	west	250.00
\.
COMMIT;
},
	'truncate and refill: the changes run');
is(query_ok($primary, 'SELECT count(*) FROM orders_anon', 'refill: count'),
	'33', 'truncate and refill: the new rows are published');
check_round('truncate and refill');

# ----------------------------------------------------------------
# A large batch, and republish
# ----------------------------------------------------------------
query_ok(
	$primary, q{
INSERT INTO people (age, zip, salary)
SELECT 18 + (i * 13) % 63, (60000 + i)::text, ((i * 7907) % 3000 + 1) * 50
FROM generate_series(1, 20000) i;
DELETE FROM people WHERE id % 11 = 0;
},
	'large batch: the changes run');
check_round('large batch');

query_ok($primary, "SELECT keanon.republish('people')",
	'republish: runs');
check_round('republish');

# ----------------------------------------------------------------
# The standby cannot change a watched table
# ----------------------------------------------------------------
{
	my ($ret, $stdout, $stderr) = $standby->psql('postgres',
		"INSERT INTO people (age, zip, salary) VALUES (50, '1', 1)");
	isnt($ret, 0, 'an insert on the standby fails');
	like($stderr, qr/read-only transaction/,
		'an insert on the standby is refused as a write');
}
check_round('at the end');

$standby->stop;
$primary->stop;

done_testing();
