# keanon: continuous (k,e)-anonymization inside PostgreSQL
#
#   make                  build the extension (PGXS)
#   make install          install it into the PostgreSQL found by pg_config
#   make installcheck     pg_regress against an installed server
#   make unit             build and run the engine's C unit tests
#   make bench-engine     build the engine benchmark and run it
#   make bench            every benchmark (after make install)
#   make demo             scripts/demo.sh: a throwaway cluster and an example
#   make test             scripts/test.sh: everything CI runs (PostgreSQL 15,
#                         then 17 in a chroot: scripts/test-pg17.sh)
#   make deb              scripts/deb.sh: the Debian packages, tried in clean chroots
#
# It builds for PostgreSQL 15 when its pg_config is installed; for 17 (or
# another installation) name the pg_config:
#   make PG_CONFIG=/usr/lib/postgresql/17/bin/pg_config

MODULE_big = keanon
OBJS = \
	src/keanon.o \
	src/sql_engine.o \
	src/aggregates.o \
	src/catalog.o \
	src/watch_args.o \
	src/entry.o \
	src/gen_values.o \
	src/am_build.o \
	src/am_funcs.o \
	src/am_handler.o \
	src/am_index.o \
	src/am_store.o \
	src/am_undo.o \
	src/am_vacuum.o \
	src/am_validate.o \
	src/am_values.o \
	src/write.o \
	src/maintain.o \
	src/deferred.o \
	src/worker.o \
	src/random.o \
	src/permute.o \
	src/reassign.o \
	src/direct.o \
	src/release.o \
	src/owner.o \
	src/spi_plans.o \
	src/watch_cache.o \
	src/layout.o \
	src/watch.o \
	src/privacy.o \
	src/generalize.o \
	src/gen_release.o \
	src/gen_store.o \
	src/anonymize.o \
	src/cluster/kc_cluster.o \
	src/cluster/kc_cost.o \
	src/cluster/kc_split.o \
	src/cluster/kc_optimize.o \
	src/cluster/kc_build.o \
	src/cluster/kc_zkey.o \
	src/cluster/kc_memstore.o \
	src/fulldomain/fd_prepare.o \
	src/fulldomain/fd_groups.o \
	src/fulldomain/fd_score.o \
	src/fulldomain/fd_search.o \
	src/fulldomain/fd_frost.o \
	src/fulldomain/fd_optimal.o \
	src/fulldomain/fd_partial.o \
	src/engine/ke_alloc.o \
	src/engine/ke_engine.o \
	src/engine/ke_dp.o \
	src/engine/ke_memstore.o \
	src/engine/ke_release.o

EXTENSION = keanon
DATA = keanon--0.2.0.sql keanon--0.1.0.sql keanon--0.1.0--0.2.0.sql
PGFILEDESC = "keanon - continuous (k,e)-anonymization of a table"

# pg_regress tests, by name (never a wildcard)
REGRESS = engine_sql index_am watch bounds privacy releases permutation exact_e attack lifecycle deferred generalize generalize_attack anonymize upgrade sensitive_columns default_privileges collation_keys

# isolationtester specs, by name (never a wildcard): concurrent writers of
# a watched table, rollbacks and savepoints, REPEATABLE READ and SERIALIZABLE
ISOLATION = watch_concurrency watch_rollback watch_isolation_levels watch_rename watch_deferred watch_unblocked watch_late watch_generalize watch_twice watch_rebuild
ISOLATION_OPTS = --inputdir=test/isolation

# TAP tests (PostgreSQL::Test::Cluster), by name: streaming replication,
# crashes, dump and restore of keanon indexes
TAP_TESTS = 1
PROVE_TESTS = \
	test/t/001_index_replication.pl \
	test/t/002_index_crash.pl \
	test/t/003_index_dump_restore.pl \
	test/t/004_watch_pgbench.pl \
	test/t/005_watch_crash.pl \
	test/t/006_watch_dump_restore.pl \
	test/t/007_watch_standby.pl \
	test/t/008_watch_unlogged.pl \
	test/t/009_deferred.pl \
	test/t/010_attack_server.pl \
	test/t/011_logical_replication.pl \
	test/t/012_prepared.pl \
	test/t/013_generalize_crash.pl \
	test/t/014_torn_page.pl \
	test/t/015_lock_reports.pl \
	test/t/016_worker_catalog.pl

PG_CPPFLAGS = -I$(srcdir)/src -I$(srcdir)/src/engine -I$(srcdir)/src/cluster -I$(srcdir)/src/fulldomain

EXTRA_CLEAN = test/unit/ke_test test/unit/kc_test test/bench/ke_bench test/bench/kc_bench tmp_pgr \
	test/unit/fd_test test/bench/fd_bench

# No LLVM bitcode: the engine gains nothing from JIT inlining, and building
# it needs a clang matching the server's.
override with_llvm = no

# Prefer the server-dev package's own pg_config for PostgreSQL 15 (a
# PG_CONFIG given on the command line or in the environment wins)
ifneq ($(wildcard /usr/lib/postgresql/15/bin/pg_config),)
PG_CONFIG ?= /usr/lib/postgresql/15/bin/pg_config
else
PG_CONFIG ?= pg_config
endif
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)

ifneq ($(PGXS),)
include $(PGXS)
else
# Without the server headers only the targets below that install them work
all install installcheck:
	@echo "keanon: pg_config not found; run scripts/install-deps.sh as root" >&2
	@exit 1
endif

# PGXS tracks no header dependencies: every object depends on every header
# (after PGXS, so that its `all` stays the default goal)
$(OBJS): $(wildcard src/*.h src/engine/*.h src/cluster/*.h src/fulldomain/*.h)

# ----------------------------------------------------------------
# Engine unit tests and benchmark: plain C, no PostgreSQL header
# ----------------------------------------------------------------
ENGINE_SRCS = \
	src/engine/ke_alloc.c \
	src/engine/ke_engine.c \
	src/engine/ke_dp.c \
	src/engine/ke_memstore.c \
	src/engine/ke_baseline.c \
	src/engine/ke_release.c
ENGINE_HDRS = $(wildcard src/engine/*.h)

# the clustering core (I3M, similar-B-tree): plain C too, on the engine's allocator
CLUSTER_SRCS = \
	src/engine/ke_alloc.c \
	src/cluster/kc_cost.c \
	src/cluster/kc_split.c \
	src/cluster/kc_cluster.c \
	src/cluster/kc_optimize.c \
	src/cluster/kc_build.c \
	src/cluster/kc_zkey.c \
	src/cluster/kc_memstore.c
CLUSTER_HDRS = $(wildcard src/cluster/*.h) src/engine/ke_alloc.h

# full-domain generalization search (PrivacyFrost2, optimal): plain C too
FD_SRCS = \
	src/engine/ke_alloc.c \
	src/fulldomain/fd_prepare.c \
	src/fulldomain/fd_groups.c \
	src/fulldomain/fd_score.c \
	src/fulldomain/fd_frost.c \
	src/fulldomain/fd_optimal.c \
	src/fulldomain/fd_partial.c \
	src/fulldomain/fd_search.c
FD_HDRS = $(wildcard src/fulldomain/*.h) src/engine/ke_alloc.h

UNIT_CC = cc
UNIT_CFLAGS = -std=gnu11 -O2 -g -Wall -Wextra -Werror -Isrc/engine
BENCH_CFLAGS = -std=gnu11 -O2 -DNDEBUG -Wall -Wextra -Isrc/engine

.PHONY: unit bench-engine bench-fulldomain bench demo test deb

test/unit/ke_test: test/unit/ke_test.c $(wildcard test/unit/*.h) $(ENGINE_SRCS) $(ENGINE_HDRS)
	$(UNIT_CC) $(UNIT_CFLAGS) -o $@ test/unit/ke_test.c $(ENGINE_SRCS) -lm

test/unit/kc_test: test/unit/kc_test.c test/unit/unit_cases.h $(CLUSTER_SRCS) $(CLUSTER_HDRS)
	$(UNIT_CC) $(UNIT_CFLAGS) -Isrc/cluster -o $@ test/unit/kc_test.c $(CLUSTER_SRCS) -lm

test/unit/fd_test: test/unit/fd_test.c test/unit/unit_cases.h $(FD_SRCS) $(FD_HDRS)
	$(UNIT_CC) $(UNIT_CFLAGS) -Isrc/fulldomain -o $@ test/unit/fd_test.c $(FD_SRCS) -lm

unit: test/unit/ke_test test/unit/kc_test test/unit/fd_test
	test/unit/ke_test
	test/unit/kc_test
	test/unit/fd_test

test/bench/ke_bench: test/bench/ke_bench.c $(wildcard test/bench/*.h) $(ENGINE_SRCS) $(ENGINE_HDRS)
	$(UNIT_CC) $(BENCH_CFLAGS) -o $@ test/bench/ke_bench.c $(ENGINE_SRCS) -lm

bench-engine: test/bench/ke_bench
	bash test/bench/run_engine.sh

test/bench/fd_bench: test/bench/fd_bench.c $(FD_SRCS) $(FD_HDRS)
	$(UNIT_CC) $(BENCH_CFLAGS) -Isrc/fulldomain -o $@ test/bench/fd_bench.c $(FD_SRCS) -lm

bench-fulldomain: test/bench/fd_bench
	bash test/bench/run_fulldomain.sh

# the clustering core (src/cluster) alone, on its memory store
.PHONY: bench-cluster

test/bench/kc_bench: test/bench/kc_bench.c $(CLUSTER_SRCS) $(CLUSTER_HDRS)
	$(UNIT_CC) $(BENCH_CFLAGS) -Isrc/cluster -o $@ test/bench/kc_bench.c $(CLUSTER_SRCS) -lm

bench-cluster: test/bench/kc_bench
	bash test/bench/run_cluster.sh

# every benchmark; the in-database ones need the extension installed
# (as root: make install) and start their own throwaway cluster
bench: bench-engine bench-cluster bench-fulldomain
	bash test/bench/index_build.sh > test/bench/results/index_build.csv
	bash test/bench/bounds.sh > test/bench/results/bounds.csv
	bash test/bench/maintenance.sh > test/bench/results/maintenance.csv
	bash test/bench/writers.sh > test/bench/results/writers.csv
	bash test/bench/releases.sh > test/bench/results/releases.csv
	bash test/bench/generalize.sh > test/bench/results/generalize.csv
	bash test/bench/anonymize.sh > test/bench/results/anonymize.csv
	bash test/bench/disk.sh > test/bench/results/disk.csv
	bash test/bench/abort.sh > test/bench/results/abort.csv
	bash test/bench/memory.sh > test/bench/results/memory.csv
	bash test/bench/big_partition.sh > test/bench/results/big_partition.csv
	bash test/bench/live_waits.sh > test/bench/results/live_waits.csv
	bash test/bench/publisher_waits.sh > test/bench/results/publisher_waits.csv
	bash test/bench/worst_case.sh > test/bench/results/worst_case.csv
	bash test/bench/flush_scaling.sh > test/bench/results/flush_scaling.csv
	bash test/bench/hot_updates.sh > test/bench/results/hot_updates.csv
	if command -v gnuplot > /dev/null 2>&1; then \
		gnuplot -e "resdir='test/bench/results'; docdir='docs'" test/bench/plot_maintenance.gp; \
	else echo "bench: gnuplot is not installed; no maintenance plot"; fi

demo:
	bash scripts/demo.sh

test:
	bash scripts/test.sh

# Debian packages postgresql-15-keanon and postgresql-17-keanon in dist/,
# each installed into a clean chroot and tried (scripts/deb.sh)
deb:
	bash scripts/deb.sh
