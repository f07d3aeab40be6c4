-- Reserved: another change being made at the same time takes this number; this file only keeps the
-- numbering gapless until it lands.
SELECT 1;
