-- name: DpopJTIInsert :execrows
-- Records a DPoP proof's jti; 0 rows means the proof was seen before (replay).
INSERT INTO dpop_jtis (jti_hash, expires_at) VALUES (@jti_hash, @expires_at)
ON CONFLICT (jti_hash) DO NOTHING;

-- name: DpopJTIDeleteExpired :execrows
DELETE FROM dpop_jtis WHERE expires_at < @now;
