-- Nothing to do on SQLite: one writer commits at a time, so seq order is already commit order and the feed
-- keeps paging by seq (PostgreSQL numbers its feed after commit, see its 015). The file keeps both
-- backends' numbering aligned.
SELECT 1;
