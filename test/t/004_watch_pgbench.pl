
# A watched table under concurrent writers: pgbench.
#
# Four clients run, for KEANON_PGBENCH_SECONDS seconds (default 60), a mix of
# single-statement transactions on a watched table under READ COMMITTED:
# inserts of one and of several rows (new keys from the table's sequence),
# updates of the salary (also to and from NULL), of the age (a
# quasi-identifier), of both over a range of keys, and deletes of one key
# and of a range, all on random keys.  A few transactions read the published
# view meanwhile and assert, inside the server, that the bound aggregates
# contain the true aggregates of the same snapshot; fewer still run
# keanon.check while the others write.
#
# Writers of a watched table queue on its keanon lock, so no transaction
# may fail: pgbench must exit 0 and report no failed transaction.
#
# The same run is made on a deferred watch, whose writers do not queue and
# whose background worker flushes (every 50 ms while idle) during the run,
# as keanon.check does concurrently; its readers assert that the view
# publishes a committed state (its bounds hold for the rows of the last
# flush, which the view itself cannot tell apart, so they assert that every
# published partition is valid instead).  After the run the worker catches
# up and the same checks hold.
# Afterwards keanon.check holds, and no row is lost: every row with a
# salary is published once, with the same quasi-identifiers, and the
# published salaries are the true ones permuted.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $seconds = $ENV{KEANON_PGBENCH_SECONDS} // 60;
die "KEANON_PGBENCH_SECONDS must be a positive integer\n"
  unless $seconds =~ /^[1-9][0-9]*$/;

my $node = PostgreSQL::Test::Cluster->new('node');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
max_connections = 20
log_min_messages = warning
keanon.flush_naptime = 50ms
});
$node->start;

# Salaries are multiples of 100 (many runs of equal values), one row in 50
# has none
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION keanon;

-- Raise an error unless the bound aggregates over the rows of ages lo..hi
-- contain the true aggregates, read in one statement (one snapshot)
CREATE FUNCTION bounds_hold(lo integer, hi integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	t_n bigint;
	t_sum numeric;
	t_min numeric;
	t_max numeric;
	p_n bigint;
	b_sum numrange;
	b_min numrange;
	b_max numrange;
BEGIN
	SELECT t.n, t.s, t.mi, t.ma, p.n, p.bs, p.bmi, p.bma
	INTO t_n, t_sum, t_min, t_max, p_n, b_sum, b_min, b_max
	FROM (SELECT count(salary) AS n, sum(salary) AS s, min(salary) AS mi,
				 max(salary) AS ma
		  FROM people WHERE age BETWEEN lo AND hi) t,
		 (SELECT count(*) AS n, keanon.sum_bounds(keanon_pid) AS bs,
				 keanon.min_bounds(keanon_pid) AS bmi,
				 keanon.max_bounds(keanon_pid) AS bma
		  FROM people_anon WHERE age BETWEEN lo AND hi) p;
	IF t_n <> p_n THEN
		RAISE EXCEPTION 'ages %..%: % rows with a salary, % published',
			lo, hi, t_n, p_n;
	END IF;
	IF t_n > 0 AND NOT (b_sum @> t_sum AND b_min @> t_min AND b_max @> t_max)
	THEN
		RAISE EXCEPTION 'ages %..%: sum % min % max % outside % % %',
			lo, hi, t_sum, t_min, t_max, b_sum, b_min, b_max;
	END IF;
	RETURN true;
END
$$;
});

# Valid partitions that publish exactly their rows' values: what a reader
# of a deferred watch can hold the view to while writers run ahead of it
$node->safe_psql(
	'postgres', q{
CREATE FUNCTION published_valid() RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	bad bigint;
BEGIN
	SELECT count(*) INTO bad
	FROM keanon.partitions('people') p
	LEFT JOIN (SELECT keanon_pid, count(*) AS n, count(DISTINCT salary) AS d,
					  min(salary) AS mi, max(salary) AS ma
			   FROM people_anon GROUP BY keanon_pid) v ON v.keanon_pid = p.pid
	WHERE v.n IS DISTINCT FROM p.n OR v.d IS DISTINCT FROM p.distinct_values
	   OR v.mi IS DISTINCT FROM p.min_value OR v.ma IS DISTINCT FROM p.max_value
	   OR p.distinct_values < 3 OR p.max_value - p.min_value < 100;
	IF bad > 0 THEN
		RAISE EXCEPTION '% published partitions are not valid', bad;
	END IF;
	RETURN true;
END
$$;
});

# Run everything on a watch of the mode given
sub run_mode
{
	my ($mode) = @_;

	$node->safe_psql(
		'postgres', q{
DROP TABLE IF EXISTS people;
CREATE TABLE people (id bigserial PRIMARY KEY, age integer NOT NULL,
	zip text NOT NULL, salary bigint);
INSERT INTO people (age, zip, salary)
SELECT 18 + (i * 37) % 63, (10000 + (i * 7919) % 90000)::text,
	   CASE WHEN i % 50 = 0 THEN NULL ELSE ((i * 104729) % 1991 + 10) * 100 END
FROM generate_series(1, 5000) i;
	});
	is( $node->safe_psql(
			'postgres',
			"SELECT keanon.watch('people', 'salary', '{age,zip}', 3, 100, mode => '$mode')"),
		'people_anon',
		"$mode: people is watched");
	is($node->safe_psql('postgres', "SELECT keanon.check('people')"),
		't', "$mode: check before the run");

	# ----------------------------------------------------------------
	# The run
	# ----------------------------------------------------------------

	# Writers: one statement a transaction, keys drawn up to the sequence's
	# last value (rows deleted earlier make some statements change nothing)
	my $writes = q{
\set op random(1, 100)
\set sal random(10, 2000) * 100
\set age random(18, 80)
\set zip random(10000, 99999)
\set nrows random(2, 8)
SELECT last_value AS maxid FROM people_id_seq \gset
\set id random(1, :maxid)
\if :op <= 25
INSERT INTO people (age, zip, salary) VALUES (:age, (:zip)::text, :sal);
\elif :op <= 30
INSERT INTO people (age, zip, salary)
SELECT 18 + (:age + i) % 63, (:zip + i)::text, :sal + (i % 3) * 100
FROM generate_series(1, :nrows) i;
\elif :op <= 32
INSERT INTO people (age, zip, salary) VALUES (:age, (:zip)::text, NULL);
\elif :op <= 50
UPDATE people SET salary = :sal WHERE id = :id;
\elif :op <= 62
UPDATE people SET age = :age WHERE id = :id;
\elif :op <= 66
UPDATE people SET salary = CASE WHEN salary IS NULL THEN :sal END WHERE id = :id;
\elif :op <= 70
UPDATE people SET salary = salary + 100, age = 18 + (age + 1) % 63
WHERE id BETWEEN :id AND :id + :nrows;
\elif :op <= 96
DELETE FROM people WHERE id = :id;
\else
DELETE FROM people WHERE id BETWEEN :id AND :id + :nrows;
\endif
	};

	# Readers of the view: bounds against the truth of the same snapshot (a
	# deferred view publishes the last flush: its partitions are checked)
	my $reads = $mode eq 'live' ? q{
\set lo random(18, 75)
\set width random(0, 20)
SELECT bounds_hold(:lo, :lo + :width);
	} : q{
SELECT published_valid();
SELECT pending >= 0 FROM keanon.status('people');
	};

	my $checks = q{
SELECT keanon.check('people');
	};

	# script, weight
	my @scripts = (
		[ 'watch_writes.sql', $writes, 60 ],
		[ 'watch_reads.sql', $reads, 6 ],
		[ 'watch_check.sql', $checks, 1 ]);
	my @script_options;
	foreach my $script (@scripts)
	{
		my ($name, $text, $weight) = @$script;
		my $file = $node->basedir . "/$mode-$name";
		append_to_file($file, $text);
		push @script_options, '-f', "$file\@$weight";
	}

	my @pgbench = (
		'pgbench', '-n', '-c', '4', '-j', '2', '-T', $seconds,
		'-h', $node->host, '-p', $node->port, @script_options, 'postgres');
	my ($out, $err) = ('', '');
	my $started = time;
	IPC::Run::run(\@pgbench, '>', \$out, '2>', \$err);
	my $status = $? >> 8;
	note('pgbench ran for ' . (time - $started) . " s\n$out");

	is($status, 0, "$mode: pgbench exits 0");
	is($err, '', "$mode: pgbench reports no error");
	like(
		$out,
		qr/^number of failed transactions: 0 \(0\.000%\)$/m, "$mode: no transaction failed (no serialization failure, no deadlock)");
	my ($processed) = $out =~ /^number of transactions actually processed: (\d+)/m;
	ok(defined $processed && $processed > 0, "$mode: pgbench processed transactions")
	  or diag($out);
	unlike($out, qr/aborted/, "$mode: no client aborted");
	ok(!$node->log_contains(qr/ERROR:/), "$mode: the server logged no error");

	# ----------------------------------------------------------------
	# After the run: check, and no row lost
	# ----------------------------------------------------------------
	if ($mode eq 'deferred')
	{
		# the worker catches up by itself
		is( $node->safe_psql(
				'postgres', q{
DO $$
BEGIN
	FOR i IN 1 .. 6000 LOOP
		EXIT WHEN (SELECT pending FROM keanon.status('people')) = 0;
		PERFORM pg_sleep(0.01);
	END LOOP;
END;
$$;
SELECT pending FROM keanon.status('people');}),
		'0', "$mode: the worker applied every change after the run");
	}
	is($node->safe_psql('postgres', "SELECT keanon.check('people')"),
		't', "$mode: check after the run");

	my $with_salary = $node->safe_psql('postgres',
		'SELECT count(*) FROM people WHERE salary IS NOT NULL');
	cmp_ok($with_salary, '>', 1000, "$mode: rows with a salary remain");
	note("rows with a salary after the run: $with_salary");
	is( $node->safe_psql(
			'postgres', 'SELECT count(*) > 0 FROM keanon.partitions(\'people\')'),
		't', "$mode: a valid partitioning exists");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM people_anon'),
		$with_salary, "$mode: every row with a salary is published");
	is( $node->safe_psql(
			'postgres', "SELECT sum(n) FROM keanon.partitions('people')"),
		$with_salary, "$mode: the partitions hold every row with a salary");

	# the same rows: quasi-identifiers and salaries, as multisets
	is( $node->safe_psql(
			'postgres', q{
SELECT count(*) FROM (
	(SELECT age, zip FROM people WHERE salary IS NOT NULL
	 EXCEPT ALL SELECT age, zip FROM people_anon)
	UNION ALL
	(SELECT age, zip FROM people_anon
	 EXCEPT ALL SELECT age, zip FROM people WHERE salary IS NOT NULL)) d}),
		'0',
		"$mode: the view publishes the quasi-identifiers of exactly the rows with a salary"
	);
	is( $node->safe_psql(
			'postgres', q{
SELECT count(*) FROM (
	(SELECT salary FROM people WHERE salary IS NOT NULL
	 EXCEPT ALL SELECT salary FROM people_anon)
	UNION ALL
	(SELECT salary FROM people_anon
	 EXCEPT ALL SELECT salary FROM people WHERE salary IS NOT NULL)) d}),
		'0', "$mode: the published salaries are the true salaries permuted");

	# each partition publishes a permutation of its own rows' true salaries
	is( $node->safe_psql(
			'postgres', q{
SELECT count(*) FROM keanon.partitions('people') p
JOIN (SELECT keanon_pid, count(*) AS n, count(DISTINCT salary) AS d,
			 min(salary) AS mi, max(salary) AS ma
	  FROM people_anon GROUP BY keanon_pid) v ON v.keanon_pid = p.pid
WHERE v.n = p.n AND v.d = p.distinct_values AND v.mi = p.min_value
	AND v.ma = p.max_value AND p.distinct_values >= 3
	AND p.max_value - p.min_value >= 100}),
		$node->safe_psql('postgres',
			"SELECT count(*) FROM keanon.partitions('people')"),
		"$mode: every partition is valid and matches its published rows");

	# the bounds over the whole table, and over every age
	is($node->safe_psql('postgres', 'SELECT bounds_hold(0, 1000)'),
		't', "$mode: the bounds over all rows contain the truth");
	is( $node->safe_psql(
			'postgres',
			'SELECT bool_and(bounds_hold(a, a)) FROM generate_series(18, 80) a'),
		't', "$mode: the bounds over each age contain the truth");

	# the watch goes on after the run
	$node->safe_psql(
		'postgres', q{
INSERT INTO people (age, zip, salary) VALUES (40, '12345', 77700), (41, '12346', 77700);
DELETE FROM people WHERE id IN (SELECT id FROM people ORDER BY id LIMIT 10);
UPDATE people SET salary = salary + 100 WHERE id % 97 = 0;
	});
	$node->safe_psql('postgres', "SELECT keanon.flush('people')");
	is($node->safe_psql('postgres', "SELECT keanon.check('people')"),
		't', "$mode: check at the end");
	$node->safe_psql('postgres', "SELECT keanon.unwatch('people')");
	return;
}

run_mode('live');
run_mode('deferred');

$node->stop;

done_testing();
