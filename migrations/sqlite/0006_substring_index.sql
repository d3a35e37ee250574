-- PostgreSQL's 0006 indexes title and author by trigrams (pg_trgm). SQLite
-- gets none: an FTS5 trigram table kept by triggers made every write under
-- Spin dearer and held the write lock longer (docs/performance.md), so its
-- filters scan in id order. This file keeps both stores' versions in step.
SELECT 1;
