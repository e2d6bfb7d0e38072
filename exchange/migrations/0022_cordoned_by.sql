-- Who cordoned a cluster (issue 23: a provider takes its own cluster off the
-- market with its own token, POST /v1/clusters/{id}/cordon). 'operator': the
-- exchange's operators (the admin API); 'provider': the cluster's provider.
-- A provider's uncordon lifts only its own cordon: an operator's cordon
-- stays until an operator lifts it, and an operator cordoning a cluster its
-- provider cordoned takes the cordon over (market/cordon.ts, docs/providers.md).
-- Set with cordoned_at by the cluster's book writer; NULL exactly when
-- cordoned_at is. Cordons made before this column were the operators'.
ALTER TABLE clusters ADD COLUMN cordoned_by text CHECK (cordoned_by IN ('operator', 'provider'));
UPDATE clusters SET cordoned_by = 'operator' WHERE cordoned_at IS NOT NULL;
ALTER TABLE clusters ADD CONSTRAINT clusters_cordoned_by_set
  CHECK ((cordoned_at IS NULL) = (cordoned_by IS NULL));

-- A cluster's history (migrations/0021) names who holds its cordon:
-- 'cordoned' (an operator), 'cordoned_by_provider', 'uncordoned'.
CREATE OR REPLACE FUNCTION cluster_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  was text := CASE WHEN OLD.cordoned_at IS NULL THEN 'uncordoned'
                   WHEN OLD.cordoned_by = 'provider' THEN 'cordoned_by_provider'
                   ELSE 'cordoned' END;
  now_ text := CASE WHEN NEW.cordoned_at IS NULL THEN 'uncordoned'
                    WHEN NEW.cordoned_by = 'provider' THEN 'cordoned_by_provider'
                    ELSE 'cordoned' END;
BEGIN
  IF was IS DISTINCT FROM now_ THEN
    INSERT INTO node_status_changes (cluster_id, field, before, after)
      VALUES (NEW.id, 'cordon', was, now_);
  END IF;
  IF OLD.agent_attached_at IS DISTINCT FROM NEW.agent_attached_at
     OR OLD.agent_version IS DISTINCT FROM NEW.agent_version THEN
    INSERT INTO node_status_changes (cluster_id, field, before, after)
      VALUES (NEW.id, 'agent', OLD.agent_version, NEW.agent_version);
  END IF;
  RETURN NULL;
END;
$$;

DROP TRIGGER cluster_changed ON clusters;
CREATE TRIGGER cluster_changed
  AFTER UPDATE OF cordoned_at, cordoned_by, agent_attached_at, agent_version ON clusters
  FOR EACH ROW EXECUTE FUNCTION cluster_changed();
