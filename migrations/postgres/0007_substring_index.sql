-- SQLite's trigram index; PostgreSQL's is 0006. This file keeps both
-- stores' versions in step.
SELECT 1;
