-- Lower-casing tags cannot be undone (the original spelling is not kept); nothing to do.
SELECT 1;
