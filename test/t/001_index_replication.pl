
# keanon indexes on a streaming standby.
#
# Rounds of changes on the primary, each made to a table and, in the same
# transaction, to its keanon indexes through keanon.index_apply (as keanon's
# triggers will).  Some rounds commit, some roll back, one uses savepoints,
# one fails with an error, then REINDEX and VACUUM.  After each round the
# standby replays up to the primary's WAL position, and both nodes must hold
# the same partitions, equal to a recomputation from the table.
#
# A rolled-back change leaves an index that only the primary can repair: the
# standby must refuse to read it until the repair has been replayed.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;

# ----------------------------------------------------------------
# Tables, indexes and a helper, all made on the primary
# ----------------------------------------------------------------

# Values with duplicates and a few NULLs (which the indexes skip).  The
# double precision values are multiples of 1/8, exact as numeric too.
$primary->safe_psql(
	'postgres', q{
CREATE EXTENSION keanon;

CREATE TABLE t_int (id bigserial PRIMARY KEY, v bigint);
INSERT INTO t_int (v)
SELECT CASE WHEN i % 97 = 0 THEN NULL ELSE ((i * 7919) % 1500) * 100 END
FROM generate_series(1, 4000) i;

CREATE TABLE t_num (id bigserial PRIMARY KEY, v numeric(10,2));
INSERT INTO t_num (v)
SELECT round(((i * 37) % 900) * 1.13 + (i % 3) * 0.01, 2)
FROM generate_series(1, 3000) i;

CREATE TABLE t_dbl (id bigserial PRIMARY KEY, v double precision);
INSERT INTO t_dbl (v)
SELECT CASE WHEN i % 211 = 0 THEN NULL ELSE ((i * 53) % 700) * 0.125 END
FROM generate_series(1, 2500) i;

CREATE INDEX i_int_a ON t_int USING keanon (v) WITH (k = 3, e = 2000);
CREATE INDEX i_int_b ON t_int USING keanon (v) WITH (k = 7, e = 500);
CREATE INDEX i_num ON t_num USING keanon (v) WITH (k = 4, e = 25.5);
CREATE INDEX i_dbl ON t_dbl USING keanon (v) WITH (k = 5, e = 3);

-- Apply a batch of changes to every keanon index of a table
CREATE FUNCTION apply_all(tab regclass, vals numeric[], deltas bigint[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	idx regclass;
BEGIN
	FOR idx IN
		SELECT x.indexrelid::regclass
		FROM pg_index x
		JOIN pg_class c ON c.oid = x.indexrelid
		JOIN pg_am a ON a.oid = c.relam
		WHERE x.indrelid = tab AND a.amname = 'keanon'
		ORDER BY 1
	LOOP
		PERFORM keanon.index_apply(idx, vals, deltas);
	END LOOP;
END
$$;
});

my @indexes = qw(i_int_a i_int_b i_num i_dbl);

# Statements that change a table and its keanon indexes alike.  $where
# selects the rows deleted or updated; the rows inserted are generated.
# As keanon's triggers do, the index is changed first and the table after:
# an index that must first repair itself from the table then sees the
# table without the change it is about to apply.
sub insert_rows
{
	my ($table, $expr, $from, $to) = @_;
	return qq{
SELECT apply_all('$table', array_agg(v::numeric), array_agg(1::bigint))
FROM (SELECT $expr AS v FROM generate_series($from, $to) i) ins WHERE v IS NOT NULL;
INSERT INTO $table (v) SELECT $expr FROM generate_series($from, $to) i;
};
}

sub delete_rows
{
	my ($table, $where) = @_;
	return qq{
SELECT apply_all('$table', array_agg(v::numeric), array_agg(-1::bigint))
FROM $table WHERE ($where) AND v IS NOT NULL;
DELETE FROM $table WHERE $where;
};
}

sub update_rows
{
	my ($table, $set, $where) = @_;
	return qq{
SELECT apply_all('$table', array_agg(c.val::numeric), array_agg(c.delta))
FROM $table t, LATERAL (VALUES (t.v, -1::bigint), ($set, 1::bigint)) c(val, delta)
WHERE ($where) AND c.val IS NOT NULL;
UPDATE $table t SET v = $set WHERE $where;
};
}

# Run SQL on a node as a test: a failure is reported, and the rounds after
# it still run.  Returns the output.
sub query_ok
{
	my ($node, $sql, $label) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql);
	is($ret, 0, $label) or diag("$sql\n$stderr");
	return $stdout;
}

# Check every index on the primary (which repairs one left by an aborted
# transaction), let the standby replay that, then check it there too and
# compare the partitions.
my $standby;

sub check_round
{
	my ($label) = @_;
	my %on_primary;

	foreach my $index (@indexes)
	{
		is( query_ok(
				$primary, "SELECT keanon.index_check('$index')",
				"$label: index_check($index) runs on the primary"),
			't',
			"$label: $index matches its table on the primary");
		$on_primary{$index} = query_ok(
			$primary,
			"SELECT * FROM keanon.index_partitions('$index')",
			"$label: index_partitions($index) runs on the primary");
		isnt($on_primary{$index}, '',
			"$label: $index has partitions on the primary");
	}
	$primary->wait_for_catchup($standby);
	foreach my $index (@indexes)
	{
		is( query_ok(
				$standby, "SELECT keanon.index_check('$index')",
				"$label: index_check($index) runs on the standby"),
			't',
			"$label: $index matches its table on the standby");
		is( query_ok(
				$standby,
				"SELECT * FROM keanon.index_partitions('$index')",
				"$label: index_partitions($index) runs on the standby"),
			$on_primary{$index},
			"$label: $index has the same partitions on both nodes");
	}
	return;
}

# ----------------------------------------------------------------
# The standby, from a backup taken after the builds
# ----------------------------------------------------------------
$primary->backup('bkp');
$standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bkp', has_streaming => 1);
$standby->start;

check_round('after build');

# ----------------------------------------------------------------
# Committed changes to all three tables in one transaction
# ----------------------------------------------------------------
query_ok($primary,
	"BEGIN;\n"
	  . insert_rows('t_int', '((i * 31) % 1700) * 100', 1, 600)
	  . delete_rows('t_int', 'id % 17 = 3')
	  . update_rows('t_int', 't.v + 50', 'id % 23 = 5')
	  . insert_rows('t_num', 'round((i % 500) * 2.07, 2)', 1, 400)
	  . update_rows('t_num', 't.v - 0.25', 'id % 11 = 0')
	  . insert_rows('t_dbl', '(i % 333) * 0.25', 1, 300)
	  . delete_rows('t_dbl', 'id % 13 = 1')
	  . "COMMIT;",
	"commit: the changes run");
check_round('commit');

# ----------------------------------------------------------------
# The same kind of changes, rolled back
# ----------------------------------------------------------------
query_ok($primary,
	"BEGIN;\n"
	  . insert_rows('t_int', '((i * 13) % 900) * 100 + 7', 1, 700)
	  . update_rows('t_int', 't.v * 2', 'id % 7 = 2')
	  . delete_rows('t_num', 'id % 5 = 4')
	  . insert_rows('t_dbl', '1000 + i * 0.5', 1, 200)
	  . "ROLLBACK;",
	"rollback: the changes run");
check_round('rollback');

# ----------------------------------------------------------------
# Before the primary repairs a rolled-back change, the standby refuses to
# read the index; after the repair replays, it reads it again
# ----------------------------------------------------------------
query_ok($primary,
	"BEGIN;\n"
	  . delete_rows('t_num', 'id % 3 = 0')
	  . insert_rows('t_num', 'round(i * 0.37, 2)', 1, 250)
	  . "ROLLBACK;",
	'rollback left unrepaired: the changes run');
# an abort record is not flushed at once: wait for it by its insert position,
# or the standby may still see the transaction in progress
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

foreach my $query (
	"SELECT * FROM keanon.index_partitions('i_num')",
	"SELECT keanon.index_check('i_num')")
{
	my ($ret, $stdout, $stderr) = $standby->psql('postgres', $query);
	isnt($ret, 0, "standby refuses an unrepaired index: $query");
	like(
		$stderr,
		qr/keanon index "i_num" is waiting to be repaired on the primary/,
		"standby names the repair it waits for: $query");
}

# the other tables' indexes were not touched and stay readable
is( query_ok(
		$standby, "SELECT keanon.index_check('i_int_a')",
		'index_check(i_int_a) runs on the standby'),
	't',
	'standby reads an index the rollback did not touch');

# a standby cannot change an index
{
	my ($ret, $stdout, $stderr) = $standby->psql('postgres',
		"SELECT keanon.index_apply('i_int_a', '{100}', '{1}')");
	isnt($ret, 0, 'index_apply fails on the standby');
	like($stderr, qr/recovery|read-only/,
		'index_apply on the standby is refused as a write during recovery');
}

check_round('repair of a rollback');

# ----------------------------------------------------------------
# Savepoints: one rolled back, one released, the whole committed
# ----------------------------------------------------------------
query_ok($primary,
	"BEGIN;\n"
	  . insert_rows('t_int', '((i * 17) % 1200) * 100', 1, 300)
	  . "SAVEPOINT a;\n"
	  . update_rows('t_int', 't.v + 1', 'id % 19 = 4')
	  . insert_rows('t_num', 'round(i * 1.01, 2)', 1, 200)
	  . "ROLLBACK TO SAVEPOINT a;\n"
	  . delete_rows('t_int', 'id % 29 = 8')
	  . "SAVEPOINT b;\n"
	  . insert_rows('t_dbl', '(i % 77) * 0.375', 1, 150)
	  . "RELEASE SAVEPOINT b;\n"
	  . update_rows('t_num', 't.v + 10', 'id % 31 = 2')
	  . "COMMIT;",
	"savepoints: the changes run");
check_round('savepoints');

# ----------------------------------------------------------------
# A transaction that fails with an error after changing the indexes
# ----------------------------------------------------------------
{
	my ($ret, $stdout, $stderr) = $primary->psql('postgres',
		"BEGIN;\n"
		  . insert_rows('t_int', '((i * 3) % 400) * 100', 1, 400)
		  . update_rows('t_dbl', 't.v + 0.5', 'id % 9 = 1')
		  . "SELECT 1 / 0;\n"
		  . "COMMIT;");
	like($stderr, qr/division by zero/, 'the failing transaction failed');
}
check_round('error');

# ----------------------------------------------------------------
# A large committed batch, touching many pages
# ----------------------------------------------------------------
query_ok($primary,
	"BEGIN;\n"
	  . insert_rows('t_int', '(i % 15000) * 10 + 3', 1, 20000)
	  . "COMMIT;",
	"large batch: the changes run");
check_round('large batch');

# ----------------------------------------------------------------
# REINDEX, after a committed change
# ----------------------------------------------------------------
query_ok($primary,
	"BEGIN;\n"
	  . delete_rows('t_int', 'id % 41 = 0')
	  . insert_rows('t_num', 'round(i * 0.77, 2)', 1, 300)
	  . "COMMIT;\n"
	  . "REINDEX INDEX i_int_a;\n"
	  . "REINDEX TABLE t_num;",
	"reindex: the changes run");
check_round('reindex');

# ----------------------------------------------------------------
# VACUUM after deletes and updates, then changes again
# ----------------------------------------------------------------
query_ok($primary,
	"BEGIN;\n"
	  . delete_rows('t_int', 'id % 6 = 1')
	  . update_rows('t_dbl', 't.v + 1', 'id % 4 = 3')
	  . delete_rows('t_num', 'id % 8 = 5')
	  . "COMMIT;\n"
	  . "VACUUM t_int, t_num, t_dbl;",
	"vacuum: the changes run");
check_round('vacuum');

query_ok($primary,
	"BEGIN;\n"
	  . insert_rows('t_int', '((i * 101) % 2000) * 100', 1, 500)
	  . update_rows('t_num', 't.v + 0.01', 'id % 10 = 0')
	  . insert_rows('t_dbl', '(i % 50) * 0.125', 1, 100)
	  . "COMMIT;",
	"after vacuum: the changes run");
check_round('after vacuum');

$standby->stop;
$primary->stop;

done_testing();
