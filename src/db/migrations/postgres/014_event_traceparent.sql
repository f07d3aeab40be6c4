-- The W3C traceparent of the request that wrote the event, while tracing is on (NULL otherwise): each
-- webhook delivery attempt's span links to it.
ALTER TABLE events ADD COLUMN traceparent TEXT;
