-- The schema's trigger functions are SECURITY DEFINER: they keep the
-- capacity ledger, which no writer may touch, and run as their owner. A
-- function is executable by PUBLIC unless revoked, and the privilege is
-- checked when a trigger is created, never when it fires: any role that
-- could reach the schema could attach the ledger's functions to a table of
-- its own (a temporary one needs no privilege at all) and count rows in
-- and out of any shard, or set every count to zero, with the owner's
-- rights. Nobody but the triggers of Runlimit's own table calls them,
-- whose firing needs no privilege: this step takes EXECUTE from PUBLIC on
-- every trigger function of the schema, this library's and, in a schema
-- a Rust service created, the Rust migrations' too.
DO $$
DECLARE
    f pg_catalog.text;
BEGIN
    FOR f IN
        SELECT p.proname::pg_catalog.text FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace OPERATOR(pg_catalog.=) '{{.schema}}'::pg_catalog.regnamespace
          AND p.prorettype OPERATOR(pg_catalog.=) 'pg_catalog.trigger'::pg_catalog.regtype
          AND pg_catalog.starts_with(p.proname::pg_catalog.text, 'runlimit_'::pg_catalog.text)
        ORDER BY 1
    LOOP
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION {{.schema}}.%I() FROM PUBLIC', f);
    END LOOP;
END
$$;

---- create above / drop below ----

DO $$
DECLARE
    f pg_catalog.text;
BEGIN
    FOR f IN
        SELECT p.proname::pg_catalog.text FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace OPERATOR(pg_catalog.=) '{{.schema}}'::pg_catalog.regnamespace
          AND p.prorettype OPERATOR(pg_catalog.=) 'pg_catalog.trigger'::pg_catalog.regtype
          AND pg_catalog.starts_with(p.proname::pg_catalog.text, 'runlimit_'::pg_catalog.text)
        ORDER BY 1
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION {{.schema}}.%I() TO PUBLIC', f);
    END LOOP;
END
$$;
