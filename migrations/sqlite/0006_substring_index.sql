-- PostgreSQL's 0006 indexes title and author by trigrams (pg_trgm); SQLite's
-- index is 0007's. This file keeps both stores' versions in step.
SELECT 1;
