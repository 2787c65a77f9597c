-- +goose Up
-- Shell transcripts are streamed to PostgreSQL while the session runs, in
-- chunks (issue 21 item 7), instead of being held in the bridging
-- process's memory and written once at the end: a process that dies
-- loses at most the last unflushed chunk, and memory per session is
-- bounded by one chunk. Each chunk is a byte range of the asciicast file.
CREATE TABLE shell_transcript_chunks (
    session_id text  NOT NULL REFERENCES shell_sessions (id) ON DELETE CASCADE,
    seq        int   NOT NULL,
    data       bytea NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- Kept up to date with each chunk, so listings never sum the chunks.
ALTER TABLE shell_sessions ADD COLUMN transcript_bytes bigint NOT NULL DEFAULT 0;

-- Transcripts stored whole before become their sessions' only chunk.
INSERT INTO shell_transcript_chunks (session_id, seq, data)
SELECT id, 0, transcript FROM shell_sessions WHERE transcript IS NOT NULL AND length(transcript) > 0;
UPDATE shell_sessions SET transcript_bytes = length(transcript) WHERE transcript IS NOT NULL;
ALTER TABLE shell_sessions DROP COLUMN transcript;

-- +goose Down
ALTER TABLE shell_sessions ADD COLUMN transcript bytea;
UPDATE shell_sessions s
SET transcript = (SELECT string_agg(c.data, ''::bytea ORDER BY c.seq) FROM shell_transcript_chunks c WHERE c.session_id = s.id);
ALTER TABLE shell_sessions DROP COLUMN transcript_bytes;
DROP TABLE shell_transcript_chunks;
