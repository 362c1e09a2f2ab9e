-- Retries of a batch's failed items (POST /v1/batch-sessions/{id}/retry). retries_left: the
-- attempts an item still has after the one under way; a retried item that fails with some
-- left goes back to the queue instead of counting as failed. retry_count: the attempts the
-- retries made, answered as the item's retry_count.
ALTER TABLE batch_items ADD COLUMN retries_left integer NOT NULL DEFAULT 0;
ALTER TABLE batch_items ADD COLUMN retry_count integer NOT NULL DEFAULT 0;
