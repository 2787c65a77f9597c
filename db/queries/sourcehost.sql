-- name: SourceTokenGet :one
SELECT * FROM source_token WHERE id = 1;

-- name: SourceTokenUpsert :exec
INSERT INTO source_token (id, token_sealed, key_id, updated_by, updated_at)
VALUES (1, @token_sealed, @key_id, @updated_by, now())
ON CONFLICT (id) DO UPDATE SET token_sealed = EXCLUDED.token_sealed, key_id = EXCLUDED.key_id,
    updated_by = EXCLUDED.updated_by, updated_at = now();

-- name: SourceTokenDelete :exec
DELETE FROM source_token;

-- name: RepoHashCacheGet :one
SELECT * FROM repo_hash_cache WHERE repo = @repo AND branch = @branch;

-- name: RepoHashCacheUpsert :exec
INSERT INTO repo_hash_cache (repo, branch, hash, fetched_at)
VALUES (@repo, @branch, @hash, @fetched_at)
ON CONFLICT (repo, branch) DO UPDATE SET hash = EXCLUDED.hash, fetched_at = EXCLUDED.fetched_at;
