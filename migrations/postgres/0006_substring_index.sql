-- Substring filters on title and author (`GET /books?title=...`,
-- docs/api.md) through an index. ascii_lower() folds exactly A-Z, as the
-- filters compare (lower() would fold other letters too, by collation); the
-- statements match `ascii_lower(title) LIKE '%...%'`, wildcards escaped. A
-- simple SQL function, inlined by the planner in the statements and in the
-- index alike.
CREATE OR REPLACE FUNCTION ascii_lower(text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS 'SELECT translate($1, ''ABCDEFGHIJKLMNOPQRSTUVWXYZ'', ''abcdefghijklmnopqrstuvwxyz'')';

-- pg_trgm's GIN indexes serve that LIKE: a filter of three or more
-- characters reads only the books holding its trigrams, and PostgreSQL keeps
-- them in step with every write. Where the extension cannot be had (not
-- installed, or a role that may not create it: some managed services), or
-- an index cannot be built, the migration still succeeds without them (a
-- warning in the server's log): the statements give the same answers,
-- reading the books instead. An operator can add them later, as below.
-- Each block's failure is undone alone (a savepoint), so the migration's
-- transaction goes on.
DO $$
DECLARE
    trgm_schema name;
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'pg_trgm unavailable (%): substring filters read every book', SQLERRM;
    END;
    SELECT n.nspname INTO trgm_schema
        FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
        WHERE e.extname = 'pg_trgm';
    IF trgm_schema IS NOT NULL THEN
        BEGIN
            EXECUTE format('CREATE INDEX IF NOT EXISTS books_title_trigrams ON books '
                'USING gin (ascii_lower(title) %I.gin_trgm_ops)', trgm_schema);
            EXECUTE format('CREATE INDEX IF NOT EXISTS books_author_trigrams ON books '
                'USING gin (ascii_lower(author) %I.gin_trgm_ops)', trgm_schema);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'no trigram index (%): substring filters read every book', SQLERRM;
        END;
    END IF;
END
$$;
