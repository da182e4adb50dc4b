
# No role can crash the server or make keanon read its memory.
#
# The attacker is an ordinary role that owns a watched table (any role
# with CREATE on a schema can).  The server runs with MALLOC_PERTURB_, so
# that memory freed too early is overwritten rather than read back intact.
#
# 1. The owner reshapes the internal tables: a column of the rows table
#    retyped to match a same-named column of another type in the watched
#    table (the address leak), a column of the partitions table retyped
#    (the crash), an array of values retyped.  Each ALTER is refused by
#    keanon's event trigger; with the event trigger disabled (as a superuser
#    restoring a dump might have it), every later write, flush and bound
#    aggregate over the reshaped table fails with an error naming the
#    table, and nothing is written.
# 2. An invalidation storm during maintenance: a writer blocks on a lock of
#    the rows table after loading its watch, while other sessions GRANT on
#    unrelated tables; the writer then finishes with its cached watch
#    intact.
# 3. A plain role with row_security off (as every pg_dump script sets it)
#    creates and drops tables in a database with keanon: its event
#    triggers read keanon.watches under row security, not as the caller.
#
# 4. A reader's bound sums that leave 128 bits (double precision values
#    always do, numeric ones past 2^127): the numeric part of the sum must
#    outlive each watch's SPI connection, over one view and over two.
#
# After each part the server has not restarted (the postmaster's start
# time and every backend survive) and keanon.check holds where the watch
# is intact.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

$ENV{MALLOC_PERTURB_} = '165';

my $node = PostgreSQL::Test::Cluster->new('node');
$node->init;
$node->append_conf('postgresql.conf', "keanon.worker = off\n");
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION keanon;
CREATE EXTENSION cube;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT CREATE ON SCHEMA public TO alice, bob;
CREATE TABLE unrelated (x int);});

my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

sub alive
{
	my ($what) = @_;
	is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'),
		$started, "$what: the server did not restart");
}

# A salary table of alice's, watched as in the research's example
sub salaries
{
	my ($name, $mode) = @_;
	$node->safe_psql(
		'postgres', qq{
SET ROLE alice;
CREATE TABLE $name (id int PRIMARY KEY, name text, salary numeric NOT NULL);
INSERT INTO $name VALUES (1, 'Pat', 84000), (2, 'Kim', 86000), (3, 'Lou', 87000),
	(4, 'Max', 88000), (5, 'Ida', 89000), (6, 'Sam', 90000);
SELECT keanon.watch('$name', 'salary', ARRAY['name'], 3, 2000, mode => '$mode');});
}

# psql as alice: (exit code, stderr)
sub as_alice
{
	my ($sql) = @_;
	my ($ret, $out, $err) =
	  $node->psql('postgres', "SET ROLE alice; $sql", on_error_stop => 1);
	return ($ret, $err);
}

# Run DDL with keanon's ALTER check off, as a superuser can
sub unchecked
{
	my ($sql) = @_;
	$node->safe_psql(
		'postgres', qq{
ALTER EVENT TRIGGER keanon_on_alter DISABLE;
SET ROLE alice;
$sql;
RESET ROLE;
ALTER EVENT TRIGGER keanon_on_alter ENABLE;});
}

# ----------------------------------------------------------------
# 1. The owner reshapes the internal tables
# ----------------------------------------------------------------
salaries('leak', 'live');
my ($ret, $err) = as_alice(q{
ALTER TABLE leak ADD COLUMN ptr text;
ALTER TABLE leak_keanon_rows ADD COLUMN ptr bigint;});
isnt($ret, 0, '1a: a rows-table column typed unlike the table\'s is refused');
like($err, qr/column "ptr" must be of type text/, '1a: the error names the column and type');
($ret, $err) = as_alice(q{ALTER TABLE leak_keanon_parts ALTER COLUMN n TYPE text});
isnt($ret, 0, '1a: a retyped partitions column is refused');
like($err, qr/layout of leak_keanon_parts does not match the watch of leak/,
	'1a: the error names the table');
($ret, $err) = as_alice(q{ALTER TABLE leak_keanon_rows ADD COLUMN keanon_x int});
like($err, qr/reserved for keanon/, '1a: a keanon_ column of the owner\'s is refused');
($ret, $err) = as_alice(q{
CREATE INDEX ON leak_keanon_rows (name);
ALTER TABLE leak_keanon_rows SET (fillfactor = 70);
INSERT INTO leak VALUES (7, 'Ann', 82000);
SELECT keanon.check('leak');});
is($ret, 0, '1a: an index and a setting of the owner\'s are allowed') or diag($err);

# additions keanon's direct writes could not honour
($ret, $err) = as_alice(
	q{ALTER TABLE leak_keanon_rows ADD CONSTRAINT slot_once UNIQUE (keanon_pid, keanon_slot) DEFERRABLE});
like($err, qr/deferrable constraint/, '1a: a deferrable constraint on the rows table is refused');
salaries('noted', 'deferred');
($ret, $err) = as_alice(q{CREATE INDEX ON noted_keanon_pending (id)});
like($err, qr/pending list of the watch of noted has an index/,
	'1a: an index on the pending list, which the row trigger would not fill, is refused');
($ret, $err) = as_alice(q{INSERT INTO noted VALUES (7, 'Ann', 82000); SELECT keanon.flush('noted'); SELECT keanon.check('noted')});
is($ret, 0, '1a: the deferred watch works on') or diag($err);

# the same reshaping past the event trigger: refused at the write
unchecked(q{
ALTER TABLE leak ADD COLUMN leak text;
ALTER TABLE leak_keanon_rows ADD COLUMN leak bigint});
my $rows_before = $node->safe_psql('postgres', 'SELECT count(*) FROM leak_keanon_rows');
($ret, $err) = as_alice(q{INSERT INTO leak VALUES (8, 'Eve', 95000, 'x')});
isnt($ret, 0, '1b: a write through a reshaped rows table fails');
like($err, qr/layout of leak_keanon_rows does not match the watch of leak/,
	'1b: the error names the table');
is($node->safe_psql('postgres', 'SELECT count(*) FROM leak_keanon_rows'),
	$rows_before, '1b: nothing was written');
alive('1b');

salaries('crash', 'live');
unchecked(q{ALTER TABLE crash_keanon_parts ALTER COLUMN n TYPE text});
($ret, $err) = as_alice(q{INSERT INTO crash VALUES (7, 'Ann', 82000)});
like($err, qr/layout of crash_keanon_parts does not match the watch of crash/,
	'1c: a write through a retyped partitions table fails');
alive('1c');

salaries('arr', 'live');
unchecked(
	q{ALTER TABLE arr_keanon_parts ALTER COLUMN cnts TYPE text[] USING cnts::text[]});
($ret, $err) = as_alice(q{INSERT INTO arr VALUES (7, 'Ann', 82000)});
like($err, qr/does not match the watch of arr/,
	'1d: a write through a retyped array column fails');
($ret, $err) = as_alice(q{SELECT keanon.privacy_report('arr')});
isnt($ret, 0, '1d: the privacy report over a retyped array fails');
alive('1d');

salaries('late', 'deferred');
$node->safe_psql('postgres', q{SET ROLE alice; INSERT INTO late VALUES (7, 'Ann', 82000)});
unchecked(q{
ALTER TABLE late_keanon_parts ALTER COLUMN vals TYPE text[] USING vals::text[]});
($ret, $err) = as_alice(q{SELECT keanon.flush('late')});
like($err, qr/does not match the watch of late/, '1e: a flush through a reshaped table fails');
alive('1e');

# ----------------------------------------------------------------
# 2. Invalidations while a writer holds a loaded watch
# ----------------------------------------------------------------
salaries('storm', 'live');
# watches the writer loads first, so that the storm's cached watch lies past
# the first block of the cache's memory, which a reset keeps
salaries("pad$_", 'live') for 1 .. 8;
my $pads = join('',
	map { "DELETE FROM pad$_ WHERE id = 7; INSERT INTO pad$_ VALUES (7, 'Ann', 82000);\n" }
	  1 .. 8);
for my $round (1 .. 3)
{
	my $holder = $node->background_psql('postgres');
	my $writer = $node->background_psql('postgres');
	$holder->query_safe(
		q{SET ROLE alice; BEGIN; LOCK TABLE storm_keanon_rows IN SHARE MODE;});
	my $pid = $writer->query_safe('SELECT pg_backend_pid()');
	$writer->query_safe("SET ROLE alice; $pads RESET ROLE;");
	$writer->query_until(qr/go/, qq{
\\echo go
SET ROLE alice;
INSERT INTO storm SELECT 100 * $round + i, 'w' || i, 80000 + i * 500
FROM generate_series(1, 5) i;
});
	$node->poll_query_until('postgres',
		"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid")
	  or die "the writer did not wait";
	# relcache invalidations of unrelated relations, while it waits
	for my $i (1 .. 20)
	{
		$node->safe_psql('postgres',
			"GRANT SELECT ON unrelated TO bob; REVOKE SELECT ON unrelated FROM bob;");
	}
	$holder->query_safe('COMMIT');
	$writer->query_safe('SELECT 1');
	$writer->quit;
	$holder->quit;
	alive("2 (round $round)");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM storm_keanon_rows'),
	'21', '2: every row written through the storm is published');
$node->safe_psql('postgres', q{SET ROLE alice; SELECT keanon.check('storm')});
pass('2: keanon.check holds after the storm');

# 2b. The same storm under a generalized watch: the writer has loaded its
# watch and its generalization (both cached, shallow copies of their
# entries) when it blocks on the members table; invalidations of the
# watched table itself retire both entries while it waits
$node->safe_psql(
	'postgres', q{
SET ROLE alice;
CREATE TABLE gkind (value text, parent text);
INSERT INTO gkind VALUES ('*', NULL), ('a', '*'), ('b', '*');
CREATE TABLE gstorm (id int PRIMARY KEY, age int NOT NULL, kind text NOT NULL, salary numeric NOT NULL);
INSERT INTO gstorm SELECT i, 20 + i % 40, (ARRAY['a', 'b'])[1 + i % 2], 80000 + i * 100 FROM generate_series(1, 40) i;
SELECT keanon.watch('gstorm', 'salary', ARRAY['age', 'kind'], 3, 0, generalize => 3,
	hierarchies => '{"kind": "gkind"}');});
for my $round (1 .. 3)
{
	my $holder = $node->background_psql('postgres');
	my $writer = $node->background_psql('postgres');
	my $pid = $writer->query_safe('SELECT pg_backend_pid()');
	# the generalization cached in the writer first
	$writer->query_safe("SET ROLE alice; INSERT INTO gstorm VALUES (1000 + $round, 30, 'a', 1);");
	$holder->query_safe(
		q{SET ROLE alice; BEGIN; LOCK TABLE gstorm_keanon_members IN SHARE MODE;});
	$writer->query_until(qr/go/, qq{
\\echo go
INSERT INTO gstorm SELECT 100 * $round + i, 20 + i, 'b', 90000 + i FROM generate_series(1, 5) i;
});
	$node->poll_query_until('postgres',
		"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid")
	  or die "the writer did not wait";
	for my $i (1 .. 10)
	{
		$node->safe_psql('postgres',
			"GRANT SELECT ON gstorm TO bob; REVOKE SELECT ON gstorm FROM bob; "
			  . "GRANT SELECT ON unrelated TO bob; REVOKE SELECT ON unrelated FROM bob;");
	}
	$holder->query_safe('COMMIT');
	$writer->query_safe('SELECT 1');
	$writer->quit;
	$holder->quit;
	alive("2b (round $round)");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM gstorm_keanon_members'),
	'58', '2b: every row written through the storm is a member of a group');
$node->safe_psql('postgres', q{SET ROLE alice; SELECT keanon.check('gstorm')});
pass('2b: keanon.check holds after the storm, groups included');

# ----------------------------------------------------------------
# 3. DDL of a plain role with row_security off
# ----------------------------------------------------------------
($ret, $err) = $node->psql(
	'postgres', q{
SET ROLE bob;
SET row_security = off;
CREATE TABLE b1 (id int PRIMARY KEY);
ALTER TABLE b1 ADD COLUMN v int;
CREATE VIEW b2 AS SELECT id FROM b1;
DROP VIEW b2;
DROP TABLE b1;}, on_error_stop => 1);
is($ret, 0, '3: a plain role\'s DDL works with row_security off')
  or diag($err);
($ret, $err) = as_alice(q{
SET row_security = off;
INSERT INTO storm VALUES (1000, 'Zed', 91000);
ALTER TABLE storm ADD COLUMN note text;
SELECT keanon.check('storm');});
is($ret, 0, '3: the owner writes and alters a watched table with row_security off')
  or diag($err);
alive('3');

# ----------------------------------------------------------------
# 4. Bound sums spilled into numeric, read by a reader
# ----------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
CREATE ROLE carol LOGIN;
SET ROLE alice;
CREATE TABLE fa (id int PRIMARY KEY, grp int, f float8);
INSERT INTO fa SELECT i, i % 5, i * 1.5 FROM generate_series(1, 200) i;
SELECT keanon.watch('fa', 'f', '{grp}', 3, 1);
CREATE TABLE fb (id int PRIMARY KEY, grp int, f float8);
INSERT INTO fb SELECT i, i % 5, i * 2.5 FROM generate_series(1, 200) i;
SELECT keanon.watch('fb', 'f', '{grp}', 3, 1);
CREATE TABLE big (id int PRIMARY KEY, grp int, v numeric(34, 0));
INSERT INTO big SELECT i, i % 5, 9e33 + i FROM generate_series(1, 20000) i;
SELECT keanon.watch('big', 'v', '{grp}', 3, 1);
GRANT SELECT ON fa_anon, fb_anon, big_anon TO carol;});
sub as_carol
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', "SET ROLE carol; $sql");
}
is(as_carol('SELECT keanon.sum_bounds(keanon_pid) FROM fa_anon'),
	'[30150.0,30150.0]', '4: a sum of doubles over a whole view is exact');
is(as_carol('SELECT keanon.avg_bounds(keanon_pid) FROM fa_anon'),
	'[150.75,150.75]', '4: so is its average');
is( as_carol(
		'SELECT keanon.sum_bounds(keanon_pid) FROM '
		  . '(SELECT keanon_pid FROM fa_anon UNION ALL SELECT keanon_pid FROM fb_anon) s'),
	'[80400.0,80400.0]',
	'4: a sum over two views adds the first view\'s numeric part after its SPI connection ended');
is(as_carol('SELECT keanon.sum_bounds(keanon_pid) FROM big_anon'),
	'[180000000000000000000000000000200010000,180000000000000000000000000000200010000]',
	'4: a numeric sum past 2^127 is exact');
alive('4');

$node->stop;
done_testing();
