-- Tags are case-insensitive: stored trimmed and lower-cased, so `VIP` and `vip`
-- are one tag everywhere (tag_exclusion policies, audience filters, imports). Duplicates
-- that lower-casing creates are merged, keeping the first one's position.
UPDATE customers c
SET tags = (
    SELECT coalesce(array_agg(s.t ORDER BY s.first_n), '{}')
    FROM (
        SELECT lower(btrim(u.tag)) AS t, min(u.n) AS first_n
        FROM unnest(c.tags) WITH ORDINALITY AS u(tag, n)
        WHERE btrim(u.tag) <> ''
        GROUP BY lower(btrim(u.tag))
    ) s
)
WHERE EXISTS (
    SELECT 1 FROM unnest(c.tags) AS v(tag) WHERE v.tag <> lower(btrim(v.tag))
);
