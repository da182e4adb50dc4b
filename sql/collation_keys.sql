--
-- A primary key under a nondeterministic collation is refused: keanon
-- finds a row's published version by its key byte for byte, and two keys
-- equal under the collation (u2 and U2) left both versions published.
-- Nondeterministic collations need ICU: without it (a server built
-- without ICU) this file runs nothing and its second expected output holds.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS keanon;
RESET client_min_messages;
SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collprovider = 'i') AS have_icu \gset
\if :have_icu
CREATE COLLATION keanon_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE nt (id text COLLATE keanon_ci PRIMARY KEY, age integer, salary integer);
INSERT INTO nt SELECT 'u' || g, 20 + g % 30, 1000 * g FROM generate_series(1, 20) g;
SELECT keanon.watch('nt', 'salary', '{age}', k => 3, e => 1000);
SELECT keanon.watch('nt', 'salary', '{age}', k => 3, e => 1000, mode => 'release');
-- nor is one of a domain of such a collation, whatever the column's own
CREATE DOMAIN keanon_ci_text AS text COLLATE keanon_ci;
CREATE TABLE ntd (id keanon_ci_text COLLATE "C" PRIMARY KEY, age integer, salary integer);
INSERT INTO ntd SELECT 'u' || g, 20 + g % 30, 1000 * g FROM generate_series(1, 20) g;
SELECT keanon.watch('ntd', 'salary', '{age}', k => 3, e => 1000);
SELECT count(*) AS watched FROM keanon.watches WHERE relid IN ('nt'::regclass, 'ntd'::regclass);
-- a deterministic collation is taken
ALTER TABLE nt ALTER COLUMN id TYPE text COLLATE "C";
SELECT keanon.watch('nt', 'salary', '{age}', k => 3, e => 1000) IS NOT NULL AS watched;
UPDATE nt SET id = upper(id), age = age + 1 WHERE id IN ('u2', 'u3');
SELECT keanon.check('nt'), (SELECT count(*) FROM nt_anon) AS published;
DROP TABLE nt, ntd CASCADE;
DROP DOMAIN keanon_ci_text;
DROP COLLATION keanon_ci;
\endif
