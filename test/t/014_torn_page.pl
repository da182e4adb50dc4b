
# A rebuild of the keanon index writes its node pages in place, without
# WAL, and logs the whole index afterwards; a crash in between can leave a
# page half written (torn).  With data checksums, reading such a page is an
# error, so a rebuild that read the blocks it is about to overwrite would
# fail on every later try.  It must take them without reading them.
#
# Here the torn page is made by hand: a transaction that changed the index
# is open at a checkpoint and a crash (so the next opener rebuilds), and
# while the server is down the second half of a node page is overwritten
# with other bytes.
# Then the next write rebuilds, succeeds, and keanon.check holds.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('torn');
$node->init(extra => ['--data-checksums']);
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION keanon;
CREATE TABLE pay (id integer PRIMARY KEY, dept integer NOT NULL, salary integer);
INSERT INTO pay SELECT i, i % 20, (i * 7907) % 1000000 FROM generate_series(1, 20000) i;
SELECT keanon.watch('pay', 'salary', '{dept}', 4, 100);
CHECKPOINT;
});
is($node->safe_psql('postgres', q{SHOW data_checksums}), 'on', 'data checksums are on');
my $path = $node->data_dir . '/' . $node->safe_psql('postgres',
	q{SELECT pg_relation_filepath(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	  JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'keanon' AND i.indrelid = 'pay_keanon_rows'::regclass});
my $blocks = (-s $path) / 8192;
cmp_ok($blocks, '>=', 3, 'the keanon index has node pages');

# a writer open at the crash: its transaction id stays in the metapage
my $bg = $node->background_psql('postgres');
$bg->query_safe(q{BEGIN});
$bg->query_safe(q{INSERT INTO pay VALUES (30001, 3, 123456)});
# its metapage entry and pages on disk, so that recovery brings them back
$node->safe_psql('postgres', 'CHECKPOINT');
$node->stop('immediate');
eval { $bg->quit; };

# tear block 2: its first half as written, its second half other bytes
open(my $fh, '+<', $path) or die "open $path: $!";
binmode $fh;
seek($fh, 2 * 8192 + 4096, 0) or die "seek: $!";
print $fh ("\x5a" x 4096);
close($fh);

$node->start;
my ($rc, $out, $err) = $node->psql('postgres', q{INSERT INTO pay VALUES (30002, 4, 654321)});
is($rc, 0, 'the write that rebuilds the index past the torn page succeeds')
  or diag($err);
is($node->safe_psql('postgres', q{SELECT keanon.check('pay')}), 't', 'check holds after the rebuild');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pay_anon}), '20001', 'every committed row is published');
$node->safe_psql('postgres', q{INSERT INTO pay VALUES (30003, 5, 5)});
is($node->safe_psql('postgres', q{SELECT keanon.check('pay')}), 't', 'and it takes further writes');

$node->stop;
done_testing();
