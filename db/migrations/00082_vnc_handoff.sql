-- +goose Up

-- Remote desktop handoff (issue 23, POST /api/vnc/handoff): another
-- operator, or the same one in another browser, takes a ready or live
-- session over. operator becomes the taker; the previous owner, when and
-- how many times are kept with the session.
ALTER TABLE vnc_sessions
    ADD COLUMN handed_off_from text        NOT NULL DEFAULT '',
    ADD COLUMN handed_off_at   timestamptz,
    ADD COLUMN handoffs        integer     NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE vnc_sessions DROP COLUMN handed_off_from, DROP COLUMN handed_off_at, DROP COLUMN handoffs;
