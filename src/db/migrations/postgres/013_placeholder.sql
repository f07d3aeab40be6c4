-- Placeholder keeping the numbering contiguous on this branch; the real 013 comes from another change.
SELECT 1;
